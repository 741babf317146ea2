"""The run store: append-only rows, torn-line repair, deduplication, shard merge, deterministic JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.store import RunStore, dump_json, run_id_for
from htmlrag.evaluation.summary import summarize


def _row(i: int, em: float = 1.0) -> dict:
    return {"id": f"q{i}", "index": i, "error": None,
            "systems": {"a": {"scores": {"em": em}, "tokens": 10, "stage_tokens": {"cleaned": 20}, "error": None},
                        "b": {"scores": {"em": 0.0}, "tokens": 12, "stage_tokens": {"raw": 30}, "error": None}}}


def test_run_id_is_a_content_hash() -> None:
    assert run_id_for({"a": 1, "b": [1, 2]}) == run_id_for({"b": [1, 2], "a": 1})
    assert run_id_for({"a": 1}) != run_id_for({"a": 2})
    assert len(run_id_for({})) == 12


def test_append_and_torn_last_line_is_repaired_by_the_lock_holder_only(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    with store.writer() as w:
        w.append(_row(0))
        w.append(_row(1))
    path = store.shard_path()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"id": "q2", "index": 2, "sys')  # killed mid-write
    torn = path.read_bytes()
    assert store.done_ids() == {"q0", "q1"} and [r["id"] for r in store.all_rows()] == ["q0", "q1"]
    assert path.read_bytes() == torn                # readers skip the tail, they never cut it
    with store.writer() as w:                       # the lock holder repairs
        assert path.read_text().endswith("}\n") and path.stat().st_size < len(torn)
        w.append(_row(2))
    assert [r["id"] for r in store.all_rows()] == ["q0", "q1", "q2"]


def test_a_reader_never_cuts_a_row_being_written(tmp_path: Path) -> None:
    """A row half-flushed by the running writer is skipped by a concurrent reader and lands whole."""
    store = RunStore(tmp_path, "exp", "abc")
    with store.writer() as w:
        w.append(_row(0))
        line = json.dumps(_row(1), sort_keys=True) + "\n"
        w._fh.write(line[:25])                        # the writer is in the middle of a row
        w._fh.flush()
        assert store.done_ids() == {"q0"}           # a reader (any process) sees only complete rows ...
        RunStore.read_rows(store.shard_path())
        w._fh.write(line[25:])                        # ... and the row completes intact
        w._fh.flush()
    assert [r["id"] for r in store.all_rows()] == ["q0", "q1"]


def test_merge_holds_the_lock(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    with store.writer() as w:
        w.append(_row(0))
        with pytest.raises(HtmlRagError, match="another process"):
            store.merge()                            # never replaces a file someone is appending to
    assert [r["id"] for r in store.merge()] == ["q0"]


def test_duplicates_dropped_and_corrupt_line_raises(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    with store.writer() as w:
        w.append(_row(1))
        w.append(_row(0))
        w.append(_row(1, em=0.0))
    rows = store.all_rows()
    assert [r["id"] for r in rows] == ["q0", "q1"] and rows[1]["systems"]["a"]["scores"]["em"] == 1.0
    store.shard_path().write_text('{"id": "q0", "index": 0}\nnot json\n')
    with pytest.raises(HtmlRagError, match="corrupt row"):
        store.all_rows()


def test_one_writer_per_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    with store.writer(), pytest.raises(HtmlRagError, match="another process"):
        store.writer()


def test_shards_merge_in_example_order(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    for rank in range(2):
        with store.writer(rank, 2) as w:
            for i in range(rank, 6, 2):
                w.append(_row(i))
        store.mark_done(rank, 2)
    assert store.shards_done(2)
    rows = store.merge()
    assert [r["index"] for r in rows] == list(range(6))
    assert not list((store.dir / "shards").glob("*"))
    assert [json.loads(x)["id"] for x in (store.dir / "predictions.jsonl").read_text().splitlines()] == [f"q{i}" for i in range(6)]


def test_summary_is_deterministic_and_order_independent() -> None:
    rows = [_row(i, em=float(i % 2)) for i in range(5)]
    rows[3]["systems"]["b"] = {"error": "boom"}
    a = summarize(rows, ["a", "b"], ["em"], ours="a", experiment="e", run_id="r", dataset="d")
    b = summarize(list(reversed(rows)), ["a", "b"], ["em"], ours="a", experiment="e", run_id="r", dataset="d")
    assert dump_json(a) == dump_json(b)
    assert a["systems"]["a"]["metrics"]["em"] == pytest.approx(0.4)
    assert a["systems"]["b"]["n"] == 4 and a["systems"]["b"]["n_errors"] == 1
    assert a["tests"]["em"]["b"]["n"] == 4
    assert a["systems"]["b"]["stage_tokens"] == {"raw": 30.0}
    assert a["system_order"] == ["b", "a"]
    assert "seconds" not in dump_json(a)


def test_failed_rows_are_retried_and_replaced(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "exp", "abc")
    bad = _row(1)
    bad["systems"]["a"] = {"error": "HTTP 503"}
    with store.writer() as w:
        w.append(_row(0))
        w.append(bad)
    assert store.done_ids() == {"q0", "q1"}
    assert store.done_ids(include_failed=False) == {"q0"}
    with store.writer() as w:
        w.append(_row(1))   # the retry
        w.append(_row(0, em=0.0))  # a duplicate of a good row: ignored
    rows = store.all_rows()
    assert rows[1]["systems"]["a"]["scores"]["em"] == 1.0 and rows[0]["systems"]["a"]["scores"]["em"] == 1.0
