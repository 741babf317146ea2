"""Headings' places in the section tree when their styles' levels and their labels disagree (issue 35,
seventeenth round). Found on the parse of FinanceBench's filings (no question read)."""

from __future__ import annotations

from htmlrag.superrag.parse.document import _sections
from htmlrag.superrag.parse.model import Line, Paragraph, TocEntry


def _head(text: str, page: int, *, size: float = 9.0, italic: bool = False) -> tuple[str, list[Line]]:
    return "head", [Line(page=page, bbox=(50, 60, 300, 60 + size), text=text, size=size, bold=True, italic=italic,
                         block=0)]


def _para(page: int) -> tuple[str, Paragraph]:
    return "para", Paragraph(page=page, bbox=(50, 100, 500, 140), text="The company sells widgets.")


def _tree(sections) -> list[tuple[str, str | None]]:
    return [(s.title, sections[s.parent].title if s.parent is not None else None) for s in sections]


def test_a_heading_is_a_sibling_of_the_section_of_its_own_style_not_in_it() -> None:
    """Boeing sets its notes ("Note 3 – Acquisitions ...") and their sub-headings in one bold body font; the
    contents name Item 8 and an unlabelled heading of the sub-headings' style at level 2, so the sub-headings took
    level 2 and the notes, ranked below the item by label, level 3. A sub-heading nests in its note by label, and
    the next note, placed by its level, took that sub-heading as its parent: Notes 4 to 24 made a chain twenty
    notes deep. A heading in a section of its own style and level is its sibling; a sub-heading stays in its
    note, though the note lies in a section of the sub-heading's style."""
    toc = [TocEntry(level=1, title="PART II", printed_page="30", page=30),
           TocEntry(level=2, title="Item 8. Financial Statements and Supplementary Data", printed_page="31", page=31),
           TocEntry(level=2, title="Report of Independent Registered Public Accounting Firm", printed_page="39",
                    page=39)]
    flow = [_head("PART II", 30), _para(30), _head("Item 8. Financial Statements and Supplementary Data", 31),
            _head("Summary of Business Segment Data", 31), _para(31),
            _head("Note 1 \u2013 Summary of Significant Accounting Policies", 32), _para(32),
            _head("Use of Estimates", 32), _para(32), _head("Guarantees", 33), _para(33),
            _head("Note 2 \u2013 Acquisitions", 34), _para(34), _head("Strategic Partnership", 34), _para(34),
            _head("Note 3 \u2013 Earnings Per Share", 35), _para(35), _head("Note 4 \u2013 Debt", 36), _para(36),
            _head("Report of Independent Registered Public Accounting Firm", 39), _para(39)]
    _, sections = _sections(flow, toc)
    tree = _tree(sections)
    segment = "Summary of Business Segment Data"
    assert tree[2:] == [
        (segment, "Item 8. Financial Statements and Supplementary Data"),
        ("Note 1 \u2013 Summary of Significant Accounting Policies", segment),
        ("Use of Estimates", "Note 1 \u2013 Summary of Significant Accounting Policies"),
        ("Guarantees", "Note 1 \u2013 Summary of Significant Accounting Policies"),
        ("Note 2 \u2013 Acquisitions", segment), ("Strategic Partnership", "Note 2 \u2013 Acquisitions"),
        ("Note 3 \u2013 Earnings Per Share", segment), ("Note 4 \u2013 Debt", segment),
        ("Report of Independent Registered Public Accounting Firm", "PART II")], tree


def test_an_outline_entry_does_not_lift_a_style_above_the_labels_of_its_font() -> None:
    """General Mills' outline lists "Signatures" at its top level beside the parts, and the text sets it in the
    bold body font of its items and of every sub-heading without a label: that one entry put the style at level
    1, above the items of the same font at level 2, and the MD&A's sub-headings ("Cash Flows from Operations")
    hung in no section. A calibration that puts a style above one differing from it only by a label ranked above
    its own is dropped when fewer entries name it; the heading the outline names keeps the outline's level."""
    from htmlrag.superrag.parse import headings as hd

    def heads(texts: list[str]) -> list[tuple[list[Line], float]]:
        return [([Line(page=1 + i, bbox=(50, 60, 300, 70), text=t, size=10.0, bold=True, block=0)], 10.0)
                for i, t in enumerate(texts)]

    texts = ["PART II", "ITEM 7 - Management's Discussion and Analysis", "EXECUTIVE OVERVIEW",
             "Cash Flows from Operations", "ITEM 8 - Financial Statements", "Revenue Recognition", "Signatures"]
    outline = [(1, "Part II"), (2, "Item 7 Management's Discussion and Analysis"),
               (2, "Item 8 Financial Statements"), (1, "Signatures")]
    levels = hd.assign_levels(heads(texts), outline)
    assert levels[6] == (1, "outline") and levels[1] == levels[4] == (2, "outline")
    assert levels[3][0] > 2 and levels[5][0] > 2, levels  # the sub-headings of the items' font: under them
    # the same style named by more entries at that level than the items' style: the items' calibration goes
    more = [*texts, "Exhibit Index", "Power of Attorney"]
    levels = hd.assign_levels(heads(more), [*outline, (1, "Exhibit Index"), (1, "Power of Attorney")])
    assert levels[3][0] == 1 and levels[1] == (2, "outline"), levels


def test_a_heading_the_levels_put_in_no_section_follows_the_section_of_its_own_style() -> None:
    """General Mills 2019's outline lists its items at level 1, so every style of its one body font came out at
    level 1: "NOTE 1." nested in Item 8 by its label, and "NOTE 2." after the note's last sub-heading, no section
    of a smaller level before it and no label above its own in reach, hung in no section (Notes 2 to 19). It
    follows the open section of its style and level into the section that one is in."""
    toc = [TocEntry(level=1, title=t, printed_page=str(p), page=p) for t, p in
           [("Item 7 Management's Discussion", 20), ("Item 8 Financial Statements", 50), ("Signatures", 90)]]
    flow = [_head("ITEM 7 Management's Discussion", 20), _para(20), _head("ITEM 8 Financial Statements", 50),
            _head("Notes to Consolidated Financial Statements", 58), _para(58),
            _head("NOTE 1. BASIS OF PRESENTATION", 58), _head("Basis of Presentation", 58), _para(58),
            _head("NOTE 2. SUMMARY OF SIGNIFICANT ACCOUNTING POLICIES", 59), _head("Inventories", 59), _para(59),
            _head("NOTE 3. DEBT", 60), _para(60), _head("Signatures", 90), _para(90)]
    tree = _tree(_sections(flow, toc)[1])
    item8 = "ITEM 8 Financial Statements"
    assert tree[2:] == [("Notes to Consolidated Financial Statements", item8),
                        ("NOTE 1. BASIS OF PRESENTATION", item8),
                        ("Basis of Presentation", "NOTE 1. BASIS OF PRESENTATION"),
                        ("NOTE 2. SUMMARY OF SIGNIFICANT ACCOUNTING POLICIES", item8),
                        ("Inventories", "NOTE 2. SUMMARY OF SIGNIFICANT ACCOUNTING POLICIES"),
                        ("NOTE 3. DEBT", item8), ("Signatures", None)], tree


def test_a_heading_in_the_italics_of_a_font_ranks_below_the_font() -> None:
    """General Mills sets its MD&A sections in bold capitals ("LIQUIDITY"), its statements' titles in bold
    ("Consolidated Balance Sheets") and the sub-headings of both in bold italics ("Cash Flows from Operations") of
    one size. Levels came from size, weight, case and label only: the italic sub-headings took the statements'
    level and were siblings of the sections they open. Italics rank below the upright font of the same size,
    weight and case."""
    toc = [TocEntry(level=1, title="PART II", printed_page="17", page=17),
           TocEntry(level=2, title="ITEM 7 - Management's Discussion and Analysis", printed_page="18", page=18),
           TocEntry(level=2, title="ITEM 8 - Financial Statements", printed_page="45", page=45),
           TocEntry(level=1, title="Signatures", printed_page="104", page=104)]
    flow = [_head("PART II", 17), _head("ITEM 7 - Management's Discussion and Analysis", 18), _para(18),
            _head("LIQUIDITY", 27), _para(27), _head("Cash Flows from Operations", 27, italic=True), _para(27),
            _head("Cash Flows from Investing Activities", 28, italic=True), _para(28),
            _head("CAPITAL RESOURCES", 29), _para(29), _head("ITEM 8 - Financial Statements", 45),
            _head("Consolidated Balance Sheets", 50), _para(50), _head("NOTE 1. BASIS OF PRESENTATION", 53),
            _head("Basis of Presentation", 53, italic=True), _para(53), _head("Signatures", 104), _para(104)]
    tree = _tree(_sections(flow, toc)[1])
    item7, item8 = "ITEM 7 - Management's Discussion and Analysis", "ITEM 8 - Financial Statements"
    assert tree[2:] == [("LIQUIDITY", item7), ("Cash Flows from Operations", "LIQUIDITY"),
                        ("Cash Flows from Investing Activities", "LIQUIDITY"), ("CAPITAL RESOURCES", item7),
                        (item8, "PART II"), ("Consolidated Balance Sheets", item8),
                        ("NOTE 1. BASIS OF PRESENTATION", item8),
                        ("Basis of Presentation", "NOTE 1. BASIS OF PRESENTATION"), ("Signatures", None)], tree


def test_a_heading_the_contents_placed_is_no_sibling_by_style() -> None:
    """A heading the contents place hangs where the contents put it, which says nothing of headings of its style
    that they do not name: Lockheed Martin's "ITEM 4(a). Information about our Executive Officers" (no label the
    parser knows, so the style of the officers' names under it) sits at the top where its contents' parent is not
    a heading of the text, and the officers followed it out of Part I."""
    toc = [TocEntry(level=2, title="ITEM 4. Mine Safety Disclosures", printed_page="25", page=25),
           TocEntry(level=2, title="ITEM 4(a). Information about our Executive Officers", printed_page="26",
                    page=26),
           TocEntry(level=1, title="PART II", printed_page="28", page=28)]
    officers = ["Richard F. Ambrose (age 62), Executive Vice President", "Brian P. Colan (age 60), Controller"]
    flow = [_head("PART I \u2014 BUSINESS", 3, size=11.0), _para(3), _head("ITEM 4. Mine Safety Disclosures", 25),
            _para(25), _head("ITEM 4(a). Information about our Executive Officers", 26),
            _head(officers[0], 26), _para(26), _head(officers[1], 26), _para(26), _head("PART II", 28), _para(28)]
    tree = dict(_tree(_sections(flow, toc)[1]))
    assert tree["ITEM 4(a). Information about our Executive Officers"] is None  # the contents' place for it
    assert tree[officers[0]] is not None and tree[officers[1]] == tree[officers[0]], tree
