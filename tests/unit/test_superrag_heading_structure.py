"""Section structure on layouts that carry it in words, not in fonts or indentation (issue 35, ninth round):
headings wrapped over blocks, contents printed without indentation, and "Part", "Item", "Note" headings set in
one style. Found on the parse of FinanceBench's and the shared filings (no question read)."""

from __future__ import annotations

from htmlrag.superrag.parse import headings as hd
from htmlrag.superrag.parse.document import _join_wrapped
from htmlrag.superrag.parse.model import Line
from htmlrag.superrag.parse.toc import entry_levels, toc_rows


def _ln(text: str, y: float, *, x: float = 50, size: float = 9.0, bold: bool = True, block: int = 0) -> Line:
    return Line(page=1, bbox=(x, y, x + 5.0 * len(text), y + size + 1), text=text, size=size, bold=bold, block=block)


def _heads(units) -> list[str]:
    return [" ".join(ln.text for ln in obj) for kind, obj in units if kind == "head"]


def test_a_heading_wrapped_over_blocks_is_one_heading() -> None:
    """Converters set each line of a centred title as a block of its own; each line opened a section, the first
    one empty ("Certification by the Chief Executive Officer Pursuant to" / "Section 302 of the Sarbanes-Oxley
    Act of 2002" in Pfizer's exhibits, "CERTIFICATION PURSUANT TO" / "RULES 13a-14(a) ..." in Best Buy's). A line
    that stops mid-phrase (a function word, a comma, a dash) or a next line in lower case goes on; two complete
    headings, a line set apart or in another size, stay apart."""
    body = ("body", [_ln("I, the officer, certify that I have reviewed this report.", 140, bold=False, block=9)])
    wrapped = [("head", [_ln("Certification by the Chief Executive Officer Pursuant to", 93, block=1)]),
               ("head", [_ln("Section 302 of the Sarbanes-Oxley Act of 2002", 104, block=2)]), body]
    assert _heads(_join_wrapped(wrapped)) == [
        "Certification by the Chief Executive Officer Pursuant to Section 302 of the Sarbanes-Oxley Act of 2002"]
    caps = [("head", [_ln("CERTIFICATION PURSUANT TO", 93)]),
            ("head", [_ln("RULES 13a-14(a) AND 15d-14(a) UNDER THE SECURITIES", 104)]), body]
    assert len(_heads(_join_wrapped(caps))) == 1  # capitals or not ("13a" has lower case letters)
    for first, second in [("Officer Pursuant to 18 U.S.C. Section 1350,", "Section 906 of the Act"),
                          ("Management's Discussion and", "Analysis of Financial Condition"),
                          ("Results of Operations \u2013", "Three Months Ended"),
                          ("Segment Results", "and other measures")]:
        assert len(_heads(_join_wrapped([("head", [_ln(first, 93)]), ("head", [_ln(second, 104)])]))) == 1, first
    for units in (
        [("head", [_ln("Note 1 \u2013 Summary of Significant Accounting Policies", 93)]),
         ("head", [_ln("Basis of Presentation", 104)])],                      # two complete headings
        [("head", [_ln("Certification Pursuant to", 93)]), ("head", [_ln("Section 302", 130)])],  # set apart
        [("head", [_ln("Certification Pursuant to", 93)]), ("head", [_ln("Section 302", 104, size=12)])],
        [("head", [_ln("Certification Pursuant to", 93)]), body, ("head", [_ln("Section 302", 160)])],
    ):
        assert len(_heads(_join_wrapped(units))) == 2, units


def test_labels_order_headings_of_one_style() -> None:
    """Filings set "Part I", "Item 2." and "Note 4 –" and the sub-headings under them in one bold body font, so
    ranking styles gave every heading of Apple's 10-Q level 1 (its MD&A sub-sections were siblings of the
    items). In one style, a part now holds items, an item notes, and a heading without a label sits under the
    labelled one before it; headings of other styles rank as before."""
    texts = ["Part I \u2014 Financial Information", "Item 1. Financial Statements", "Note 1 \u2013 Summary",
             "Basis of Presentation", "Item 2. Management's Discussion and Analysis", "Available Information",
             "Part II \u2014 Other Information", "Item 1A. Risk Factors"]
    heads = [([_ln(t, 100.0 + 20 * i)], 9.0) for i, t in enumerate(texts)]
    assert [lvl for lvl, _ in hd.assign_levels(heads)] == [1, 2, 3, 4, 2, 4, 1, 2]
    # an outline naming the items at level 1: the notes and the sub-headings keep their distance below them
    outline = [(1, "Item 1. Financial Statements", 1), (1, "Item 2. Management's Discussion and Analysis", 1)]
    levels = [lvl for lvl, _ in hd.assign_levels(heads, outline)]
    assert levels[1] == levels[4] == 1 and levels[2] == 2 and levels[3] == levels[5] == 3
    assert levels[0] == 1  # a part above a level-1 item stays at the top
    # a bigger style still ranks first, whatever its label
    big = [([_ln("Annual Report", 60, size=14)], 14.0), ([_ln("Part I", 90)], 9.0), ([_ln("Overview", 120)], 9.0)]
    assert [lvl for lvl, _ in hd.assign_levels(big)] == [1, 2, 3]
    assert [hd.label_kind(t) for t in ("Part II. Other", "ITEM 1A. RISK", "Note 12: Debt", "a) Balance Sheets",
                                       "Section 302 of the Act", "Items 1 and 2", "Part of the plan", "Overview")
            ] == [0, 1, 2, 3, None, None, None, None]


def test_contents_printed_without_indentation_nest_by_label() -> None:
    """Best Buy's contents set "Part I", "Item 1." and "a) Condensed Consolidated Balance Sheets" at one left
    edge, so every entry was level 1 and no item opened a section inside its part. Among entries of one
    indentation the label now orders them (an unlabelled entry, "Signatures", takes the top rank there);
    indentation still comes first."""
    flat = ["Part I \u2014 Financial Information", "Item 1. Financial Statements",
            "a) Condensed Consolidated Balance Sheets", "b) Notes to Condensed Consolidated Financial Statements",
            "Item 2. Management's Discussion and Analysis", "Part II \u2014 Other Information",
            "Item 1. Legal Proceedings", "Signatures"]
    assert entry_levels([(60.0, t) for t in flat]) == [1, 2, 3, 3, 2, 1, 2, 1]
    indented = [(60.0, "Financial Statements"), (80.0, "Balance Sheets"), (80.0, "Notes"), (60.0, "Risk Factors")]
    assert entry_levels(indented) == [1, 2, 2, 1]
    assert entry_levels([(60.0, "Item 1. Business"), (80.0, "Overview"), (60.0, "Item 2. Properties")]) == [1, 2, 1]


def test_a_part_number_is_no_page_label() -> None:
    """Apple's contents print "Part I" on a row of its own; the roman "I" read as a page label made it an entry
    "Part" pointing to page i, one level below the items it holds (10-Ks glue the header "Page" before it). A row
    whose title ends with a label word is a group line or a cross-reference ending a line of prose, not an entry;
    a title that holds such a word earlier is still one."""
    lines = [_ln("Page PART", 86, bold=False), _ln("I", 86, x=500, bold=False), _ln("Part I", 100, bold=False), _ln("Item 1.", 114, bold=False), _ln("Financial Statements", 114, x=100,
             bold=False), _ln("1", 114, x=500, bold=False), _ln("Part II", 128, bold=False),
             _ln("Item 1A. Risk Factors", 142, bold=False), _ln("23", 142, x=500, bold=False),
             _ln("Certifications of Section 302 Officers", 156, bold=False), _ln("24", 156, x=500, bold=False),
             _ln("Refer to the segment results on pages 22-26 and Note", 170, bold=False),
             _ln("5", 170, x=500, bold=False)]
    assert [(t, lab) for _, t, lab in toc_rows(lines)[0]] == [
        ("Item 1. Financial Statements", "1"), ("Item 1A. Risk Factors", "23"),
        ("Certifications of Section 302 Officers", "24")]


def test_a_cover_before_the_printed_contents_holds_nothing_after_its_page() -> None:
    """The pages before a printed contents page are a cover: a section opened there (the company's name, set
    larger than the body's headings) ends with its page. NVIDIA's cover name held its contents page and "Where
    you can find more information" once part labels ranked the unlabelled headings of their style below them;
    Pfizer's held its contents and "Defined Terms". Without a printed contents page nothing changes."""
    from htmlrag.superrag.parse.document import _sections
    from htmlrag.superrag.parse.model import Paragraph

    def head(text: str, page: int, size: float) -> tuple[str, list[Line]]:
        return "head", [Line(page=page, bbox=(50, 60, 300, 60 + size), text=text, size=size, bold=True, block=0)]

    def para(page: int) -> tuple[str, Paragraph]:
        return "para", Paragraph(page=page, bbox=(50, 100, 500, 140), text="The company sells widgets.")

    flow = [head("NVIDIA CORPORATION", 1, 16), para(1), head("TABLE OF CONTENTS", 2, 11),
            head("WHERE YOU CAN FIND MORE INFORMATION", 2, 11), para(2), head("Overview", 3, 11), para(3)]
    _, sections = _sections(flow, [], {2}, front=2)
    assert [s.parent for s in sections] == [None, None, None, None]
    assert sections[1].title == "TABLE OF CONTENTS" and not sections[1].items  # the contents page's own section
    _, no_contents = _sections(flow, [], set())
    assert [no_contents[s.parent].title if s.parent is not None else None for s in no_contents] == [
        None, "NVIDIA CORPORATION", "NVIDIA CORPORATION", "WHERE YOU CAN FIND MORE INFORMATION"]


def test_a_contents_page_names_itself_unless_by_its_running_header() -> None:
    """Only a printed contents page marks the end of the cover: one that says "Table of Contents" above its
    rows. A statement whose row ends read as page numbers, under Intel's running "Table of Contents" link
    (page furniture), does not."""
    from htmlrag.superrag.parse.toc import names_itself

    rows = [_ln(f"Item {i}. Heading number {i}", 100.0 + 14 * i, bold=False) for i in range(1, 6)]
    labels = [_ln(str(3 + i), 100.0 + 14 * i, x=500, bold=False) for i in range(1, 6)]
    title = _ln("Table of Contents", 60, bold=True)
    assert names_itself([title, *rows, *labels])
    assert not names_itself([title, *rows, *labels], furniture={0})
    assert not names_itself([*rows, *labels])
