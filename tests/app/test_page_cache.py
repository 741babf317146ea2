"""HTML pages are cleaned once, not at every question: their block trees are kept between questions (and the
evidence views), keyed by the page's bytes and every option that changes the tree, in a bounded LRU that is safe
under concurrent requests (before: every question cleaned every page again)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import htmlrag.app.ask as ask_mod
import htmlrag.app.pages as pages_mod
from htmlrag.app.ask import TREE_BYTES_PER_BYTE, PageTrees
from htmlrag.app.server import create_app
from tests.app.conftest import settings_for, wait_job
from tests.conftest import SAMPLE_PAGES

NAMES = ["lighthouse.html", "river-festival.html", "tea-garden.html"]


@pytest.fixture
def cleans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the pages cleaned from now on (every call of the cleaner the app's block trees use)."""
    calls: list[str] = []
    real = pages_mod.clean_html

    def counted(data: bytes | str, *a: object, name: str = "<input>", **kw: object) -> str:
        calls.append(name)
        return real(data, *a, name=name, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pages_mod, "clean_html", counted)
    return calls


@pytest.fixture
def app(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path))) as c:
        files = [("files", (n, (SAMPLE_PAGES / n).read_bytes(), "text/html")) for n in NAMES]
        r = c.post("/api/documents", files=files)
        assert r.status_code == 202, r.text
        assert wait_job(c, r.json()["job"]["id"])["status"] == "done"
        yield c


def test_a_second_question_over_the_same_pages_cleans_nothing(app: TestClient, cleans: list[str]) -> None:
    first = app.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?"})
    assert first.status_code == 200 and first.json()["errors"] == []
    assert sorted(cleans) == sorted(NAMES)  # each page once
    cleans.clear()
    second = app.post("/api/ask", json={"question": "How many steps does the tower have?"})
    page = app.post("/ask", data={"question": "Who designed Harrow Point Lighthouse?"})  # the page, too
    again = app.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?"})
    assert second.status_code == page.status_code == again.status_code == 200
    for ev in first.json()["evidence"]:  # the evidence views show the same kept trees
        assert app.get(ev["view_url"].split("#")[0]).status_code == 200
    assert cleans == []
    assert again.json()["evidence"] == first.json()["evidence"]  # a kept tree answers as a fresh one


def test_a_changed_page_is_cleaned_again(app: TestClient, cleans: list[str]) -> None:
    app.post("/api/ask", json={"question": "Who designed it?"})
    cleans.clear()
    changed = (SAMPLE_PAGES / "lighthouse.html").read_bytes().replace(b"Margaret Ellis", b"Margaret Elliot")
    r = app.post("/api/documents", files=[("files", ("lighthouse-2.html", changed, "text/html"))])
    assert wait_job(app, r.json()["job"]["id"])["status"] == "done"
    cleans.clear()  # (the upload cleaned it once to describe it)
    res = app.post("/api/ask", json={"question": "Who designed Harrow Point Lighthouse?"}).json()
    assert cleans == ["lighthouse-2.html"]  # only the new bytes
    assert any("Elliot" in e["text"] for e in res["evidence"])


def test_bytes_and_every_option_are_part_of_the_key(cleans: list[str]) -> None:
    data = (SAMPLE_PAGES / "lighthouse.html").read_bytes()
    trees = PageTrees()
    a = trees.get(data, "p.html")
    assert trees.get(data, "p.html") is a and cleans == ["p.html"]
    trees.get(data, "p.html", max_words=16)  # another block size
    trees.get(data, "p.html", pack=False)  # no sibling packing
    trees.get(data + b"<p>more</p>", "p.html")  # other bytes
    trees.get(data, "q.html")  # another name (its messages name it)
    assert len(cleans) == 5 and len(trees) == 5
    assert len(trees.get(data, "p.html", max_words=16)) > len(a)  # smaller blocks: more of them
    assert len(cleans) == 5


def test_the_cache_is_bounded_by_pages_and_bytes(cleans: list[str]) -> None:
    pages = [f"<html><body><p>page {i} {'word ' * 50}</p></body></html>".encode() for i in range(6)]
    trees = PageTrees(max_pages=3, max_bytes=10 ** 9)
    for p in pages:
        trees.get(p, "p.html")
    assert len(trees) == 3
    trees.get(pages[3], "p.html")  # kept: no clean; then the oldest kept one went
    trees.get(pages[0], "p.html")
    assert len(cleans) == 7
    by_bytes = PageTrees(max_pages=100, max_bytes=TREE_BYTES_PER_BYTE * len(pages[0]) * 2)
    for p in pages:
        by_bytes.get(p, "p.html")
    assert len(by_bytes) == 2 and by_bytes.size <= by_bytes.max_bytes
    huge = PageTrees(max_bytes=TREE_BYTES_PER_BYTE * 10)
    assert len(huge.get(pages[0], "p.html")) > 0 and len(huge) == 0  # too big to keep: built, used, not kept


def test_concurrent_questions_build_a_page_once(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (SAMPLE_PAGES / "lighthouse.html").read_bytes()
    started, release = threading.Event(), threading.Event()
    built: list[int] = []
    real = ask_mod.block_tree

    def slow(*a: object, **kw: object) -> object:
        built.append(1)
        started.set()
        release.wait(60)
        return real(*a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ask_mod, "block_tree", slow)
    trees = PageTrees()
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(trees.get(data, "p.html"))) for _ in range(8)]
    for t in threads:
        t.start()
    assert started.wait(60)
    release.set()
    for t in threads:
        t.join(60)
    assert len(got) == 8 and all(t is got[0] for t in got) and built == [1]


def test_a_page_that_fails_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from htmlrag.core.errors import InputError

    trees = PageTrees()
    with pytest.raises(InputError):
        trees.get(b"\x00\x01\x02" * 100, "bad.html")
    assert len(trees) == 0
    with pytest.raises(InputError):  # tried again, and refused again
        trees.get(b"\x00\x01\x02" * 100, "bad.html")
