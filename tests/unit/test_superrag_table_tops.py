"""A table's top rows stay in it (issue 35, sixteenth round): a shaded band over one label, two shaded rows of one
table, a caption of the table's units and the first line of a wrapped label no longer cut the column headings and
first rows off a table (they became sections of the text, holding the table)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pymupdf

from htmlrag.superrag.parse.lines import page_lines
from htmlrag.superrag.parse.tables import (
    _same_columns,
    aligned_tables,
    grow,
    page_tables,
    text_rows,
    units_line,
)
from tests.helpers.page_words import words_at

FILL = (0.8, 0.93, 1.0)


def _tables(path: Path) -> list[list[list[str]]]:
    page = pymupdf.open(path).load_page(0)
    return [t.rows for t in page_tables(page, 1, page_lines(page.get_text("dict"), 1))]


def _write(page: pymupdf.Page, x: float, y: float, text: str, bold: bool = False) -> None:
    page.insert_text((x, y), text, fontsize=8.5, fontname="hebo" if bold else "helv")


def _right(page: pymupdf.Page, edge: float, y: float, text: str) -> None:
    _write(page, edge - 6 - pymupdf.get_text_length(text, "helv", 8.5), y, text)


def _segments_pdf(path: Path, band: bool) -> Path:
    """Activision Blizzard's segment table (2019 10-K, page 101): a sentence, "Year Ended December 31, 2019" over
    the value columns, the segments' names, "Segment Revenues" on a shaded band of two cells (the label's and one
    over all the values), then three rows, the second on shaded cells. The detector finds the band and the shaded
    row, two tables of one row each."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _write(page, 31, 90, "Information on the reportable segment net revenues and segment operating income are "
                         "presented below (amounts in millions):")
    _write(page, 370, 118, "Year Ended December 31, 2019", True)
    for x, name in ((289, "Activision"), (373, "Blizzard"), (459, "King"), (537, "Total")):
        _write(page, x, 131, name, True)
    if band:
        for a, b in ((13, 262), (262, 583)):
            page.draw_rect(pymupdf.Rect(a, 134, b, 150), color=None, fill=FILL)
    _write(page, 14, 145, "Segment Revenues", True)
    edges = (13, 262, 345, 425, 505, 583)
    rows = [("Net revenues from external customers", "$2,219", "$1,676", "$2,031", "$5,926"),
            ("Intersegment net revenues (1)", "-", "43", "-", "43"),
            ("Segment net revenues", "$2,219", "$1,719", "$2,031", "$5,969")]
    for i, row in enumerate(rows):
        y = 158 + 13 * i
        if i == 1:
            for c in range(5):
                page.draw_rect(pymupdf.Rect(edges[c] + 1, y - 8, edges[c + 1] - 1, y + 5), color=None, fill=FILL)
        _write(page, 14, y, row[0])
        for c, value in enumerate(row[1:]):
            _right(page, edges[c + 2], y, value)
    doc.save(path)
    return path


def test_a_shaded_band_over_one_label_does_not_cut_a_table_from_its_column_headings(tmp_path: Path) -> None:
    """Before, the band (a detected table whose text fills one column, never a table) took its row: the shaded row's
    table grew up to it and stopped, so "Year Ended December 31, 2019", the segments' names and "Segment Revenues"
    were left in the text, three sections of no content over the table."""
    heads = [["", "", "", "Year Ended December 31, 2019", ""], ["", "Activision", "Blizzard", "King", "Total"],
             ["Segment Revenues", "", "", "", ""]]
    for band in (True, False):  # the same table with and without the band
        got = _tables(_segments_pdf(tmp_path / f"segments-{band}.pdf", band))
        assert len(got) == 1
        assert got[0][:3] == heads and [r[0] for r in got[0][3:]] == [
            "Net revenues from external customers", "Intersegment net revenues (1)", "Segment net revenues"]


def _charges_pdf(path: Path, columns: tuple[tuple[float, ...], tuple[float, ...]], caption: bool = True) -> Path:
    """General Mills' restructuring charges (2019 10-K, page 22): "Expense, in Millions" at the label column (or
    not, ``caption``), a row on shaded cells, a plain row, the total on shaded cells. ``columns``: the cell edges
    of the two shaded rows."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _write(page, 30, 307, "Charges associated with our restructuring initiatives recognized in fiscal 2019 consisted "
                          "of the following:")
    if caption:
        _write(page, 30, 330, "Expense, in Millions", True)
    rows = [("Targeted actions in global supply chain", "$80.2"),
            ("Charges associated with restructuring actions previously announced", "(2.6)"),
            ("Total (a)", "$77.6")]
    for i, (label, value) in enumerate(rows):
        y = 342 + 12 * i
        if i != 1:
            edges = columns[i // 2]
            for a, b in itertools.pairwise(edges):
                page.draw_rect(pymupdf.Rect(a + 0.5, y - 8, b - 0.5, y + 3.5), color=None, fill=FILL)
        _write(page, 30, y, label)
        _right(page, 435, y, value)
    _write(page, 30, 390, "(a) Includes restructuring charges recorded in cost of sales of $9.9 million.")
    doc.save(path)
    return path


def test_two_shaded_rows_with_the_same_columns_are_one_table(tmp_path: Path) -> None:
    """Before, each shaded row was a table of one row (two strips make no stack): the first, with nothing to grow
    over, was dropped, and its row stopped the second's growth; the table kept its last two rows, and "Expense, in
    Millions" and "Targeted actions in global supply chain $80.2" were left in the text."""
    same = ((30, 378, 403, 435), (30, 378, 403, 435))
    rows = [["Targeted actions in global supply chain", "$80.2"],
            ["Charges associated with restructuring actions previously announced", "(2.6)"], ["Total (a)", "$77.6"]]
    assert _tables(_charges_pdf(tmp_path / "charges.pdf", same)) == [[["Expense, in Millions", ""], *rows]]
    assert _tables(_charges_pdf(tmp_path / "bare.pdf", same, caption=False)) == [rows]  # the first row grows no row
    # the stack needs the same columns: shaded rows cut into other cells are two tables, not one
    assert _same_columns([(30, 378), (378, 403), (403, 435)], [(30.5, 377), (378, 404), (403, 435)])
    assert not _same_columns([(30, 378), (378, 403), (403, 435)], [(30, 300), (300, 403), (403, 435)])
    assert not _same_columns([(30, 378), (378, 435)], [(30, 378), (378, 403), (403, 435)])
    assert not _same_columns([(30, 435)], [(30, 435)])  # one cell each: bands, not rows of a table


def test_a_caption_of_the_units_heads_its_table_but_a_title_naming_them_does_not() -> None:
    """A table's units set alone over it ("In millions" over CVS Health's segment table, Netflix's "(in thousands,
    except revenue per membership and percentages)": eight words, prose by length) are a cell of its column
    headings; before, the grower dropped or stopped at them and they became sections holding the table. A title
    that names its units ("Revenue (in thousands, except for percentages)") stays a heading of the text."""
    for caption in ("In millions", "(in thousands, except revenue per membership and percentages)",
                    "(Dollars in millions)", "Expense, in Millions", "(In millions of dollars)"):
        assert units_line(text_rows(words_at(100, (60, caption)))[0]), caption
    for line in ("Revenue (in thousands, except for percentages)", "Results of operations in millions of units",
                 "In millions"):
        two = words_at(100, (60, line), (400, "2023")) if line == "In millions" else words_at(100, (60, line))
        assert not units_line(text_rows(two)[0]), line  # a title; a row of two cells

    body = words_at(124, (60, "Net additions"), (250, "5,624"), (480, "5,694")) + \
        words_at(136, (60, "Memberships at end of period"), (250, "44,738"), (480, "39,114"))
    box = (55.0, 124.0, 560.0, 145.0)
    netflix = "(in thousands, except revenue per membership and percentages)"
    for caption, x, kept in ((netflix, 250, True), ("In millions", 60, True),
                             (netflix, 150, False), ("Revenue (in thousands, except for percentages)", 60, False)):
        rows_ = text_rows(words_at(100, (60, "The following table shows our memberships by year:"))
                          + words_at(112, (x, caption), w=3.5) + body)
        # centred over the whole table (x = 150: right of the labels, left of the values), the units are the
        # title's ("CONDENSED CONSOLIDATED STATEMENTS OF INCOME" / "(In millions, except per share data)")
        assert grow(box, rows_, set(), down=0)[0] == ([1] if kept else []), (caption, x)

    # a column heading wrapped over lines above the units: NVIDIA's lease note (2023 Q2 10-Q, page 10) sets
    # "Operating Lease" / "Obligations" / "(In millions)" over its one value column; the first two were a section
    lease = (words_at(80, (60, "Future minimum lease payments under our leases are as follows:"))
             + words_at(91, (300, "Operating Lease")) + words_at(100, (305, "Obligations"))
             + words_at(109, (302, "(In millions)")) + words_at(124, (60, "2024"), (300, "$134"))
             + words_at(136, (60, "2025"), (305, "249")))
    assert grow((55.0, 124.0, 560.0, 145.0), text_rows(lease), set(), down=0)[0] == [3, 2, 1]
    # the last lines of a paragraph set in a column of the page, over a heading at the margin over a table's first
    # row (JPMorgan's two-column pages, 2022 Q2 10-Q, page 86), are not a column heading
    paragraph = (words_at(82, (300, "account for derivatives modified to")) + words_at(91, (300, "change the rate used"))
                 + words_at(100, (300, "as modifications.")) + words_at(109, (60, "Standards Issued but not Adopted"))
                 + words_at(120, (60, "Standard"), (300, "Summary of guidance")) + words_at(136, (60, "2025"), (305, "249")))
    assert grow((55.0, 120.0, 560.0, 145.0), text_rows(paragraph), set(), down=0)[0] == []


def test_the_first_line_of_a_wrapped_label_at_a_tables_top_stays_with_its_row() -> None:
    """Netflix's "Average monthly revenue per paying" over "membership  $8.50  $8.14", the table's ruled part
    starting at the second line: the first line is the label's, not a heading. A heading over a row that begins in
    capitals is not."""
    box = (55.0, 124.0, 560.0, 145.0)
    body = words_at(124, (60, "Revenues"), (380, "4,180,339"), (480, "3,431,434"))
    wrapped = words_at(100, (60, "Average monthly revenue per paying")) + \
        words_at(112, (66, "membership"), (380, "$8.50"), (480, "$8.14"))
    assert grow(box, text_rows(wrapped + body), set(), down=0)[0] == [1, 0]
    heading = words_at(100, (60, "Contribution profit")) + \
        words_at(112, (60, "Membership fees"), (380, "$8.50"), (480, "$8.14"))
    assert grow(box, text_rows(heading + body), set(), down=0)[0] == [1]


def test_amounts_set_tight_in_adjacent_columns_are_cells_of_their_own() -> None:
    """Nike's segment table (2023 10-K, page 87) sets each "$" at its column's left edge and the amount at its right,
    so on the rows with signs no gap parts one column's amount from the next: "$12,228 $7,388 $5,416" was one
    phrase, so one cell, and the total row's phrase straddled three columns, so the rows were no table at all. A
    year and its footnote, a date's day, a range and a single digit after an amount stay one phrase."""
    def values(text: str) -> list[str]:
        return [p[2] for p in text_rows(words_at(100, (60, "Label"), (200, text)))[0].phrases[1:]]

    assert values("$12,228 $7,388 $5,416 $4,111") == ["$12,228", "$7,388", "$5,416", "$4,111"]
    assert values("$— $29,143") == ["$—", "$29,143"] and values("$ 1,234 $ 5,678") == ["$1,234", "$5,678"]
    assert values("2016 2015 2014") == ["2016", "2015", "2014"] and values("(2.6) 80.2") == ["(2.6)", "80.2"]
    for whole in ("2017 (1)", "31, 2022", "2028 - 2032", "$8.37 - $15.48", "2.63% – 3.13%", "$5,438 1", "(1) (2)"):
        assert values(whole) == [whole], whole

    # the signed amounts fill their columns (37.5 points apart); the other rows' amounts are set to the right edges
    tight = [("Footwear", "$12,228 $17,388 $15,416"), ("TOTAL REVENUES", "$18,353 $12,479 $17,547")]
    rows = [("Apparel", "5,492", "4,527", "1,938"), ("Equipment", "6,330", "5,640", "1,930"),
            ("Other", "1,010", "1,212", "1,414")]
    words = (words_at(100, (60, "Revenues by:")) + words_at(112, (60, tight[0][0]), (205, tight[0][1]))
             + [w for i, r in enumerate(rows) for w in words_at(124 + 12 * i, (60, r[0]), (215, r[1]), (252.5, r[2]),
                                                                (290, r[3]))]
             + words_at(160, (60, tight[1][0]), (205, tight[1][1])))
    got = aligned_tables(text_rows(words), set(), 1, 612.0)
    assert len(got) == 1
    assert got[0].rows[0] == ["Footwear", "$12,228", "$17,388", "$15,416"]
    assert got[0].rows[-1] == ["TOTAL REVENUES", "$18,353", "$12,479", "$17,547"] and len(got[0].rows) == 5


def test_two_tables_stacked_in_one_run_of_aligned_rows_are_both_found() -> None:
    """General Mills' joint-venture note (2020 10-K, page 60) sets a table of four columns ("Fiscal Year" / "In
    Millions 2020 2019 2018") a row's gap over one of three ("In Millions  May 31, 2020  May 26, 2019"). The rows
    made one run; its dates straddle the first table's columns, so it made no table and both stayed text (their
    column headings, sections holding the notes after them). Text with gaps still makes none: each part must be a
    table by itself."""
    years = [("Net sales", "$1,654.3", "$1,647.7", "$1,734.0"), ("Gross margin", "785.3", "744.4", "853.6"),
             ("Earnings after income taxes", "176.5", "111.9", "176.7")]
    dates = [("Current assets", "$870.0", "$895.6"), ("Noncurrent assets", "781.4", "839.2"),
             ("Current liabilities", "1,365.6", "1,517.3")]
    words = (words_at(100, (270, "Fiscal Year")) + words_at(112, (36, "In Millions"), (240, "2020"), (290, "2019"),
                                                              (340, "2018"))
             + [w for i, r in enumerate(years) for w in words_at(124 + 12 * i, (36, r[0]), (225, r[1]), (275, r[2]),
                                                                 (325, r[3]))]
             + words_at(168, (36, "In Millions"), (240, "May 31, 2020"), (320, "May 26, 2019"))
             + [w for i, r in enumerate(dates) for w in words_at(180 + 12 * i, (36, r[0]), (250, r[1]), (330, r[2]))])
    got = aligned_tables(text_rows(words), set(), 1, 612.0)
    assert [t.rows[:2] for t in got] == [[["", "", "Fiscal Year", ""], ["In Millions", "2020", "2019", "2018"]],
                                         [["In Millions", "May 31, 2020", "May 26, 2019"], list(dates[0])]]
    assert [len(t.rows) for t in got] == [5, 4]
    ragged = [w for i, r in enumerate(["A 1,000 2,000", "B 3,000 4,000"]) for w in
              words_at(100 + 12 * i, *((x, v) for x, v in zip((60, 380, 480), r.split(), strict=True)))]
    ragged += words_at(124, (60, "C"), (390, "5,000 and 6,000 more")) + words_at(136, (60, "D"), (380, "7"), (480, "8"))
    assert aligned_tables(text_rows(ragged), set(), 1, 612.0) == []  # two rows a side: no part is a table


def test_a_heading_set_apart_from_its_label_over_a_table_stays_out_of_it() -> None:
    """Lockheed Martin's "ITEM 6.  Selected Financial Data" (2022 10-K, page 28) is a row of two phrases a row's gap
    over the table: with the table's signed amounts now cells of their own, the rows made a table, and the item's
    heading became its first row. A phrase after the first that lies in the label column makes a heading, not a row
    of column headings: the table starts below it."""
    words = (words_at(100, (50, "ITEM 6."), (112, "Selected Financial Data"))
             + words_at(116, (52, "(In millions)"), (330, "2022"), (380, "2021"), (430, "2020"))
             + [w for i, r in enumerate([("Net sales", "$65,984", "$67,044", "$65,398"),
                                         ("Operating profit", "8,348", "9,123", "8,644"),
                                         ("Net earnings", "5,732", "6,315", "6,888")])
                for w in words_at(128 + 12 * i, (52, r[0]), (310, r[1]), (360, r[2]), (410, r[3]))])
    got = aligned_tables(text_rows(words), set(), 1, 612.0)
    assert len(got) == 1 and got[0].rows[0] == ["(In millions)", "2022", "2021", "2020"] and len(got[0].rows) == 4
    # a row of column headings with a heading over a text column left of the values stays (Pfizer's "PRODUCT |
    # PRIMARY INDICATION OR CLASS | 2021 | 2020 | 2019", 2021 10-K, page 109)
    head = words_at(100, (52, "PRODUCT"), (150, "INDICATION"), (330, "2022"), (380, "2021"), (430, "2020"))
    got = aligned_tables(text_rows(head + words[len(words_at(100, (50, "ITEM 6."), (112, "Selected Financial Data"))):]),
                         set(), 1, 612.0)
    assert len(got) == 1 and got[0].rows[0][0] == "PRODUCT INDICATION" and len(got[0].rows) == 5
