"""Layout parsing of PDFs made in the test: headings, sections, furniture, columns, tables, figures, ToC,
and bad input (encrypted, zero pages, truncated, not a PDF, scanned page)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pymupdf")

from htmlrag.core.errors import InputError
from htmlrag.superrag.parse.document import parse_pdf
from htmlrag.superrag.parse.model import Paragraph
from htmlrag.testing import pdfs as mk
from tests.helpers.page_words import words_at


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    return parse_pdf(mk.report_pdf(tmp_path_factory.mktemp("rep") / "report.pdf"))


def test_headings_levels_and_sections(report) -> None:
    heads = [(h.level, h.text) for h in report.headings]
    assert (1, "1 Chapter about topic A") in heads
    assert (2, "1.1 Details of A") in heads
    assert (1, "3 Chapter about topic C") in heads
    assert report.title == "Widget Annual Report"
    sub = next(s for s in report.sections if s.title == "2.1 Details of B")
    parent = report.sections[sub.parent]
    assert parent.title == "2 Chapter about topic B"
    assert "Marker2." in " ".join(p.text for p in sub.paragraphs)


def test_repeated_header_and_page_numbers_are_removed(report) -> None:
    text = " ".join(p.text for s in report.sections for p in s.paragraphs) + " ".join(h.text for h in report.headings)
    assert "ACME Corp" not in text
    assert [p.printed for p in report.pages] == ["1", "2", "3"]


def test_table_rows_cells_html_and_caption(report) -> None:
    (t,) = report.tables
    assert t.page == 2
    assert t.rows == [["Region", "Revenue", "Units"], ["North", "1,234", "56"], ["South", "7,890", "12"]]
    assert t.html.startswith("<table><caption>Table 1: Revenue by region</caption><tr><th>Region</th>")
    assert "<td>7,890</td>" in t.html
    # the cells are not repeated as body paragraphs
    assert not any("7,890" in p.text for s in report.sections for p in s.paragraphs)


def test_figure_bbox_and_caption(report) -> None:
    (f,) = report.figures
    assert f.page == 3 and f.caption == "Figure 1: Widget sales chart"
    x0, y0, x1, y1 = f.bbox
    assert 148 <= x0 < x1 <= 452 and y1 - y0 > 100  # inside the placement box, aspect ratio kept


def test_two_columns_are_read_column_by_column(tmp_path: Path) -> None:
    doc = parse_pdf(mk.two_column_pdf(tmp_path / "cols.pdf"))
    order = [p.text.split()[0] for s in doc.sections for p in s.paragraphs]
    assert order == [f"LEFT{i}" for i in range(1, 7)] + [f"RIGHT{i}" for i in range(1, 7)]


def test_toc_page_maps_printed_to_physical_pages(tmp_path: Path) -> None:
    doc = parse_pdf(mk.toc_pdf(tmp_path / "toc.pdf"))
    assert doc.toc_source == "pages"
    assert [(e.title, e.printed_page, e.page) for e in doc.toc] == [
        ("Introduction", "1", 2), ("Methods", "2", 3), ("Results", "3", 4), ("Discussion", "4", 5)]
    # ToC lines are not body text
    assert not any("....." in p.text for s in doc.sections for p in s.paragraphs)


def test_outline_gives_toc_and_levels(tmp_path: Path) -> None:
    import pymupdf

    path = mk.report_pdf(tmp_path / "o.pdf", with_table=False, with_figure=False)
    d = pymupdf.open(path)
    d.set_toc([[1, "1 Chapter about topic A", 1], [2, "1.1 Details of A", 1], [3, "2.1 Details of B", 2]])
    d.save(tmp_path / "outlined.pdf")
    d.close()
    doc = parse_pdf(tmp_path / "outlined.pdf")
    assert doc.toc_source == "outline"
    levels = {h.text: (h.level, h.source) for h in doc.headings}
    assert levels["2.1 Details of B"] == (3, "outline")  # the outline's level wins over numbering depth


def test_scanned_page_warns_and_keeps_other_pages(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    doc = parse_pdf(mk.scanned_pdf(tmp_path / "scan.pdf"))
    assert doc.pages[1].scanned and not doc.pages[0].scanned
    assert any("page 2 has no text layer" in w and "scan.pdf" in w for w in doc.warnings)
    assert "page 2 has no text layer" in caplog.text
    assert any("normal page" in p.text for s in doc.sections for p in s.paragraphs)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: mk.encrypted_pdf(p), "encrypted"),
        (lambda p: mk.zero_page_pdf(p), "no pages"),
        (lambda p: mk.truncated_pdf(p, mk.report_pdf(p.with_name("src.pdf"))), "truncated"),
        (lambda p: (p.write_bytes(b"<html>not a pdf</html>"), p)[1], "not a PDF"),
    ],
    ids=["encrypted", "zero-pages", "truncated", "not-pdf"],
)
def test_bad_pdfs_raise_input_error_naming_the_file(tmp_path: Path, make, message: str) -> None:
    path = make(tmp_path / "bad.pdf")
    with pytest.raises(InputError) as exc:
        parse_pdf(path)
    assert message in str(exc.value) and "bad.pdf" in str(exc.value)


def test_encrypted_pdf_opens_with_password(tmp_path: Path) -> None:
    doc = parse_pdf(mk.encrypted_pdf(tmp_path / "enc.pdf"), password="user")
    assert "secret" in " ".join(p.text for s in doc.sections for p in s.paragraphs)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.pdf: file not found"):
        parse_pdf(tmp_path / "nope.pdf")


def test_a_page_of_small_amounts_is_not_a_contents_page(tmp_path: Path) -> None:
    path, _ = mk.small_amounts_pdf(tmp_path / "amounts.pdf")
    doc = parse_pdf(path)
    assert doc.toc_source == "none"
    assert len(doc.tables) == 1  # an unruled table of amounts, kept as a table
    assert doc.tables[0].rows[0] == ["Americas revenue", "412"] and doc.tables[0].rows[-1] == [
        "Total segment revenue", "322"]


@pytest.mark.parametrize("style", ["partial", "ruled", "strips"])
def test_table_keeps_its_headings_and_rows_outside_the_ruled_part(tmp_path: Path, style: str) -> None:
    """Filings rule or shade only part of a table: the detector's box starts below the column headings and the
    first rows, or finds only the shaded rows (a stack of one-row strips, the rows between them plain text).
    The table grows over those aligned rows (headings in the value columns), every row is split into the
    strips' columns (not one cell per text line), the rows leave the text flow (no duplicate), and the title and
    the paragraph above stay text."""
    path, truth = mk.statement_pdf(tmp_path / f"st-{style}.pdf", style=style)
    doc = parse_pdf(path)
    assert [t.rows for t in doc.tables] == truth["tables"]
    flow = "\n".join(i.text for s in doc.sections for i in s.items if isinstance(i, Paragraph))
    assert "July 1, 2023" not in flow and "Products" not in flow and "Net sales:" not in flow
    assert "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" in doc.headings[0].text
    assert "The following table shows net sales" in flow


@pytest.mark.parametrize("style", ["unruled", "shaded"])
def test_a_table_without_ruling_is_found_from_its_aligned_text(tmp_path: Path, style: str) -> None:
    """Statements set as aligned text only, or on fill-only strips the ruling detector does not see, are
    tables too: rows and columns as the truth, the rows leave the text flow, the title, the paragraph above and
    the note below stay text."""
    path, truth = mk.statement_pdf(tmp_path / f"st-{style}.pdf", style=style)
    doc = parse_pdf(path)
    assert [t.rows for t in doc.tables] == truth["tables"]
    flow = "\n".join(i.text for s in doc.sections for i in s.items if isinstance(i, Paragraph))
    assert "60,584" not in flow and "Net sales:" not in flow and "July 1, 2023" not in flow
    assert "The following table shows net sales" in flow and "Net sales rose in the third quarter" in flow
    assert [h.text for h in doc.headings][-1] == "Note 1 - Revenue"


_words = words_at


def test_aligned_text_tables_need_aligned_columns_of_amounts() -> None:
    """The text-table finder takes runs of aligned rows of amounts and nothing else: two columns of prose, a
    two-column list of words, phrases that straddle the columns, too few rows and rows already inside a table
    give no table; lone labels inside the run are rows, lone phrases at its ends are not."""
    from htmlrag.superrag.parse.tables import aligned_tables, text_rows

    def found(words, taken=frozenset()):
        return aligned_tables(text_rows(words), set(taken), 1, 612.0)

    rows = [("Products", "60,584", "63,355"), ("Services", "21,213", "19,604"), ("Total", "81,797", "82,959")]
    table = (_words(10, (60, "Net Sales by Category"))
             + _words(24, (380, "2023"), (480, "2022"))
             + _words(36, (60, "Net sales:"))
             + [w for i, r in enumerate(rows) for w in _words(48 + 12 * i, (60, r[0]), (380, r[1]), (480, r[2]))]
             + _words(90, (60, "See Note 2")))
    got = found(table)
    assert len(got) == 1
    assert got[0].rows == [["", "2023", "2022"], ["Net sales:", "", ""], *[list(r) for r in rows]]
    assert found(table, taken={4}) == []  # a row inside another table cuts the run below three rows
    assert found(table[: -len(_words(0, (60, "Total 81,797 82,959 See Note 2")))]) == []  # two rows of amounts

    prose = [w for i in range(5) for w in _words(
        100 + 12 * i, (60, "of revenue grew in 2023 because"), (320, "(2019-2023) 12.5% 3,400 7,800"), w=9.0)]
    assert found(prose) == []  # two columns of text: the value phrases are too wide, even when numbers
    names = [w for i, (a, b) in enumerate([("Chair", "Ann Lee"), ("Audit", "Bo Kim"), ("Risk", "Cy Ng")])
             for w in _words(100 + 12 * i, (60, a), (380, b))]
    assert found(names) == []  # words, not amounts
    ragged = (_words(100, (60, "A"), (380, "1,000"), (480, "2,000")) + _words(112, (60, "B"), (380, "3,000"), (480, "4,000"))
              + _words(124, (60, "C"), (390, "5,000 and 6,000 more")) + _words(136, (60, "D"), (380, "7"), (480, "8")))
    assert found(ragged) == []  # a phrase across two columns: text with gaps, not a table

    signs = [(60.0, 200.0, 95.0, 209.0, "Revenue"), (370.0, 200.0, 375.0, 209.0, "$"),
             (376.0, 200.0, 406.0, 209.0, "52,747"), (410.0, 200.0, 415.0, 209.0, "$"),
             (470.0, 200.0, 500.0, 209.0, "51,728")]  # the column's "$" set right after the amount before it
    assert [t for _, _, t in text_rows(signs)[0].phrases] == ["Revenue", "$52,747", "$51,728"]


def test_a_currency_sign_alone_at_the_column_edge_belongs_to_its_amount() -> None:
    """Statements that set ``$`` alone at a column's left edge, far from the amount, on the first and total rows
    only (Intel's 10-Q, a Workiva filing): the sign joins the amount after it, so every row has the same cells
    and the statement is found as one table with the sign in its amount cells (before, the sign rows had more
    phrases than the others, the columns did not line up and the table's text became paragraphs and headings)."""
    from htmlrag.superrag.parse.tables import aligned_tables, text_rows

    def row(y: float, label: str, a: str, b: str, sign: bool) -> list[tuple[float, float, float, float, str]]:
        words = _words(y, (40, label), (482, a), (551, b))
        if sign:
            words += [(445.0, y, 450.0, y + 9.0, "$"), (514.0, y, 519.0, y + 9.0, "$")]
        return words

    body = [("Desktop", "1,879", "2,641", True), ("Notebook", "3,407", "5,959", False),
            ("Other", "481", "722", False), ("Mobileye", "458", "394", False),
            ("Total net revenue", "11,715", "18,353", True), ("Operating income", "520", "2,722", True)]
    words = [w for i, (label, a, b, sign) in enumerate(body) for w in row(100 + 14 * i, label, a, b, sign)]
    assert [t for _, _, t in text_rows(words)[0].phrases] == ["Desktop", "$1,879", "$2,641"]
    got = aligned_tables(text_rows(words), set(), 1, 612.0)
    assert len(got) == 1
    assert got[0].rows[4] == ["Total net revenue", "$11,715", "$18,353"]
    assert all(len(r) == 3 for r in got[0].rows)

    # a lone line centred over the amounts just above ("Three Months Ended") heads the table as a column
    # heading; a lone line at the left margin above it ("Note 2 : Operating Segments") stays a heading
    above = _words(72, (40, "Note 2 : Operating Segments")) + _words(86, (470, "Three Months Ended"))
    got = aligned_tables(text_rows(above + words), set(), 1, 612.0)
    assert len(got) == 1 and got[0].rows[0] == ["", "Three Months Ended", ""]
    assert not any("Note 2" in c for r in got[0].rows for c in r)


def test_a_two_column_page_has_no_text_tables(tmp_path: Path) -> None:
    doc = parse_pdf(mk.two_column_pdf(tmp_path / "two.pdf"))
    assert doc.tables == []


def test_table_growth_stops_at_prose_headings_and_other_tables() -> None:
    """The row grower takes aligned rows next to a table and nothing else: a paragraph line or a lone heading
    at the outer end ends it, rows of another table are never taken, and a lone label between rows is kept."""
    from htmlrag.superrag.parse.tables import TextRow, grow, text_rows, to_cells

    def row(y: float, *cells: tuple[float, str]) -> list[tuple[float, float, float, float, str]]:
        words = []
        for x, text in cells:
            for w in text.split():
                words.append((x, y, x + 5.0 * len(w), y + 9.0, w))
                x += 5.0 * len(w) + 2.5
        return words

    words = (row(10, (60, "A paragraph of prose that runs across the whole width of the table and beyond it"))
             + row(30, (60, "Operating Expenses"))
             + row(45, (380, "July 1, 2023"), (480, "June 25, 2022"))
             + row(57, (60, "Net sales:"))
             + row(69, (60, "Products"), (380, "60,584"), (480, "63,355")))
    rows_ = text_rows(words)
    assert [len(r.phrases) for r in rows_] == [1, 1, 2, 1, 3]
    box = (56.0, 80.0, 556.0, 200.0)  # the ruled part starts below "Products"
    above, below = grow(box, rows_, set())
    assert [rows_[i].phrases[0][2] for i in above] == ["Products", "Net sales:", "July 1, 2023"]
    assert below == []
    assert grow(box, rows_, {4})[0] == []  # a row taken by another table stops the growth
    cols = [(56.0, 376.0), (376.0, 476.0), (476.0, 556.0)]
    assert to_cells(rows_[2], cols) == ["", "July 1, 2023", "June 25, 2022"]
    assert to_cells(TextRow((0, 0, 1, 1), [(390.0, 395.0, "$"), (420.0, 450.0, "7,442")]), cols) == ["", "$7,442", ""]


def test_table_growth_stops_at_a_short_line_of_prose_and_touching_fragments_join() -> None:
    """A lone phrase of 8+ words is prose even when narrow; fragments of one statement that touch after
    growing (same edges and columns) become one table, other neighbours stay apart."""
    from htmlrag.superrag.parse.model import TableItem
    from htmlrag.superrag.parse.tables import grow, join_touching, text_rows

    words = [(16.0 + 20 * i, 365.0, 32.0 + 20 * i, 375.0, w)
             for i, w in enumerate("The following table outlines maturities of our lease liabilities:".split())]
    words += [(16.0, 353.0, 60.0, 361.0, "Finance"), (469.0, 353.0, 490.0, 361.0, "3.2%"),
              (552.0, 353.0, 573.0, 361.0, "3.1%")]  # a row of the table above, not taken by it
    words += [(16.0, 388.0, 84.0, 396.0, "Year"), (433.0, 388.0, 490.0, 396.0, "Operating"),
              (522.0, 388.0, 573.0, 396.0, "Finance")]
    rows_ = text_rows(words)
    above, _ = grow((16.0, 400.0, 578.0, 505.0), rows_, set())
    assert [rows_[i].phrases[0][2] for i in above] == ["Year"]

    def t(y0: float, y1: float, rows: list[list[str]], x1: float = 578.0) -> TableItem:
        return TableItem(page=1, bbox=(16.0, y0, x1, y1), rows=rows, html="")

    a, b = t(100, 150, [["", "2022", "2021"], ["A", "1", "2"]]), t(156, 200, [["B", "3", "4"], ["C", "5", "6"]])
    joined = join_touching([a, b])
    assert len(joined) == 1 and joined[0].rows == a.rows + b.rows and joined[0].bbox == (16.0, 100, 578.0, 200)
    assert "<td>C</td>" in joined[0].html
    assert len(join_touching([a, t(180, 220, [["B", "3", "4"]])])) == 2  # too far apart
    assert len(join_touching([a, t(156, 200, [["B", "3"], ["C", "5"]])])) == 2  # other columns
    assert len(join_touching([a, t(156, 200, [["B", "3", "4"]], x1=400.0)])) == 2  # other edges


def test_a_failure_while_growing_keeps_the_detected_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Growing is an improvement on the detector's tables: if it fails, the page keeps the detected rows and
    the log names the page."""
    import htmlrag.superrag.parse.tables as tables

    def boom(*a, **k):
        raise ValueError("bad geometry")

    path, truth = mk.statement_pdf(tmp_path / "st.pdf", style="partial")
    monkeypatch.setattr(tables, "grow", boom)
    with caplog.at_level("WARNING"):
        doc = parse_pdf(path)
    assert [len(t.rows) for t in doc.tables] == [len(truth["tables"][0]) - 3]  # the ruled rows only
    assert "page 1: growing tables failed: bad geometry" in caplog.text
    assert "Products" in "\n".join(i.text for s in doc.sections for i in s.items if isinstance(i, Paragraph))


def test_headings_hang_under_their_outline_parent_named_in_short_or_long_form(tmp_path: Path) -> None:
    """Issue 35 (Intel's filing): the outline names headings in other words than the pages ("Statement of
    Income" for "Consolidated Statements of Income", "Basis of Presentation" for "Note 1: Basis of
    Presentation") and puts the notes under "Financial Statements", which no page prints. Nesting by level
    alone hung every note under the statement printed before it; now an outline-named heading hangs under the
    section of its outline parent, or at the top when that parent is not a heading of the text."""
    import pymupdf

    body = "The company reports its results each quarter and explains them here in plain words. " * 3
    d = pymupdf.open()
    for title, size in (("Forward-Looking Statements", 14), ("Consolidated Statements of Income", 18),
                        ("Notes to Financial Statements", 14)):
        page = d.new_page()
        page.insert_text((72, 90), title, fontsize=size, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 110, 520, 200), body, fontsize=10, fontname="helv")
        if title.startswith("Notes"):
            page.insert_text((72, 230), "Note 1: Basis of Presentation", fontsize=11, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(72, 240, 520, 330), body, fontsize=10, fontname="helv")
            page.insert_text((72, 360), "Management's Discussion and Analysis", fontsize=14, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(72, 370, 520, 460), body, fontsize=10, fontname="helv")
    d.set_toc([[1, "Forward-Looking Statements", 1], [1, "Financial Statements", 2], [2, "Statement of Income", 2],
               [2, "Notes to Financial Statements", 3], [3, "Basis of Presentation", 3],
               [1, "Management's Discussion and Analysis of Financial Condition and Results of Operations", 3]])
    d.save(tmp_path / "outlined.pdf")
    d.close()
    doc = parse_pdf(tmp_path / "outlined.pdf")
    secs = {s.title: s for s in doc.sections}
    parent = {t: (doc.sections[s.parent].title if s.parent is not None else None) for t, s in secs.items()}
    assert {t: secs[t].level for t in secs} == {"Forward-Looking Statements": 1, "Consolidated Statements of Income": 2,
                                                "Notes to Financial Statements": 2, "Note 1: Basis of Presentation": 3,
                                                "Management's Discussion and Analysis": 1}
    assert parent == {"Forward-Looking Statements": None, "Consolidated Statements of Income": None,
                      "Notes to Financial Statements": None,
                      "Note 1: Basis of Presentation": "Notes to Financial Statements",
                      "Management's Discussion and Analysis": None}
    assert {h.source for h in doc.headings} == {"outline"}
