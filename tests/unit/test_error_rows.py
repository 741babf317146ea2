"""No silent wrong results (issue 38, class 1): a row whose context failed to build is an error row, never a
scored row; nothing computed from a failure is cached; a cache that cannot work stops the run with an error
naming the file (or, when the file is merely not a database, is set aside and rebuilt, leaving the results
unchanged); a rerun retries error rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import htmlrag.core.cache as cache_mod
from htmlrag.core.cache import SqliteCache
from htmlrag.core.errors import CacheError, InputError
from htmlrag.data.schema import Example
from htmlrag.evaluation.scoring.loop import Caches, EvalSettings, System, evaluate
from htmlrag.evaluation.store import RunStore, has_error, row_digest
from htmlrag.evaluation.summary import errors_caption, summarize, write_tables
from htmlrag.factory import make_pipeline, make_reader
from tests.conftest import SAMPLE_PAGES

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8   # not a page: cleaning it fails
PAGES = [(SAMPLE_PAGES / n).read_text() for n in ("lighthouse.html", "river-festival.html", "tea-garden.html")]


def _examples(bad_page: int | None = None, n_pages: int = 5) -> list[Example]:
    pages: list[str | bytes] = [PAGES[i % 3] for i in range(n_pages)]
    if bad_page is not None:
        pages[bad_page] = PNG
    return [Example(id="q0", question="Who designed Harrow Point Lighthouse?", answers=["Margaret Ellis"],
                    pages=list(pages)),
            Example(id="q1", question="How many steps does the tower have?", answers=["164"], pages=PAGES[:2])]


def _systems() -> list[System]:
    pipe = make_pipeline("bm25", budget2=256, max_words1=32, clean=False)
    return [System("ours", pipe, clean=True, fingerprint="fp-ours"),
            System("vanilla", make_pipeline(None, budget2=256, clean=False), clean=False, fingerprint="fp-van")]


def _caches(folder: Path) -> Caches:
    return Caches(pages=SqliteCache(folder / "pages.sqlite", "pages"),
                  contexts=SqliteCache(folder / "contexts.sqlite", "contexts"))


def _run(tmp_path: Path, examples: list[Example], caches: Caches, results: str = "results",
         retry: bool = True) -> list[dict]:
    store = RunStore(tmp_path / results, "exp", "run")
    evaluate(examples, _systems(), make_reader("none"), store, EvalSettings(metrics=["ref_em"], progress=False,
             retry_failed=retry), caches)
    return store.all_rows()


@pytest.mark.parametrize("n_pages", [1, 2, 5])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_failed_page_makes_an_error_row_never_a_scored_one(tmp_path: Path, n_pages: int, where: str) -> None:
    bad = {"first": 0, "middle": n_pages // 2, "last": n_pages - 1}[where]
    rows = _run(tmp_path, _examples(bad, n_pages), _caches(tmp_path / "cache"))
    q0, q1 = rows
    for name in ("ours", "vanilla"):
        rec = q0["systems"][name]
        assert f"page {bad} of {n_pages}: " in rec["error"] and "binary" in rec["error"]
        assert set(rec["page_errors"]) == {str(bad)}
        assert "scores" not in rec and "response" not in rec and "tokens" not in rec
        assert not q1["systems"][name]["error"] and q1["systems"][name]["scores"]["ref_em"] in (0.0, 1.0)
    assert has_error(q0) and not has_error(q1)
    summary = summarize(rows, ["ours", "vanilla"], ["ref_em"], ours="ours", experiment="e", run_id="r", dataset="d")
    assert summary["systems"]["ours"]["n"] == 1 and summary["systems"]["ours"]["n_errors"] == 1
    # the mean is over the scored row alone: the error row is not a 0.0
    assert summary["systems"]["ours"]["metrics"]["ref_em"] == q1["systems"]["ours"]["scores"]["ref_em"]


def test_errors_are_never_cached_and_a_rerun_retries_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    rows = _run(tmp_path, _examples(2), _caches(cache))
    assert has_error(rows[0])
    contexts = SqliteCache(cache / "contexts.sqlite", "contexts")
    stored = [json.loads(v) for (v,) in contexts._db().execute("SELECT value FROM contexts")]
    assert len(stored) == 2 and all("page_errors" not in e for e in stored)   # q1's two contexts only
    pages = SqliteCache(cache / "pages.sqlite", "pages")
    assert all(isinstance(json.loads(v), str) and v for (v,) in pages._db().execute("SELECT value FROM pages"))
    # the page is fixed: the rerun (same results folder) retries the error row and scores it
    fixed = _run(tmp_path, _examples(None), _caches(cache))
    assert not has_error(fixed[0]) and fixed[0]["systems"]["ours"]["scores"]["ref_em"] == 1.0
    # with retry_failed=false the error row is kept as it is
    kept = _run(tmp_path, _examples(2), _caches(cache), results="other", retry=False)
    again = _run(tmp_path, _examples(None), _caches(cache), results="other", retry=False)
    assert has_error(kept[0]) and has_error(again[0])


def test_rows_and_cache_entries_written_by_older_code_are_not_trusted(tmp_path: Path) -> None:
    """Before this fix, a row with page_errors but no error was scored and kept, and its context was cached."""
    store = RunStore(tmp_path / "results", "exp", "run")
    old = {"id": "q0", "index": 0, "error": None, "systems": {"ours": {"error": None, "page_errors": {"0": "x"},
                                                                       "scores": {"ref_em": 0.0}}}}
    with store.writer() as w:
        w.append(old)
    assert has_error(old) and "q0" not in store.done_ids(include_failed=False)
    caches = _caches(tmp_path / "cache")
    from htmlrag.core.cache import content_key
    from htmlrag.evaluation.scoring.loop import code_fingerprint

    ex = _examples(None, 2)[0]
    import hashlib
    digests = [hashlib.sha256(p.encode()).hexdigest() for p in ex.pages]
    key = content_key("context", code_fingerprint(), "fp-ours", ex.question, digests)
    caches.contexts.put(key, {"context": "", "stage_tokens": {}, "page_errors": {"0": "x"}, "seconds": 0})
    rows = _run(tmp_path, [ex], caches)
    assert rows[0]["systems"]["ours"]["cached"] is False and rows[0]["systems"]["ours"]["scores"]["ref_em"] == 1.0


@pytest.mark.parametrize("damaged", [{"context": 5}, {"context": "x"}, {"context": "x", "stage_tokens": "9"},
                                     {"context": "x", "stage_tokens": {"raw": "9"}}, [1, 2], "text", None,
                                     {"context": "x", "stage_tokens": {"raw": 9}, "cost": [1]},
                                     {"context": "x", "stage_tokens": {"raw": 9}, "seconds": "slow"}])
def test_a_cached_context_of_another_shape_is_a_miss(tmp_path: Path, damaged: object) -> None:
    """A damaged or foreign context entry (valid JSON, wrong shape) is built again: no KeyError that loses the
    chunk's rows, no row built from it."""
    cache = tmp_path / "cache"
    first = _run(tmp_path, _examples(None, 2), _caches(cache))
    with sqlite3.connect(cache / "contexts.sqlite") as db:
        db.execute("UPDATE contexts SET value = ?", (json.dumps(damaged),))
    again = _run(tmp_path, _examples(None, 2), _caches(cache), results="other")
    for a, b in zip(first, again, strict=True):
        for name in ("ours", "vanilla"):
            assert b["systems"][name]["cached"] is False and not b["systems"][name]["error"]
            assert b["systems"][name]["scores"] == a["systems"][name]["scores"]


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\x1c", "\x0b"])
def test_line_separators_inside_a_question_or_id_keep_the_row_whole(tmp_path: Path, sep: str) -> None:
    """Rows are written with ensure_ascii=False: U+2028, U+0085, FS... stand in them as they are, and
    str.splitlines() would split the row there ("corrupt row" on the resume). Rows and the rows manifest are
    read line by line on "\n" only."""
    from htmlrag.evaluation.store import manifest_text, read_manifest

    ex = _examples(None, 2)
    ex[0] = Example(id=f"q{sep}0", question=f"Who designed{sep}Harrow Point Lighthouse?", answers=["Margaret Ellis"],
                    pages=ex[0].pages)
    first = _run(tmp_path, ex, _caches(tmp_path / "cache"))
    again = _run(tmp_path, ex, _caches(tmp_path / "cache"))  # the resume reads the rows back
    assert [r["id"] for r in again] == [f"q{sep}0", "q1"] and again == first
    (tmp_path / "rows.sha256").write_text(manifest_text(first), encoding="utf-8")
    assert set(read_manifest(tmp_path / "rows.sha256")) == {f"q{sep}0", "q1"}


# -- caches that cannot work ----------------------------------------------------------------------------------

def _folder_in_place(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path.mkdir(parents=True)


def _file_in_place_of_folder(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path.parent.parent.mkdir(parents=True, exist_ok=True)
    path.parent.write_text("a file where the cache folder should be")


def _read_only(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only file (as root, chmod does not stop writes: open it read-only the way SQLite would)."""
    SqliteCache(path, path.stem).open().close()
    real = sqlite3.connect
    monkeypatch.setattr(cache_mod.sqlite3, "connect",
                        lambda p, **kw: real(f"file:{p}?mode=ro", uri=True, **kw) if str(p) == str(path)
                        else real(p, **kw))


def _disk_full(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk: SQLite's own page limit (on a file of 512-byte pages) makes every write fail with SQLITE_FULL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA page_size = 512")
        db.execute("VACUUM")
    real = SqliteCache._setup

    def setup(self: SqliteCache, conn: sqlite3.Connection) -> None:
        real(self, conn)
        if self.path == path:
            conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")

    monkeypatch.setattr(SqliteCache, "_setup", setup)


def _locked(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holds a write lock for longer than the wait."""
    SqliteCache(path, path.stem).open().close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    # kept referenced until the test ends: a connection nothing refers to is closed, and its lock with it (the
    # test passed or failed by whether something else happened to keep it alive)
    monkeypatch.setattr(cache_mod, "_test_lock_holder", holder, raising=False)
    monkeypatch.setattr(cache_mod, "_retry_locked", _fast_retry(cache_mod._retry_locked))
    monkeypatch.setattr(cache_mod.sqlite3, "connect", _short_timeout(sqlite3.connect))


def _fast_retry(real):  # type: ignore[no-untyped-def]
    return lambda op, path, wait=60.0: real(op, path, wait=0.2)


def _short_timeout(real):  # type: ignore[no-untyped-def]
    return lambda p, **kw: real(p, **{**kw, "timeout": 0.05})


FAILURES = {"folder in place": _folder_in_place, "file in place of its folder": _file_in_place_of_folder,
            "read-only file": _read_only, "disk full": _disk_full, "locked by another process": _locked}


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("which", ["pages", "contexts"])
def test_a_cache_that_cannot_work_stops_the_run_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                which: str, failure: str) -> None:
    folder = tmp_path / "cache"
    FAILURES[failure](folder / f"{which}.sqlite", monkeypatch)
    store = RunStore(tmp_path / "results", "exp", "run")
    named = "(pages|contexts)" if failure == "file in place of its folder" else which  # the folder of both
    with pytest.raises(CacheError, match=rf"cache/{named}\.sqlite"):
        caches = _caches(folder)
        caches.pages.open()
        caches.contexts.open()
        evaluate(_examples(None), _systems(), make_reader("none"), store,
                 EvalSettings(metrics=["ref_em"], progress=False), caches)
    assert store.all_rows() == []                 # no row computed around the broken cache


@pytest.mark.parametrize("failure", ["disk full", "read-only file"])
def test_a_cache_failing_only_when_written_stops_the_loop_with_no_row_saved(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           failure: str) -> None:
    folder = tmp_path / "cache"
    FAILURES[failure](folder / "contexts.sqlite", monkeypatch)
    caches = _caches(folder)
    store = RunStore(tmp_path / "results", "exp", "run")
    with pytest.raises(CacheError, match=r"contexts\.sqlite: .*(full|readonly|read-only|unable)"):
        evaluate(_examples(None), _systems(), make_reader("none"), store,
                 EvalSettings(metrics=["ref_em"], progress=False), caches)
    assert store.all_rows() == []


def test_a_garbage_cache_file_is_set_aside_and_results_are_unchanged(tmp_path: Path) -> None:
    want = _run(tmp_path, _examples(None), _caches(tmp_path / "good"), results="a")
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("pages.sqlite", "contexts.sqlite"):
        (bad / name).write_bytes(b"not a database\n" * 500)
    got = _run(tmp_path, _examples(None), _caches(bad), results="b")
    assert [row_digest(r) for r in want] == [row_digest(r) for r in got]  # the same rows, clock readings aside
    assert len(list(bad.glob("*.corrupt-*"))) == 2


@pytest.mark.parametrize("failure", ["disk full", "read-only file", "folder in place"])
def test_reader_response_cache_failures_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     failure: str) -> None:
    from htmlrag.readers import ResponseCache

    path = tmp_path / "cache" / "responses.sqlite"
    FAILURES[failure](path, monkeypatch)
    reader = make_reader("fake", cache=ResponseCache(str(path)))
    store = RunStore(tmp_path / "results", "exp", "run")
    with pytest.raises(CacheError, match=r"responses\.sqlite"):
        evaluate(_examples(None), _systems(), reader, store, EvalSettings(metrics=["em"], progress=False),
                 Caches())
    assert store.all_rows() == []


@pytest.mark.parametrize("failure", ["disk full", "folder in place", "file in place of its folder"])
def test_embedding_cache_failures_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    from htmlrag.rankers.embedding import EmbeddingCache

    path = tmp_path / "cache" / "embeddings.sqlite"
    if failure == "disk full":
        cache = EmbeddingCache(path)
        assert cache._db is not None
        cache._db.execute(f"PRAGMA max_page_count = {cache._db.execute('PRAGMA page_count').fetchone()[0]}")
        with pytest.raises(CacheError, match=r"embeddings\.sqlite: database or disk is full"):
            cache.put_many([f"k{i}" for i in range(200)], np.ones((200, 384), np.float32))
        return
    FAILURES[failure](path, monkeypatch)
    with pytest.raises(CacheError, match=r"embeddings\.sqlite"):
        EmbeddingCache(path)


def test_judge_and_superrag_caches_fail_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from htmlrag.superrag.build.embed import CachedEmbedder, make_embedder

    path = tmp_path / "cache" / "embeddings.sqlite"
    _disk_full(path, monkeypatch)
    emb = CachedEmbedder(make_embedder("hashing-64"), path)
    with pytest.raises(CacheError, match=r"embeddings\.sqlite"):
        emb.encode([f"text {i} " * 50 for i in range(300)])
    judge_path = tmp_path / "cache" / "judge.sqlite"
    judge_path.mkdir(parents=True)
    with pytest.raises(CacheError, match=r"judge\.sqlite"):
        SqliteCache(judge_path, "judge").open()


def test_parse_cache_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    from htmlrag.superrag.parse.model import ParsedDocument
    from htmlrag.superrag.to_html import _store

    blocker = tmp_path / "parse-cache"
    blocker.write_text("a file, not a folder")
    doc = ParsedDocument.__new__(ParsedDocument)
    with pytest.raises(CacheError, match="parse cache"):
        _store(blocker / "parsed" / "x.pkl.gz", doc)


# -- tables and settings ---------------------------------------------------------------------------------------

def test_tables_caption_counts_error_rows(tmp_path: Path) -> None:
    rows = _run(tmp_path, _examples(1), _caches(tmp_path / "cache"))
    summary = summarize(rows, ["ours", "vanilla"], ["ref_em"], ours="ours", experiment="e", run_id="r", dataset="d")
    assert errors_caption([summary]) == "Error rows (not scored): vanilla 1, ours 1 of 2 examples."
    md = write_tables([summary], tmp_path / "tables", caption="Cap.")["md"].read_text()
    assert "Error rows (not scored): vanilla 1, ours 1 of 2 examples." in md
    clean = summarize(rows[1:], ["ours"], ["ref_em"], ours="ours", experiment="e", run_id="r", dataset="d")
    assert errors_caption([clean]) == ""
    two = errors_caption([summary, clean], ["A", "B"])
    assert two == "Error rows (not scored): A: vanilla 1, ours 1 of 2 examples."


@pytest.mark.parametrize(("given", "want"), [
    ({}, False), ({"allow_errors": True}, True), ({"allow_failures": True}, True),
    ({"allow_failures": False}, False), ({"allow_errors": True, "allow_failures": True}, True),
    ({"allow_errors": False, "allow_failures": True}, True),
])
def test_allow_errors_and_its_former_name(given: dict, want: bool, caplog: pytest.LogCaptureFixture) -> None:
    from omegaconf import OmegaConf

    from htmlrag_bench.eval.schemas import allow_errors

    cfg = OmegaConf.create({"run": {"allow_errors": False, "allow_failures": None, **given}})
    assert allow_errors(cfg) is want
    assert ("former name" in caplog.text) == ("allow_failures" in given)


def test_allow_errors_true_with_allow_failures_false_is_refused() -> None:
    from omegaconf import OmegaConf

    from htmlrag.core.errors import HtmlRagError
    from htmlrag_bench.eval.schemas import allow_errors

    with pytest.raises(HtmlRagError, match="disagree"):
        allow_errors(OmegaConf.create({"run": {"allow_errors": True, "allow_failures": False}}))


def test_decode_pages_never_leaves_a_page_out() -> None:
    from htmlrag.baselines.base import decode_pages

    assert decode_pages(["<p>a</p>", b"<p>b</p>"]) == ["<p>a</p>", "<p>b</p>"]
    with pytest.raises(InputError, match="page 1"):
        decode_pages(["<p>a</p>", PNG])


def test_prune_batch_item_with_a_failed_page_is_an_error_row_redone_on_rerun(tmp_path: Path) -> None:
    from htmlrag.cli.main import main

    bad = tmp_path / "bad.html"
    bad.write_bytes(PNG)
    good = str(SAMPLE_PAGES / "lighthouse.html")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "question": "Who designed it?", "page_paths": [good, str(bad), good]})
                   + "\n" + json.dumps({"id": "b", "question": "Who designed it?", "page_paths": [good]}) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["prune", "--batch", str(src), "--out", str(out), "--budget", "100", "--ranker", "bm25"]
    assert main(args) == 1
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert "page 1 of 3" in rows["a"]["error"] and set(rows["a"]["page_errors"]) == {"1"}
    assert "context" not in rows["a"] and rows["b"]["context"] and "error" not in rows["b"]
    bad.write_text((SAMPLE_PAGES / "tea-garden.html").read_text())
    assert main(args) == 0                               # the error row is redone, the good one reused
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["a"]["context"] and "error" not in rows["a"] and "page_errors" not in rows["a"]
