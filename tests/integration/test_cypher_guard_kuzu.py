"""The read-only guard against a real Kuzu database: every adversarial query is refused before anything runs,
the database and the file system are unchanged and no file outside the database is read; every legitimate
query returns the same rows as its unguarded text; database errors are clear; the CLI never prints a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("kuzu")

from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.readonly import GraphQueryError, RefusedQueryError, check_read_only
from htmlrag.superrag.graph.store import KuzuStore
from htmlrag.superrag.retrieve.cypher_qa import CypherRetriever, FixedCypherWriter
from tests.helpers.cypher_corpus import LEGITIMATE, adversarial, build_graph

CANARY = "canary-3f9e1b-never-read"


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with a hash of its bytes (folders: '<dir>')."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "<dir>" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guard")
    (root / "db").mkdir()
    build_graph(root / "db" / "graph.kuzu")
    (root / "canary.csv").write_text(f"id\n{CANARY}\n")
    (root / "out").mkdir()  # exists, so a write that got through would land there
    return root


@pytest.fixture
def counting_store(graph: Path, monkeypatch: pytest.MonkeyPatch):
    runs: list[str] = []
    real = KuzuStore._fetch

    def fetch(self, text, params=None, limits=None):  # every query, bounded or not, runs through here
        runs.append(text)
        return real(self, text, params, limits)

    monkeypatch.setattr(KuzuStore, "_fetch", fetch)
    store = KuzuStore(graph / "db" / "graph.kuzu", read_only=True)
    yield store, runs
    store.close()


def test_adversarial_corpus_is_refused_and_touches_nothing(graph: Path, counting_store,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store, runs = counting_store
    queries = adversarial(graph / "out", graph / "canary.csv")
    counts = store.query(cypher.COUNT_NODES), store.query(cypher.COUNT_EDGES)
    before, runs[:] = _snapshot(graph), []
    monkeypatch.chdir(graph)
    retriever = CypherRetriever(SimpleNamespace(store=store, nodes=lambda ids: {}), None)  # type: ignore[arg-type]
    escaped = []
    for q in queries:
        with contextlib.suppress(RefusedQueryError):
            escaped.append((q, store.query(q)))
        try:  # the retriever answers an empty reply ("no query applies") with no evidence, running nothing
            if ev := _with_writer(retriever, q)("question", k=5):
                escaped.append((q, ev))
        except RefusedQueryError:
            pass
    assert escaped == [] and runs == []                      # refused before execution, every one
    assert _snapshot(graph) == before and not any((graph / "out").iterdir())
    assert (store.query(cypher.COUNT_NODES), store.query(cypher.COUNT_EDGES)) == counts
    assert len(queries) >= 150


def _with_writer(retriever: CypherRetriever, query: str) -> CypherRetriever:
    retriever.writer = FixedCypherWriter(f"```cypher\n{query}\n```")
    return retriever


def test_the_file_check_would_see_an_escape(graph: Path, tmp_path: Path) -> None:
    """The premise: Kuzu's read-only connection alone still writes files (so the snapshot check above is live)."""
    store = KuzuStore(graph / "db" / "graph.kuzu", read_only=True)
    try:
        before = _snapshot(tmp_path)
        store._run(f"COPY (MATCH (n:SectionChunk) RETURN n.id) TO '{(tmp_path / 'leak.csv').as_posix()}'")
        leaked = store._run(f"LOAD FROM '{(graph / 'canary.csv').as_posix()}' RETURN *")
    finally:
        store.close()
    assert _snapshot(tmp_path) != before and "d:c1" in (tmp_path / "leak.csv").read_text()
    assert any(CANARY in str(r) for r in leaked)


@pytest.mark.parametrize("q", LEGITIMATE)
def test_legitimate_queries_return_their_rows(counting_store, q: str) -> None:
    store, runs = counting_store
    params = {"page": 1} if "$page" in q else None
    rows = store.query(q, params)
    assert rows, q
    assert rows == KuzuStore._run(store, q, params)  # the rebuilt text means what the model wrote
    assert runs[0] == check_read_only(q)             # what ran is the text the guard rebuilt


def test_queries_give_the_same_correct_rows_every_time(counting_store) -> None:
    """Kuzu's parallel plans returned a row its WHERE excludes in ~5% of runs of this query (0.11.3); the store
    runs queries on one thread, where every run is right."""
    store, _ = counting_store
    q = "MATCH (n) WHERE n.kind IN ['SectionChunk', 'Table'] RETURN n.id AS id ORDER BY n.ord DESC SKIP 1 LIMIT 3"
    got = {tuple(r["id"] for r in store.query(q)) for _ in range(300)}
    assert got == {("d:c3", "d:c2", "d:c1")}


def test_database_errors_are_clear(counting_store) -> None:
    store, _ = counting_store
    with pytest.raises(GraphQueryError, match=r"graph query failed: .*Cannot find property titel"):
        store.query("MATCH (n:SectionChunk) RETURN n.titel AS t")
    with pytest.raises(GraphQueryError, match="graph query failed"):
        store.query("MATCH (n:NoSuchLabel) RETURN n.id AS id")


def test_cli_refuses_and_reports_without_a_traceback(tmp_path: Path) -> None:
    pytest.importorskip("pymupdf")
    from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus
    from htmlrag.superrag.build.embed import HashingEmbedder
    from htmlrag.testing import pdfs as mk

    db = tmp_path / "db"
    (res,) = build_corpus([mk.report_pdf(tmp_path / "r.pdf")], db, config=CorpusConfig(vector_backend="numpy"),
                          embedder=HashingEmbedder())
    assert res.ok
    leak = tmp_path / "leak.csv"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for q, expect in [(f"MATCH (n) RETURN n.id AS id /* **/ ; COPY (MATCH (n) RETURN n.text) TO '{leak}' //*/",
                       "refused: COPY"),
                      ("MATCH (n:SectionChunk) RETURN n.titel AS id", "graph query failed")]:
        out = subprocess.run([sys.executable, "-m", "htmlrag", "graph", "query", "q", "--db", str(db), "--cypher", q],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 1 and expect in out.stderr, out.stderr[-2000:]
        assert "Traceback" not in out.stderr
    assert not leak.exists()
    ok = subprocess.run([sys.executable, "-m", "htmlrag", "graph", "query", "q", "--db", str(db), "--json", "--cypher",
                         "MATCH (t:`Table`) // tables only\nRETURN t.id AS id"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0 and '"kind": "Table"' in ok.stdout, ok.stderr[-2000:]
