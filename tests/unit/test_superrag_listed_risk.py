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
    assert "ARTICLE II. DEFINITIONS 3" in text, text  # the rows are kept, as text
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
