"""Parser rules found on filings of producers the parser was not designed on (issue 35): table rows and column
headings are not section headings, running headers of one part of a document and footers that name their part
are page furniture, and a contents block that shares its page (or wraps its entries) is still a ToC."""

from __future__ import annotations

from htmlrag.superrag.parse import headings as hd
from htmlrag.superrag.parse.furniture import find_furniture
from htmlrag.superrag.parse.model import Line
from htmlrag.superrag.parse.toc import is_toc_page, toc_line_ids, toc_rows


def _ln(text: str, y: float, *, x: float = 50, w: float | None = None, size: float = 9.0, bold: bool = False,
        block: int = 0, page: int = 1) -> Line:
    return Line(page=page, bbox=(x, y, x + (w if w is not None else 5.0 * len(text)), y + size), text=text, size=size,
                bold=bold, block=block)


def _heads(lines: list[Line], cells: set[int] = frozenset()) -> list[str]:
    return [" ".join(x.text for x in run) for kind, run in hd.segment_block(hd.Block(lines), 9.0, cells=cells)
            if kind == "head"]


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
BODY = "The company sells widgets to customers in many regions and reports the results every quarter."


def test_table_rows_units_and_dates_are_not_headings() -> None:
    """Bold rows of a statement the table finder left in the text ("Total net revenue $ 11,715 $ 18,353"),
    unit lines ("(In millions)") and date lines were section headings, each opening a section (and naming the
    table under it "(Unaudited)"); a real heading next to them still is one."""
    for row in ("Total net revenue $ 11,715 $ 18,353", "Data Center and AI 3,718 6,074", "(In millions)",
                "(Unaudited)", "October 29, 2023", "Apr 1, 2023 Apr 2, 2022", "Basic 4,154 4,079"):
        assert _heads([_ln(row, 100, bold=True), _ln(BODY, 112)]) == [], row
    for heading in ("Note 12: Borrowings", "2.1 Scope", "Item 2. MD&A", "Fiscal 2023 Highlights", "Exhibit 31.1",
                    "Revenue by Reportable Segments", "Items 3 and 4 of Part II",
                    "Three Months Ended September 30, 2023 Compared with Three Months Ended September 30, 2022"):
        assert _heads([_ln(heading, 100, bold=True), _ln(BODY, 112)]) == [heading], heading


def test_column_headings_side_by_side_are_not_headings() -> None:
    """Two short bold lines on one row (a table's column headings) are cells; a bold heading whose row holds
    the other column's body text (a two-column page) is still a heading."""
    cells = [_ln("Gross Amounts", 100, x=200, bold=True, block=1), _ln("Net Amount", 100, x=400, bold=True, block=2)]
    grid = hd.grid_cells([*cells, _ln(BODY, 112, block=3)])
    assert grid == {id(c) for c in cells}
    assert _heads([cells[0], _ln(BODY, 112)], grid) == []
    assert _heads([cells[0], _ln(BODY, 112)]) == ["Gross Amounts"]  # what the old rule made of it
    two_col = [_ln("2 Related Work", 100, x=50, w=120, bold=True, block=1),
               _ln("the other column goes on with its text", 100, x=320, w=230, block=2)]
    assert hd.grid_cells(two_col) == set()


def test_a_running_header_of_one_part_is_furniture() -> None:
    """"NOTES TO ... (Continued)" at the same place atop 5 consecutive pages of 20 (25% < min_share) is a
    running header, not a heading opening every page of the notes; a line that recurs on scattered pages only
    is kept."""
    pages = []
    for p in range(20):
        lines = [_ln(f"body text of page {p} " * 3, 300, page=p + 1), _ln(f"{p + 1}", 760, page=p + 1)]
        if 8 <= p < 13:
            lines.insert(0, _ln("NOTES TO FINANCIAL STATEMENTS (Continued)", 33, bold=True, page=p + 1))
        if p in (2, 9, 16):
            lines.insert(0, _ln("Segment Results", 40 + p, bold=True, page=p + 1))
        pages.append((lines, 792.0))
    def dropped(drop: list[set[int]], p: int) -> set[str]:
        return {pages[p][0][i].text for i in drop[p]}

    drop, _ = find_furniture(pages)
    for p in range(8, 13):
        assert "NOTES TO FINANCIAL STATEMENTS (Continued)" in dropped(drop, p), p
    assert "Segment Results" not in dropped(drop, 2) | dropped(drop, 9) | dropped(drop, 16)
    old, _ = find_furniture(pages, run_pages=99)  # without the run rule: the header stays in the text
    assert all("NOTES TO FINANCIAL STATEMENTS (Continued)" not in dropped(old, p) for p in range(8, 13))


def test_a_footer_naming_its_part_with_the_page_number_is_furniture() -> None:
    """Footers whose text changes with the part of the document ("Financial Statements  Notes  10", "MD&A 24")
    but whose number follows the page number at one offset are furniture, and give the printed labels."""
    parts = ["Financial Statements Consolidated Statements of Income", "Financial Statements Balance Sheets",
             "Notes to Financial Statements", "MD&A", "Risk Factors", "Other Key Information"]
    pages = []
    for p in range(12):  # each footer text on 2 of 12 pages: under min_share
        footer = f"{parts[p // 2]} {p + 3}"
        body = [_ln(f"{BODY} {WORDS[p]} {WORDS[i]}", 100 + 12 * i, page=p + 1) for i in range(6)]
        pages.append(([_ln(footer, 762, size=8.0, page=p + 1), *body], 792.0))
    drop, labels = find_furniture(pages)
    assert all(d == {0} for d in drop)
    assert labels[1] == "3" and labels[12] == "14"


def _toc_page() -> list[Line]:
    lines = [_ln("TABLE OF CONTENTS", 40, bold=True), _ln("Page", 60)]
    y = 80.0
    for title, page in [("Item 1. Financial Statements", 3), ("WRAPPED", 8), ("Item 2. Management's Discussion", 25),
                        ("Item 3. Market Risk", 35), ("Item 4. Controls and Procedures", 35)]:
        if title == "WRAPPED":
            lines += [_ln("a) Condensed Consolidated Statements of Cash Flows for the nine months ended October 29, "
                          "2023 and October", y, w=480), _ln("30, 2022", y + 11, w=40), _ln("8", y + 11, x=540, w=10)]
            y += 25
            continue
        lines += [_ln(title, y, w=300), _ln(str(page), y, x=540, w=10)]
        y += 14
    y += 20
    for i in range(26):  # the rest of the page: notices in prose
        lines.append(_ln(f"Investors and others should note that we announce material information {i}", y, w=480))
        y += 12
    lines.append(_ln("2", 760, x=300, w=8))
    return lines


def test_a_contents_block_sharing_its_page_and_wrapped_entries() -> None:
    """A contents block followed by a page of notices was not a ToC page (its rows were under 30% of the page's
    rows), so it was parsed as a table and retrieved as evidence; the share is now taken over the block. An
    entry wrapped over two rows is one entry, and the page's own number after the block is none."""
    lines = _toc_page()
    found, _ = toc_rows(lines)
    assert [(t.split(".")[0].split()[0], lab) for _, t, lab in found] == [
        ("Item", "3"), ("a)", "8"), ("Item", "25"), ("Item", "35"), ("Item", "35")]
    assert found[1][1].endswith("October 29, 2023 and October 30, 2022")
    assert is_toc_page(lines, n_pages=52)
    dropped = {lines[i].text for i in toc_line_ids(lines)}
    assert "30, 2022" in dropped and not any(t.startswith("Investors") for t in dropped)


def test_a_heading_that_numbers_its_page_is_no_footer() -> None:
    """"Section 12" set large atop page 12 follows the page number like a numbered footer, but a line at
    heading size is a heading (the numbered-footer rule leaves it; the 500-page test caught this)."""
    pages = [([_ln(f"Section {p + 1}", 60, size=16.0, page=p + 1),
               *(_ln(f"{BODY} {WORDS[p]} {WORDS[i]}", 200 + 12 * i, page=p + 1) for i in range(4)),
               _ln(str(p + 1), 760, page=p + 1)], 792.0) for p in range(6)]
    drop, labels = find_furniture(pages, heading_size=11.5)
    assert all(d == {5} for d in drop), drop
    assert labels == {p: str(p) for p in range(1, 7)}


def test_headings_the_outline_misses_join_the_outline_scale() -> None:
    """The outline names "Forward-Looking Statements" (level 1, 14 pt) and "Mobileye" (level 2, 14 pt), but not
    the 18 pt statement titles, whose text differs from their entries: by font rank they were level 2 and so
    hung under "Forward-Looking Statements" with everything after it. Now a style the outline uses takes its
    most common outline level, and other styles keep their rank distance to it. In one style a note's label
    ranks it above the unlabelled headings (issue 35, ninth round): "Note 1" sits one level above the outline's
    level-2 "Mobileye", and without an outline the unlabelled 14 pt headings rank below it."""
    def head(text: str, size: float) -> tuple[list[Line], float]:
        return [_ln(text, 100, size=size)], size

    heads = [head("Forward-Looking Statements", 14), head("Consolidated Statements of Income", 18),
             head("Note 1: Basis of Presentation", 14), head("Mobileye", 14), head("Provision for Taxes", 14),
             head("Segment detail", 12), head("Other Key Information", 18)]
    outline = [(1, "Forward-Looking Statements"), (2, "Mobileye"), (2, "Provision for Taxes"),
               (1, "Other Key Information")]
    levels = [lvl for lvl, _ in hd.assign_levels(heads, outline)]
    assert levels == [1, 1, 1, 2, 2, 3, 1]
    assert [lvl for lvl, _ in hd.assign_levels(heads)] == [3, 1, 2, 3, 3, 4, 1]  # no outline: font ranks


def test_a_box_over_running_text_is_not_a_table() -> None:
    """A shaded box over a graphic's prose, cut by its rules into "opportunit" | "ies", is no table; a
    statement whose cells start with capitals, digits or signs is."""
    from htmlrag.superrag.parse.tables import cuts_words

    assert cuts_words([["embrace t PC experi source of I", "hese opportunit ences even mo P, scale, and c C",
                        "ies by simplifying and focusing our roadmap"], ["$9.3", "$0.7", ""]])
    assert not cuts_words([["Net sales", "Products", "Services"], ["Revenue", "$18,120", "$5,931"],
                           ["Cost of revenue", "4,720", "2,754"], ["Research and development", "2,294", "1,945"]])
    assert not cuts_words([["Language", "TEDs", "", "mAP (0.75)"], ["", "simple", "complex", "all"]])  # a paper's


def test_headings_in_capitals_of_the_body_font_are_headings() -> None:
    """Filings set "OVERVIEW" and "NOTE 1 — ACCOUNTING POLICIES" in the body font, neither bold nor larger, only
    in capitals; they were read as body text, so the notes and the MD&A overview ran on under the heading before
    them ("Note About Forward-Looking Statements" titled Microsoft's quarterly highlights)."""
    for heading in ("OVERVIEW", "NOTE 1 — ACCOUNTING POLICIES", "SEGMENT RESULTS OF OPERATIONS",
                    "RISKS RELATING TO THE EVOLUTION OF OUR BUSINESS"):
        assert _heads([_ln(heading, 100), _ln(BODY, 112)]) == [heading], heading  # followed by body text
        assert _heads([_ln(heading, 100)]) == [heading], heading  # a block of its own
    # not headings: a line of capitals ending a sentence, short all-capital tokens, a paragraph in capitals
    assert _heads([_ln("IN ACCORDANCE WITH U.S. GAAP.", 100), _ln(BODY, 112)]) == []
    assert _heads([_ln("Q1 FY", 100), _ln(BODY, 112)]) == []
    caps = "THE SOFTWARE IS PROVIDED AS IS WITHOUT WARRANTY OF ANY KIND EXPRESS OR IMPLIED INCLUDING"
    assert _heads([_ln(caps, 100), _ln(caps, 112), _ln(caps + " THE WARRANTIES.", 124)]) == []


def test_capitals_rank_above_mixed_case_of_the_same_size() -> None:
    """At one size, capitals open a level above mixed case, bold or not (NOTES TO FINANCIAL STATEMENTS >
    NOTE 1 — ACCOUNTING POLICIES > Accounting Principles); bigger type still comes first."""
    def head(text: str, size: float = 9.0, bold: bool = False) -> tuple[list[Line], float]:
        return [_ln(text, 100, size=size, bold=bold)], size

    heads = [head("ITEM 2. MANAGEMENT'S DISCUSSION", 10.8, True), head("NOTES TO FINANCIAL STATEMENTS", bold=True),
             head("NOTE 1 — ACCOUNTING POLICIES"), head("Accounting Principles", bold=True), head("Other Notes")]
    assert [lvl for lvl, _ in hd.assign_levels(heads)] == [1, 2, 3, 4, 5]


def test_bold_lines_over_a_tables_value_columns_are_column_headings() -> None:
    """NVIDIA sets "Three Months Ended" or "Reported as" over a table's amount columns in the bold body font of
    its notes' sub-headings; they are the table's column headings, not sections. A title at the table's left
    edge, one centred over it, and a heading well above it stay headings."""
    from htmlrag.superrag.parse.document import _column_headings
    from htmlrag.superrag.parse.model import TableItem

    table = TableItem(page=1, bbox=(50, 200, 550, 300), rows=[["a", "1"]], html="")

    def over(text: str, x: float, y: float = 185, w: float = 100) -> list[tuple[str, object]]:
        return [("body", [_ln(BODY, 150)]), ("head", [_ln(text, y, x=x, w=w, bold=True)]), ("table", table)]

    assert _column_headings(over("Three Months Ended", 420)) == {1}
    assert _column_headings(over("Reported as", 450, w=60)) == {1}
    stacked = [("head", [_ln("Operating Lease", 170, x=450, w=80, bold=True)]),
               ("head", [_ln("Obligations", 185, x=455, w=60, bold=True)]), ("table", table)]
    assert _column_headings(stacked) == {0, 1}
    assert _column_headings(over("Long-Term Debt", 50)) == set()  # at the table's left edge: a title
    assert _column_headings(over("INCOME STATEMENTS", 250)) == set()  # centred over the table: a title
    assert _column_headings(over("Three Months Ended", 420, y=120)) == set()  # far above the table
    assert _column_headings([("head", [_ln("Three Months Ended", 185, x=420, bold=True)]), ("body", [_ln(BODY, 195)])]) \
        == set()  # no table below


def test_an_outline_entry_in_long_form_begins_as_its_heading_does() -> None:
    """A contents line names a heading in long form only when it begins as the heading does: "Three Months
    Ended" (a column heading) is in the words of "Condensed Consolidated Statements of Income for the Three Months
    Ended ..." but is not that entry's heading; "Management's Discussion and Analysis" is the long entry's."""
    def head(text: str, page: int) -> tuple[list[Line], float]:
        return [_ln(text, 100, bold=True, page=page)], 9.0

    outline = [(1, "Condensed Consolidated Statements of Income for the Three Months Ended April 30, 2023", 3),
               (1, "Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations", 9)]
    heads = [head("Three Months Ended", 3), head("Management's Discussion and Analysis", 9)]
    assert hd.outline_index(heads, outline) == [None, 1]
    heads = [head("Condensed Consolidated Statements of Income", 3)]
    assert hd.outline_index(heads, outline) == [0]


def test_words_with_digits_do_not_make_a_line_capitals() -> None:
    """"COVID-19" (a name written in capitals) in the bold body font of NVIDIA's MD&A sub-headings ranked a level
    above its bold siblings as a heading in capitals, and hung "Revenue" or "Gross Margin" under it; words with a
    digit and no lower case letter do not count, and a lower case letter in one still does ("15(d)")."""
    assert not hd.capitals("COVID-19") and not hd.capitals("H100 Q3")
    assert hd.capitals("ITEM 1A. RISK FACTORS") and hd.capitals("FORM 10-Q REPORT") and hd.capitals("OVERVIEW")
    assert not hd.capitals("QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)")
    levels = hd.assign_levels([([_ln("COVID-19", 100, bold=True)], 9.0), ([_ln("Gross Margin", 200, bold=True)], 9.0),
                               ([_ln("OVERVIEW", 300)], 9.0)])
    assert [lv for lv, _ in levels][:2] == [2, 2]  # one style with its bold sibling, below the capitals line


def test_a_title_block_marked_continued_opens_no_section() -> None:
    """"NOTES TO ... FINANCIAL STATEMENTS (Continued)" under "NVIDIA CORPORATION AND SUBSIDIARIES" atop one page
    (not repeated enough to be furniture) repeats a title already open: neither run opens a section, so the notes
    after it stay under the notes' heading. A heading before body text is unaffected."""
    from htmlrag.superrag.parse.document import _continued_titles

    units = [("body", [_ln(BODY, 10)]), ("head", [_ln("NVIDIA CORPORATION AND SUBSIDIARIES", 23, bold=True)]),
             ("head", [_ln("NOTES TO CONDENSED CONSOLIDATED FINANCIAL STATEMENTS (Continued)", 34, bold=True)]),
             ("head", [_ln("Note 2 - Business Combination", 60, bold=True)]), ("body", [_ln(BODY, 72)])]
    assert _continued_titles(units) == {1, 2}
    for tail in ("continued", "(cont'd)", "[Continued]"):
        assert _continued_titles([("head", [_ln(f"Results of Operations {tail}", 20, bold=True)])]) == {0}, tail
    assert _continued_titles([("head", [_ln("Discontinued Operations", 20, bold=True)]),
                              ("head", [_ln("Continued Listing Standards", 40, bold=True)]),
                              ("head", [_ln("Operations Discontinued", 60, bold=True)])]) == set()


def test_a_bulleted_list_set_as_a_ruled_table_is_text(tmp_path) -> None:
    """Filings converted from HTML set a bulleted list as a two-column table (the bullet, then the item) on cell
    boxes, and the ruling detector found it: a 10-K's forward-looking-statements list of risk factors became
    "tables" of "• | Changes in consumer demand ...", so its text left the section's chunks. The list is text,
    in its section; a ruled table whose labels start with bullets but whose cells hold amounts stays a table."""
    import pymupdf

    from htmlrag.superrag.parse import parse_pdf
    from htmlrag.superrag.parse.tables import is_list
    from htmlrag.testing.pdfs import _table

    items = ["changes in consumer demand patterns in industries", "the loss of key customers or suppliers",
             "significant competition in the regions where we operate", "rising interest rates on our borrowings"]
    path = tmp_path / "list.pdf"
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 60), "Forward-Looking Statements", fontsize=14)
    page.insert_text((50, 90), "Risks that could cause results to differ include, but are not limited to:", fontsize=9)
    _table(page, 50, 100, [["\u2022", text] for text in items], w=260)
    page.insert_text((50, 220), "Segment Results", fontsize=14)
    _table(page, 50, 240, [["\u2022 Packaging", "1,234", "1,100"], ["\u2022 Flexibles", "2,345", "2,210"],
                           ["\u2022 Rigid", "987", "950"]], w=120)
    doc.save(path)
    doc.close()

    parsed = parse_pdf(path)
    assert [t.rows[0][1:] for t in parsed.tables] == [["1,234", "1,100"]]  # only the table of amounts
    text = " ".join(p.text for s in parsed.sections for p in s.items if type(p).__name__ == "Paragraph")
    for item in items:
        assert item in text, item
    section = next(s for s in parsed.sections if s.title == "Forward-Looking Statements")
    assert any("rising interest rates" in getattr(p, "text", "") for p in section.items)

    # the rule on rows: wrapped item lines (empty bullet cell) are part of the list; any amount makes a table;
    # a row that starts with text in the bullets' column is no list item
    assert is_list([["\u2022", "first item"], ["", "its second line"], ["\uf0b7", "second item"]])
    assert is_list([["\u2022 first item"], ["\u2022 second item"]])
    assert not is_list([["\u2022", "Revenue", "$1,234"], ["\u2022", "Cost", "(567)"]])
    assert not is_list([["Total", "first item"], ["\u2022", "second item"], ["\u2022", "third item"]])
    assert not is_list([["\u2022", "only one item"]])
    assert not is_list([["\u2014", "nil"], ["\u2014", "nil"]])  # dashes are nil amounts in tables, not bullets


def test_the_lines_of_a_paragraph_cut_into_a_grid_are_text(tmp_path) -> None:
    """HTML converters paint each span of a paragraph on a box of its own; where a link or an italic title breaks
    the boxes, the ruling detector found a "table" whose rows were the paragraph's lines (a 10-Q's "... impacted
    by the Q2 charge, which resulted in" | "decreases of $152 million, ..."), and the paragraph left the text. A
    table of amounts, and a table of prose definitions whose rows end with full stops, stay tables."""
    from htmlrag.superrag.parse import parse_pdf
    from htmlrag.superrag.parse.tables import runs_on
    from htmlrag.testing.pdfs import _table

    lines = [["Gross margin and income were reduced by the charge, which", ""],
             ["resulted in decreases of one hundred million. Prior", "Year net income was raised by"],
             ["the tax benefit related to the transfer of intangible", ""],
             ["properties to Ireland, as the notes describe in full.", ""]]
    path = tmp_path / "para.pdf"
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 60), "Overview", fontsize=14)
    _table(page, 20, 80, lines, w=275, h=14)
    doc.save(path)
    doc.close()
    parsed = parse_pdf(path)
    assert parsed.tables == []
    text = " ".join(p.text for s in parsed.sections for p in s.items if type(p).__name__ == "Paragraph")
    assert "decreases of one hundred million" in text and "properties to Ireland, as the notes" in text

    assert runs_on([["Current year gross margin, operating income, net income, and diluted EPS were negatively "
                     "impacted by the Q2 charge, which resulted in", ""],
                    ["decreases of $152 million, $1.2 billion, $946 million, and $0.13, respectively. Prior",
                     "year net income and diluted EPS were positively impacted"],
                    ["by the net tax benefit related to the transfer of intangible properties, which resulted in "
                     "an increase to net income and diluted EPS of $3.3", ""], ["billion and $0.43, respectively.", ""]])
    assert runs_on([["Revenue, gross profit rate, SG&A and operating income rate changes in the quarter were driven "
                     "by our", "", ""], ["Domestic segment. For further discussion of our segments, see",
                                         "Segment Performance Summary", ", below."]])
    # tables: amounts anywhere; rows of prose definitions ending in full stops; short labels
    assert not runs_on([["Net cash provided by", ""], ["operating activities of the company and its", "1,234"]])
    assert not runs_on([["Acquisition-related adjustment", "Amortization of acquisition-related intangible assets.",
                         "We exclude amortization charges because they do not reflect our operations."],
                        ["Restructuring and other charges", "Charges for employee severance and benefits.",
                         "We exclude these charges to compare results with prior and future periods."]])
    assert not runs_on([["Title of each class", "Trading symbol", "Name of exchange"],
                        ["Common stock", "XYZ", "The Nasdaq Stock Market"]])


def test_group_headings_of_a_printed_contents_page_open_no_section(tmp_path) -> None:
    """A contents page groups its rows under lines without a page number ("Part I – Financial information
    Page", "Part II – Other information"). Only the numbered rows left the text, so the group lines became
    sections on the contents page, matched to the outline's "Part II" entry, and the whole body (MD&A, the
    statements) hung under "Part II – Other information" of page 2 (a 10-Q by Workiva). The contents block
    leaves the text whole; the text below it stays."""
    import pymupdf

    from htmlrag.superrag.parse import parse_pdf
    from htmlrag.superrag.parse.toc import toc_block_ids

    path = tmp_path / "tenq.pdf"
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((250, 60), "TABLE OF CONTENTS", fontsize=10, fontname="hebo")
    y = 90
    for text, label, bold in [("Part I – Financial information", "Page", True), ("Item 1. Financial Statements", "2", False),
                              ("Item 2. Management's Discussion and Analysis", "3", False),
                              ("Part II – Other information", "", True), ("Item 1. Legal Proceedings", "4", False),
                              ("Item 6. Exhibits", "4", False)]:
        page.insert_text((60 if bold else 80, y), text, fontsize=9, fontname="hebo" if bold else "helv")
        if label:
            page.insert_text((530, y), label, fontsize=9)
        y += 14
    page.insert_text((60, y + 30), "This report is filed with the Securities and Exchange Commission every quarter.",
                     fontsize=9)
    for heading in ["Item 1. Financial Statements", "Item 2. Management's Discussion and Analysis",
                    "Item 1. Legal Proceedings"]:
        p = doc.new_page()
        p.insert_text((60, 60), heading, fontsize=12, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, 80, 540, 300), (BODY + " ") * 6, fontsize=9)
    doc.set_toc([[1, "Part I – Financial information", 1], [2, "Item 1. Financial Statements", 2],
                 [2, "Item 2. Management's Discussion and Analysis", 3], [1, "Part II – Other information", 4],
                 [2, "Item 1. Legal Proceedings", 4]])
    doc.save(path)
    doc.close()

    parsed = parse_pdf(path)
    sections = parsed.sections
    assert not [s.title for s in sections if s.page == 1 and s.title.startswith("Part")]
    contents = [i for i, s in enumerate(sections) if s.title == "TABLE OF CONTENTS"]  # a heading, and no parent
    assert len(contents) == 1 and not [s.title for s in sections if s.parent == contents[0]]
    mdna = next(s for s in sections if s.title.startswith("Item 2. Management"))
    chain, parent = [], mdna.parent
    while parent is not None:
        chain.append(sections[parent].title)
        parent = sections[parent].parent
    assert not any("Part II" in t for t in chain), chain
    text = " ".join(p.text for s in sections for p in s.items if type(p).__name__ == "Paragraph")
    assert "filed with the Securities and Exchange Commission every quarter" in text  # below the block: stays
    assert "Legal Proceedings 4" not in text and "Part II – Other information" not in text.split("Legal")[0]

    # the block: the rows, and the label-less lines among them and under the title (which stays a heading)
    lines = [_ln("TABLE OF CONTENTS", 60), _ln("Part I – Financial information", 90, bold=True),
             _ln("Page", 90, x=530, w=20), _ln("Item 1. Financial Statements", 104, x=80), _ln("2", 104, x=530, w=5),
             _ln("Item 2. MD&A", 118, x=80), _ln("3", 118, x=530, w=5), _ln("Part II – Other information", 132, bold=True),
             _ln("Item 1. Legal Proceedings", 146, x=80), _ln("4", 146, x=530, w=5), _ln("Item 6. Exhibits", 160, x=80),
             _ln("4", 160, x=530, w=5), _ln("Item 1A. Risk Factors", 174, x=80), _ln("4", 174, x=530, w=5),
             _ln(BODY, 220)]
    assert toc_block_ids(lines) == set(range(1, 14))
    # prose among the rows stays (a long line, a line running on in lower case); a page whose only "contents"
    # is its running header (furniture) is no contents page to empty: only its rows go
    prose = [*lines[:5], _ln("This index lists the parts of the report and the items that each part holds.", 100),
             _ln("in the order the form requires.", 110), *lines[5:]]
    assert {prose[i].text for i in toc_block_ids(prose)} == {ln.text for ln in lines[1:14]}
    rows = toc_block_ids(lines, {0})
    assert 0 not in rows and 1 not in rows and 7 not in rows and {3, 4, 5, 6, 8, 9} <= rows


def test_a_section_opened_on_a_contents_page_holds_nothing_after_it() -> None:
    """A contents page's title is a heading (docling's reference counts it), but the section it opens ends with
    its page: a Workiva 10-Q's body, set in headings smaller than the title, had hung under "Form 10-Q Table of
    Contents" of page 2. Headings on the contents page itself may still hang under it."""
    from htmlrag.superrag.parse.document import _sections
    from htmlrag.superrag.parse.model import Paragraph

    def head(text: str, page: int, size: float) -> tuple[str, list[Line]]:
        return "head", [_ln(text, 60, size=size, bold=True, page=page)]

    def para(page: int) -> tuple[str, Paragraph]:
        return "para", Paragraph(page=page, bbox=(50, 100, 500, 140), text=BODY)

    flow = [head("Quarterly Report", 1, 16), para(1), head("TABLE OF CONTENTS", 2, 14), head("Notes", 2, 11),
            head("Executive Overview", 3, 11), para(3), head("Business Developments", 4, 11), para(4)]
    _, sections = _sections(flow, [], {2})
    parent = {s.title: (sections[s.parent].title if s.parent is not None else None) for s in sections}
    assert parent["Executive Overview"] == "Quarterly Report" and parent["Business Developments"] == "Quarterly Report"
    assert parent["Notes"] == "TABLE OF CONTENTS" and parent["TABLE OF CONTENTS"] == "Quarterly Report"
    _, before = _sections(flow, [])
    assert {sections[s.parent].title for s in before if s.page > 2 and s.parent is not None} == {"TABLE OF CONTENTS"}


def test_a_letters_address_is_not_a_heading() -> None:
    """Every auditor's report opens "To the Board of Directors and Shareholders of ...", set bold like a heading;
    taken for one it held the report's own sections ("Opinions on the Financial Statements", American Express).
    An address, on one line or wrapped, is body text; a heading that only starts alike, or an annual report's
    "To Our Shareholders" letter, is still a heading."""
    for address in (["To the Board of Directors and Shareholders of American Express Company"],
                    ["TO THE SHAREHOLDERS AND BOARD OF DIRECTORS OF 3M COMPANY"],
                    ["To the Shareholders and the Board of Directors of", "Verizon Communications Inc.:"],
                    ["To the Stockholders and Board of Directors", "Apple Inc.:"], ["Dear Stockholders,"]):
        lines = [_ln(t, 100 + 12 * i, bold=True) for i, t in enumerate(address)]
        assert _heads([*lines, _ln(BODY, 100 + 12 * len(address))]) == [], address
    for heading in ("To Our Shareholders", "TO THE MGM RESORTS DEFERRED COMPENSATION PLAN II",
                    "Changes to the Board of Directors", "Opinions on the Financial Statements"):
        assert _heads([_ln(heading, 100, bold=True), _ln(BODY, 112)]) == [heading], heading
