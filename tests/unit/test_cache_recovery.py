"""A broken cache file (garbage bytes, a malformed page, a foreign layout) is set aside and rebuilt, named in a
warning; it never turns lookups into failures. Other errors (a folder in the way) are clear errors."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from htmlrag.core.cache import SqliteCache
from htmlrag.core.errors import HtmlRagError


def _aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.corrupt-*"))


@pytest.mark.parametrize("name", ["contexts", "pages", "responses", "judge"])
@pytest.mark.parametrize("garbage", [b"\x00" * 10, os.urandom(8192), b"not a database at all\n" * 300,
                                     b"SQLite format 3\x00" + os.urandom(4000)],
                         ids=["zeros", "random", "text", "sqlite-header-then-random"])  # the same ids in every worker
def test_garbage_file_is_set_aside_and_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str,
                                               garbage: bytes) -> None:
    path = tmp_path / f"{name}.sqlite"
    path.write_bytes(garbage)
    cache = SqliteCache(path, name)
    with caplog.at_level(logging.WARNING):
        assert cache.get("k") is None
        cache.put("k", {"v": 1})
    assert cache.get("k") == {"v": 1}
    (aside,) = _aside(path)
    assert aside.read_bytes() == garbage                   # kept for inspection, not deleted
    assert str(path) in caplog.text and "set aside" in caplog.text
    cache.close()
    assert SqliteCache(path, name).get("k") == {"v": 1}    # the rebuilt file is a real cache


def test_a_page_broken_while_in_use_is_set_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "contexts.sqlite"
    cache = SqliteCache(path, "contexts")
    for i in range(400):
        cache.put(f"k{i}", {"context": "x" * 500, "i": i})
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[8192:len(data) - 4096] = os.urandom(len(data) - 4096 - 8192)   # keep the header, wreck the b-tree pages
    path.write_bytes(bytes(data))
    cache = SqliteCache(path, "contexts")
    with caplog.at_level(logging.WARNING):
        got = [cache.get(f"k{i}") for i in range(400)]
    assert all(g is None or g["i"] == i for i, g in enumerate(got))    # a miss or the right value, never an error
    cache.put("new", {"ok": True})
    assert cache.get("new") == {"ok": True} and _aside(path) and str(path) in caplog.text


def test_foreign_database_with_another_layout(tmp_path: Path) -> None:
    path = tmp_path / "pages.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE pages (a INTEGER, b INTEGER)")
    cache = SqliteCache(path, "pages")
    cache.put("k", "v")
    assert cache.get("k") == "v" and len(_aside(path)) == 1


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = SqliteCache(tmp_path / "c.sqlite", "c")
    cache.put("k", [1])
    cache._db().execute("UPDATE c SET value = '{not json' WHERE key = 'k'")
    assert cache.get("k") is None


def test_other_errors_are_clear_and_set_nothing_aside(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    path.mkdir()
    with pytest.raises(HtmlRagError, match=r"responses\.sqlite"):
        SqliteCache(path, "responses").get("k")
    assert path.is_dir() and not _aside(path)


def test_embedding_cache_garbage_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from htmlrag.rankers.embedding import EmbeddingCache

    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(os.urandom(5000))
    with caplog.at_level(logging.WARNING):
        cache = EmbeddingCache(path)
    vec = np.ones((1, 4), dtype=np.float32)
    cache.put_many(["a"], vec)
    assert np.array_equal(EmbeddingCache(path).get_many(["a"])[0], vec[0])
    assert _aside(path) and str(path) in caplog.text


def test_embedding_cache_broken_in_use_goes_on_in_memory(tmp_path: Path) -> None:
    from htmlrag.rankers.embedding import EmbeddingCache

    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache._db.execute("DROP TABLE emb")                    # as if the file were swapped for a foreign one
    cache.put_many(["a"], np.ones((1, 4), dtype=np.float32))
    assert cache._db is None and cache.get_many(["a"])[0] is not None and _aside(path)
