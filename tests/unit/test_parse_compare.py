"""scripts/parse_compare.py: the parse of PDFs dumped and two dumps compared (how the parser rounds of issue 35 were
checked on 75 filings before and after each rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag.testing import pdfs as mk
from scripts.parse_compare import compare, main


@pytest.fixture(scope="module")
def dumped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("pc")
    pdfs = [mk.report_pdf(d / "report.pdf"), mk.toc_pdf(d / "contents.pdf")]
    out = d / "dump.json"
    assert main(["dump", str(out), *map(str, pdfs), "--workers", "1"]) == 0
    return out, json.loads(out.read_text(encoding="utf-8"))


def test_a_dump_holds_each_files_sections_tables_and_text(dumped: tuple[Path, dict]) -> None:
    _, data = dumped
    assert set(data) == {"report.pdf", "contents.pdf"}
    for entry in data.values():
        assert entry["sections"] and {"title", "level", "page", "parent", "source", "items", "paragraphs"} <= set(
            entry["sections"][0])
        assert isinstance(entry["tables"], list) and len(entry["paragraphs"]) == 12
    assert data["report.pdf"]["tables"]  # the generated report has a table


def test_a_dump_compared_with_itself_shows_no_change_and_a_changed_one_shows_what_changed(
        dumped: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, data = dumped
    rows, total = compare(data, data)
    assert rows == [] and total["files"] == 0
    after = json.loads(json.dumps(data))
    secs = after["report.pdf"]["sections"]
    gone = secs.pop()  # a section lost
    secs.append({**gone, "title": gone["title"] + " (new)"})  # another appears
    first = next(s for s in secs if s["parent"] is not None)
    first["parent"] = "somewhere else"
    n_tables = len(after["report.pdf"]["tables"])
    after["report.pdf"]["tables"] = []
    rows, total = compare(data, after)
    assert [(r["file"], r["gone"], r["new"], r["parent_changed"], r["tables_gone"], r["tables_new"])
            for r in rows] == [("report.pdf", 1, 1, 1, n_tables, 0)]
    assert total["files"] == 1 and compare(data, after, only="contents")[0] == []
    changed = tmp_path / "after.json"
    changed.write_text(json.dumps(after), encoding="utf-8")
    assert main(["diff", str(path), str(changed), "--show", "5"]) == 0
    out = capsys.readouterr().out
    assert "report.pdf" in out and "total: 1 files changed; sections gone 1, new 1, parent changed 1" in out
    assert f"+{gone['level']} p{gone['page']} {gone['title'][:60]}" in out
    table = data["report.pdf"]["tables"][0]  # a table gone is printed with its page and first rows
    assert f"-table p{table['page']} ({table['rows']} rows) {table['text'][:40]}" in out
    assert f"tables gone {n_tables}, new 0" in out


def test_bad_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(tmp_path / "out.json"), str(tmp_path / "missing.pdf")]) == 2
    assert "not a file" in capsys.readouterr().err and not (tmp_path / "out.json").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["diff", str(bad), str(bad)]) == 2
    assert f"cannot read the dump {bad}" in capsys.readouterr().err
