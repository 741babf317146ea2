"""A run page a reader would print (issue 40), in chromium at a 1280-px window: the run's results.md is shown as
a table with the numbers rounded as the paper tables round them (full value on hover), and the results, run,
question and diff pages never scroll sideways, with realistic long content (ten long system names, long
overrides, a long question)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.e2e.conftest import LiveServer

pytestmark = pytest.mark.slow
WIDTH = 1280


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, list[str]]]:
    pytest.importorskip("fastapi")
    from tests.app.conftest import settings_for
    from tests.helpers.app_data import make_wide_results

    d = tmp_path_factory.mktemp("wide")
    runs = make_wide_results(d / "results")
    with LiveServer(settings_for(d)) as server:
        yield server, runs


@pytest.fixture
def narrow(browser: object) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": WIDTH, "height": 900})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def scroll_width(page) -> int:
    return int(page.evaluate("() => document.documentElement.scrollWidth"))


def test_four_pages_fit_a_1280_px_window(narrow, wide) -> None:
    server, (a, b) = wide
    qid = "harrow-point-lighthouse-question-0"
    pages = {"results": "/results", "run": f"/results/run/{a}", "question": f"/results/run/{a}/q/{qid}",
             "diff": f"/results/diff?a={quote(a)}&b={quote(b)}&q={qid}"}
    for name, url in pages.items():
        resp = narrow.goto(server.url + url)
        assert resp.status == 200, (name, resp.status)
        assert scroll_width(narrow) <= WIDTH, f"{name} page is {scroll_width(narrow)} px wide"
    assert "Which lighthouse on the northern headland" in narrow.content()  # the long question is on the pages


def test_run_page_shows_results_md_as_a_table_with_rounded_numbers(narrow, wide) -> None:
    server, (a, _) = wide
    narrow.goto(server.url + f"/results/run/{a}")
    card = narrow.locator("section.md-table[data-file$='tables/results.md']")
    table = card.locator("table").first
    assert table.count() == 1
    head = table.locator("thead th").all_inner_texts()
    assert head[0] == "system" and "asqa em" in head
    ours = table.locator("tr", has_text="htmlrag_bge_then_phi_3_5_mini_generative_pruner_budget_4096").first
    cells = ours.locator("td").all_inner_texts()
    assert cells[1].split()[0] == "66.67" and cells[-1] == "2039"  # em x100 with 2 decimals; tokens whole
    assert cells[1].split(" ", 1)[1].startswith("[")  # and the cell's 95% interval
    assert ours.locator("td").nth(1).get_attribute("title").startswith("0.6666666666666666")
    assert table.locator("strong").count() >= 1 and table.locator("u").count() >= 1  # best bold, second underlined
    text = card.inner_text()
    assert "**" not in text and "<u>" not in text and "| system |" not in text.split("Markdown source")[0]
    metrics = narrow.locator("table.metrics").first.inner_text()  # the summary above: rounded the same way
    assert "66.67" in metrics and "0.6667" not in metrics and "0.666" not in metrics
