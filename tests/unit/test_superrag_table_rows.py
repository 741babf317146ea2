"""Statements whose row labels are long or wrap over two lines (issue 35, fifteenth round): the rows stay in the
table, with the column headings above them, and a wrapped label is one cell."""

from __future__ import annotations

from pathlib import Path

from htmlrag.superrag.parse.document import parse_pdf
from htmlrag.superrag.parse.model import Paragraph
from htmlrag.superrag.parse.tables import aligned_tables, grow, join_wrapped_labels, text_rows
from tests.helpers.page_words import Word, words_at

LONG = "Net (loss) gain on mark-to-market valuation of commodity positions"  # 9 words: a "prose" phrase
WRAP = ("Net loss on commodity positions reclassified from unallocated", "corporate items to segment operating profit")


def _words(y: float, *cells: tuple[float, str], w: float = 3.5) -> list[Word]:
    return words_at(y, *cells, w=w)  # narrower words than the layout tests': long labels fit a label's width


def _statement(top: float = 100.0) -> list[tuple[float, float, float, float, str]]:
    """General Mills' commodity table (2020 10-K, page 64) in generated words: column headings, a row with a
    nine-word label, a label wrapped onto the row of its amounts, two more rows."""
    y = [top + 12 * i for i in range(7)]
    return (_words(y[0], (390, "Fiscal Year"))
            + _words(y[1], (60, "In Millions"), (380, "2020"), (440, "2019"), (500, "2018"))
            + _words(y[2], (60, LONG), (380, "$(63.0)"), (440, "$(39.0)"), (500, "$14.3"))
            + _words(y[3], (60, WRAP[0]))
            + _words(y[4], (66, WRAP[1]), (380, "35.6"), (440, "10.0"), (500, "11.3"))
            + _words(y[5], (60, "Net revaluation of grain inventories"), (380, "2.7"), (440, "(7.0)"), (500, "6.5"))
            + _words(y[6], (60, "Total"), (380, "$(24.7)"), (440, "$(36.0)"), (500, "$32.1")))


def test_a_statement_with_long_and_wrapped_row_labels_is_one_table_with_its_column_headings() -> None:
    """Before, the nine-word label and the first line of the wrapped one were prose: each ended the run of
    aligned rows, so the table began below them, and its column headings ("In Millions 2020 2019 2018") became
    a section heading of the note."""
    rows_ = text_rows(_statement())
    got = aligned_tables(rows_, set(), 1, 612.0)
    assert len(got) == 1
    rows = got[0].rows
    assert rows[0] == ["", "Fiscal Year", "", ""] and rows[1] == ["In Millions", "2020", "2019", "2018"]
    assert rows[2] == [LONG, "$(63.0)", "$(39.0)", "$14.3"]
    assert rows[3] == [WRAP[0], "", "", ""] and rows[4][0] == WRAP[1] and rows[-1][0] == "Total"

    # a sentence over a table ends the run even when followed by rows of amounts, and so does a long line over
    # a row that begins in capitals: neither is the first line of a wrapped label
    body = [w for w in _statement() if w[1] != 100.0]  # no "Fiscal Year": the line sits right above the headings
    for above in ("The following table shows the gains we recognized:", WRAP[0]):
        got = aligned_tables(text_rows(_words(100, (60, above)) + body), set(), 1, 612.0)
        assert len(got) == 1 and got[0].rows[0] == ["In Millions", "2020", "2019", "2018"]
    lone = _words(100, (60, WRAP[0])) + _words(112, (60, "Corporate items to segment operating profit"),
                                                  (380, "35.6"), (440, "10.0"), (500, "11.3"))
    rows_ = text_rows(lone)
    assert grow((56.0, 110.0, 556.0, 200.0), rows_, set())[0] == []  # the row below begins in capitals


def test_a_long_group_label_between_rows_of_amounts_and_a_wide_label_stay_in_the_statement() -> None:
    """Intel's statement of comprehensive income (2023 Q1 10-Q, page 7): "Changes in other comprehensive income,
    net of tax:" (eight words) between "Net income (loss)" and the changes, and a label wider than the prose
    limit with its amounts ("Less: comprehensive income (loss) attributable to non-controlling interests"). The
    run of aligned rows ended at both, and the table held five of its nine rows; its column headings and first
    row became a section "Three Months Ended" holding the note's text."""
    group = "Changes in other comprehensive income, net of tax:"
    wide = "Less: comprehensive income (loss) attributable to non-controlling interests"
    rows = [((34, "(In Millions; Unaudited)"), (455, "Apr 1, 2023"), (524, "Apr 2, 2022")),
            ((34, "Net income (loss)"), (449, "$(2,768)"), (518, "$8,113")), ((34, group),),
            ((40, "Net unrealized holding gains (losses) on derivatives"), (493, "142"), (559, "(115)")),
            ((40, "Translation adjustments and other"), (499, "—"), (564, "(25)")),
            ((34, "Total comprehensive income (loss)"), (482, "(2,625)"), (554, "7,991")),
            ((34, wide), (495, "(10)"), (568, "—"))]
    words = _words(70, (469, "Three Months Ended")) + [
        w for k, cells in enumerate(rows) for w in _words(84 + 14 * k, *cells, w=4.5)]
    rows_ = text_rows(words)
    assert rows_[-1].phrases[0][1] - rows_[-1].phrases[0][0] > 0.45 * 612  # wider than a label may be in prose
    got = aligned_tables(rows_, set(), 1, 612.0)
    assert len(got) == 1
    cells = got[0].rows
    assert "Three Months Ended" in cells[0] and cells[1][1:] == ["Apr 1, 2023", "Apr 2, 2022"]
    assert [group, "", ""] in cells and cells[-1] == [wide, "(10)", "—"] and len(cells) == 8

    # a sentence between two rows of amounts is no label of the statement: it ends the run
    rows[2] = ((34, "Other comprehensive income is shown net of tax in this table."),)
    words = [w for k, cells in enumerate(rows) for w in _words(84 + 14 * k, *cells, w=4.5)]
    got = aligned_tables(text_rows(words), set(), 1, 612.0)
    assert all(not r[0].startswith("Other comprehensive income is") for t in got for r in t.rows)


def test_the_row_grower_takes_a_wrapped_label_above_a_ruled_table() -> None:
    """A ruled box that starts at a wrapped label's second line (the first line above it, plain text) grows
    over the first line and the rows above it, up to the column headings; a lone line over the value columns at
    the top ("Fiscal Year") is a column heading and stays; a sentence ending in a colon above them stops it."""
    words = _words(76, (60, "Unallocated corporate items for fiscal 2020, 2019, and 2018 included:")) + _statement()
    rows_ = text_rows(words)
    box = (56.0, 147.0, 556.0, 200.0)  # the detector's box: from the wrapped label's second line down
    above, _ = grow(box, rows_, set())
    assert [rows_[i].phrases[0][2] for i in above] == [WRAP[0], LONG, "In Millions", "Fiscal Year"]
    no_amounts = [w for w in words if not (w[1] == 148.0 and w[0] >= 380)]
    rows_ = text_rows(no_amounts)  # the second line holds no amount: the long lone line is prose and stops it
    assert grow(box, rows_, set())[0] == []


def test_only_a_line_set_tight_over_the_value_columns_heads_a_grown_table() -> None:
    """The grower keeps a lone line at the top of the rows it takes when it is a column heading: tight over a row
    of cells and over the value columns ("Three Months Ended", NVIDIA's MD&A summary). A note's heading over the
    sentence that leads into the table (Microsoft's "NOTE 10 — DEBT"), a link at the page's top right over a
    heading (Best Buy's "Table of Contents"), a title ending in a colon (Johnson & Johnson's "Major Consumer Health
    Franchise Sales*:") and a heading of the right-hand column of a two-column page, whose rows hold the left
    column's text too (JPMorgan's "Provision for credit losses"), are no column headings."""
    def grown(words, box):
        rows_ = text_rows(words)
        return [rows_[i].phrases[0][2] for i in grow(box, rows_, set())[0]]

    dates = _words(105, (186, "July 30, 2023"), (300, "April 30, 2023"), (420, "July 31, 2022"))
    first = _words(117, (20, "Revenue"), (190, "$13,507"), (304, "$7,192"), (424, "$6,704"))
    box = (18.0, 116.0, 594.0, 200.0)
    assert grown(_words(95, (244, "Three Months Ended")) + dates + first, box) == [
        "July 30, 2023", "Three Months Ended"]
    assert grown(_words(90, (244, "Three Months Ended")) + dates + first, box) == [
        "July 30, 2023"]  # a line's gap above the dates: a title, not a column heading
    assert grown(_words(95, (150, "Major Consumer Health Franchise Sales*:")) + dates + first, box) == [
        "July 30, 2023"]  # starts left of the value columns
    assert grown(_words(95, (244, "Franchise Sales*:")) + dates + first, box) == ["July 30, 2023"]
    note = _words(80, (250, "NOTE 10 — DEBT")) + _words(92, (20, "The components of debt were as follows:"))
    assert grown(note + dates + first, box) == ["July 30, 2023"]
    link = _words(80, (520, "Table of Contents")) + _words(92, (20, "Condensed Consolidated Balance Sheets"))
    assert grown(link + dates + first, box) == ["July 30, 2023"]
    two = (_words(46, (322, "Provision for credit losses"))
           + _words(58, (50, "• Weather-related write-downs on"), (446, "Three months ended March 31,"))
           + _words(70, (58, "energy investments, as well as"), (322, "(in millions)"), (453, "2021"),
                    (499, "2020"), (535, "Change")))
    assert grown(two, (320.0, 57.0, 562.0, 83.0)) == []


def test_a_label_wrapped_over_lines_joins_the_row_of_its_amounts() -> None:
    rows = [["In Millions", "2020", "2019"], [WRAP[0], "", ""], [WRAP[1], "35.6", "10.0"],
            ["Net sales:", "", ""], ["iPhone", "40,665", "42,626"], ["Products", "", ""],
            ["Cost of sales related to", "", ""], ["restructuring and", "", ""], ["impairment charges", "12", "9"],
            ["Mark-to-", "", ""], ["market losses", "(3)", "(4)"], ["Other", "", ""], ["items, see note", "", ""]]
    assert join_wrapped_labels(rows) == [
        ["In Millions", "2020", "2019"], [f"{WRAP[0]} {WRAP[1]}", "35.6", "10.0"],
        ["Net sales:", "", ""], ["iPhone", "40,665", "42,626"], ["Products", "", ""],  # a colon; capitals
        ["Cost of sales related to restructuring and impairment charges", "12", "9"],  # three lines
        ["Mark-to-market losses", "(3)", "(4)"],
        ["Other", "", ""], ["items, see note", "", ""]]  # no amount: not a row of a statement
    assert join_wrapped_labels([]) == [] and join_wrapped_labels([["a"]]) == [["a"]]


def test_a_generated_statement_with_wrapped_labels_parses_into_one_table_and_no_heading(tmp_path: Path) -> None:
    """End to end on a PDF page set as General Mills sets it: bold column headings over the amounts, regular
    rows. The column headings were a section heading ("In Millions 2020 2019 2018") and the first rows text."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((60, 60), "COMMODITY PRICE RISK", fontsize=10, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(60, 70, 552, 130), "We use derivatives to manage our exposure to changes "
                        "in commodity prices. Unallocated corporate items for fiscal 2020, 2019, and 2018 included:",
                        fontsize=10, fontname="helv")
    rows = [((390, "Fiscal Year"),), ((60, "In Millions"), (380, "2020"), (440, "2019"), (500, "2018")),
            ((60, LONG), (380, "$(63.0)"), (440, "$(39.0)"), (500, "$14.3")), ((60, WRAP[0]),),
            ((66, WRAP[1]), (380, "35.6"), (440, "10.0"), (500, "11.3")),
            ((60, "Net revaluation of grain inventories"), (380, "2.7"), (440, "(7.0)"), (500, "6.5")),
            ((60, "Total"), (380, "$(24.7)"), (440, "$(36.0)"), (500, "$32.1"))]
    y = 160
    for r, cells in enumerate(rows):
        for x, text in cells:
            page.insert_text((x, y), text, fontsize=9, fontname="hebo" if r < 2 else "helv")
        y += 13
    page.insert_text((60, y + 20), "INTEREST RATE RISK", fontsize=10, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(60, y + 30, 552, y + 90), "We are exposed to interest rate volatility with "
                        "regard to future issuances of fixed-rate debt.", fontsize=10, fontname="helv")
    path = tmp_path / "gm.pdf"
    doc.save(path)
    doc.close()

    parsed = parse_pdf(path)
    assert len(parsed.tables) == 1
    got = parsed.tables[0].rows
    assert ["In Millions", "2020", "2019", "2018"] in got and "Fiscal Year" in got[0]
    assert [f"{WRAP[0]} {WRAP[1]}", "35.6", "10.0", "11.3"] in got and got[-1][0] == "Total"
    titles = [s.title for s in parsed.sections]
    assert "COMMODITY PRICE RISK" in titles and "INTEREST RATE RISK" in titles
    assert not any("In Millions" in t or "Fiscal Year" in t for t in titles)
    flow = "\n".join(i.text for s in parsed.sections for i in s.items if isinstance(i, Paragraph))
    assert "$(63.0)" not in flow and "commodity positions reclassified" not in flow
    assert "2018 included:" in flow and "fixed-rate debt" in flow


def test_a_table_in_the_middle_of_a_block_cuts_it_so_the_headings_around_it_stay_two() -> None:
    """3M sets a note's pages as one block of the producer: "Stock-Based Compensation Expense", its table, then
    "Stock Option Program" and its text. Once the table's lines left the block, the two headings of one style
    were next to each other and read as one heading, "Stock-Based Compensation Expense Stock Option Program". A
    block is cut where a table took lines from its middle; without a table between them, two lines of a heading's
    style in one block stay one heading run (a heading wrapped over two lines)."""
    from htmlrag.superrag.parse.document import ParseOptions, _Page, _reading_flow
    from htmlrag.superrag.parse.model import Line, PageInfo, TableItem

    text = "Amounts recognized in the financial statements with respect to stock-based compensation programs are"
    spec = [(text, 7.8, False)] * 3 + [("Stock-Based Compensation Expense", 7.8, True)] + [
        ("Cost of sales 48 49 47", 7.8, False), ("Income tax benefits (154) (327) (272)", 7.8, False)] + [
        ("Stock Option Program", 7.8, True)] + [(text, 7.8, False)] * 3

    def page(with_table: bool) -> _Page:
        lines = [Line(page=1, bbox=(57, 50 + 12 * i, 540, 58 + 12 * i), text=t, size=s, bold=b, block=1)
                 for i, (t, s, b) in enumerate(spec)]
        lines += [Line(page=1, bbox=(57, 200 + 12 * i, 540, 208 + 12 * i), text=text, size=7.8, bold=False, block=2)
                  for i in range(20)]  # the report's body
        tables = [TableItem(page=1, bbox=(56, 97, 542, 120), rows=[["Cost of sales", "48"], ["Income tax", "(154)"]],
                           html="")] if with_table else []
        return _Page(PageInfo(1, 612, 792, sum(len(ln.text) for ln in lines)), lines, tables, [])

    flow, tables, _ = _reading_flow([page(True)], ParseOptions(), [])
    heads = [" ".join(ln.text for ln in obj) for kind, obj in flow if kind == "head"]
    assert heads == ["Stock-Based Compensation Expense", "Stock Option Program"], heads
    kinds = [kind for kind, _ in flow]
    assert kinds.index("table") == kinds.index("head") + 1 and len(tables) == 1
    spec[4:6] = []  # no table between the two lines: one block, one heading run
    flow, _, _ = _reading_flow([page(False)], ParseOptions(), [])
    assert [" ".join(ln.text for ln in obj) for kind, obj in flow if kind == "head"] == [
        "Stock-Based Compensation Expense Stock Option Program"]


def test_a_heading_set_larger_than_the_rows_between_two_tables_parts_them() -> None:
    """Verizon's "Additional Financial Information" (2022 10-K, page 105) sets two tables of 9 pt rows one under the
    other, "Balance Sheet Information" in 10 pt bold between them, each a row's gap away. A short lone line inside
    a run of aligned rows is a row ("Net sales:"), so the two tables were one, and the sub-heading a row of it.
    A lone line set half a point or more larger than the rows' median size is a heading: the run is cut there,
    and the grower stops at it; a lone line of the rows' size stays a row."""
    from htmlrag.superrag.parse.model import Line
    from htmlrag.superrag.parse.tables import row_sizes

    def table(top: float, labels: tuple[str, ...]) -> list[tuple[float, float, float, float, str]]:
        return [w for k, label in enumerate(labels) for w in _words(top + 12 * k, (43, label), (400, f"{k + 1},146"),
                                                                      (462, f"{k + 2},048"))]

    words = (table(100, ("Interest income", "Other, net", "Net debt extinguishment losses"))
             + _words(136, (40, "Balance Sheet Information"))
             + table(148, ("Prepaid taxes", "Restricted cash", "Interest payable")))
    rows_ = text_rows(words)
    lines = [Line(page=1, bbox=(r.bbox[0], r.bbox[1], r.bbox[2], r.bbox[3]), text=" ".join(p[2] for p in r.phrases),
                  size=10.0 if len(r.phrases) == 1 else 9.0, bold=len(r.phrases) == 1, block=0) for r in rows_]
    assert [t.rows[0][0] for t in aligned_tables(rows_, set(), 1, 612.0)] == ["Interest income"]  # sizes unknown
    row_sizes(rows_, lines)
    assert [r.size for r in rows_] == [9.0, 9.0, 9.0, 10.0, 9.0, 9.0, 9.0]
    got = aligned_tables(rows_, set(), 1, 612.0)
    assert [t.rows[0][0] for t in got] == ["Interest income", "Prepaid taxes"]
    assert not any("Balance Sheet Information" in c for t in got for r in t.rows for c in r)
    above, _ = grow((40.0, 147.0, 560.0, 200.0), rows_, set())
    assert above == []  # the grower stops at it too
    for r in rows_:
        r.size = 9.0  # set in the rows' size, the line is a row between them
    assert len(aligned_tables(rows_, set(), 1, 612.0)) == 1
