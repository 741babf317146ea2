"""Section structure that the contents page and the labels carry beyond fonts (issue 35, tenth round): a line's
box is where its text is, a contents page's labelled group lines are entries, and a heading that its style
alone makes a sibling of a part or a note nests in it by label. Found on NVIDIA's section trees (no question
read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.superrag.parse import headings as hd
from htmlrag.superrag.parse.document import _sections
from htmlrag.superrag.parse.lines import page_lines
from htmlrag.superrag.parse.model import Line, Paragraph, ParsedDocument, TocEntry
from htmlrag.superrag.parse.toc import contents_entries, detected_toc


def _span(text: str, x0: float, y: float, size: float = 9.0, font: str = "Arial") -> dict:
    return {"text": text, "bbox": (x0, y, x0 + 5.0 * len(text), y + size + 1), "size": size, "font": font,
            "flags": 0}


def test_a_line_box_is_where_its_text_is() -> None:
    """A span of spaces before a line's text (a no-break space in an empty table cell) set its left edge:
    NVIDIA's contents rows "c) Condensed Consolidated Balance Sheets" began 58 points left of the rows "a) ..."
    printed at the same place, and read as another indentation."""
    block = {"type": 0, "lines": [{"bbox": (22, 100, 400, 110), "spans": [
        _span("\u00a0", 22, 100), _span("c) Condensed Consolidated Balance Sheets", 80, 100)]}]}
    (line,) = page_lines({"blocks": [block]}, 1)
    assert line.text == "c) Condensed Consolidated Balance Sheets" and line.bbox[0] == 80
    blank = {"type": 0, "lines": [{"bbox": (22, 100, 30, 110), "spans": [_span("\u00a0 ", 22, 100)]}]}
    assert page_lines({"blocks": [blank]}, 1) == []  # a line of spaces only is still no line


def _ln(text: str, y: float, x: float, *, bold: bool = False, size: float = 9.0) -> Line:
    return Line(page=2, bbox=(x, y, x + 5.0 * len(text), y + size + 1), text=text, size=size, bold=bold, block=0)


def _nvidia_contents() -> list[Line]:
    """NVIDIA's 10-Q contents: a centred "PART I" and an "Item 1." without page numbers over the statements."""
    rows = [("TABLE OF CONTENTS", 258, None, True), ("PART I : FINANCIAL INFORMATION", 237, None, True),
            ("Item 1. Financial Statements (Unaudited)", 22, None, False),
            ("a) Condensed Consolidated Statements of Income", 80, "3", False),
            ("b) Condensed Consolidated Balance Sheets", 80, "5", False),
            ("c) Notes to Condensed Consolidated Financial Statements", 80, "9", False),
            ("Item 2. Management's Discussion and Analysis", 22, "25", False),
            ("Item 4. Controls and Procedures", 22, "34", False),
            ("PART II : OTHER INFORMATION", 244, None, True), ("Item 1. Legal Proceedings", 22, "34", False),
            ("Item 6. Exhibits", 22, "46", False), ("Signature", 22, "47", False)]
    out = []
    for i, (text, x, label, bold) in enumerate(rows):
        out.append(_ln(text, 60.0 + 14 * i, x, bold=bold))
        if label:
            out.append(_ln(label, 60.0 + 14 * i, 581))
    return out


def test_labelled_group_lines_of_a_contents_page_are_entries_without_a_page() -> None:
    """Filings print a part or an item without a page number when entries under it follow. They were no entries:
    the statements had no parent in the ToC, and the items of the text sat beside their part. A centred part
    line takes the contents' left edge (centring is no indentation)."""
    lines = _nvidia_contents()
    titles = [t for _, t, _ in contents_entries(lines)]
    assert titles[:3] == ["PART I : FINANCIAL INFORMATION", "Item 1. Financial Statements (Unaudited)",
                          "a) Condensed Consolidated Statements of Income"]
    assert "TABLE OF CONTENTS" not in titles  # the title names the page; it is no entry
    toc = detected_toc({2: lines}, {n: str(n) for n in range(1, 60)}, 60)
    got = [(e.level, e.title[:9], e.page) for e in toc]
    assert got == [(1, "PART I : ", None), (2, "Item 1. F", None), (3, "a) Conden", 3), (3, "b) Conden", 5),
                   (3, "c) Notes ", 9), (2, "Item 2. M", 25), (2, "Item 4. C", 34), (1, "PART II :", None),
                   (2, "Item 1. L", 34), (2, "Item 6. E", 46), (1, "Signature", 47)], got
    # a page that does not name itself keeps only its rows (its other lines may be a statement's title)
    assert next(t for _, t, _ in contents_entries(lines[1:])) == "a) Condensed Consolidated Statements of Income"


def _head(text: str, page: int, size: float = 9.0) -> tuple[str, list[Line]]:
    return "head", [Line(page=page, bbox=(50, 60, 300, 60 + size), text=text, size=size, bold=True, block=0)]


def _para(page: int) -> tuple[str, Paragraph]:
    return "para", Paragraph(page=page, bbox=(50, 100, 500, 140), text="The company sells widgets.")


def test_a_heading_its_style_makes_a_sibling_of_a_note_nests_in_it_by_label() -> None:
    """NVIDIA sets its notes in 9.9 pt and their sub-headings ("Basis of Presentation") in 9.0 pt; each style was
    placed by its distance to another style the contents names, and both came out at one level: the note's
    sub-headings were its siblings. A heading at the level of an open labelled section whose label ranks above
    its own nests in it; the next labelled heading of the same rank is a sibling again."""
    notes = "NOTES TO CONDENSED CONSOLIDATED FINANCIAL STATEMENTS"
    flow = [_head("WHERE YOU CAN FIND MORE INFORMATION", 2, 9.9), _para(2),
            _head("ITEM 1. FINANCIAL STATEMENTS", 3, 9.9), _head(notes, 9), _head("Note 1 - Summary", 9, 9.9),
            _head("Basis of Presentation", 9), _para(9), _head("Fiscal Year", 9), _para(9),
            _head("Note 2 - Leases", 10, 9.9), _para(10), _head("Operating Lease", 10), _para(10)]
    toc = [TocEntry(level=1, title="Item 1. Financial Statements", printed_page="3", page=3),
           TocEntry(level=2, title=notes, printed_page="9", page=9)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    parents = [(s.title, title.get(s.parent), s.level) for s in sections[2:]]
    assert parents == [(notes, "ITEM 1. FINANCIAL STATEMENTS", 2), ("Note 1 - Summary", notes, 3),
                       ("Basis of Presentation", "Note 1 - Summary", 3), ("Fiscal Year", "Note 1 - Summary", 3),
                       ("Note 2 - Leases", notes, 3), ("Operating Lease", "Note 2 - Leases", 3)], parents


def test_a_part_the_contents_do_not_list_holds_its_items() -> None:
    """Contents that list the items at the top and print no part entry gave the text's "PART II" and its items
    one level: the items were siblings of their part. An unlabelled heading after a part ("Signatures") and a
    heading set larger than the part stay siblings."""
    toc = [TocEntry(level=1, title=t, printed_page=str(p), page=p) for t, p in
           [("Item 1. Legal Proceedings", 30), ("Item 6. Exhibits", 31), ("Signatures", 32)]]
    flow = [_head("PART II. OTHER INFORMATION", 30), _head("ITEM 1. LEGAL PROCEEDINGS", 30), _para(30),
            _head("Item 6. Exhibits", 31), _para(31), _head("Signatures", 32), _para(32)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    assert [title.get(s.parent) for s in sections] == [None, "PART II. OTHER INFORMATION",
                                                       "PART II. OTHER INFORMATION", None]
    # Apple: the contents list "Part I" (no page), a title the text's part heading does not match, over the items
    toc = [TocEntry(level=1, title="Part I", printed_page="", page=None)] + [
        TocEntry(level=2, title=t, printed_page=str(p), page=p) for t, p in
        [("Item 1. Financial Statements", 4), ("Item 2. Management's Discussion", 17), ("Item 4. Controls", 22)]]
    flow = [_head("PART I \u2014 FINANCIAL INFORMATION", 4), _head("Item 1. Financial Statements", 4), _para(4),
            _head("Item 2. Management's Discussion", 17), _para(17), _head("Item 4. Controls", 22), _para(22)]
    _, sections = _sections(flow, toc)
    assert [s.parent for s in sections] == [None, 0, 0, 0], [(s.title, s.level, s.parent) for s in sections]
    # 3M: the items nest in the text's part at their own level, so what the ToC and the fonts put under an
    # item stays there, and the next part is no child of the last item
    toc = [TocEntry(level=lvl, title=t, printed_page=str(p), page=p) for lvl, t, p in
           [(1, "Item 5. Market", 18), (1, "Item 7. Management's Discussion", 19), (2, "Results of Operations", 27),
            (1, "Item 10. Directors", 140)]]
    flow = [_head("PART II", 18, 11.0), _head("Item 5. Market", 18), _para(18),
            _head("Item 7. Management's Discussion", 19), _para(19), _head("Net Sales:", 19, 8.0), _para(19),
            _head("RESULTS OF OPERATIONS", 27), _para(27), _head("PART III", 140, 11.0),
            _head("Item 10. Directors", 140), _para(140)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    assert [(s.title, title.get(s.parent)) for s in sections] == [
        ("PART II", None), ("Item 5. Market", "PART II"), ("Item 7. Management's Discussion", "PART II"),
        ("Net Sales:", "Item 7. Management's Discussion"), ("RESULTS OF OPERATIONS", "Item 7. Management's Discussion"),
        ("PART III", None), ("Item 10. Directors", "PART III")], [(s.title, s.level, s.parent) for s in sections]
    bigger = [_head("Note 3 - Debt", 5), _para(5), _head("Liquidity", 6, 12.0), _para(6)]
    _, sections = _sections(bigger, [TocEntry(level=2, title=t, printed_page="", page=None)
                                     for t in ("Note 3 - Debt", "Liquidity")])
    assert [s.parent for s in sections] == [None, None]


def test_a_unit_line_before_the_columns_dates_is_no_heading() -> None:
    """Intel sets a statement's unit and its columns' dates on one bold line ("(In Millions; Unaudited) Apr 1,
    2023 Apr 2, 2022") where no table was found under it; it opened a section at the deepest level. A unit alone
    and dates alone were table text already; a heading that begins with an enumerator stays one."""
    from htmlrag.superrag.parse.headings import table_text

    for text in ("(In Millions; Unaudited) Apr 1, 2023 Apr 2, 2022", "(In Millions) Apr 1, 2023 Dec 31, 2022",
                 "(In Millions, Except Per Share Amounts) Apr 1, 2023 Apr 2, 2022", "(In millions)"):
        assert table_text(text), text
    for text in ("(a) Basis of Presentation", "(1) Overview", "Three Months Ended", "Revenue (Note 3)"):
        assert not table_text(text), text


def test_the_html_page_nests_sections_by_the_tree_not_by_level() -> None:
    """A part and the items nested in it by label share a level; the HTML page (HtmlRAG's input for PDFs) nested
    sections by level, so an item closed its part's ``<section>``. It follows the section tree now, headings
    tagged by their depth."""
    from htmlrag.superrag.to_html import document_html

    toc = [TocEntry(level=1, title=t, printed_page=str(p), page=p)
           for t, p in [("Item 1. Legal Proceedings", 30), ("Item 2. Sales", 31)]]
    flow = [_head("PART II. OTHER INFORMATION", 30), _head("Item 1. Legal Proceedings", 30), _para(30),
            _head("Item 2. Sales", 31), _para(31), _head("PART III", 40), _para(40)]
    headings, sections = _sections(flow, toc)
    doc = ParsedDocument(path="x.pdf", doc_id="d", title="t", pages=[], headings=headings, sections=sections,
                         tables=[], figures=[], toc=toc, toc_source="pages")
    page = document_html(doc)
    body = page[page.index("<body>"):]
    assert body.count("<section>") == body.count("</section>") == 4
    assert ("<section><h1>PART II. OTHER INFORMATION</h1><section><h2>Item 1. Legal Proceedings</h2><p>"
            in body), body
    assert "</section><section><h2>Item 2. Sales</h2>" in body and "</section></section><section><h1>PART III" in body



def test_an_indented_row_that_reaches_the_page_numbers_is_not_centred() -> None:
    """Pfizer sets each contents entry as one line from its indentation to the page number at the right edge
    (dot leaders between); an indented row's centre is then near the contents' centre, and a first version of
    the centring rule moved every indented entry to the left edge."""
    rows = [("PART I", 18), ("ITEM 1. BUSINESS", 18), ("About Pfizer", 34), ("Raw Materials", 34),
            ("ITEM 1A. RISK FACTORS", 18)]
    lines = [_ln("TABLE OF CONTENTS", 40, 263, bold=True)]
    for i, (text, x) in enumerate(rows):
        lines.append(Line(page=2, bbox=(x, 60.0 + 14 * i, 593, 70.0 + 14 * i), text=f"{text} {3 + i}", size=7.1,
                          bold=False, block=0))
    assert [x for x, _, _ in contents_entries(lines)] == [18, 18, 34, 34, 18]


def test_a_sibling_placed_by_the_contents_takes_no_later_heading_with_it() -> None:
    """Pfizer's risk factors hold a "Research and Development" whose text is that of an entry under Item 1 in the
    contents; the ToC put it there, and the risk factors set after it in its style followed it to Item 1 (the
    sibling rule of the tenth round's first version). A later heading stays in the section its level gives."""
    toc = [TocEntry(level=1, title="PART I", printed_page="9", page=9),
           TocEntry(level=2, title="ITEM 1. BUSINESS", printed_page="9", page=9),
           TocEntry(level=3, title="Research and Development", printed_page="11", page=11),
           TocEntry(level=2, title="ITEM 1A. RISK FACTORS", printed_page="19", page=19)]
    flow = [_head("PART I", 9, 10.0), _head("ITEM 1. BUSINESS", 9), _head("RESEARCH AND DEVELOPMENT", 11, 8.0),
            _para(11), _head("ITEM 1A. RISK FACTORS", 19), _head("RESEARCH AND DEVELOPMENT", 21, 8.0), _para(21),
            _head("GLOBAL OPERATIONS", 21, 8.0), _para(21)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    assert title.get(sections[-1].parent) == "ITEM 1A. RISK FACTORS", [(s.title, s.level, s.parent) for s in sections]


def test_a_title_printed_again_elsewhere_does_not_take_its_entry() -> None:
    """An entry stands for one heading. Pfizer's risk factor "Research and Development" (page 21) took the entry
    of Item 1's sub-section of that name (page 11), and that entry's parent with it: the risk factor hung under
    Item 1. Now the entry goes to the heading on its page; the risk factor is placed by its level."""
    toc = [TocEntry(level=1, title="PART I", printed_page="9", page=9),
           TocEntry(level=2, title="ITEM 1. BUSINESS", printed_page="9", page=9),
           TocEntry(level=3, title="Research and Development", printed_page="11", page=11),
           TocEntry(level=2, title="ITEM 1A. RISK FACTORS", printed_page="19", page=19)]
    flow = [_head("PART I", 9, 10.0), _head("ITEM 1. BUSINESS", 9), _head("RESEARCH AND DEVELOPMENT", 11, 8.0),
            _para(11), _head("ITEM 1A. RISK FACTORS", 19), _head("RESEARCH AND DEVELOPMENT", 21, 8.0), _para(21)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    got = [(s.title, title.get(s.parent), s.page) for s in sections]
    assert got[2] == ("RESEARCH AND DEVELOPMENT", "ITEM 1. BUSINESS", 11), got
    assert got[4] == ("RESEARCH AND DEVELOPMENT", "ITEM 1A. RISK FACTORS", 21), got


def test_an_entry_takes_the_heading_on_its_page_first() -> None:
    """JPMorgan prints "Credit derivatives" in its MD&A (page 62) before the note of that name (page 110), the
    page of the entry: the note takes it, though it comes later. A heading whose entry is off its page (a
    printed page mapped one page early) still takes it when no heading of its text is on that page; a third
    heading of a text with two entries gets none."""
    def head(text: str, page: int) -> tuple[list[Line], float]:
        return [Line(page=page, bbox=(50, 60, 300, 69), text=text, size=9.0, bold=True, block=0)], 9.0

    outline = [(1, "Management's discussion", 40), (2, "Credit derivatives", 110), (1, "Item 2. Properties", 17),
               (2, "Overview", 5), (2, "Overview", 30)]
    heads = [head("Credit derivatives", 62), head("Credit Derivatives", 110), head("ITEM 2. PROPERTIES", 18),
             head("OVERVIEW", 29), head("Overview", 6), head("Overview", 50)]
    assert hd.outline_index(heads, outline) == [None, 1, 2, 4, 3, None]


def test_a_smaller_heading_at_its_sections_level_nests_in_it() -> None:
    """JPMorgan's segment headings (12 pt capitals) take the contents' level 4; the 10 pt sub-headings under them,
    which no entry names, came out at level 4 by their style's distance to another style, and were the segments'
    siblings. A heading its font placed, set at least a point smaller than the section of its level before it,
    nests in it, and so do the headings of its level after it; a heading set as large does not, nor one the
    contents or its numbering placed."""
    from htmlrag.superrag.parse.document import _label_parent
    from htmlrag.superrag.parse.model import Heading, Section

    def sec(title: str, level: int, size: float, parent: int | None, source: str = "outline") -> Section:
        return Section(title, level, 20, Heading(20, (50, 60, 300, 72), title, level, size, source), parent=parent)

    def head(title: str, size: float, source: str = "font") -> Heading:
        return Heading(20, (50, 90, 300, 100), title, 4, size, source)

    sections = [sec("BUSINESS SEGMENT RESULTS", 3, 12.0, None), sec("CONSUMER & COMMUNITY BANKING", 4, 12.0, 0)]
    assert _label_parent(sections, head("Selected income statement data", 10.0), set(), 0) == 1
    sections.append(sec("Selected income statement data", 4, 10.0, 1, "font"))
    assert _label_parent(sections, head("Quarterly results", 10.0), set(), 0) == 1  # its sibling's section
    assert _label_parent(sections[:2], head("Segment results", 11.5), set(), 0) is None  # half a point: a sibling
    assert _label_parent(sections[:2], head("Selected metrics", 10.0, "outline"), set(), 0) is None
    assert _label_parent(sections[:2], head("2.1 Details", 10.0, "numbering"), set(), 0) is None
    # a part set smaller than a cover's company name at its level stays out of it (its label ranks above)
    cover = [Section("JOHNSON & JOHNSON", 1, 1, Heading(1, (50, 60, 300, 80), "JOHNSON & JOHNSON", 1, 20.0, "font"))]
    assert _label_parent(cover, Heading(3, (50, 60, 300, 72), "PART I", 1, 12.0, "font"), set()) is None


def test_a_heading_set_like_an_item_but_placed_above_it_nests_in_it() -> None:
    """Corning prints no contents: levels come from fonts, one style at a time, and its MD&A sections
    ("OVERVIEW", capitals set like "Item 7.") ranked above the item's style; they left the item for the part
    before it and the item held nothing. A heading its font placed above a section whose label ranks above its
    own, set no larger than that section's heading, nests in it; set larger, or placed by the contents, it does
    not; a part's label (which ranks above an item's) keeps it out."""
    from htmlrag.superrag.parse.document import _label_parent
    from htmlrag.superrag.parse.model import Heading, Section

    def sec(title: str, level: int, parent: int | None, size: float = 9.0) -> Section:
        return Section(title, level, 20, Heading(20, (50, 60, 300, 72), title, level, size, "font"), parent=parent)

    def head(title: str, size: float = 9.0, source: str = "font", level: int = 4) -> Heading:
        return Heading(23, (50, 90, 300, 100), title, level, size, source)

    sections = [sec("PART II", 3, None, 12.0), sec("Item 6. [Reserved]", 6, 0), sec("Item 7. Management's Discussion", 6, 0)]
    assert _label_parent(sections, head("OVERVIEW"), set(), 0) == 2
    assert _label_parent(sections, head("OVERVIEW", 10.0), set(), 0) != 2  # set larger than the item: the part's
    assert _label_parent(sections, head("OVERVIEW", source="outline"), set(), 0) != 2
    assert _label_parent(sections, head("PART III", 12.0), set(), 0) is None
    assert _label_parent(sections, head("Note 1 - Summary", 9.0), set(), 0) == 2  # a note in an item
    # the next heading of its level, after the item's sub-sections, joins it there (through its sibling)
    sections += [sec("OVERVIEW", 4, 2), sec("2022 Results", 6, 3)]
    assert _label_parent(sections, head("RESULTS OF OPERATIONS"), set(), 0) == 2
    # a section on a closed page (a cover, a contents page) takes nothing after its page
    assert _label_parent(sections[:3], head("OVERVIEW"), {20}, 0) is None

    # through _sections: no contents, the capitals style ranked above the item's
    flow = [_head("PART II", 21, 12.0), _head("Item 6. [Reserved]", 22), _para(22),
            _head("Item 7. Management's Discussion", 23), _head("OVERVIEW", 23), _para(23),
            _head("2022 Results", 24, 8.5), _para(24), _head("RESULTS OF OPERATIONS", 24), _para(24)]
    _, sections = _sections(flow, [])
    title = {i: s.title for i, s in enumerate(sections)}
    assert [(s.title, title.get(s.parent)) for s in sections] == [
        ("PART II", None), ("Item 6. [Reserved]", "PART II"), ("Item 7. Management's Discussion", "PART II"),
        ("OVERVIEW", "Item 7. Management's Discussion"), ("2022 Results", "OVERVIEW"),
        ("RESULTS OF OPERATIONS", "Item 7. Management's Discussion")], [(s.title, s.level, s.parent) for s in sections]


def _page(number: int, lines: list[tuple[str, float, bool]]) -> object:
    from htmlrag.superrag.parse.document import _Page
    from htmlrag.superrag.parse.model import PageInfo

    out = [Line(page=number, bbox=(50, 60 + 14 * i, 560, 60 + 14 * i + size), text=text, size=size, bold=bold, block=i)
           for i, (text, size, bold) in enumerate(lines)]
    return _Page(PageInfo(number, 612, 792, sum(len(t) for t, _, _ in lines)), out, [], [])


def test_a_page_set_in_larger_type_than_the_report_tells_its_headings_from_its_own_body() -> None:
    """Exhibits bound into a 10-K are often set larger than the report (a plan at 10.8 pt after a report at 9 pt:
    American Express, MGM, Johnson & Johnson, Boeing, Corning, 3M, Nike). Told from the report's body, each of
    their lines read as a heading set large and each numbered clause as a numbered heading. A page whose running
    text is set larger than the document's body takes its own; a page set smaller keeps the document's (a line of
    the report's size is no heading there), and a page with too little text to tell keeps the page before's."""
    from htmlrag.superrag.parse.document import ParseOptions, _page_body, _reading_flow

    text = "the Committee approved the amendment of the plan with effect from the first day of the"
    clause = "(g) On November 19, 2007, the Compensation and Benefits Committee approved the First Amendment"
    report = _page(1, [("Item 7. Management's Discussion", 9.0, True)] + [(text, 9.0, False)] * 12)
    exhibit = _page(2, [("AMENDED AND RESTATED DEFERRAL PLAN", 14.0, True), ("Section 1.1 History.", 10.8, True),
                        (clause, 10.8, False)] + [(text, 10.8, False)] * 12)
    signature = _page(3, [("IN WITNESS WHEREOF, the Company has signed", 10.8, False), ("By: /s/ Name", 10.8, False)])
    small = _page(4, [("Consolidated Balance Sheets", 9.0, True)] + [(text, 7.2, False)] * 12)
    assert _page_body(report, 9.0, 9.0) == 9.0
    assert _page_body(exhibit, 9.0, 9.0) == 10.8
    assert _page_body(signature, 9.0, 10.8) == 10.8 and _page_body(signature, 9.0, 9.0) == 9.0
    assert _page_body(small, 9.0, 9.0) == 9.0
    more = _page(5, [(text, 9.0, False)] * 30)  # the report's body size covers the most text of the document
    flow, _, _ = _reading_flow([report, exhibit, signature, small, more], ParseOptions(), [])
    heads = [" ".join(ln.text for ln in obj) for kind, obj in flow if kind == "head"]
    assert heads == ["Item 7. Management's Discussion", "AMENDED AND RESTATED DEFERRAL PLAN", "Section 1.1 History.",
                     "Consolidated Balance Sheets"], heads
    assert any(kind == "para" and obj.text.startswith(clause) for kind, obj in flow)


def test_an_exhibit_opens_a_division_of_the_filing_that_holds_its_own_sections() -> None:
    """Exhibits hung under the last heading of the exhibit before them ("Exhibit 31.2" under "CERTIFICATION"; CVS's
    Exhibit 13.1, its MD&A and statements, under a plan's "EMPLOYEE COVENANTS"), and their own headings under the
    report's last section (American Express's plan under "STATISTICAL DISCLOSURE BY BANK HOLDING COMPANIES").
    A part or an exhibit its font placed nests in no section, and holds the headings after it, a later exhibit
    being its sibling; the contents' placement of a part stays."""
    assert hd.division("Exhibit 31.1") and hd.division("EXHIBIT 10.4(5)") and hd.division("PART II")
    assert hd.division("Exhibit 13.1 Management's Discussion and Analysis") and hd.division("Exhibit 10.7(a)")
    assert not hd.division("Exhibit 31.1 to this report") and not hd.division("Exhibit Description")
    assert not hd.division("Exhibits") and not hd.division("EX-24 5 mmm-20211231xex24")
    assert hd.nesting_rank("Exhibit 21") == 0 and hd.label_rank("Exhibit 21") == hd.label_rank("Overview")
    flow = [_head("STATISTICAL DISCLOSURE BY BANK HOLDING COMPANIES", 170, 10.0), _para(170),
            _head("Allocation of Reserve", 175), _para(175),
            _head("EXHIBIT 10.1", 176), _head("DEFERRED COMPENSATION PLAN", 176), _para(176),
            _head("Eligibility", 177), _para(177),
            _head("Exhibit 13.1 Management's Discussion and Analysis", 180), _para(180),
            _head("Results of Operations", 181), _para(181), _head("Exhibit 31.1", 190), _head("CERTIFICATION", 190),
            _para(190), _head("Exhibit 31.2", 191), _head("CERTIFICATION", 191), _para(191)]
    _, sections = _sections(flow, [])
    title = {i: s.title for i, s in enumerate(sections)}
    assert [(s.title, title.get(s.parent)) for s in sections] == [
        ("STATISTICAL DISCLOSURE BY BANK HOLDING COMPANIES", None),
        ("Allocation of Reserve", "STATISTICAL DISCLOSURE BY BANK HOLDING COMPANIES"),
        ("EXHIBIT 10.1", None), ("DEFERRED COMPENSATION PLAN", "EXHIBIT 10.1"),
        ("Eligibility", "DEFERRED COMPENSATION PLAN"),
        ("Exhibit 13.1 Management's Discussion and Analysis", None),
        ("Results of Operations", "Exhibit 13.1 Management's Discussion and Analysis"),
        ("Exhibit 31.1", None), ("CERTIFICATION", "Exhibit 31.1"), ("Exhibit 31.2", None),
        ("CERTIFICATION", "Exhibit 31.2")], [(s.title, s.level, title.get(s.parent)) for s in sections]
    # a part under a cover's name (Corning prints no contents): at the top
    flow = [_head("CORNING INCORPORATED", 1, 16.0), _para(1), _head("PART I", 2, 10.0), _head("Item 1. Business", 2),
            _para(2)]
    _, sections = _sections(flow, [])
    assert [s.parent for s in sections] == [None, None, 1], [(s.title, s.level, s.parent) for s in sections]


def test_a_larger_style_is_not_placed_below_a_smaller_one_of_its_family() -> None:
    """NVIDIA's MD&A sets its sections ("Results of Operations") in 9.9 pt bold and their sub-headings ("Revenue")
    in 9 pt bold. Each style was placed by its rank distance to another style the contents name, and the larger
    came out a level below the smaller: every section hung under the sub-heading before it ("Liquidity and
    Capital Resources" under "Income Taxes"). Within one family (weight, case, label) a larger style the outline
    does not place is lifted above the smaller; a smaller one under a larger the outline places goes below it."""
    flow = [_head("PART I. FINANCIAL INFORMATION", 3, 10.0), _head("ITEM 1. FINANCIAL STATEMENTS", 3, 10.0),
            _head("CONDENSED CONSOLIDATED BALANCE SHEETS", 3, 10.0), _para(3),
            _head("NOTES TO CONDENSED FINANCIAL STATEMENTS", 9), _head("Note 1 - Summary of Policies", 9, 9.9),
            _para(9), _head("ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS", 25, 10.0),
            _head("Results of Operations", 30, 9.9), _para(30), _head("Revenue", 30), _para(30),
            _head("Income Taxes", 32), _para(32), _head("Liquidity and Capital Resources", 32, 9.9), _para(32),
            _head("Liquidity", 33), _para(33)]
    toc = [TocEntry(level=lvl, title=t, printed_page=str(p), page=p) for lvl, t, p in [
        (1, "PART I. FINANCIAL INFORMATION", 3), (2, "ITEM 1. FINANCIAL STATEMENTS", 3),
        (3, "CONDENSED CONSOLIDATED BALANCE SHEETS", 3), (3, "NOTES TO CONDENSED FINANCIAL STATEMENTS", 9),
        (2, "ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS", 25)]]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    parents = {s.title: title.get(s.parent) for s in sections}
    item2 = "ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS"
    assert parents["Results of Operations"] == item2 and parents["Liquidity and Capital Resources"] == item2, parents
    assert parents["Revenue"] == parents["Income Taxes"] == "Results of Operations", parents
    assert parents["Liquidity"] == "Liquidity and Capital Resources", parents
    assert parents["Note 1 - Summary of Policies"] == "NOTES TO CONDENSED FINANCIAL STATEMENTS", parents

    def head(text: str, size: float, bold: bool = True) -> tuple[list[Line], float]:
        return [Line(page=1, bbox=(50, 60, 300, 70), text=text, size=size, bold=bold, block=0)], size

    # three sizes of one family, none in the outline, keep their order (the largest first)
    heads = [head("SUMMARY", 12.0), head("Segment Results", 11.0, False), head("Note 2 - Debt", 10.0),
             head("Overview", 10.0), head("NOTES", 9.0), head("Liquidity", 9.5), head("Revenue", 9.0)]
    levels = [lvl for lvl, _ in hd.assign_levels(heads, [(1, "SUMMARY"), (2, "NOTES")])]
    overview, liquidity, revenue = levels[3], levels[5], levels[6]
    assert overview < liquidity < revenue, levels
    # a smaller style the outline does not place goes below a larger one it places
    heads = [head("Results of Operations", 10.0), head("SUMMARY", 9.0), head("Revenue", 9.0)]
    levels = [lvl for lvl, _ in hd.assign_levels(heads, [(3, "Results of Operations"), (1, "SUMMARY")])]
    assert levels == [3, 1, 4], levels


class _OutlinedDoc:
    """A PDF as ``outline_toc`` reads it: its outline in PyMuPDF's full form (the points are in it, not in the
    simple form)."""

    def __init__(self, toc: list[list]) -> None:
        self.toc = toc

    def get_toc(self, simple: bool = True) -> list[list]:
        assert not simple
        return self.toc


def test_an_outline_rooted_in_the_documents_title_keeps_the_title_out_of_every_section() -> None:
    """Verizon's producer roots its 10-K outline in the cover line "UNITED STATES SECURITIES AND EXCHANGE
    COMMISSION"; every section of the filing hung under it, the cover line taking a place in every section path.
    The entries under a lone first top entry that holds the parts move up a level; outlines with several top
    entries, whose lone top entry is not first, or holds no part (a report of one chapter), stay as they are."""
    from htmlrag.superrag.parse.toc import outline_toc

    rooted = [[1, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 1], [2, "FORM 10-K", 1],
              [3, "Documents Incorporated By Reference", 2], [2, "PART I", 4], [3, "Item 1. Business", 4],
              [4, "General", 4], [2, "PART II", 30]]
    assert [(e.level, e.title) for e in outline_toc(_OutlinedDoc(rooted))] == [
        (1, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"), (1, "FORM 10-K"),
        (2, "Documents Incorporated By Reference"), (1, "PART I"), (2, "Item 1. Business"), (3, "General"),
        (1, "PART II")]
    flat = [[1, "PART I", 4], [2, "Item 1. Business", 4], [1, "PART II", 30]]
    assert [(e.level, e.title) for e in outline_toc(_OutlinedDoc(flat))] == [(1, "PART I"), (2, "Item 1. Business"),
                                                                    (1, "PART II")]
    late = [[2, "Cover", 1], [1, "PART I", 4], [2, "Item 1. Business", 4]]  # the lone top entry is not first
    assert [e.level for e in outline_toc(_OutlinedDoc(late))] == [2, 1, 2]
    chapter = [[1, "1 Chapter about topic A", 1], [2, "1.1 Details of A", 1], [3, "2.1 Details of B", 2]]
    assert [e.level for e in outline_toc(_OutlinedDoc(chapter))] == [1, 2, 3]  # a report of one chapter: no part under it
    assert [e.level for e in outline_toc(_OutlinedDoc([[1, "Annual Report", 1]]))] == [1]
    # the sections: the cover line holds its page only, the parts stand at the top
    flow = [_head("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 1, 12.0), _para(1), _head("FORM 10-K", 1, 12.0),
            _para(1), _head("PART I", 4, 10.0), _head("Item 1. Business", 4), _para(4)]
    _, sections = _sections(flow, outline_toc(_OutlinedDoc(rooted)))
    assert [s.parent for s in sections] == [None, None, None, 2], [(s.title, s.level, s.parent) for s in sections]


def test_an_outline_entry_named_otherwise_takes_the_heading_it_points_at() -> None:
    """Producers name headings in their outlines by working titles: Intel's "Overview & KPI" points at "A Quarter in
    Review", which no word of the entry names; placed by its font it hung under "Forward-Looking Statements". An
    outline entry names a point on its page, and a heading no entry names by its words takes the entry whose point
    is at its top. Entries that name it by words keep it, and a heading away from the point takes none."""
    from htmlrag.superrag.parse.toc import outline_toc

    class To:  # PyMuPDF's Point: where on the page the entry leads
        def __init__(self, y: float) -> None:
            self.x, self.y = float("nan"), y

    toc = outline_toc(_OutlinedDoc([[1, "Forward-Looking Statements", 3, {"kind": 1, "to": To(28.0)}],
                                    [1, "Overview & KPI", 5, {"kind": 1, "to": To(32.0)}],
                                    [1, "Financial Statements", 5, {"kind": 1, "to": To(735.0)}],
                                    [2, "Statement of Income", 6, {"kind": 1, "to": To(32.0)}],
                                    [1, "Other Key Information", 9, {"kind": 1}], [1, "Signatures", 10, {}]]))
    assert [e.top for e in toc] == [28.0, 32.0, 735.0, 32.0, None, None]

    def head(text: str, page: int, y: float, size: float = 9.0) -> tuple[str, list[Line]]:
        return "head", [Line(page=page, bbox=(50, y, 300, y + size), text=text, size=size, bold=True, block=0)]

    flow = [head("Forward-Looking Statements", 3, 29.0, 18.0), _para(3), head("Availability of Information", 4, 30.0),
            _para(4), head("A Quarter in Review", 5, 30.0, 18.0), _para(5), head("Key Developments", 5, 524.0),
            _para(5), head("Consolidated Condensed Statements of Income", 6, 31.0, 12.0), _para(6),
            head("Risk Factors", 9, 60.0), _para(9)]
    _, sections = _sections(flow, toc)
    title = {i: s.title for i, s in enumerate(sections)}
    assert [(s.title, s.heading.source, title.get(s.parent)) for s in sections[:5]] == [
        ("Forward-Looking Statements", "outline", None),
        ("Availability of Information", "font", "Forward-Looking Statements"),
        ("A Quarter in Review", "outline", None), ("Key Developments", "font", "A Quarter in Review"),
        ("Consolidated Condensed Statements of Income", "outline", None)], \
        [(s.title, s.level, s.heading.source, s.parent) for s in sections]  # the statement: named by its words
    assert sections[5].heading.source == "font"  # an entry without a point takes no heading by place
    assert hd.outline_index([(flow[6][1], 9.0)], [(1, "Overview & KPI", 5, 32.0)]) == [None]  # far from the point


def test_the_lines_after_an_outline_entrys_heading_in_its_block_are_read_as_any_blocks() -> None:
    """Lockheed Martin sets "PART I" and "ITEM 1. Business" in one block; the outline names the part on its page, so
    its line was taken as the heading and every line after it as body text: Item 1 (and Items 5 to 9B after "PART
    II") were no headings, and their sections' sub-headings hung under the part. The lines after the named ones
    are segmented as any block's: a heading stays a heading, body text stays body text."""
    from htmlrag.superrag.parse.document import ParseOptions, _segments

    def ln(text: str, y: float, bold: bool = True) -> Line:
        return Line(page=3, bbox=(50, y, 50 + 5.0 * len(text), y + 10), text=text, size=10.0, bold=bold, block=0)

    block = hd.Block([ln("PART I", 41), ln("ITEM 1. Business", 53),
                      ln("We are a global security and aerospace company principally engaged in research.", 65, False),
                      ln("It designs, develops, manufactures and integrates advanced technology systems.", 77, False)])
    known = {(3, hd.normalise("PART I"))}
    runs = [(kind, [x.text for x in lines]) for kind, lines in _segments(block, 10.0, ParseOptions(), known)]
    assert runs == [("head", ["PART I"]), ("head", ["ITEM 1. Business"]),
                    ("body", [block.lines[2].text, block.lines[3].text])], runs
    # both named: each is its own heading
    known.add((3, hd.normalise("ITEM 1. Business")))
    assert [kind for kind, _ in _segments(block, 10.0, ParseOptions(), known)] == ["head", "head", "body"]
    # a block of thousands of named lines (a crafted outline) is read line by line, without recursion
    many = hd.Block([ln(f"Entry {i}", 41 + i) for i in range(3000)])
    runs = _segments(many, 10.0, ParseOptions(), {(3, hd.normalise(f"Entry {i}")) for i in range(3000)})
    assert len(runs) == 3000 and {kind for kind, _ in runs} == {"head"}


def test_a_heading_run_of_one_style_is_split_at_its_part_item_and_note_labels() -> None:
    """MGM sets "PART II" and "ITEM 5. MARKET FOR REGISTRANT'S COMMON EQUITY, ..." in one style (bold capitals),
    one line after the other in one block: they were one heading, "PART II ITEM 5. ...", and the items after it
    hung under the joined section. A heading run is split before each later line that opens with a part, item or
    note label; a heading wrapped over lines without a label, a certification title wrapped at "SECTION 906", and
    a list of items in one style (a cross-reference index, too long for a heading) are not split."""
    def ln(text: str, y: float, bold: bool = True) -> Line:
        return Line(page=36, bbox=(18, y, 18 + 5.0 * len(text), y + 9), text=text, size=8.8, bold=bold, block=1)

    def heads(lines: list[Line]) -> list[list[str]]:
        return [[x.text for x in run] for kind, run in hd.segment_block(hd.Block(lines), 8.8) if kind == "head"]

    body = "Our common stock is traded on the New York Stock Exchange under the symbol MGM."
    mgm = [ln("PART II", 33), ln("ITEM 5. MARKET FOR REGISTRANT'S COMMON EQUITY, RELATED STOCKHOLDER", 54),
           ln("MATTERS AND ISSUER PURCHASES OF EQUITY SECURITIES", 65), ln(body, 87, False)]
    runs = [(kind, [x.text for x in run]) for kind, run in hd.segment_block(hd.Block(mgm), 8.8)]
    assert runs == [("head", ["PART II"]), ("head", [mgm[1].text, mgm[2].text]), ("body", [body])], runs
    notes = [ln("NOTES TO CONSOLIDATED FINANCIAL STATEMENTS", 40), ln("NOTE 1 \u2014 ORGANIZATION", 52),
             ln("MGM Resorts International is a Delaware corporation that acts largely as a holding company.", 64,
                False)]
    assert heads(notes) == [[notes[0].text], [notes[1].text]]
    part_i = [ln("Part I", 40), ln("Item 2. Properties", 52), ln(body, 64, False)]
    assert heads(part_i) == [["Part I"], ["Item 2. Properties"]]
    wrapped = [ln("MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL", 40), ln("CONDITION AND RESULTS OF OPERATIONS", 52),
               ln(body, 64, False)]
    assert heads(wrapped) == [[wrapped[0].text, wrapped[1].text]]
    certification = [ln("CERTIFICATION PURSUANT TO 18 U.S.C. 1350, AS ADOPTED PURSUANT TO", 40),
                     ln("SECTION 906 OF THE SARBANES-OXLEY ACT OF 2002", 52), ln(body, 64, False)]
    assert heads(certification) == [[certification[0].text, certification[1].text]]
    in_prose = [ln("Risks Described in", 40), ln("Item 1A of this report", 52), ln(body, 64, False)]
    assert heads(in_prose) == [[in_prose[0].text, in_prose[1].text]]  # a label followed by prose opens nothing
    index = [ln(t, 40 + 12 * k) for k, t in enumerate(
        ["Item 1. Business", "Item 1A. Risk Factors", "Item 1B. Unresolved Staff Comments", "Item 2. Properties",
         "Item 3. Legal Proceedings", "Item 4. Mine Safety Disclosures", "Item 5. Market for Registrant's Equity"])]
    assert heads([*index, ln(body, 200, False)]) == []  # a list of items: too long to be one heading, stays text


def test_a_column_heading_wrapped_over_lines_is_a_cell_not_a_heading() -> None:
    """NVIDIA heads its segment table "Compute &" over "Networking", beside "Graphics", "All Other",
    "Consolidated": the second row is a row of cells, and "Compute &", alone in its row, was a section heading
    with the note's table under it. A short line of a cell's style stacked on it, over the same column, is a cell
    too (followed over wraps); a title centred over the table and a heading at the left margin are not."""
    def ln(text: str, x: float, y: float, x1: float | None = None) -> Line:
        return Line(page=22, bbox=(x, y, x1 if x1 is not None else x + 5.0 * len(text), y + 10), text=text,
                    size=9.0, bold=True, block=0)

    title = ln("SEGMENT INFORMATION BY QUARTER", 200, 236, 450)
    left = ln("Segment results", 18, 250, 100)
    top = ln("Data Center", 283, 255, 331)
    compute = ln("Compute &", 283, 263, 331)
    row = [ln("Networking", 283, 271, 332), ln("Graphics", 370, 271, 409), ln("All Other", 453, 271, 491),
           ln("Consolidated", 526, 271, 583)]
    cells = hd.grid_cells([title, left, top, compute, *row])
    assert {id(x) for x in row} <= cells and id(compute) in cells and id(top) in cells  # three lines of one cell
    assert id(title) not in cells and id(left) not in cells
    block = hd.Block([compute])
    assert [kind for kind, _ in hd.segment_block(block, 9.0, cells=cells)] == ["body"]
    # another style (a regular line) stacked on a cell stays what it was
    plain = Line(page=22, bbox=(283, 283, 331, 293), text="(In millions)", size=9.0, bold=False, block=0)
    assert id(plain) not in hd.grid_cells([plain, *row])
    # many cells and lines on a page: found by their tops, not pair by pair
    many = [ln(f"C{k}", 20 + 40 * (k % 12), 12.0 * (k // 12), 50 + 40 * (k % 12)) for k in range(6000)]
    assert len(hd.grid_cells(many)) == 6000


def test_a_column_heading_wrapped_above_a_tables_top_is_no_section_heading() -> None:
    """The table of NVIDIA's segment note begins at its first row, "Networking  Graphics  All Other  Consolidated"
    (one line over four columns), and "Compute &", set left above "Networking", stayed outside it: it was a
    section heading holding the note's table. A short line of the first row's style over a column, one line
    above a line of that row and aligned with it, is part of the column heading (followed up over wraps); a title
    centred over the table, a heading over its first column and a line of another style are not."""
    def ln(text: str, x: float, y: float, x1: float, bold: bool = True) -> Line:
        return Line(page=22, bbox=(x, y, x1, y + 10), text=text, size=9.0, bold=bold, block=0)

    box = (18.0, 271.0, 593.0, 478.0)
    first = ln("Networking Graphics All Other Consolidated", 283, 271.3, 583)
    row2 = ln("Three Months Ended October 30, 2022", 19, 298, 183)
    compute = ln("Compute &", 283, 262.5, 331)
    data = ln("Data Center", 283, 254, 331)  # a third line up, aligned with the one below
    title = ln("Segment Information by Quarter", 230, 257, 380)  # centred over the table
    left = ln("Segment results", 18, 258, 100)  # over the first column
    plain = ln("see Note 1", 520, 262, 583, bold=False)  # another style, right-aligned with the row
    far = ln("Consolidated", 526, 230, 583)  # aligned but three lines up, with nothing between
    heads = hd.heads_above_tables([compute, data, title, left, plain, far], [(box, [first, row2])])
    assert heads == {id(compute), id(data)}
    assert hd.heads_above_tables([compute], [(box, [])]) == set()  # a table covering no line anchors nothing
    # on a parsed page: the lines stay body text of the page, not a heading
    assert [k for k, _ in hd.segment_block(hd.Block([compute]), 9.0, cells=heads)] == ["body"]


def test_a_spanning_column_heading_over_a_wrapped_cell_stays_a_column_heading() -> None:
    """NVIDIA sets "RSUs, PSUs, and Market-based PSUs Outstanding" over "Weighted Average Grant-Date" over the
    table's "Fair Value Per Share". Once the wrapped line is a cell (body text), the spanning line above it must
    still read as a column heading of the table below, not as a section heading."""
    from htmlrag.superrag.parse.document import _column_headings
    from htmlrag.superrag.parse.model import TableItem

    def ln(text: str, x: float, y: float, x1: float) -> Line:
        return Line(page=11, bbox=(x, y, x1, y + 10), text=text, size=9.0, bold=True, block=0)

    span = ln("RSUs, PSUs, and Market-based PSUs Outstanding", 348, 330, 563)
    wrapped = ln("Weighted Average Grant-Date", 463, 342, 590)
    table = TableItem(page=11, bbox=(18, 352, 593, 438), rows=[["", "Number of Shares", "Fair Value Per Share"]],
                      html="<table></table>")
    units = [("head", [span]), ("body", [wrapped]), ("table", table)]
    assert _column_headings(units, {id(wrapped)}) == {0}
    assert _column_headings(units) == set()  # body text that is no cell ends the walk


def test_a_heading_run_beginning_with_a_lower_case_word_is_text() -> None:
    """CVS sets a risk factor's sentence-long title in bold italics over two lines; the first ends with a comma (no
    heading) and the second, "could adversely affect our brand ...", was a section of its own. Such a run is text,
    joined to the text of its block; "iPhone" (lower case, then capitals) and a run the outline names stay
    headings."""
    from htmlrag.superrag.parse.document import _lower_case_runs

    def ln(text: str, y: float, bold: bool = True, block: int = 2) -> Line:
        return Line(page=61, bbox=(18, y, 580, y + 10), text=text, size=9.0, bold=bold, block=block)

    first = ln("We would be adversely affected if we do not deploy our capital. Downgrades in our ratings,", 172, False)
    second = ln("could adversely affect our brand and reputation, businesses and operating results.", 182)
    body = ln("Our operations generate significant capital.", 204, False, block=3)
    units = [("head", [ln("Financial Risks", 150, block=1)]), ("body", [first]), ("head", [second]), ("body", [body])]
    out = _lower_case_runs(units, 61, set())
    assert [(k, [x.text for x in obj]) for k, obj in out] == [
        ("head", ["Financial Risks"]), ("body", [first.text, second.text]), ("body", [body.text])]
    iphone = [("head", [ln("iPhone", 150, block=4)]), ("body", [ln("iPhone net sales rose.", 162, False, block=4)])]
    assert [k for k, _ in _lower_case_runs(iphone, 61, set())] == ["head", "body"]
    named = [("head", [ln("risk factors", 150, block=5)]), ("body", [body])]
    assert [k for k, _ in _lower_case_runs(named, 61, {(61, hd.normalise("risk factors"))})] == ["head", "body"]
    assert [k for k, _ in _lower_case_runs(named, 61, set())] == ["body", "body"]  # other blocks: not joined


_MORE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pdf" / "sec-10-q-more" / "docs"


@pytest.mark.skipif(not _MORE.exists(), reason="needs ../shared/data/pdf (not shipped)")
def test_nvidias_segment_tables_stay_in_their_note() -> None:
    """On NVIDIA's four shared 10-Qs, "Compute &" (a column heading over the segment table) is no section, and
    the segment note holds its table."""
    from htmlrag.superrag.parse.document import parse_pdf

    pdfs = sorted(_MORE.glob("* NVDA.pdf"))
    assert len(pdfs) == 4
    for pdf in pdfs:
        doc = parse_pdf(pdf)
        assert not [s.title for s in doc.sections if s.title.rstrip().endswith("&")], pdf.name
        (note,) = [s for s in doc.sections if s.title.startswith("Note 15") and "Segment" in s.title]
        assert any(type(it).__name__ == "TableItem" for it in note.items), pdf.name
