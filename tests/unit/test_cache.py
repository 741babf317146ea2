"""The SQLite stage cache shared by shard processes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from htmlrag.core.cache import SqliteCache, content_key


def _open_and_write(path: str, i: int, barrier, errors) -> None:  # type: ignore[no-untyped-def]
    try:
        barrier.wait(timeout=30)
        for table in ("clean", "rank", "reader"):
            c = SqliteCache(path, table)
            c.put(f"k{i}", {"v": i})
            assert c.get(f"k{i}") == {"v": i}
            c.close()
    except Exception as e:  # reported to the parent
        errors.put(repr(e))


def test_processes_opening_a_new_cache_at_once_all_succeed(tmp_path: Path) -> None:
    # Several shard processes start together on a fresh cache file: switching it to WAL used to fail
    # immediately with "database is locked" in some of them (and the example lost its system's result).
    ctx = mp.get_context("fork")
    n = 4
    errors = ctx.Queue()
    for trial in range(25):
        path = str(tmp_path / f"c{trial}.sqlite")
        barrier = ctx.Barrier(n)
        procs = [ctx.Process(target=_open_and_write, args=(path, i, barrier, errors)) for i in range(n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert all(p.exitcode == 0 for p in procs)
        c = SqliteCache(path, "reader")
        assert len(c) == n
        c.close()
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []


def test_values_round_trip_and_replace(tmp_path: Path) -> None:
    c = SqliteCache(tmp_path / "x" / "c.sqlite", "stage_1")
    key = content_key("model", b"page bytes", {"budget": 512})
    assert c.get(key) is None
    c.put(key, {"html": "<p>é</p>", "n": 3})
    c.put(key, {"html": "<p>b</p>", "n": 4})
    assert c.get(key) == {"html": "<p>b</p>", "n": 4} and len(c) == 1
    assert (c.hits, c.misses) == (1, 1)
    assert content_key("model", b"page bytes", {"budget": 512}) == key != content_key("model", b"page bytes", {"budget": 1024})


def test_bad_table_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="bad cache table name"):
        SqliteCache(tmp_path / "c.sqlite", "x; DROP TABLE y")
