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
