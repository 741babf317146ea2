"""``scripts/bench_superrag.py --part sec --data DIR`` on folders it was not written for (issue 35): the
project's own Northwind sample, the same filings renamed as two companies, and two folders at once.
Companies come from the file names; the held-out report leaves out each company in turn; ``--out`` holds
recall and evidence tokens per retriever, at k and at each budget. Real MiniLM (offline, from PyPI)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymupdf")
pytest.importorskip("sentence_transformers")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "pdfs"
RETRIEVERS = "hybrid,toc,full,full:off"
MACHINE_PATH = re.compile(r"(/tmp/|/home/|/root/|/work/|/Users/|\b[A-Za-z]:\\\w)")  # as tests/unit/test_committed_results.py


def _bench(tmp_path: Path, *data: Path, extra: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, list]:
    out = tmp_path / "recs.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_superrag.py"), "--part", "sec", "--data",
                           *map(str, data), "--db", str(tmp_path / "db"), "--out", str(out), "--retrievers",
                           RETRIEVERS, "--budgets", "300,600", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    return proc, json.loads(out.read_text()) if out.exists() else []


def _bench_module():
    """scripts/bench_superrag.py as a module (its helpers: ``rel``, ``report``, ``choose_mode`` ...)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_superrag
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return bench_superrag


def _two_companies(folder: Path) -> Path:
    """The sample's two filings as two companies: 2024 Q2 renamed to ACME (its questions follow it)."""
    (folder / "docs").mkdir(parents=True)
    shutil.copy(SAMPLE / "docs" / "2024 Q1 NWND.pdf", folder / "docs" / "2024 Q1 NWND.pdf")
    shutil.copy(SAMPLE / "docs" / "2024 Q2 NWND.pdf", folder / "docs" / "ACME_10-Q_2024-06-30.pdf")
    with (SAMPLE / "qna_data.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["Source Docs"] = {"*2024 Q2 NWND*": "*ACME*", "*NWND*": "*2024 Q1 NWND*"}.get(r["Source Docs"], r["Source Docs"])
    with (folder / "qna_data.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return folder


def test_a_question_kind_without_questions_prints_no_number(capsys) -> None:
    # FinanceBench says of no question whether it is a Table or a Text question: those columns printed "nan"
    # (a figure no run gave); they print "-" now, and the columns with questions keep their figures.
    bench = _bench_module()
    recs = [{"type": "", "recall": {"flat": f, "hybrid": h}, "tokens": {"flat": 100, "hybrid": 90}}
            for f, h in ((1.0, 1.0), (0.0, 1.0), (0.0, 0.0))]
    bench.report(recs, ["hybrid"], "three questions")
    out = capsys.readouterr().out
    assert "nan" not in out and "- (n=0)" in out
    assert re.search(r"flat\s+0\.33 \(n=3\)", out) and re.search(r"hybrid\s+0\.67 \+0\.33 \+1/-0", out)


@pytest.mark.slow
def test_bench_runs_on_the_sample_and_on_companies_named_only_by_their_files(tmp_path: Path) -> None:
    proc, recs = _bench(tmp_path, SAMPLE, extra=("--doc-header", "embed"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(recs) == 8 and {r["company"] for r in recs} == {"NWND"}
    names = {"flat", *RETRIEVERS.split(",")}
    for r in recs:
        assert set(r["recall"]) == set(r["tokens"]) == names
        assert set(r["budget"]) == {"300", "600"}
        assert all(r["budget"]["300"]["tokens"][n] <= 300 for n in names)
    assert "held out NWND (8 questions)" in proc.stdout and "no other company's questions" in proc.stdout
    assert str(tmp_path) not in proc.stdout  # paths are printed relative to the repository

    two = _two_companies(tmp_path / "two")
    proc, recs = _bench(tmp_path / "b", two)  # default: a corpus per doc_header setting (none, embed, both)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["company"] for r in recs} == {"NWND", "ACME"}
    assert set(recs[0]["recall"]) == {"flat", *(f"{n}@{h}" for h in ("none", "embed", "both") for n in RETRIEVERS.split(","))}
    assert "doc_header=none for every company" in proc.stdout and "-> setting " in proc.stdout
    for company, other in (("NWND", "ACME"), ("ACME", "NWND")):
        n_other = sum(r["company"] == other for r in recs)
        assert f"held out {company}" in proc.stdout
        assert f"chosen on the other companies' {n_other} questions" in proc.stdout
    assert "| retriever | " in proc.stdout and "at 300 evidence tokens" in proc.stdout
    # a folder outside the repository is named by its name ("…/two"), one beside it relative to it (where pytest's
    # folders lie beside the clone): no machine path in the log or the JSON
    shown = _bench_module().rel(two)  # how the bench names the folder in its log and JSON
    assert shown == "…/two" or shown.startswith(".." + os.sep), shown
    assert f"(b) {shown}: " in proc.stdout and {r["set"] for r in recs} == {shown}
    assert not MACHINE_PATH.search(proc.stdout) and not MACHINE_PATH.search(json.dumps(recs, ensure_ascii=False))


@pytest.mark.slow
def test_bench_takes_several_folders_and_hides_a_company(tmp_path: Path) -> None:
    two = _two_companies(tmp_path / "two")
    third = tmp_path / "third"
    (third / "docs").mkdir(parents=True)
    shutil.copy(SAMPLE / "docs" / "2024 Q1 NWND.pdf", third / "docs" / "Globex 2024 Q1.pdf")
    shutil.copy(SAMPLE / "docs" / "2024 Q2 NWND.pdf", third / "docs" / "Initech_2024Q2_10Q.pdf")  # named by no question
    (third / "qna_data.csv").write_text(
        "Question,Source Docs,Question Type,Source Chunk Type,Answer\n"
        "What were net sales in the Europe region?,*Globex*,Single-Doc Single-Chunk RAG,Table,$412 million\n",
        encoding="utf-8")
    proc, recs = _bench(tmp_path, two, third, extra=("--hide", "Globex"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["company"] for r in recs].count("Globex") == 1 and len(recs) == 9
    assert "held out Globex" not in proc.stdout and "hidden from the tables: Globex" in proc.stdout
    assert "all 8 questions" in proc.stdout
    # retrieval is scoped to the named filings: one that no question names is not built (nor counted a company)
    assert "not built, as no question names them: Initech_2024Q2_10Q.pdf" in proc.stdout
    assert "built Initech" not in proc.stdout and "Initech (" not in proc.stdout


def test_held_out_setting_ties_fall_to_the_library_defaults() -> None:
    # The held-out report chooses full's rerank mode (and the document header) on the other companies; when
    # settings tie there, the library's default wins (no rerank stage; the first header given), not the first
    # mode measured.
    bench = _bench_module()
    names = ["full", "full:fuse", "full:off"]
    tie = [{"recall": {"flat": 0.0, "full": r, "full:fuse": r, "full:off": r}} for r in (1.0, 0.0)]
    assert bench.choose_mode(tie, names)[0] == "off"
    fuse_wins = [{"recall": {"flat": 0.0, "full": 0.0, "full:fuse": 1.0, "full:off": 0.0}}]
    assert bench.choose_mode(fuse_wins, names)[0] == "fuse"
    both = [f"{n}@{h}" for h in ("none", "both") for n in names]
    tie2 = [{"recall": {"flat": 0.0, **dict.fromkeys(both, 1.0)}}]
    assert bench.choose_setting(tie2, both)[:2] == ("none", "off")
    one = [{"recall": {"flat": 0.0, **dict.fromkeys(both, 0.0), "full:fuse@both": 1.0}}]
    assert bench.choose_setting(one, both)[:2] == ("both", "fuse")


def test_retriever_names_carry_the_table_text_mix_and_the_rerank_mode() -> None:
    # ``hybrid~soft`` and ``full~soft:off`` are read as retrievers of their own; the held-out report reads a
    # mix variant of full in the rerank mode chosen for full; a misspelt mix or mode stops the bench at once.
    bench = _bench_module()
    assert bench.parse_name("hybrid") == ("hybrid", "turns", "")
    assert bench.parse_name("hybrid~soft") == ("hybrid", "soft", "")
    assert bench.parse_name("full~none:off") == ("full", "none", "off")
    assert bench.parse_name("full:fuse") == ("full", "turns", "fuse")
    for bad, word in (("hybrid~sometimes", "sometimes"), ("full:quick", "quick"), ("full~soft:fast", "fast")):
        with pytest.raises(SystemExit, match=word):
            bench.parse_name(bad)
    names = ["hybrid", "hybrid~soft", "full", "full:off", "full~soft", "full~soft:off"]
    recs = [{"company": c, "recall": {"flat": 0.0, **dict.fromkeys(names, 1.0)}} for c in ("A", "B")]
    held = bench.heldout_report(recs, names, verbose=False)
    assert held["A"]["names"] == ["hybrid", "hybrid~soft", "full:off", "full~soft:off"]


@pytest.mark.slow
def test_bench_reads_upper_case_pdfs_keeps_moded_names_and_writes_valid_json(tmp_path: Path) -> None:
    # A filing named '.PDF' is read (not silently left out); '--out' in a folder not made yet is made; a question
    # whose answer holds no gold item is counted, left out of the rates and written as null (not a bare NaN);
    # names given only with a rerank mode (full:off) are read in the held-out report.
    folder = _two_companies(tmp_path / "two")
    (folder / "docs" / "ACME_10-Q_2024-06-30.pdf").rename(folder / "docs" / "ACME_10-Q_2024-06-30.PDF")
    with (folder / "qna_data.csv").open("a", encoding="utf-8", newline="") as f:
        csv.writer(f).writerow(["What is it?", "*ACME*", "Single-Doc Single-Chunk RAG", "Text", ""])  # no answer
    out = tmp_path / "new" / "recs.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_superrag.py"), "--part", "sec", "--data",
                           str(folder), "--db", str(tmp_path / "db"), "--out", str(out), "--retrievers",
                           "hybrid,full:off", "--budgets", "300", "--doc-header", "none"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def no_nan(token: str) -> None:
        raise AssertionError(f"--out holds {token}")

    recs = json.loads(out.read_text(encoding="utf-8"), parse_constant=no_nan)
    assert "ACME" in {r["company"] for r in recs} and "built ACME_10-Q_2024-06-30.PDF" in proc.stdout
    assert sum(r["recall"]["flat"] is None for r in recs) == 1
    assert "1 of 9 questions have no gold items" in proc.stdout
    assert "| full | " in proc.stdout  # full:off is read in the held-out summary
