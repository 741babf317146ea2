"""The embedded BM25 index: no duplicated items after adding to a fresh index, and no debug chatter from
bm25s reaching an application that logs at INFO."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

from htmlrag.superrag.index.fulltext import BM25Index


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_add_then_search_in_the_same_process_returns_each_item_once(tmp_path: Path) -> None:
    ix = BM25Index(tmp_path)
    ix.add(["a", "b"], ["hello world", "total net sales"], ["d", "d"], ["SectionChunk"] * 2)
    ix.add(["c"], ["net income"], ["d"], ["SectionChunk"])
    assert sorted(i for i, _ in ix.search("net sales income", 5)) == ["b", "c"]
    assert len(BM25Index(tmp_path)._load()) == 3  # and on disk


def test_bm25s_debug_lines_do_not_reach_an_info_level_application(tmp_path: Path) -> None:
    root = logging.getLogger()
    keep, level = _Keep(), root.level
    root.addHandler(keep)
    root.setLevel(logging.INFO)
    try:
        ix = BM25Index(tmp_path)
        ix.add(["a", "b"], ["hello world", "net sales"], ["d", "d"], ["SectionChunk"] * 2)
        assert ix.search("net sales", 2)[0][0] == "b"
    finally:
        root.removeHandler(keep)
        root.setLevel(level)
    assert not [r for r in keep.records if r.name.startswith("bm25s")]
