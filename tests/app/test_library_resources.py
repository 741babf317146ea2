"""The app cleans up after itself and bounds what a small input can cost: removal (API and page) takes a
document's graph nodes, index entries and files; failed and stray uploads are deleted; the same content is
stored once; uploads that would cost unbounded memory are refused; page images stay under a pixel cap with a
bounded number rendering at once; the corpus recovers from a killed build at start-up."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from htmlrag.testing import pdfs as mk
from tests.app.conftest import doc_ids, settings_for, wait_job
from tests.conftest import SAMPLE_PAGES
from tests.helpers.bad_pdfs import (
    big_image_pdf,
    bomb_pdf,
    huge_page_pdf,
    nested_forms_pdf,
    png_size,
    self_drawing_form_pdf,
    shared_content_pdf,
)

PAGE = (SAMPLE_PAGES / "lighthouse.html").read_bytes()


def _upload(c: TestClient, *files: tuple[str, bytes]) -> dict:
    r = c.post("/api/documents", files=[("files", (n, d, "application/octet-stream")) for n, d in files])
    assert r.status_code == 202, r.text
    return wait_job(c, r.json()["job"]["id"])


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, Path]]:
    """A fresh app with report.pdf and lighthouse.html built (one per test: these tests change the library)."""
    (tmp_path / "results").mkdir()
    pdf = mk.report_pdf(tmp_path / "report.pdf")
    with TestClient(create_app(settings_for(tmp_path))) as c:
        job = _upload(c, ("report.pdf", pdf.read_bytes()), ("lighthouse.html", PAGE))
        assert job["status"] == "done", job
        yield c, tmp_path / "db"


def _graph_nodes(c: TestClient, doc_id: str) -> int:
    with c.app.state.app.library.reading() as corpus:
        return corpus.store.query("MATCH (n) WHERE n.doc_id = $d RETURN count(*) AS n", {"d": doc_id})[0]["n"]


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# ------------------------------------------------------------------------------------------------ removal
def test_removing_a_pdf_takes_its_nodes_index_entries_and_files(app) -> None:
    c, db = app
    pdf = doc_ids(c)["report.pdf"]
    assert _graph_nodes(c, pdf) > 0 and len(_files(db / "uploads")) == 1 and _files(db / "parse-cache" / "parsed")
    r = c.delete(f"/api/documents/{pdf}")
    assert r.status_code == 200 and r.json() == {"id": pdf, "kind": "pdf", "name": "report.pdf", "removed": True}
    assert "report.pdf" not in doc_ids(c) and "lighthouse.html" in doc_ids(c)
    assert _files(db / "uploads") == [] and _files(db / "parse-cache" / "parsed") == []
    items = [json.loads(line) for line in (db / "fulltext" / "items.jsonl").read_text().splitlines()]
    assert not [it for it in items if it["doc_id"] == pdf]
    assert not any(pdf in str(v) for f in (db / "vectors").glob("*.npz") for v in __import__("numpy").load(f)["docs"])
    assert pdf not in json.loads((db / "manifest.json").read_text())["documents"]
    r = c.post("/api/ask", json={"question": "revenue", "retriever": "hybrid"})
    assert r.status_code == 200 and all(e["source"] == "html" for e in r.json()["evidence"])
    job = _upload(c, ("report.pdf", mk.report_pdf(db.parent / "again.pdf").read_bytes()))  # not a duplicate now
    assert job["status"] == "done" and not job["items"][0].get("duplicate_of")


def test_removing_an_html_page_takes_its_entry_and_file(app) -> None:
    c, db = app
    page = doc_ids(c)["lighthouse.html"]
    assert c.delete(f"/api/documents/{page}").json()["kind"] == "html"
    assert page not in json.loads((db / "pages.json").read_text()) and _files(db / "pages") == []
    assert "lighthouse.html" not in doc_ids(c)


def test_removal_refuses_unknown_ids_busy_libraries_and_other_sites(app) -> None:
    c, _ = app
    for bad in ("nope", "manifest.json", "..%2Fmanifest.json", "%00"):
        r = c.delete(f"/api/documents/{bad}")
        assert r.status_code in (400, 404), (bad, r.text)  # 404: the router matched no document path
        assert r.status_code == 404 or "unknown document" in r.json()["detail"]
    assert (c.app.state.app.settings.db / "manifest.json").is_file()
    lib = c.app.state.app.library
    with lib.write_lock:  # a build is running
        r = c.delete(f"/api/documents/{doc_ids(c)['report.pdf']}")
    assert r.status_code == 409 and "try again" in r.json()["detail"]
    r = c.delete(f"/api/documents/{doc_ids(c)['report.pdf']}", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "report.pdf" in doc_ids(c)
    r = c.post(f"/documents/{doc_ids(c)['report.pdf']}/delete", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403 and "report.pdf" in doc_ids(c)


def test_the_documents_page_removes_with_a_button(app) -> None:
    c, _ = app
    pdf = doc_ids(c)["report.pdf"]
    page = c.get("/documents").text
    assert f'action="/documents/{pdf}/delete"' in page and "Remove</button>" in page
    r = c.post(f"/documents/{pdf}/delete", headers={"Accept": "text/html"})
    assert r.status_code == 200 and 'id="removed"' in r.text and "Removed report.pdf" in r.text
    assert "report.pdf" not in doc_ids(c)
    r = c.post(f"/documents/{pdf}/delete", headers={"Accept": "text/html"})
    assert r.status_code == 400 and "unknown document" in r.text


# ------------------------------------------------------------------------------------------------ dedupe
def test_the_same_pdf_under_many_names_is_built_once(app) -> None:
    c, db = app
    data = (db.parent / "report.pdf").read_bytes()
    job = _upload(c, *[(f"copy{i}.pdf", data) for i in range(3)])
    assert job["status"] == "done" and len(job["items"]) == 3
    assert all(it["ok"] and it["duplicate_of"] == "report.pdf" for it in job["items"])
    assert "same content as report.pdf" in job["items"][0]["message"]
    assert len(_files(db / "uploads")) == 1 and [n for n in doc_ids(c) if n.endswith(".pdf")] == ["report.pdf"]
    page = c.get(f"/documents?job={job['id']}").text
    assert "same content as report.pdf, already in the library: not added again" in page


def test_new_content_twice_in_one_request_or_in_two_racing_requests_is_built_once(app) -> None:
    c, db = app
    two = mk.report_pdf(db.parent / "two.pdf", pages=2).read_bytes()
    job = _upload(c, ("a.pdf", two), ("b.pdf", two))
    assert [it.get("duplicate_of", "") for it in job["items"]] == ["a.pdf", ""]  # duplicates are listed first
    three = mk.report_pdf(db.parent / "three.pdf", pages=4).read_bytes()
    lib = c.app.state.app.library
    with lib.write_lock:  # both requests are stored before either is built
        ids = [c.post("/api/documents", files=[("files", (n, three, "application/pdf"))]).json()["job"]["id"]
               for n in ("x.pdf", "y.pdf")]
    first, second = (wait_job(c, i) for i in ids)
    assert first["items"][0]["ok"] and not first["items"][0].get("duplicate_of")
    assert second["items"][0]["duplicate_of"] == "x.pdf"
    names = [n for n in doc_ids(c) if n.endswith(".pdf")]
    assert sorted(names) == ["a.pdf", "report.pdf", "x.pdf"] and len(_files(db / "uploads")) == 3


def test_the_same_page_under_two_names_keeps_the_first(app) -> None:
    c, db = app
    job = _upload(c, ("renamed.html", PAGE))
    assert job["items"][0]["duplicate_of"] == "lighthouse.html"
    assert "lighthouse.html" in doc_ids(c) and "renamed.html" not in doc_ids(c) and len(_files(db / "pages")) == 1


# ------------------------------------------------------------------------------------------------ clean-up
def test_a_pdf_that_fails_to_build_leaves_no_file(app) -> None:
    c, db = app
    broken = mk.truncated_pdf(db.parent / "cut.pdf", mk.report_pdf(db.parent / "src.pdf", pages=5))
    job = _upload(c, ("cut.pdf", broken.read_bytes()))
    assert job["status"] == "failed" and not job["items"][0]["ok"]
    assert len(_files(db / "uploads")) == 1  # report.pdf only


def test_stray_files_are_deleted_at_start_up_and_used_ones_kept(app, tmp_path: Path) -> None:
    _, db = app
    (db / "uploads" / "0123456789ab-left.pdf").write_bytes(b"%PDF-1.7 left by a killed build")
    (db / "uploads" / ".0123456789ab-x.pdf.tmp").write_bytes(b"torn")
    (db / "pages" / "ffffffffffff.html").write_bytes(b"<p>orphan</p>")
    kept = _files(db / "uploads")
    with TestClient(create_app(settings_for(tmp_path))) as c2:
        assert _files(db / "uploads") == [n for n in kept if n.endswith("report.pdf")]
        assert _files(db / "pages") == [f"{doc_ids(c2)['lighthouse.html']}.html"]


def test_a_document_left_in_the_graph_is_removed_at_start_up(app, tmp_path: Path) -> None:
    c, db = app
    pdf = doc_ids(c)["report.pdf"]
    c.__exit__(None, None, None)
    mf = json.loads((db / "manifest.json").read_text())
    mf["pending"] = [pdf]  # as a build killed with SIGKILL leaves it
    (db / "manifest.json").write_text(json.dumps(mf))
    with TestClient(create_app(settings_for(tmp_path))) as c2:
        lib = c2.app.state.app.library
        t0 = time.monotonic()
        while ("pending" in json.loads((db / "manifest.json").read_text()) or lib.building) \
                and time.monotonic() - t0 < 60:
            time.sleep(0.1)
        assert "report.pdf" not in doc_ids(c2)
        r = c2.post("/api/ask", json={"question": "revenue", "retriever": "hybrid"})
        assert r.status_code == 200 and all(e["source"] == "html" for e in r.json()["evidence"])
    assert "pending" not in json.loads((db / "manifest.json").read_text())


# ------------------------------------------------------------------------------------------------ upload limits
@pytest.mark.parametrize("make, setting, needle", [
    (lambda d: mk.report_pdf(d / "x.pdf", pages=6), {"max_pdf_pages": 5}, "6 pages; at most 5"),
    (lambda d: bomb_pdf(d / "x.pdf", 30_000_000), {}, "expands to more than 16 MB"),
    (lambda d: bomb_pdf(d / "x.pdf", 30_000_000, layers=2), {}, "expands to more than 16 MB"),
    (lambda d: bomb_pdf(d / "x.pdf", 9_000_000), {"max_pdf_expanded_mb": 5}, "streams expand to more than 5 MB"),
    (lambda d: big_image_pdf(d / "x.pdf", 2000), {"max_image_megapixels": 1}, "an image of 4 megapixels"),
    # one 3 MB stream drawn by 20 pages: each stream is under every limit, the pages draw 60 MB
    (lambda d: shared_content_pdf(d / "x.pdf", 20, 3_000_000), {"max_pdf_content_mb": 40},
     "pages draw more than 40 MB of content"),
    (lambda d: shared_content_pdf(d / "x.pdf", 2, 3_000_000), {"max_pdf_page_content_mb": 2},
     "page 1 draws 3 MB of content; at most 2 MB per page"),
    # 3 KB: a form drawing the next 4 times, 12 levels deep (4^12 layouts of one page; depth 9 read in 3.3 s)
    (lambda d: nested_forms_pdf(d / "x.pdf", 12, 4), {}, "page 1 draws more than 16 MB of content"),
    (lambda d: nested_forms_pdf(d / "x.pdf", 40, 2), {}, "page 1 draws more than 16 MB of content"),
    (lambda d: self_drawing_form_pdf(d / "x.pdf"), {}, "that draws itself"),
])
def test_costly_pdfs_are_refused_at_upload(app, make, setting: dict, needle: str) -> None:
    c, db = app
    s = c.app.state.app.settings
    s.max_pdf_stream_mb = 16
    for k, v in setting.items():
        setattr(s, k, v)
    before = _files(db / "uploads")
    r = c.post("/api/documents", files=[("files", ("x.pdf", make(db.parent).read_bytes(), "application/pdf"))])
    assert r.status_code == 413 and needle in r.json()["detail"] and "x.pdf" in r.json()["detail"]
    assert _files(db / "uploads") == before


def test_unreadable_and_encrypted_pdfs_and_too_many_files_are_refused(app) -> None:
    c, db = app
    enc = mk.encrypted_pdf(db.parent / "enc.pdf").read_bytes()
    r = c.post("/api/documents", files=[("files", ("enc.pdf", enc, "application/pdf"))])
    assert r.status_code == 415 and "encrypted" in r.json()["detail"]
    r = c.post("/api/documents", files=[("files", ("junk.pdf", b"%PDF-1.7\n garbage", "application/pdf"))])
    assert r.status_code == 415 and "junk.pdf" in r.json()["detail"]
    c.app.state.app.settings.max_files = 2
    r = c.post("/api/documents", files=[("files", (f"p{i}.html", PAGE, "text/html")) for i in range(3)])
    assert r.status_code == 413 and "3 files in one upload; at most 2" in r.json()["detail"]
    c.app.state.app.settings.max_library_mb = 0.01
    r = c.post("/api/documents", files=[("files", ("new.html", PAGE + b"<p>new</p>", "text/html"))])
    assert r.status_code == 413 and "library would grow past" in r.json()["detail"]


# ------------------------------------------------------------------------------------------------ page images
@pytest.mark.parametrize("size", [4000, 8000, 14400])
def test_huge_pages_render_within_the_pixel_cap(app, size: int) -> None:
    c, db = app
    job = _upload(c, (f"huge{size}.pdf", huge_page_pdf(db.parent / "h.pdf", size).read_bytes()))
    assert job["status"] == "done", job
    r = c.get(f"/api/documents/{job['items'][0]['id']}/pages/1.png?zoom=3")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    w, h = png_size(r.content)
    assert w * h <= 8_000_000 and w > 2000  # scaled down to the cap, not to a thumbnail


def test_normal_pages_keep_their_zoom(app) -> None:
    c, _ = app
    w, h = png_size(c.get(f"/api/documents/{doc_ids(c)['report.pdf']}/pages/1.png?zoom=1.5").content)
    assert (w, h) == (893, 1263)  # an A4 page (595 x 842 pt) at 1.5


def test_renders_run_at_most_slots_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pymupdf

    from htmlrag.app.pdfview import render_page_png

    pdf = mk.report_pdf(tmp_path / "r.pdf")
    running, peak, lock = [0], [0], threading.Lock()
    real = pymupdf.Page.get_pixmap

    def slow(self, *a, **k):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        try:
            return real(self, *a, **k)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(pymupdf.Page, "get_pixmap", slow)
    threads = [threading.Thread(target=render_page_png, args=(pdf, 1), kwargs={"slots": 2}) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2


def test_a_pdf_too_costly_to_lay_out_is_stopped_and_leaves_nothing(app) -> None:
    """Under every upload limit but costly to parse (40 pages drawing one 3 MB stream): parsed in a child
    process that is killed at max_parse_seconds, so the server's threads stay free (PyMuPDF holds the GIL while
    it lays out a page); the item fails naming the file and the limit, its upload is removed."""
    c, db = app
    s = c.app.state.app.settings
    s.max_parse_seconds = 0.25  # the file takes some 1.2 s on an idle 2-core machine (at 1 s the test relied on load)
    before = _files(db / "uploads")
    pdf = shared_content_pdf(db.parent / "costly.pdf", 40, 3_000_000).read_bytes()
    job = _upload(c, ("costly.pdf", pdf))
    (item,) = job["items"]
    assert not item["ok"] and item["error"].startswith("costly.pdf: parsing took more than 0.25 s"), item
    assert _files(db / "uploads") == before
    assert c.get("/api/status").status_code == 200
