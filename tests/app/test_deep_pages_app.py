"""Deep pages in the web app (issue 38, class 3): uploaded beside normal pages, they are listed, shown and pruned,
and an unscoped ask answers over every page; a page that fails while asking is named in the answer while the
others answer; ``/api/prune`` takes deep pages (2,040, 5,000 and 100,000 levels) and answers bad input with a
4xx and a message, never a 500."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from htmlrag.testing.pages import deep_page
from tests.app.conftest import settings_for, wait_job
from tests.conftest import SAMPLE_PAGES

DEEP = {"deep-div.html": deep_page(2040, "div"), "deep-list.html": deep_page(5000, "list"),
        "deep-inline.html": deep_page(100_000, "inline")}


@pytest.fixture(scope="module")
def deep_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    d = tmp_path_factory.mktemp("deep-app")
    (d / "results").mkdir()
    with TestClient(create_app(settings_for(d))) as c:
        files = [("files", (name, html.encode(), "text/html")) for name, html in DEEP.items()]
        files.append(("files", ("lighthouse.html", (SAMPLE_PAGES / "lighthouse.html").read_bytes(), "text/html")))
        r = c.post("/api/documents", files=files)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job"]["id"], timeout=300)
        assert job["status"] == "done" and all(i["ok"] for i in job["items"]), job
        yield c


def _ids(client: TestClient) -> dict[str, str]:
    return {d["name"]: d["id"] for d in client.get("/api/documents").json()["documents"]}


def test_deep_pages_are_listed_and_shown(deep_client: TestClient) -> None:
    ids = _ids(deep_client)
    assert set(DEEP) <= set(ids)
    for name in DEEP:
        r = deep_client.get(f"/view/pages/{ids[name]}?block=0")
        assert r.status_code == 200 and "Margaret Ellis" in r.text


@pytest.mark.parametrize("ranker", ["bm25", "embed"])
def test_an_unscoped_ask_answers_over_deep_and_normal_pages(deep_client: TestClient, ranker: str) -> None:
    r = deep_client.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?", "k": 10,
                                           "html_ranker": ranker})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["errors"] == [] and res["evidence"] and res["context_tokens"] > 0
    assert {e["doc_name"] for e in res["evidence"]} & {"lighthouse.html"}
    page = deep_client.post("/ask", data={"question": "Who designed Harrow Point Lighthouse?", "html_ranker": ranker})
    assert page.status_code == 200 and "Margaret Ellis" in page.text


def test_one_failing_page_is_named_and_the_others_answer(deep_client: TestClient,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import htmlrag.app.ask as ask_mod
    from htmlrag.core.errors import InputError

    ids = _ids(deep_client)
    real = ask_mod.block_tree

    def flaky(data: bytes | str, name: str, *a, **kw):  # type: ignore[no-untyped-def]
        if name == "deep-div.html":
            raise InputError(f"{name}: cannot be read")
        if name == "deep-list.html":
            raise RecursionError("maximum recursion depth exceeded")  # an unexpected failure: type only
        return real(data, name, *a, **kw)

    monkeypatch.setattr(ask_mod, "block_tree", flaky)
    deep_client.app.state.app.asker.trees.clear()  # trees kept from the questions before would skip the failure
    r = deep_client.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?"})
    assert r.status_code == 200, r.text
    res = r.json()
    errors = {e["doc_name"]: e["error"] for e in res["errors"]}
    assert errors == {"deep-div.html": "deep-div.html: cannot be read",
                      "deep-list.html": "internal error (RecursionError)"}
    assert any(e["doc_id"] == ids["lighthouse.html"] for e in res["evidence"])
    page = deep_client.post("/ask", data={"question": "Who designed Harrow Point Lighthouse?"})
    assert page.status_code == 200 and "deep-div.html was left out: deep-div.html: cannot be read" in page.text


@pytest.mark.parametrize("name", list(DEEP))
@pytest.mark.parametrize("ranker", ["bm25", "none"])
def test_api_prune_takes_deep_pages(deep_client: TestClient, name: str, ranker: str) -> None:
    r = deep_client.post("/api/prune", json={"html": DEEP[name], "question": "Who designed the tower?",
                                             "budget": 128, "ranker": ranker, "max_words": 32})
    assert r.status_code == 200, r.text
    res = r.json()
    assert 0 < res["tokens"]["pruned"] <= 128 and res["blocks_total"] > 0
    data = {"question": "Who designed the tower?", "budget": "128", "ranker": ranker, "max_words": "32"}
    if len(DEEP[name]) < 1 << 20:  # pasted (form fields hold at most 1 MB), else uploaded
        form = deep_client.post("/prune", data={**data, "html": DEEP[name]})
    else:
        form = deep_client.post("/prune", data=data, files={"file": (name, DEEP[name].encode(), "text/html")})
    assert form.status_code == 200 and "Traceback" not in form.text and 'id="error"' not in form.text


@pytest.mark.parametrize(("body", "needle"), [
    ({"html": "\x00\x01\x02" * 100, "question": "q"}, "not an HTML page"),
    ({"html": DEEP["deep-div.html"], "question": "q", "budget": 0}, "budget"),
    ({"html": DEEP["deep-div.html"], "question": "q", "max_words": 100000}, "block size"),
    ({"html": DEEP["deep-div.html"], "question": "", "ranker": "bm25"}, "question"),
])
def test_api_prune_refuses_bad_input_with_a_4xx(deep_client: TestClient, body: dict, needle: str) -> None:
    r = deep_client.post("/api/prune", json=body)
    assert 400 <= r.status_code < 500 and needle in r.text, (r.status_code, r.text[:300])


def test_pasting_more_than_a_form_field_holds_is_a_4xx(deep_client: TestClient) -> None:
    r = deep_client.post("/prune", data={"html": DEEP["deep-inline.html"], "question": "q"})
    assert r.status_code == 400 and "maximum size" in r.text
