"""The harness's sec-10-q loader (:func:`htmlrag.data.pdfqa.load_sec10q`) on folders it was not written for:
PDFs whatever the case of ``.pdf``, ``Source Docs`` patterns read as the SuperRAG bench reads them (one shared
function), companies from :func:`~htmlrag.superrag.build.owners.owner_of`, and malformed CSV files refused with
one line that names the file and the row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.data.pdfqa import load_sec10q, match_source_docs, pdf_files, read_qna

pytest.importorskip("pymupdf")

HEADER = ("Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer")
Q = "Single-Doc Single-Chunk RAG"


def _pdf(path: Path, text: str) -> Path:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(path))
    doc.close()
    return path


def _folder(root: Path, files: list[str], rows: list[list[str]], header: tuple[str, ...] = HEADER) -> Path:
    for f in files:
        _pdf(root / "docs" / f, f"{f}: revenue was $1,234 million.")
    with (root / "qna_data.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return root


def test_pdfs_are_found_whatever_the_case_of_their_suffix(tmp_path: Path) -> None:
    root = _folder(tmp_path, ["2023 Q1 AAPL.PDF", "2023 Q1 MSFT.pdf"],
                   [["Apple revenue?", "*AAPL*", Q, "Text", "$1,234 million"]])
    (root / "docs" / "notes.txt").write_text("not a filing")
    assert [p.name for p in pdf_files(root / "docs")] == ["2023 Q1 AAPL.PDF", "2023 Q1 MSFT.pdf"]
    (ex,) = load_sec10q(root)
    assert [p.name for p in ex.pages] == ["2023 Q1 AAPL.PDF"] and ex.metadata["domain"] == "AAPL"


def test_source_docs_rules() -> None:
    names = ["2023 Q1 AAPL.pdf", "2023 Q1 MSFT.pdf", "[draft] 2023 Q1 AAPL.pdf", "2023 Q2 aapl.pdf"]
    # a file name (with or without .pdf) is literal: its brackets are no character class
    assert match_source_docs("[draft] 2023 Q1 AAPL.pdf", names, "x") == ["[draft] 2023 Q1 AAPL.pdf"]
    assert match_source_docs(" 2023 Q1 msft ", names, "x") == ["2023 Q1 MSFT.pdf"]
    # else a glob, case-insensitive, spaces stripped; several patterns separated by commas each match
    assert match_source_docs("  *aapl*  ", names, "x") == ["2023 Q1 AAPL.pdf", "[draft] 2023 Q1 AAPL.pdf",
                                                          "2023 Q2 aapl.pdf"]
    assert match_source_docs("*Q2*, *MSFT*", names, "x") == ["2023 Q1 MSFT.pdf", "2023 Q2 aapl.pdf"]
    assert match_source_docs("", names, "x") == names  # no pattern: every filing
    with pytest.raises(InputError, match=r"^q\.csv: row 3: Source Docs '\*GOOG\*' matches no filing$"):
        match_source_docs("*MSFT*, *GOOG*", names, "q.csv: row 3")


def test_a_pattern_that_names_no_filing_is_an_error_and_companies_come_from_owner_of(tmp_path: Path) -> None:
    root = _folder(tmp_path / "a", ["2023 Q1 F.pdf", "AAPL 2023 Q1 10-Q-A.pdf", "10-Q.pdf"], [
        ["Ford revenue?", "2023 Q1 F.pdf", Q, "Text", "$1,234 million"],
        ["Apple revenue?", "*aapl*", Q, "Text", "$1,234 million"],
        ["Whose revenue?", "10-Q", Q, "Text", "$1,234 million"],
        ["Both?", "*F.pdf, *AAPL*", "Multi-Doc RAG", "Text", "$1,234 million"]])
    domains = [e.metadata["domain"] for e in load_sec10q(root)]
    assert domains == ["F", "AAPL", "?", "AAPL+F"]  # not 'pdf'/'10-Q-A'/'10-Q.pdf' (the last word of the name)
    bad = _folder(tmp_path / "b", ["2023 Q1 AAPL.pdf"], [["Apple?", "*AAPL*", Q, "Text", "$1"],
                                                         ["Apple?", "2023 Q9 AAPL.pdf", Q, "Text", "$1"]])
    with pytest.raises(InputError, match=r"qna_data\.csv: row 3: Source Docs '2023 Q9 AAPL\.pdf' matches no filing"):
        load_sec10q(bad)


@pytest.mark.parametrize(("write", "message"), [
    (lambda p: p.write_text("Question,Source Docs\nWhat?,*AAPL*\n", encoding="utf-8"),
     r"qna_data\.csv: no 'Answer' column \(the header has 'Question', 'Source Docs'\)"),
    (lambda p: p.write_text("Question,Source Docs,Answer\nWhat?,*AAPL*,$1\nWhat else?,*AAPL*\n", encoding="utf-8"),
     r"qna_data\.csv: row 3: 2 fields, the header has 3"),
    (lambda p: p.write_text("Question,Source Docs,Answer\nWhat?,*AAPL*,$1,234 million\n", encoding="utf-8"),
     r"qna_data\.csv: row 2: 4 fields, the header has 3 \(a field with a comma must be quoted\)"),
    (lambda p: p.write_bytes("Question,Source Docs,Answer\nWhat é?,*AAPL*,$1\n".encode("latin-1")),
     r"qna_data\.csv: not UTF-8 text"),
    (lambda p: p.write_text("", encoding="utf-8"), r"qna_data\.csv: empty"),
])
def test_a_malformed_csv_is_one_line_naming_the_file_and_row(tmp_path: Path, write, message: str) -> None:
    _pdf(tmp_path / "docs" / "2023 Q1 AAPL.pdf", "Apple")
    write(tmp_path / "qna_data.csv")
    with pytest.raises(InputError, match=message) as info:
        load_sec10q(tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(InputError, match=message):
        read_qna(tmp_path / "qna_data.csv")


def test_quoted_fields_crlf_and_bom_are_read(tmp_path: Path) -> None:
    path = tmp_path / "qna_data.csv"
    path.write_bytes('\ufeffQuestion,Answer\r\n"Net sales, ""total""?","$1,234\r\nmillion"\r\n\r\n'.encode())
    assert read_qna(path) == [{"Question": 'Net sales, "total"?', "Answer": "$1,234\r\nmillion"}]
