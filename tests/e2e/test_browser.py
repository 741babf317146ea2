"""The app in chromium: upload with progress, ask and see the evidence highlighted on the page, refusals shown in
the UI, the pruning playground, the results browser and the diff of two runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_PAGES

pytestmark = pytest.mark.slow


def _no_problems(page) -> None:
    bad = [p for p in page.problems if "favicon" not in p]
    assert not bad, bad


def _in_library(page, live, *files: Path) -> None:
    """Upload and build ``files`` unless the library lists them (a test run alone finds the library empty: the
    first test's uploads are not there)."""
    page.goto(live.url + "/documents")
    missing = [f for f in files if page.locator(f"#doc-table tr[data-doc]:has-text('{f.name}')").count() == 0]
    if missing:
        page.set_input_files("#files", [str(f) for f in missing])
        page.click("text=Upload and build")
        for f in missing:
            page.wait_for_selector(f"#doc-table tr[data-doc]:has-text('{f.name}')")


def test_upload_build_ask_and_see_the_highlight(page, live) -> None:
    page.goto(live.url + "/documents")
    page.set_input_files("#files", [str(live.dir / "report.pdf"), str(SAMPLE_PAGES / "lighthouse.html")])
    page.click("text=Upload and build")
    page.wait_for_selector("#job")
    page.wait_for_selector("#doc-table tr[data-doc]:has-text('report.pdf')")  # the page reloads when done
    row = page.locator("#doc-table tr:has-text('report.pdf')").inner_text()
    assert re.search(r"PDF\s+Widget Annual Report\s+3\s+\d+\s+1\s+1", row), row
    assert "built" in page.locator("#job-items").inner_text()

    page.goto(live.url + "/ask")
    page.fill("#question", "Which region had revenue of 7,890?")
    page.select_option("#retriever", "tables")
    page.click("#ask-button")
    page.wait_for_selector("#evidence li.ev")
    first = page.locator("li.ev.selected")
    assert "TableChunk" in first.inner_text() or "Table" in first.inner_text()
    view = page.locator(".view:not([hidden])")
    img = view.locator(".page-img img").first
    img.wait_for()
    page.wait_for_function("() => [...document.querySelectorAll('.view:not([hidden]) .page-img img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)")
    box, hl = img.bounding_box(), view.locator(".hl").first.bounding_box()
    assert hl and box and hl["width"] > 5 and hl["height"] > 5
    assert box["x"] <= hl["x"] and hl["x"] + hl["width"] <= box["x"] + box["width"] + 1
    assert box["y"] <= hl["y"] and hl["y"] + hl["height"] <= box["y"] + box["height"] + 1
    assert "7,890" in view.locator(".table-ev").inner_text()  # table evidence shown as a table

    items = page.locator("li.ev")
    assert items.count() >= 2
    items.nth(1).click()
    assert page.locator("li.ev").nth(1).get_attribute("class").count("selected") == 1
    assert page.locator(".view:not([hidden])").count() == 1
    assert page.locator(".view:not([hidden])").get_attribute("data-view") == "1"
    _no_problems(page)


def test_html_evidence_is_shown_in_its_page(page, live) -> None:
    _in_library(page, live, SAMPLE_PAGES / "lighthouse.html")
    page.goto(live.url + "/ask")
    page.wait_for_selector("details.docs")
    page.click("details.docs summary")
    page.check("label.doc:has-text('lighthouse.html') input")
    page.fill("#question", "Who designed Harrow Point Lighthouse?")
    page.click("#ask-button")
    page.wait_for_selector("li.ev")
    frame_el = page.locator(".view:not([hidden]) iframe.pageframe")
    assert frame_el.get_attribute("sandbox") == ""
    frame = frame_el.element_handle().content_frame()
    frame.wait_for_selector('[data-hr="evidence"]')
    assert "Margaret Ellis" in " ".join(frame.locator('[data-hr="evidence"]').all_inner_texts())
    _no_problems(page)


def test_refusals_are_shown_in_the_ui(page, live) -> None:
    _in_library(page, live, live.dir / "report.pdf")
    page.goto(live.url + "/documents")
    page.set_input_files("#files", str(live.dir / "fake.pdf"))
    page.click("text=Upload and build")
    err = page.locator("#error")
    err.wait_for()
    assert "fake.pdf: not a PDF" in err.inner_text()

    page.goto(live.url + "/ask")
    page.fill("#question", "anything")
    page.select_option("#retriever", "cypher")
    assert page.locator("#cypher-box").is_visible()
    page.fill("#cypher", "MATCH (n) DETACH DELETE n")
    page.click("#ask-button")
    page.locator("#error").wait_for()
    assert "refused" in page.locator("#error").inner_text()
    page.goto(live.url + "/documents")
    assert "report.pdf" in page.locator("#doc-table").inner_text()  # nothing was deleted

    resp = page.goto(live.url + "/results/files/%2e%2e/db/manifest.json")
    assert resp.status == 404 and "documents" not in page.content()


def test_playground(page, live) -> None:
    page.goto(live.url + "/prune")
    page.select_option("#sample", "lighthouse.html")
    page.fill("#pq", "Who designed Harrow Point Lighthouse?")
    page.locator("#budget").evaluate("(el) => { el.value = 96; el.dispatchEvent(new Event('input')); }")
    assert page.locator("#budget-out").inner_text() == "96"
    page.fill("#max_words", "32")
    page.check("input[name=ranker][value=bm25]")
    page.click("#prune-button")
    page.wait_for_selector("#prune-result")
    pruned_tokens = int(page.locator("[data-stage=pruned]").inner_text().split()[0])
    assert 0 < pruned_tokens <= 96
    kept = page.locator("#block-tree tr.kept")
    assert kept.count() >= 1
    total = page.locator("#block-tree tbody tr").count()
    page.check("#kept-only")
    assert page.locator("#block-tree tbody tr:visible").count() == kept.count() < total
    cleaned = page.locator("#cleaned-frame").element_handle().content_frame()
    cleaned.wait_for_selector('[data-hr="kept"]')
    pruned = page.locator("#pruned-frame").element_handle().content_frame()
    pruned.wait_for_selector("body")
    assert "Margaret Ellis" in pruned.inner_text("body")
    assert "Margaret Ellis" in page.locator("#pruned-src").inner_text()
    _no_problems(page)


def test_results_browser_and_diff(page, live) -> None:
    page.goto(live.url + "/results")
    runs = page.locator("table.runs tr[data-run]")
    assert runs.count() == 2
    assert "paper, except cleaner.keep_hidden=false" in page.locator("table.runs").inner_text()
    page.wait_for_function("() => [...document.querySelectorAll('.artefacts img')].every(i => i.naturalWidth > 0)")
    page.click("table.runs a:has-text('aaaaaaaaaaa1')")
    page.wait_for_selector("#questions")
    page.click("#questions a:has-text('q2')")
    assert "164" in page.locator("#gold").inner_text()
    assert "bm25 context for q2 at 128" in page.content()

    page.goto(live.url + "/results")
    page.select_option("#diff-a", "demo/aaaaaaaaaaa1")
    page.select_option("#diff-b", "demo/bbbbbbbbbbb2")
    page.click("#diff-form button")
    page.wait_for_selector("#flips")
    flips = page.locator("#flips tbody tr")
    assert flips.count() == 2
    assert "bm25 100.00 → 0.00" in flips.nth(0).inner_text()  # rounded as the tables round it
    flips.nth(0).locator("text=side by side").click()
    page.wait_for_selector("#pair")
    pair = page.locator("#pair").inner_text()
    assert "bm25 context for q2 at 128" in pair and "context not saved" in pair
    _no_problems(page)


def test_api_docs_render_offline_under_the_page_policy(page, live) -> None:
    page.goto(live.url + "/docs")
    assert page.locator("#endpoints tbody tr").count() >= 15
    page.wait_for_selector("#swagger-ui .opblock")
    assert page.locator("#swagger-ui .opblock").count() >= 15
    assert "/api/ask" in page.locator("#swagger-ui").inner_text()
    _no_problems(page)


def test_duplicates_are_named_and_documents_removed_with_the_button(page, live) -> None:
    from htmlrag.testing import pdfs as mk

    two = mk.report_pdf(live.dir / "two-pages.pdf", pages=2)
    copy = live.dir / "copy-of-report.pdf"
    copy.write_bytes((live.dir / "report.pdf").read_bytes())
    _in_library(page, live, live.dir / "report.pdf")
    page.goto(live.url + "/documents")
    page.set_input_files("#files", [str(two), str(copy)])
    page.click("text=Upload and build")
    page.wait_for_selector("#doc-table tr[data-doc]:has-text('two-pages.pdf')")
    items = page.locator("#job-items").inner_text()
    assert "copy-of-report.pdf: same content as report.pdf, already in the library: not added again" in items
    assert page.locator("#doc-table tr:has-text('copy-of-report.pdf')").count() == 0

    row = page.locator("#doc-table tr:has-text('two-pages.pdf')")
    page.once("dialog", lambda d: d.dismiss())  # "Remove two-pages.pdf?" answered no: nothing happens
    row.locator("button.delete").click()
    page.wait_for_timeout(300)
    assert page.locator("#doc-table tr:has-text('two-pages.pdf')").count() == 1
    page.once("dialog", lambda d: d.accept())
    row.locator("button.delete").click()
    page.wait_for_selector("#removed")
    assert "Removed two-pages.pdf" in page.locator("#removed").inner_text()
    assert page.locator("#doc-table tr:has-text('two-pages.pdf')").count() == 0
    assert page.locator("#doc-table tr:has-text('report.pdf')").count() == 1
    _no_problems(page)
