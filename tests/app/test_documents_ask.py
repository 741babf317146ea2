"""Documents and Ask through the JSON API and the pages: upload, build with progress, list, retrieve with every
retriever, evidence fields and page regions, HTML evidence in its page, Cypher through the read-only guard."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.ask import PDF_RETRIEVERS
from tests.app.conftest import doc_ids

Q = "Which region had revenue of 7,890?"


def test_documents_list_pdf_and_page_facts(client: TestClient) -> None:
    docs = {d["name"]: d for d in client.get("/api/documents").json()["documents"]}
    pdf, page = docs["report.pdf"], docs["lighthouse.html"]
    assert (pdf["kind"], pdf["pages"], pdf["tables"], pdf["figures"]) == ("pdf", 3, 1, 1)
    assert pdf["sections"] >= 6 and pdf["chunks"] >= 3 and pdf["title"] == "Widget Annual Report"
    assert page["kind"] == "html" and page["tables"] == 1 and page["tokens_cleaned"] < page["tokens_raw"]
    html = client.get("/documents").text
    assert "report.pdf" in html and "lighthouse.html" in html


def test_job_reports_progress_and_per_file_results(client: TestClient, app_dir: Path) -> None:
    from htmlrag.testing import pdfs as mk
    from tests.app.conftest import wait_job

    two = mk.report_pdf(app_dir / "two-pages.pdf", pages=2).read_bytes()
    r = client.post("/api/documents", files=[("files", ("two-pages.pdf", two, "application/pdf"))])
    job = r.json()["job"]
    assert job["total"] == 2 and job["status"] in ("queued", "running")
    done = wait_job(client, job["id"])
    assert done["status"] == "done" and done["done"] == 2 and done["progress"] == 1.0
    assert done["items"][0]["ok"] and done["items"][0]["pages"] == 2
    assert client.delete(f"/api/documents/{done['items'][0]['id']}").json()["removed"]
    assert client.get("/api/jobs/nope").status_code == 400


def test_ask_returns_evidence_with_section_path_page_score_and_regions(client: TestClient) -> None:
    r = client.post("/api/ask", json={"question": Q, "retriever": "hybrid", "k": 5,
                                      "docs": [doc_ids(client)["report.pdf"]]})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["answer"] == "" and res["reader"] == "none" and res["seconds"]["total"] > 0
    table = next(e for e in res["evidence"] if e["kind"] == "TableChunk")
    assert table["pages"] == [2] and table["section_path"] == ["2 Chapter about topic B", "2.1 Details of B"]
    assert "7,890" in table["table_html"] and table["table_html"].startswith("<table>")
    assert table["regions"] and all(rg["page"] == 2 for rg in table["regions"])
    ys = [rg["bbox"][1] for rg in table["regions"]]
    assert min(ys) > 250 and max(ys) < 360  # the table sits at y 264-344 on the page
    for e in res["evidence"]:
        assert set(e) >= {"rank", "kind", "doc_name", "pages", "score", "section_path", "regions"}


@pytest.mark.parametrize("retriever", [r for r in PDF_RETRIEVERS if r != "cypher"])
def test_every_retriever_answers(client: TestClient, retriever: str) -> None:
    r = client.post("/api/ask", json={"question": Q, "retriever": retriever, "k": 3})
    assert r.status_code == 200, r.text
    assert any(e["source"] == "pdf" for e in r.json()["evidence"])


def test_html_pages_give_block_evidence_shown_in_the_page(client: TestClient) -> None:
    page_id = doc_ids(client)["lighthouse.html"]
    r = client.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?", "docs": [page_id], "k": 2})
    ev = r.json()["evidence"]
    assert ev[0]["source"] == "html" and "Margaret Ellis" in ev[0]["text"]
    view = client.get(ev[0]["view_url"].split("#")[0])
    assert view.status_code == 200
    assert view.headers["content-security-policy"].startswith("sandbox")
    import lxml.html

    marked = lxml.html.fromstring(view.text).xpath('//*[@data-hr="evidence"]')
    assert "Margaret Ellis" in " ".join(e.text_content() for e in marked) and marked[0].get("id") == "hr-0"
    assert "<script" not in view.text.lower()


def test_html_blocks_sharing_no_word_with_the_question_are_not_evidence(client: TestClient) -> None:
    page_id = doc_ids(client)["lighthouse.html"]
    r = client.post("/api/ask", json={"question": "quarterly widget revenue?", "docs": [page_id]})
    assert r.status_code == 200 and r.json()["evidence"] == []


def test_ask_page_shows_evidence_and_the_highlighted_page(client: TestClient) -> None:
    html = client.post("/ask", data={"question": Q, "retriever": "tables", "k": "3"}).text
    assert 'class="ev selected"' in html and "/pages/2.png" in html and 'class="hl"' in html
    png = re.search(r'src="(/api/documents/[^"]+/pages/2\.png)"', html).group(1)
    r = client.get(png)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content[:4] == b"\x89PNG"


def test_page_image_errors(client: TestClient) -> None:
    pdf = doc_ids(client)["report.pdf"]
    assert client.get(f"/api/documents/{pdf}/pages/9.png").status_code == 400
    assert client.get("/api/documents/nope/pages/1.png").status_code == 400


def test_cypher_read_query_gives_evidence(client: TestClient) -> None:
    q = "MATCH (t:TableChunk) WHERE t.text CONTAINS '7,890' RETURN t.id AS id"
    r = client.post("/api/ask", json={"question": Q, "retriever": "cypher", "cypher": q})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["cypher_query"] == q and res["evidence"][0]["kind"] == "TableChunk"


def _counts(client: TestClient) -> tuple:
    r = client.post("/api/ask", json={"question": "n", "retriever": "cypher",
                                      "cypher": "MATCH (n) RETURN count(n) AS n"})
    return tuple(e["text"] for e in r.json()["evidence"])


@pytest.mark.parametrize("query", [
    "MATCH (n) DETACH DELETE n",
    "CREATE (:Corpus {id: 'x'})",
    "MATCH (n:Document) SET n.title = 'pwned' RETURN n.id AS id",
    "MATCH (n) RETURN n.id AS id; MATCH (m) DELETE m",
    "COPY (MATCH (n) RETURN n.text) TO 'OUT'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "MATCH (n) WHERE n.id = 'a' /* */ DELETE n",
])
def test_cypher_writes_are_refused_and_change_nothing(client: TestClient, tmp_path: Path, query: str) -> None:
    out = tmp_path / "dump.csv"
    before = _counts(client)
    r = client.post("/api/ask", json={"question": Q, "retriever": "cypher", "cypher": query.replace("OUT", str(out))})
    assert r.status_code == 400 and "refused" in r.json()["detail"]
    assert _counts(client) == before and not out.exists()
    page = client.post("/ask", data={"question": Q, "retriever": "cypher", "cypher": query.replace("OUT", str(out))})
    assert page.status_code == 400 and "refused" in page.text and 'id="error"' in page.text


def test_cypher_needs_a_query_or_a_model(client: TestClient) -> None:
    r = client.post("/api/ask", json={"question": Q, "retriever": "cypher"})
    assert r.status_code == 400 and "needs a Cypher query" in r.json()["detail"]


@pytest.mark.parametrize(("body", "needle"), [
    ({"question": "  "}, "empty"), ({"question": "x" * 2001}, "2000"), ({"question": Q, "retriever": "magic"}, "magic"),
    ({"question": Q, "k": 0}, "k must"), ({"question": Q, "docs": ["../../etc"]}, "unknown document"),
    ({"question": Q, "reader": "openai"}, "not configured"), ({"question": Q, "reader": "gpt"}, "unknown reader"),
])
def test_bad_questions_are_refused_clearly(client: TestClient, body: dict, needle: str) -> None:
    r = client.post("/api/ask", json=body)
    assert r.status_code == 400 and needle in r.json()["detail"]


def test_asking_during_a_build_says_busy(client: TestClient) -> None:
    lib = client.app.state.app.library
    lib.building = True
    try:
        r = client.post("/api/ask", json={"question": Q, "docs": [doc_ids(client)["report.pdf"]]})
    finally:
        lib.building = False
    assert r.status_code == 409 and "being built" in r.json()["detail"]


def test_pages_do_not_wait_for_a_busy_corpus(client: TestClient) -> None:
    import threading

    lib = client.app.state.app.library
    lib._stats = None
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # the corpus being opened (start-up) or changed
        with lib._open_lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        page = client.get("/documents")
        docs = {d["name"]: d for d in client.get("/api/documents").json()["documents"]}
    finally:
        release.set()
        t.join()
    assert page.status_code == 200 and "reload for the counts" in page.text
    assert docs["report.pdf"]["counted"] is False and docs["report.pdf"]["pages"] == 3
    assert {d["name"]: d for d in client.get("/api/documents").json()["documents"]}["report.pdf"]["counted"]


@pytest.mark.parametrize("query, needle", [
    ("MATCH (a)-[*1..]->(b) RETURN count(*) AS n", "has no upper bound"),
    ("MATCH (a)-[*]->(b) RETURN a.id AS id", "has no upper bound"),
    ("MATCH (a)-[*1..8]->(b) RETURN count(*) AS n", "goes up to 8 hops; at most 3"),
    ("UNWIND range(1, 2000000) AS x RETURN x", "makes 2,000,000 items"),
    ("RETURN size(repeat('a', 300000000)) AS n", "builds 300,000,000 characters"),
    ("MATCH (n) WHERE n.id = $x RETURN n.id AS id", "parameter $x has no value"),
    ("MATCH (n) RETURN n.id AS id LIMIT 1 + 1", "LIMIT at offset"),
])
def test_costly_cypher_is_refused_before_it_runs(client: TestClient, query: str, needle: str) -> None:
    r = client.post("/api/ask", json={"question": Q, "retriever": "cypher", "cypher": query})
    assert r.status_code == 400 and needle in r.json()["detail"]
    page = client.post("/ask", data={"question": Q, "retriever": "cypher", "cypher": query})
    assert page.status_code == 400 and 'id="error"' in page.text


def test_a_slow_cypher_query_neither_runs_on_nor_holds_up_other_questions(client: TestClient) -> None:
    """Raised bounds (12 hops) leave the timeout to stop the query; meanwhile other questions are answered."""
    import threading

    s = client.app.state.app.settings
    lib = client.app.state.app.library
    s.cypher_max_hops, s.cypher_timeout_s, s.cypher_memory_mb = 12, 4.0, 2048
    lib.close()  # reopened with the new limits
    slow: dict = {}

    def ask_slow() -> None:
        slow["r"] = client.post("/api/ask", json={"question": Q, "retriever": "cypher",
                                                  "cypher": "MATCH (a)-[*1..12]->(b) RETURN count(*) AS n"})

    try:
        t = threading.Thread(target=ask_slow)
        t.start()
        answered = [client.post("/api/ask", json={"question": Q, "retriever": "hybrid"}) for _ in range(3)]
        finished_before = t.is_alive()
        t.join()
    finally:
        s.cypher_max_hops, s.cypher_timeout_s, s.cypher_memory_mb = 3, 10.0, 256
        lib.close()
    assert all(r.status_code == 200 and r.json()["evidence"] for r in answered)
    assert finished_before  # the three answers came while the slow query ran
    assert slow["r"].status_code == 400, slow["r"].text
    assert re.search(r"stopped after 4 s \(the time limit|needed more than 2048 MB", slow["r"].json()["detail"])
