"""Contents pages bound after the report and risk factors told in long bold sentences (issue 35, nineteenth round).
Found on the parse of FinanceBench's and the shared filings (no question read): an exhibit's or a plan's contents
page, or the index of the notes before Item 8, is no table of contents of the document, and its rows, each ending
with a page number, were sections ("ARTICLE II. DEFINITIONS 2", "Note 2 Inventories 55")."""

from __future__ import annotations

BODY = ("The plan provides for deferred compensation of eligible employees under the terms set out in this "
        "document and the rules of the committee.")
ARTICLES = ["ARTICLE I. GENERAL", "ARTICLE II. DEFINITIONS", "ARTICLE III. ELECTIONS", "ARTICLE IV. ACCOUNTS",
            "ARTICLE V. PAYMENT OF PLAN BENEFITS", "ARTICLE VI. ADMINISTRATION"]


def _report_with_a_plan(path, *, contents_page: int) -> None:
    """A report of ``contents_page - 1`` pages (Item 1 and Item 2 on its first pages, each in the outline), then a
    plan: its contents page (each article in bold with its page number at the right margin) and one page per
    article, headed by the article in bold."""
    import pymupdf

    doc = pymupdf.open()
    for n in range(contents_page - 1):
        p = doc.new_page()
        if n < 2:
            p.insert_text((60, 50), f"Item {n + 1}. {'Business' if n == 0 else 'Properties'}", fontsize=10,
                          fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, 70, 540, 780), (BODY + " ") * 20, fontsize=9)
    p = doc.new_page()
    p.insert_text((200, 50), "DEFERRED COMPENSATION PLAN", fontsize=10, fontname="hebo")
    for k, art in enumerate(ARTICLES):
        p.insert_text((60, 90 + 18 * k), art, fontsize=9, fontname="hebo")
        p.insert_text((530, 90 + 18 * k), str(1 + 2 * k), fontsize=9, fontname="hebo")
    for art in ARTICLES:
        p = doc.new_page()
        p.insert_text((60, 50), art, fontsize=9, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, 62, 540, 780), (BODY + " ") * 15, fontsize=9)
    doc.set_toc([[1, "Item 1. Business", 1], [1, "Item 2. Properties", 2]])
    doc.save(path)
    doc.close()


def test_a_plans_contents_bound_after_the_report_are_text_not_sections(tmp_path) -> None:
    """Walmart 2018's plans gave 33 sections of their contents rows, Nike 2018's index of its notes 17, CVS
    Health 2018's agreement 15. The rows stay text of the section they are printed in; the articles on their own
    pages stay sections."""
    from htmlrag.superrag.parse import parse_pdf

    path = tmp_path / "report.pdf"
    _report_with_a_plan(path, contents_page=24)
    doc = parse_pdf(path)
    titles = [s.title for s in doc.sections]
    assert not [t for t in titles if t.rstrip()[-1:].isdigit()], titles  # no row with its page number
    for art in ARTICLES:
        assert titles.count(art) == 1, (art, titles)  # the article on its own page, once
        s = doc.sections[titles.index(art)]
        assert s.page > 24, (art, s.page)
    text = " ".join(p.text for s in doc.sections for p in s.paragraphs if p.page == 24)
    text += " ".join(t.html for t in doc.tables if t.page == 24)
    assert "ARTICLE II. DEFINITIONS" in text, text  # the rows are kept, as text (or the table made of them)
    assert [e.title for e in doc.toc] == ["Item 1. Business", "Item 2. Properties"]  # the outline stays the ToC


def test_a_contents_page_among_the_first_pages_is_still_the_documents_contents(tmp_path) -> None:
    """The same plan bound early (page 4, within :attr:`ParseOptions.toc_search_pages`) is read as before: its
    rows are contents rows and leave the text."""
    from htmlrag.superrag.parse import parse_pdf

    path = tmp_path / "report.pdf"
    _report_with_a_plan(path, contents_page=4)
    doc = parse_pdf(path)
    text = " ".join(p.text for s in doc.sections for p in s.paragraphs if p.page == 4)
    assert "ARTICLE II. DEFINITIONS 3" not in text, text
    titles = [s.title for s in doc.sections]
    assert not [t for t in titles if t.rstrip()[-1:].isdigit()], titles


# -- risk factors' headlines ------------------------------------------------------------------------------------

import pytest  # noqa: E402

from htmlrag.superrag.parse import headings as hd  # noqa: E402
from htmlrag.superrag.parse.model import Line  # noqa: E402

_RISK = "Our accelerated computing platforms experience rapid changes in technology, customer requirements and standards."


def _ln(text: str, y: float, *, bold: bool = True, italic: bool = False, size: float = 9.0) -> Line:
    return Line(page=33, bbox=(18, y, 18 + 4.2 * len(text), y + 10), text=text, size=size, bold=bold, block=0,
                italic=italic)


def _heads(blocks: list[list[Line]]) -> list[str]:
    return [" ".join(x.text for x in run) for b in blocks for kind, run in hd.segment_block(hd.Block(b), 9.0)
            if kind == "head"]


@pytest.mark.parametrize("headline", [
    ["Failure to estimate customer demand properly has led and could lead to mismatches between supply and demand."],
    ["Our operating results have in the past fluctuated and may in the future fluctuate, and if our operating",
     "results are below the expectations of securities analysts or investors, our stock price could decline."],
    ["We may not earn a positive return from our research, development and engineering investments in new products"],
    ["We are subject to risks associated with vendors that source products outside of the U.S. and their suppliers."],
])
def test_a_risk_factors_headline_is_a_heading(headline: list[str]) -> None:
    """NVIDIA, Nike, Best Buy, Corning and Costco set each risk factor's headline as one bold sentence of 17 to 60
    words; over 16 words, it was text, and NVIDIA's Item 1A held up to 59 paragraphs in one to three sections.
    Whether the headline is a block of its own or leads the block of its paragraph, it is a heading."""
    lines = [_ln(t, 60 + 11 * k) for k, t in enumerate(headline)]
    body = [_ln(_RISK, 100, bold=False), _ln("Our success depends on our ability to meet them.", 111, bold=False)]
    joined = " ".join(headline)
    assert _heads([lines, body]) == [joined]
    assert _heads([lines + body]) == [joined]


@pytest.mark.parametrize("text", [
    "Investment in Shares involves a degree of risk. Employees who elect to participate in the Plan should monitor "
    "their participation and consider all risk factors.",                          # two sentences: a bold paragraph
    "delay start of any payments based on termination of employment or retirement for grandfathered amounts based on "
    "termination of employment, since it may differ",                              # a paragraph's lower-case end
    "Balance as of December 31, 2022 $ 4,137 $ 31,580 $ (562) $ 70,405 $ 1,863 $ 103,286 of the company total",
    "If the technology-based systems that give our consumers the ability to shop with us online do not function,",
])
def test_a_bold_paragraph_a_fragment_or_a_row_is_no_headline(text: str) -> None:
    words = text.split()
    lines = [_ln(" ".join(words[k:k + 14]), 60 + 11 * n) for n, k in enumerate(range(0, len(words), 14))]
    assert _heads([lines, [_ln(_RISK, 120, bold=False)]]) == []


def test_a_bold_paragraph_over_the_headlines_length_is_text() -> None:
    """Five bold lines (a cover's notice, an emphasised paragraph) are no headline."""
    lines = [_ln("Purchasing or owning our common stock involves investment risks including those described", 60 + 11 * k)
             for k in range(5)]
    lines[-1] = _ln("in our most recent annual report and below", 104)
    assert _heads([lines, [_ln(_RISK, 120, bold=False)]]) == []


def test_italic_and_capitals_and_small_bold_are_no_headline() -> None:
    text = "Failure to estimate customer demand properly has led and could lead to mismatches between supply and demand."
    for ln in (_ln(text, 60, italic=True), _ln(text.upper(), 60), _ln(text, 60, size=7.0)):
        assert _heads([[ln], [_ln(_RISK, 80, bold=False)]]) == [], ln


# -- a bold sentence that ends mid-row ------------------------------------------------------------------------------

def _span(text: str, x0: float, *, bold: bool) -> dict:
    return {"text": text, "size": 9.0, "flags": 16 if bold else 0, "font": "Arial-BoldMT" if bold else "ArialMT",
            "bbox": (x0, 40.0, x0 + 4.2 * len(text), 50.0), "origin": (x0, 48.0)}


def _page(rows: list[list[dict]]) -> dict:
    lines = [{"spans": [dict(s, bbox=(s["bbox"][0], 40 + 11 * k, s["bbox"][2], 50 + 11 * k),
                             origin=(s["origin"][0], 48 + 11 * k)) for s in row],
              "bbox": (row[0]["bbox"][0], 40 + 11 * k, row[-1]["bbox"][2], 50 + 11 * k), "dir": (1, 0), "wmode": 0}
             for k, row in enumerate(rows)]
    return {"blocks": [{"type": 0, "lines": lines, "bbox": (16, 40, 578, 40 + 11 * len(rows))}]}


def test_a_headline_that_ends_mid_row_is_split_from_the_body_and_read_as_a_heading() -> None:
    """Microsoft sets a risk factor's headline in bold and runs the paragraph on after it in the same row. Read as
    one line, the headline's end was body text and the headline no heading."""
    from htmlrag.superrag.parse.lines import page_lines

    first = "Laws and regulations relating to the handling of personal data may impede the adoption of our"
    end = "services or result in increased costs, legal claims, or reputational damage."
    rest = "The growth of our Internet-based services depends on the movement of data."
    page = _page([[_span(first, 16, bold=True)],
                  [_span(end, 16, bold=True), _span(rest, 16 + 4.2 * len(end) + 3, bold=False)],
                  [_span("Legal requirements relating to the collection of data continue to evolve.", 16, bold=False)]])
    lines = page_lines(page, 56)
    assert [ln.text for ln in lines] == [first, end, rest, "Legal requirements relating to the collection of data "
                                         "continue to evolve."]
    assert [ln.bold for ln in lines] == [True, True, False, False]
    assert [ln.run_in for ln in lines] == [False, True, False, False]
    assert lines[1].bbox[1] == lines[2].bbox[1] and lines[1].bbox[2] < lines[2].bbox[0]
    assert _heads([lines]) == [f"{first} {end}"]


@pytest.mark.parametrize(("bold", "regular", "split"), [
    ("We make significant investments in products and services that may not achieve expected returns.",
     "We make significant investments in research.", True),                              # Microsoft's one-row headline
    ("Share repurchases.", "Shares repurchased pursuant to the Company's program.", True),  # MGM: a run-in heading
    ("CFO:", "Chief Financial Officer", False),                                          # JPMorgan's glossary
    ("Alan B. Graf, Jr.", "Director July 23, 2019", False),                              # a signature row
    ("Pfizer Inc.", "2021 Form 10-K 53", False),                                         # a running footer
    ("Balance at December 31, 2020, net of tax:", "(1,450) (6,098) (173) (7,721)", False),  # a table row
])
def test_a_blocks_first_row_splits_only_after_a_bold_sentence(bold: str, regular: str, split: bool) -> None:
    from htmlrag.superrag.parse.lines import page_lines

    lines = page_lines(_page([[_span(bold, 16, bold=True), _span(regular, 16 + 4.2 * len(bold) + 3, bold=False)]]), 5)
    assert [ln.text for ln in lines] == ([bold, regular] if split else [f"{bold} {regular}"])


# -- the company's name over each statement --------------------------------------------------------------------

@pytest.mark.parametrize(("cover", "running"), [
    ("Apple Inc.", "Apple Inc."),
    ("GENERAL MILLS, INC.", "GENERAL MILLS, INC. AND SUBSIDIARIES"),
    ("The Boeing Company", "THE BOEING COMPANY AND ITS SUBSIDIARIES"),
])
def test_the_company_name_over_each_statement_is_text_the_covers_stays(tmp_path, cover: str, running: str) -> None:
    """Apple sets "Apple Inc." over each statement (General Mills, AMD, Netflix, MGM Resorts their names too, and
    Lockheed Martin over each exhibit's signature): each was a section of its own, empty or holding what followed
    it. A heading that says only the cover's name is text past the first page; the statements stay sections."""
    import pymupdf

    from htmlrag.superrag.parse import parse_pdf

    statements = ["CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", "CONDENSED CONSOLIDATED BALANCE SHEETS",
                  "CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS"]
    notes = ["Revenue", "Leases", "Income Taxes", "Debt", "Segment Information", "Commitments", "Derivatives",
             "Goodwill", "Fair Value", "Equity", "Contingencies", "Benefit Plans"]  # the name is on few pages
    words = BODY.split()

    def text(n: int) -> str:  # each page's own wording (a line repeated atop most pages is a running header)
        return " ".join(words[n % len(words):] + words[: n % len(words)]) + " " + (BODY + " ") * 6

    path = tmp_path / "q.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((200, 180), "FORM 10-Q", fontsize=14, fontname="hebo")
    p.insert_text((200, 220), cover, fontsize=16, fontname="hebo")
    p.insert_text((150, 236), "(Exact name of Registrant as specified in its charter)", fontsize=8)
    p.insert_textbox(pymupdf.Rect(60, 260, 540, 700), text(0), fontsize=9)
    for n, title in enumerate(statements, 1):
        p = doc.new_page()
        y = 60 + 30 * n  # each statement starts lower (the same line at one height over 3 pages is a running head)
        p.insert_text((220, y), running, fontsize=11, fontname="hebo")
        p.insert_text((150, y + 16), title, fontsize=10, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, y + 30, 540, 700), text(n), fontsize=9)
    for n, note in enumerate(notes, 1):  # the notes: no name over them
        p = doc.new_page()
        p.insert_text((60, 50 + 7 * n), f"Note {n} \u2013 {note}", fontsize=10, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(60, 66 + 7 * n, 540, 700), text(n + 3), fontsize=9)
    doc.save(path)
    doc.close()

    parsed = parse_pdf(path)
    titles = [(s.title, s.page) for s in parsed.sections]
    assert (cover, 1) in titles, titles
    assert not [t for t, pg in titles if pg > 1 and t.casefold().startswith(cover.casefold()[:8])], titles
    for title in statements:
        assert title in [t for t, _ in titles], titles
    text = " ".join(x.text for s in parsed.sections for x in s.paragraphs if x.page > 1)
    assert text.count(running) == 3, text  # kept, as text


@pytest.mark.parametrize(("text", "name", "same"), [
    ("GENERAL MILLS, INC. AND SUBSIDIARIES", "General Mills, Inc.", True),
    ("THE BOEING COMPANY", "The Boeing Company", True),
    ("Subsidiaries of Lockheed Martin Corporation", "LOCKHEED MARTIN CORPORATION", False),
    ("Apple Inc. Condensed Consolidated Balance Sheets", "Apple Inc.", False),
    ("Apple Inc.", "", False),
])
def test_a_name_is_compared_without_case_punctuation_or_its_subsidiaries(text: str, name: str, same: bool) -> None:
    from htmlrag.superrag.parse.names import is_name

    assert is_name(text, name) is same


# -- underlined lines that are no headings -----------------------------------------------------------------------

def _under(text: str, width: float | None = None) -> Line:
    w = width if width is not None else 4.5 * len(text)
    return Line(page=41, bbox=(36, 60, 36 + w, 71), text=text, size=9.9, bold=False, block=0, underline=True)


@pytest.mark.parametrize(("line", "heading"), [
    (_under("Respirator Mask/Asbestos Litigation"), True),                              # 3M: a heading
    (_under("Foreign currency exchange impact Flat", width=411), False),                # General Mills: a row
    (_under("Debt-to-equity ratio 4.9-to-1 4.9-to-1", width=574), False),               # Boeing: a row
    (_under("The following table presents segment net sales by segment (in millions):"), False),  # Corning
])
def test_an_underlined_row_or_a_tables_lead_in_is_no_heading(line: Line, heading: bool) -> None:
    """The eighteenth round read lines set apart only by an underline as headings. A table row the table finder
    missed is ruled under too, spread over the columns; a sentence that leads into a table ends with a colon."""
    body = Line(page=41, bbox=(36, 80, 500, 91), text=_RISK, size=9.9, bold=False, block=0)
    runs = hd.segment_block(hd.Block([line, body]), 9.9)
    assert (runs[0][0] == "head") is heading, runs


def test_a_run_in_heading_the_outline_names_sets_no_level_for_its_font() -> None:
    """Pfizer's outline names "15(a)(1) Financial Statements." (level 3 under Item 15), a run-in heading in the
    bold body font. Calibrating that font at level 3 lifted the MD&A's larger bold sections ("Financial
    Highlights") to level 2, beside Item 7. The run-in heading takes its entry's level and calibrates nothing."""
    def head(text: str, size: float, *, caps: bool = False, run_in: bool = False) -> tuple[list[Line], float]:
        ln = Line(page=32, bbox=(18, 60, 300, 70), text=text.upper() if caps else text, size=size, bold=True,
                  block=0, run_in=run_in)
        return [ln], size

    heads = [head("Item 7. Management's Discussion and Analysis", 8.4, caps=True),
             head("Overview of Our Performance", 7.8, caps=True), head("Financial Highlights", 7.8),
             head("Our Business and Strategy", 7.8), head("Item 15. Exhibits", 8.4, caps=True),
             head("15(a)(1) Financial Statements.", 7.1, run_in=True)]
    outline = [(2, "ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS", 32), (2, "ITEM 15. EXHIBITS", 32),
               (3, "15(a)(1) Financial Statements.", 32)]
    levels = [lvl for lvl, _ in hd.assign_levels(heads, outline)]
    assert levels[-1] == 3  # the run-in heading at its entry's level
    assert levels[2] > levels[0] and levels[3] > levels[0], levels  # the MD&A's sections stay inside Item 7


def test_short_bold_lines_one_under_the_other_are_no_headline() -> None:
    """American Express sets its values as short bold lines, one under the other: read as one run, they were a
    headline of 24 words."""
    values = ["We Do What's Right We Embrace Diversity", "We Back Our Customers We Stand for Equity and Inclusion",
              "We Make It Great We Win as A Team", "We Respect People We Support Communities"]
    lines = [_ln(v, 60 + 11 * k) for k, v in enumerate(values)]
    assert " ".join(values) not in _heads([lines, [_ln(_RISK, 140, bold=False)]])
