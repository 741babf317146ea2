"""What is not a heading and what the headings are told from (issue 35, eighteenth round): a line naming a
reporting period and nothing else is a caption; a row heading before the columns' dates is table text; the body
size is read on the report the contents cover, not on the exhibits bound after it; a line set apart only by a rule
drawn under it is a heading. Found on the parse of FinanceBench's and the shared filings (no question read)."""

from __future__ import annotations

import pytest

from htmlrag.superrag.parse import headings as hd
from htmlrag.superrag.parse.model import Line


def _ln(text: str, y: float, *, size: float = 9.0, bold: bool = True) -> Line:
    return Line(page=57, bbox=(50, y, 50 + 4.5 * len(text), y + size + 1), text=text, size=size, bold=bold, block=0)


@pytest.mark.parametrize("text", [
    "Years ended December 31, 2018, 2017 and 2016",                   # Boeing: held all 24 notes
    "For the Years ended December 31, 2022, 2021 and 2020",           # MGM: a statement's subtitle
    "FOR THE THREE MONTHS ENDED APRIL 30, 2023 AND MAY 1, 2022",      # NVIDIA's statements
    "For the Fiscal Year Ended June 30, 2016",                        # the cover's period line
    "FOR THE QUARTER ENDED October 30, 2022",
    "Six months ended June 30, 2022",                                 # JPMorgan: a table's caption in a note
    "YEAR ENDED MAY 31, 2022", "Three Months Ended", "Fiscal Years Ended",
    "52 weeks ended January 28, 2023", "Nine Months Ended Sept. 30, 2023",
    "As of December 31, 2017", "At December 31, 2022 and 2021",
])
def test_a_period_alone_is_a_caption(text: str) -> None:
    assert hd.period_caption(text), text


@pytest.mark.parametrize("text", [
    "Three Months Ended September 30, 2022 Compared with Three Months Ended September 30, 2021",  # Microsoft's MD&A
    "For the year ended December 31, 2022 compared to 2021", "Year Ended December 31, 2022 Highlights",
    "At a Glance", "Asset Retirement Obligations", "Quarterly Results", "Periods of Operation",
    "Fiscal Year 2023 Summary", "As of the Date of This Report",
])
def test_a_heading_that_says_more_than_a_period_is_no_caption(text: str) -> None:
    assert not hd.period_caption(text), text


def test_the_period_under_a_title_stays_text_of_the_titles_section() -> None:
    """Boeing sets "Years ended December 31, 2018, 2017 and 2016" under the notes' title in the bold body font of
    its sub-headings; it was a heading, and every note after it hung in the period's section. The period line is
    body text now; the title above it stays a heading, whether the period is a block of its own (Boeing, MGM) or
    a line of the title's block."""
    lines = [_ln("Notes to the Consolidated Financial Statements", 60),
             _ln("Years ended December 31, 2018, 2017 and 2016", 71),
             _ln("Note 1 \u2013 Summary of Significant Accounting Policies", 95),
             _ln("Principles of Consolidation and Basis of Presentation", 110),
             _ln("The consolidated financial statements include the accounts of The Boeing Company.", 122,
                 bold=False)]
    for blocks in ([lines], [lines[:1], lines[1:2], lines[2:3], lines[3:]], [lines[:2], lines[2:3], lines[3:]]):
        runs = [(kind, [x.text for x in run]) for b in blocks for kind, run in hd.segment_block(hd.Block(b), 9.0)]
        heads = [" ".join(t) for kind, t in runs if kind == "head"]
        assert not any("Years ended" in h for h in heads), runs
        assert heads[:1] == ["Notes to the Consolidated Financial Statements"], runs
        body = " ".join(" ".join(t) for kind, t in runs if kind == "body")
        assert "Years ended December 31, 2018, 2017 and 2016" in body, runs


@pytest.mark.parametrize("text", [
    "Location of Gains (Losses) Recognized in Income on Derivatives Apr 1, 2023 Apr 2, 2022",  # Intel
    "Fiscal Year Percent of Net Sales 2020 2019 2018 2017 2016",                                 # General Mills
    "Fiscal Year In Millions 2020 2019 2018", "Revenue by Geography Oct 29, 2023 Oct 30, 2022",
])
def test_a_row_heading_before_the_columns_dates_is_table_text(text: str) -> None:
    """A table's column headings left on one line after its first row heading, the columns' years or dates side by
    side, opened a section at the deepest level (Intel's derivatives table under "Three Months Ended")."""
    assert hd.table_text(text), text
    assert hd.segment_block(hd.Block([_ln(text, 60)]), 9.0) == [("body", [_ln(text, 60)])]


@pytest.mark.parametrize("text", [
    "Summary of Stock Repurchases for Fiscal 2016, 2015 and 2014", "Convertible Senior Notes due in 2026 and 2027",
    "Comparison of Years Ended December 31, 2019 and 2018", "Senior Notes Due 2025", "2023 Notes",
    "CONDENSED CONSOLIDATED STATEMENTS OF SHAREHOLDERS' EQUITY FOR THE NINE MONTHS ENDED OCTOBER 29, 2023",
])
def test_years_a_title_names_in_words_are_no_columns(text: str) -> None:
    assert not hd.table_text(text) and not hd.period_caption(text), text


BODY = "The company sells widgets to customers in many regions and reports the results every quarter."


def test_exhibits_in_a_larger_type_do_not_set_the_reports_body(tmp_path) -> None:
    """Walmart 2018 binds 200 pages of plans at 10.8 pt after a report of 94 pages at 8.8 pt (Apple's 2023 Q1 10-Q:
    award agreements at 9.0 pt after the report at 8.1 pt). The body size was read on all pages, so it was the
    exhibits'; the report's bold sub-headings in its own body size were smaller than that and none was read: the
    notes and the MD&A's sections were text of their items. The body is read on the pages the contents cover."""
    import pymupdf

    from htmlrag.superrag.parse import parse_pdf

    path = tmp_path / "report.pdf"
    doc = pymupdf.open()
    subs = {"Item 1. Financial Statements": ["Note 1 - Revenue", "Note 2 - Debt"],
            "Item 2. Management's Discussion and Analysis": ["Liquidity and Capital Resources", "Gross Margin"]}
    for item, heads in subs.items():
        p = doc.new_page()
        p.insert_text((60, 50), item, fontsize=10, fontname="hebo")
        y = 80
        for h in heads:
            p.insert_text((60, y), h, fontsize=8, fontname="hebo")
            p.insert_textbox(pymupdf.Rect(60, y + 8, 540, y + 140), (BODY + " ") * 5, fontsize=8)
            y += 160
    plans = ["DEFERRED COMPENSATION PLAN", "STOCK INCENTIVE PLAN", "RESTRICTED STOCK UNIT AGREEMENT",
             "SEVERANCE AGREEMENT"]
    for n, plan in enumerate(plans):  # the exhibits: more text than the report, in a larger type
        p = doc.new_page()
        p.insert_text((60, 100 + 20 * n), plan, fontsize=11, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, 120 + 20 * n, 540, 780), (BODY + " ") * 35, fontsize=11)
    doc.set_toc([[1, "Item 1. Financial Statements", 1], [1, "Item 2. Management's Discussion and Analysis", 2]])
    doc.save(path)
    doc.close()

    sections = parse_pdf(path).sections
    titles = [s.title for s in sections]
    for item, heads in subs.items():
        for h in heads:
            assert h in titles, titles
            s = sections[titles.index(h)]
            assert s.parent is not None and sections[s.parent].title == item, (h, titles)
    assert all(plan in titles for plan in plans), titles  # the exhibits' own headings, told from their own size


def _underlined_pdf(path, rows: list[tuple[str, str]]) -> None:
    """One page: an item heading in bold, then for each ``(text, how)`` a line in the body font, underlined as
    ``how`` says ("under": a rule under the whole line; "wide": a rule running 80 points on, as a column's or a
    signature's; "none"), each followed by a paragraph."""
    import pymupdf

    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((60, 50), "Item 7. Management's Discussion and Analysis", fontsize=10, fontname="hebo")
    y = 80
    for text, how in rows:
        p.insert_text((60, y), text, fontsize=8)
        width = pymupdf.get_text_length(text, fontname="helv", fontsize=8)
        if how != "none":
            p.draw_line((60, y + 1.5), (60 + width + (80 if how == "wide" else 0), y + 1.5), width=0.5)
        p.insert_textbox(pymupdf.Rect(60, y + 6, 540, y + 100), (BODY + " ") * 4, fontsize=8)
        y += 110
    doc.save(path)
    doc.close()


def test_a_line_set_apart_only_by_an_underline_is_a_heading(tmp_path) -> None:
    """3M sets the sub-headings of its contingencies note in the body font and draws a rule under each ("Process for
    Disclosure and Recording of Liabilities Related to Legal Proceedings"); Best Buy, Microsoft, Pfizer and CVS
    Health some of theirs. Read as text, the note was one section of 164 paragraphs. A line with a rule under its
    whole width and no further is a heading (ranked below the bold item); a rule that runs on (a column's rule, a
    signature line), a line ending a sentence and a line with no rule stay text."""
    from htmlrag.superrag.parse import parse_pdf

    rows = [("Process for Disclosure of Liabilities", "under"), ("Environmental Matters and Litigation", "under"),
            ("Selected quarterly data", "wide"), ("/s/ Jane Doe", "under"), ("The matter was settled.", "under"),
            ("Competition and markets", "none")]
    path = tmp_path / "underlined.pdf"
    _underlined_pdf(path, rows)
    sections = parse_pdf(path).sections
    titles = [s.title for s in sections]
    assert titles == ["Item 7. Management's Discussion and Analysis", "Process for Disclosure of Liabilities",
                      "Environmental Matters and Litigation"], titles
    assert [s.parent for s in sections] == [None, 0, 0]
    text = " ".join(it.text for s in sections for it in s.items if hasattr(it, "text"))
    for kept, _ in rows[2:]:
        assert kept in text, kept  # the others stay text, in the section they are in


def test_underlines_are_marked_only_under_the_whole_line() -> None:
    from htmlrag.superrag.parse.lines import mark_underlined

    ln = Line(page=1, bbox=(60.0, 70.0, 200.0, 80.0), text="Vendor Allowances", size=8.0, bold=False, block=0)
    assert mark_underlined([ln], [(60.0, 200.0, 79.5)])[0].underline              # under the whole line
    assert mark_underlined([ln], [(60.0, 120.0, 79.5), (120.0, 199.0, 80.5)])[0].underline  # in two strokes
    assert not mark_underlined([ln], [(60.0, 150.0, 79.5)])[0].underline          # under part of it
    assert not mark_underlined([ln], [(60.0, 200.0, 75.0)])[0].underline          # struck through
    assert not mark_underlined([ln], [(60.0, 200.0, 90.0)])[0].underline          # the next line's rule
    assert not mark_underlined([ln], [(20.0, 300.0, 79.5)])[0].underline          # a rule running on
    bold = Line(page=1, bbox=(60.0, 70.0, 200.0, 80.0), text="Vendor Allowances", size=8.0, bold=True, block=0)
    assert not mark_underlined([bold], [(60.0, 200.0, 79.5)])[0].underline        # bold is a style of its own


def test_a_links_underline_makes_no_heading(tmp_path) -> None:
    """Exhibit indexes underline each entry's link ("PepsiCo, Inc.'s Current Report on Form 8-K filed with ..."),
    contents pages their entries, running heads their "Table of Contents" back link: each read as a heading. A line
    whose centre lies in a link's box is a link's text, not a heading, however it is underlined."""
    import pymupdf

    from htmlrag.superrag.parse import parse_pdf

    path = tmp_path / "linked.pdf"
    _underlined_pdf(path, [("Process for Disclosure of Liabilities", "under"),
                           ("Current Report on Form 8-K filed on May 1", "under")])
    doc = pymupdf.open(path)
    page = doc[0]
    width = pymupdf.get_text_length("Current Report on Form 8-K filed on May 1", fontname="helv", fontsize=8)
    page.insert_link({"kind": pymupdf.LINK_URI, "uri": "https://www.sec.gov/",
                      "from": pymupdf.Rect(58, 190 - 9, 62 + width, 190 + 3)})
    doc.save(tmp_path / "linked2.pdf")
    doc.close()
    titles = [s.title for s in parse_pdf(tmp_path / "linked2.pdf").sections]
    assert titles == ["Item 7. Management's Discussion and Analysis", "Process for Disclosure of Liabilities"], titles
    titles = [s.title for s in parse_pdf(path).sections]  # the same page without the link: both are headings
    assert "Current Report on Form 8-K filed on May 1" in titles, titles
