"""``scripts/bench_superrag.py --part sec``: every bad input stops the bench with one line
(``bench_superrag.py: error: ...``) and a non-zero status before a model is loaded or a corpus built; the
questions' filings are found as the harness's loader finds them; ``--out`` is valid JSON; the held-out report
keeps the names given with a rerank mode; the parser's warnings are shown; a long body row costs the ToC
detector linear time."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymupdf")

ROOT = Path(__file__).resolve().parents[2]
HEADER = ("Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer")
Q = "Single-Doc Single-Chunk RAG"


def _bench_module():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_superrag
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return bench_superrag


def _pdf(path: Path, text: str = "Revenue was $1,234 million in the quarter.") -> Path:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(path))
    doc.close()
    return path


def _folder(root: Path, files: list[str], rows: list[list[str]] | None = None) -> Path:
    for f in files:
        _pdf(root / "docs" / f)
    rows = rows if rows is not None else [["Apple revenue?", "*AAPL*", Q, "Text", "$1,234 million"],
                                          ["Microsoft revenue?", "*MSFT*", Q, "Text", "$1,234 million"]]
    (root / "docs").mkdir(parents=True, exist_ok=True)
    with (root / "qna_data.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        w.writerows(rows)
    return root


def _run(tmp_path: Path, data: Path, *extra: str, db: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_superrag.py"), "--part", "sec", "--data",
                           str(data), "--db", str(db or tmp_path / "db"), "--doc-header", "none",
                           "--retrievers", "vector,full:off", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _one_error(proc: subprocess.CompletedProcess, pattern: str, tmp_path: Path) -> None:
    import re

    assert proc.returncode != 0, proc.stdout[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "note:" not in ln]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("bench_superrag.py: error: ") and re.search(pattern, lines[0]), lines[0]
    assert "Traceback" not in proc.stderr and "built " not in proc.stdout
    assert not (tmp_path / "db" / "embeddings.sqlite").exists()  # stopped before the model was loaded


def test_the_bench_and_the_harness_read_the_folder_alike(tmp_path: Path) -> None:
    """Upper-case ``.PDF`` is a filing; a pattern that names no file is an error, not every file (and a company
    'AAPL+MSFT'); patterns are comma-separated, case-insensitive, and a file name is literal."""
    bench = _bench_module()
    from htmlrag.data.pdfqa import load_sec10q

    root = _folder(tmp_path / "a", ["2023 Q1 AAPL.PDF", "2023 Q1 MSFT.pdf", "[draft] 2023 Q1 F.pdf"], [
        ["Apple revenue?", "  *aapl*  ", Q, "Text", "$1,234 million"],
        ["Both?", "*AAPL*, *MSFT*", "Multi-Doc RAG", "Text", "$1,234 million"],
        ["Ford?", "[draft] 2023 Q1 F.pdf", Q, "Text", "$1,234 million"]])
    pdfs, rows = bench.load_sets([root])
    assert [p.name for p in pdfs] == ["2023 Q1 AAPL.PDF", "2023 Q1 MSFT.pdf", "[draft] 2023 Q1 F.pdf"]
    assert [r["_names"] for r in rows] == [["2023 Q1 AAPL.PDF"], ["2023 Q1 AAPL.PDF", "2023 Q1 MSFT.pdf"],
                                           ["[draft] 2023 Q1 F.pdf"]]
    from htmlrag.superrag.build.owners import owners

    owner = owners(p.name for p in pdfs)
    companies = [bench.question_owner(r["_names"], owner) for r in rows]
    assert companies == ["AAPL", "AAPL+MSFT", "F"]
    assert [e.metadata["domain"] for e in load_sec10q(root)] == companies  # both tools agree

    bad = _folder(tmp_path / "b", ["2023 Q1 AAPL.pdf", "2023 Q1 MSFT.pdf"],
                  [["Apple?", "2023 Q9 AAPL.pdf", Q, "Text", "$1"]])
    _one_error(_run(tmp_path, bad), re.escape(f"{_bench_module().rel(bad)}/qna_data.csv: row 2: Source Docs "
                                              "'2023 Q9 AAPL.pdf' matches no filing"), tmp_path)


@pytest.mark.parametrize("kind", ["encrypted", "zero pages", "not a pdf", "empty", "truncated"])
def test_a_bad_pdf_stops_the_bench_before_anything_is_built(tmp_path: Path, kind: str) -> None:
    from htmlrag.testing.pdfs import encrypted_pdf, truncated_pdf, zero_page_pdf

    root = _folder(tmp_path / "d", ["2023 Q1 AAPL.pdf"], [["Apple?", "*AAPL*", Q, "Text", "$1"],
                                                         ["Zeta?", "*ZETA*", Q, "Text", "$1"]])
    bad = root / "docs" / "2023 Q1 ZETA.pdf"
    if kind == "encrypted":
        encrypted_pdf(bad)
    elif kind == "zero pages":
        zero_page_pdf(bad)
    elif kind == "not a pdf":
        bad.write_text("hello, this is not a PDF\n")
    elif kind == "empty":
        bad.write_bytes(b"")
    else:
        truncated_pdf(bad, root / "docs" / "2023 Q1 AAPL.pdf")
    _one_error(_run(tmp_path, root), r"2023 Q1 ZETA\.pdf: .*nothing was built", tmp_path)


@pytest.mark.parametrize(("csv_text", "pattern"), [
    ("Question,Source Docs\nWhat?,*AAPL*\n", r"qna_data\.csv: no 'Answer' column"),
    ("Question,Source Docs,Answer\nWhat?,*AAPL*,$1\nElse?,*AAPL*\n", r"qna_data\.csv: row 3: 2 fields, the header has 3"),
    (b"Question,Source Docs,Answer\nWhat \xe9?,*AAPL*,$1\n", r"qna_data\.csv: not UTF-8 text"),
])
def test_a_malformed_csv_stops_the_bench_with_one_line(tmp_path: Path, csv_text: str | bytes, pattern: str) -> None:
    root = _folder(tmp_path / "c", ["2023 Q1 AAPL.pdf"])
    path = root / "qna_data.csv"
    path.write_bytes(csv_text if isinstance(csv_text, bytes) else csv_text.encode())
    _one_error(_run(tmp_path, root), pattern, tmp_path)


def test_an_empty_docs_folder_is_an_error(tmp_path: Path) -> None:
    root = _folder(tmp_path / "e", [])
    _one_error(_run(tmp_path, root), re.escape(f"{_bench_module().rel(root)}/docs: no PDF files"), tmp_path)


def test_bad_options_stop_the_bench_up_front(tmp_path: Path) -> None:
    root = _folder(tmp_path / "o", ["2023 Q1 AAPL.pdf", "2023 Q1 MSFT.pdf"])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "adir").mkdir()
    cases = [
        (("--out", str(fifo / "x.json")), r"--out .*fifo/x\.json: .*fifo is not a folder"),
        (("--out", str(tmp_path / "adir")), r"--out .*adir: is a folder"),
        (("--out", str(fifo)), r"--out .*fifo: is a FIFO"),
        (("--retrievers", ""), r"--retrievers: no retriever named"),
        (("--retrievers", "hybrid,nope"), r"--retrievers: 'nope': unknown retriever"),
        (("--retrievers", "hybrid:off"), r"--retrievers: 'hybrid:off': hybrid has no rerank stage"),
        (("--budgets", "0"), r"--budgets: must be integers >= 1, comma-separated, got '0'"),
        (("--budgets", "-5"), r"--budgets: .* got '-5'"),
        (("--budgets", "1.5"), r"--budgets: .* got '1.5'"),
        (("--hide", "GOOG"), r"--hide: no company 'GOOG' in the corpus; companies: AAPL, MSFT"),
        (("--doc-header", "title"), r"--doc-header: 'title' is not one of none, embed, both"),
        (("--title-depth", "0"), r"--title-depth: must be integers >= 1, comma-separated, got '0'$"),
        (("--title-depth", "x"), r"--title-depth: must be integers >= 1, comma-separated, got 'x'$"),
        (("--title-depth", "3,,1"), r"--title-depth: .* got ''$"),
        (("--from-json", str(tmp_path / "none.json")), r"--from-json .*none\.json: no such file"),
    ]
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "other.json").write_text('{"a": 1}')
    cases += [(("--from-json", str(tmp_path / "empty.json")), r"empty file"),
              (("--from-json", str(tmp_path / "bad.json")), r"not JSON \(line 1"),
              (("--from-json", str(tmp_path / "other.json")), r"not an --out file of this bench")]
    for extra, pattern in cases:
        _one_error(_run(tmp_path, root, *extra), pattern, tmp_path)


def test_duplicate_retrievers_are_read_once_with_a_note() -> None:
    bench = _bench_module()
    assert bench.parse_retrievers("vector, vector,full:off,") == ["vector", "full:off"]
    assert bench.parse_budgets("300,300,600") == (300, 600) and bench.parse_budgets("") == ()


def test_names_given_with_a_rerank_mode_are_in_the_held_out_report() -> None:
    bench = _bench_module()
    names = ["vector", "full:off", "nonlayout:off"]
    recs = [{"company": c, "type": "Text", "recall": {"flat": 0.0, **dict.fromkeys(names, 1.0)}} for c in ("A", "B")]
    held = bench.heldout_report(recs, names, verbose=False)
    assert held["A"]["names"] == ["vector", "full:off", "nonlayout:off"]
    both = ["full", "full:fuse", "nonlayout:fuse"]
    recs = [{"company": c, "type": "Text", "recall": {"flat": 0.0, **dict.fromkeys(both, 1.0)}} for c in ("A", "B")]
    assert bench.heldout_report(recs, both, verbose=False)["A"]["names"] == ["full:fuse", "nonlayout:fuse"]


def test_title_depths_are_settings_named_only_where_they_vary(capsys: pytest.CaptureFixture[str]) -> None:
    """Each --doc-header setting with each --title-depth is a corpus; a retriever's ``@`` suffix names the axes
    given more than one value (none: the names of a single setting, as before depths were measured). The
    held-out report chooses the depth as it chooses the header: the better one on the other companies, a tie
    falling to the first given."""
    bench = _bench_module()
    assert bench.parse_depths("3, 1,3") == [3, 1]
    assert bench.setting_grid(["none"], [3]) == [("", "none", 3)]
    assert bench.setting_grid(["none", "embed"], [3]) == [("none", "none", 3), ("embed", "embed", 3)]
    assert [label for label, _, _ in bench.setting_grid(["none", "embed"], [3, 2])] == [
        "none/d3", "none/d2", "embed/d3", "embed/d2"]
    grid = bench.setting_grid(["none"], [3, 1])
    assert grid == [("d3", "none", 3), ("d1", "none", 1)]
    names = [bench._at(n, label) for label, _, _ in grid for n in ("hybrid", "full:off")]
    assert names == ["hybrid@d3", "full:off@d3", "hybrid@d1", "full:off@d1"]
    better = [{"recall": {"flat": 0.0, **dict.fromkeys(names, 0.0), "full:off@d1": 1.0}}]
    assert bench.choose_setting(better, names)[:2] == ("d1", "off")
    tie = [{"recall": {"flat": 0.0, **dict.fromkeys(names, 1.0)}}]
    setting, mode, how = bench.choose_setting(tie, names)
    assert (setting, mode) == ("d3", "off") and how.endswith("-> setting d3, rerank off")
    assert bench.setting_words("embed/d2") == ["doc_header=embed", "title_depth=2"]
    recs = [{"company": c, "type": "Text", "recall": {"flat": 0.0, **dict.fromkeys(names, 1.0)}} for c in ("A", "B")]
    assert bench.heldout_report(recs, names, verbose=False)["A"]["names"] == ["hybrid@d3", "full:off@d3"]
    bench.summarise(recs, names)
    out = capsys.readouterr().out
    assert "==== title_depth=3 for every company" in out and "==== title_depth=1 for every company" in out
    assert "==== title_depth and rerank mode chosen on the other companies" in out


def test_out_is_valid_json_with_null_for_questions_without_gold_items(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench_module()
    nan = float("nan")
    recs = [{"i": 0, "company": "A", "type": "Text", "qtype": "", "set": "s",
             "recall": {"flat": nan, "vector": nan}, "tokens": {"flat": 3, "vector": 4},
             "budget": {"300": {"recall": {"flat": nan, "vector": nan}, "tokens": {"flat": 3, "vector": 4}}}},
            {"i": 1, "company": "B", "type": "Text", "qtype": "", "set": "s",
             "recall": {"flat": 1.0, "vector": 0.0}, "tokens": {"flat": 3, "vector": 4},
             "budget": {"300": {"recall": {"flat": 1.0, "vector": 0.0}, "tokens": {"flat": 3, "vector": 4}}}}]
    text = json.dumps(bench._json_safe(recs), allow_nan=False)
    assert "NaN" not in text and json.loads(text)[0]["recall"]["flat"] is None
    path = tmp_path / "recs.json"
    path.write_text(text)
    back = bench.read_runs(path)
    assert math.isnan(back[0]["recall"]["flat"]) and back[1]["recall"]["vector"] == 0.0
    bench.summarise(back, ["vector"])
    assert "1 of 2 questions have no gold items" in capsys.readouterr().out


def test_the_parsers_warnings_are_shown(tmp_path: Path) -> None:
    """The bench logs at ERROR for other libraries but shows htmlrag's warnings (a page with no text layer)."""
    code = ("import sys, logging; sys.path.insert(0, 'scripts'); import bench_superrag as b; "
            "b.bench_sec = lambda a: logging.getLogger('htmlrag.superrag.parse.document').warning("
            "'x.pdf: page 1 has no text layer (scanned image) and OCR found no text'); "
            f"sys.argv = ['bench_superrag.py', '--part', 'sec', '--data', {str(tmp_path)!r}]; sys.exit(b.main())")
    (tmp_path / "qna_data.csv").write_text("Question,Answer\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "page 1 has no text layer" in proc.stderr


def test_a_long_row_costs_the_toc_detector_linear_time() -> None:
    """A row of body text set on one long line (a PDF with a page 14,400 points wide) is matched in linear time;
    real ToC rows still read as before."""
    import subprocess
    import sys

    from htmlrag.superrag.parse.model import Line
    from htmlrag.superrag.parse.toc import _LEADER, _entry

    row = ("Zeta revenue was $1,234 million. " + "filler words go here and there " * 5) * 60
    assert _LEADER.match(row) is None
    # sixteen times that row under a 20 CPU-second cap (a resource bound far above the cost, not a timing
    # figure): the nested lazy runs took 4.5 s on 8,000 characters, growing with the square of the length
    script = ("import resource\nresource.setrlimit(resource.RLIMIT_CPU, (20, 20))\n"
              "from htmlrag.superrag.parse.toc import _LEADER\n"
              f"assert _LEADER.match({row!r} * 16) is None\nprint('done')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr[-2000:]

    def line(text: str) -> Line:
        return Line(page=1, bbox=(50, 100, 50 + 5.0 * len(text), 109), text=text, size=9.0, bold=False, block=0)

    assert _entry([line(row)]) is None
    assert _entry([line("Item 2. Management's Discussion and Analysis .......... 14")]) == (
        "Item 2. Management's Discussion and Analysis", "14")
    assert _entry([line("Part I — Financial Information iv")]) == ("Part I — Financial Information", "iv")
    assert _entry([line("Total revenue $ 1,234 5")]) is None


def test_log_records_name_the_data_and_corpus_folders_without_machine_paths(tmp_path: Path) -> None:
    """The bench's log goes into committed results: a library warning that named the corpus folder it cleaned
    after an interrupted build ("/tmp/.../db/e44c...: removing ..., left half-built") carried a machine path.
    Records name ``--db`` as ``<db>`` (as the bench's own lines do) and ``--data`` folders as ``rel`` does."""
    import logging

    bench = _bench_module()
    db, data = tmp_path / "db", tmp_path / "corpus"
    data.mkdir()
    f = bench._RelPaths([data], db)
    record = logging.LogRecord("htmlrag", logging.WARNING, __file__, 1, "%s: removing %s, left half-built (%s)",
                               (str(db / "e44c03c5"), "doc-1", str(data.resolve() / "docs" / "a.pdf")), None)
    assert f.filter(record)
    msg = record.getMessage()
    assert msg == f"<db>/e44c03c5: removing doc-1, left half-built ({bench.rel(data)}/docs/a.pdf)", msg
    assert str(tmp_path) not in msg
