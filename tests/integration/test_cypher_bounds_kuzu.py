"""Cost bounds on model-written and typed Cypher against a real Kuzu database: each costly query of issue 38
(unbounded and deep paths, huge ranges, huge strings, cartesian products, collect over everything, nested
UNWIND, shortest paths) either is refused before it runs or stops at a bound with a clear error; the row limit
gives the same first rows; unbound parameters are refused (without the check Kuzu drops the WHERE); a slow
query never holds up another thread's query; and the guard's lexer agrees with Kuzu's on string literals.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from pathlib import Path

import pytest

pytest.importorskip("kuzu")

import kuzu

from htmlrag.superrag.graph.bounds import QueryLimits, QueryTooCostly
from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, tokenize
from htmlrag.superrag.graph.readonly import GraphQueryError
from htmlrag.superrag.graph.store import KuzuStore, node_row
from htmlrag.superrag.retrieve.cypher_qa import CypherRetriever, FixedCypherWriter
from tests.helpers.cypher_corpus import LEGITIMATE, build_graph

N_CHUNKS = 40  # each linked to its next 4 by IS_SIMILAR: paths of h hops from one node: 4**h


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-chunk graph with 4 IS_SIMILAR edges per chunk (a ring): small, but with exponentially many paths."""
    path = tmp_path_factory.mktemp("dense") / "graph.kuzu"
    store = KuzuStore(path)
    try:
        store.create_schema()
        store.write_nodes("SectionChunk", [node_row(id=f"c{i}", kind="SectionChunk", doc_id="d", ord=i,
                                                    text=f"chunk {i} " * 20) for i in range(N_CHUNKS)])
        store.write_edges("IS_SIMILAR", "SectionChunk", "SectionChunk",
                          [{"src": f"c{i}", "dst": f"c{(i + d) % N_CHUNKS}", "score": 0.5}
                           for i in range(N_CHUNKS) for d in (1, 2, 3, 5)])
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "graph.kuzu"
    build_graph(path)
    return path


def _store(path: Path, **limits) -> KuzuStore:
    return KuzuStore(path, read_only=True, limits=QueryLimits(**limits))


#: (query, what stops it): "refused" before anything runs, or the bound named in the error.
COSTLY = [
    ("MATCH (a)-[*1..]->(b) RETURN count(*) AS n", "refused"),
    ("MATCH (a)-[*1..8]->(b) RETURN count(*) AS n", "refused"),
    ("MATCH (a)-[*]-(b) RETURN a.id AS id", "refused"),
    ("MATCH p = (a)-[* SHORTEST]->(b) RETURN length(p) AS n", "refused"),
    ("MATCH p = (a)-[* ALL SHORTEST 1..30]->(b) RETURN length(p) AS n", "refused"),
    ("UNWIND range(1, 2000000) AS x RETURN x", "refused"),
    ("MATCH (n) RETURN size(range(0, n.ord * 5000000)) AS n", "refused"),
    ("RETURN size(repeat('a', 300000000)) AS n", "refused"),
    ("MATCH (n) RETURN size(repeat(n.text, 3000000)) AS n", "refused"),
    ("MATCH (n) RETURN lpad(n.text, 300000000, 'x') AS s", "refused"),
    ("MATCH (n) RETURN rpad(n.text, n.ord * 100000000, 'x') AS s", "refused"),
    ("RETURN size(regexp_replace(regexp_replace(repeat('a', 100000), 'a', repeat('b', 1000), 'g'), 'b', "
     "repeat('c', 1000), 'g')) AS n", "refused"),
    ("MATCH (n) RETURN size(regexp_replace(regexp_replace(n.text, ' ', 'bbbbbbbbbbbbbbbb', 'g'), 'b', "
     "'cccccccccccccccc', 'g')) AS n", "refused"),
    ("MATCH (a), (b) RETURN regexp_replace(a.text + b.text, ' ', 'xxxxxxxxxxxxxxxx', 'g') AS s", "size"),
    ("MATCH (a), (b), (c) RETURN collect(a.text + b.text + c.text) AS s", "memory"),
    ("MATCH (a), (b) RETURN collect(a.text + b.text + a.text + b.text) AS everything", "size"),
    ("MATCH (a), (b), (c), (d), (e), (f) WHERE (a.text + b.text + c.text + d.text + e.text + f.text) CONTAINS 'zz' "
     "RETURN count(*) AS n", "time"),
    ("MATCH (a)-[*3]->(b), (c)-[*3]->(d), (e)-[*3]->(f) RETURN count(*) AS n", "memory"),
    ("UNWIND range(1, 10000) AS x UNWIND range(1, 10000) AS y UNWIND range(1, 10000) AS z "
     "WITH x + y + z AS s WHERE s % 7 = 99 RETURN count(*) AS n", "time"),
]
_ERRORS = {"memory": r"needed more than 64 MB \(the memory limit", "size": r"result over [\d,]+ bytes",
           "time": r"stopped after 1 s \(the time limit"}


@pytest.mark.parametrize("q, bound", COSTLY)
def test_costly_queries_are_refused_or_stopped(dense: Path, q: str, bound: str) -> None:
    store = _store(dense, timeout_s=1, memory_mb=64, max_result_bytes=1_000_000)
    try:
        if bound == "refused":
            with pytest.raises(RefusedQueryError,
                               match=r"^refused: (variable-length|range|repeat|lpad|rpad|regexp_replace)"):
                store.query_untrusted(q)
        else:
            with pytest.raises(QueryTooCostly, match=_ERRORS[bound]):
                store.query_untrusted(q)
        assert store.query_untrusted("MATCH (n) RETURN count(*) AS n") == [{"n": N_CHUNKS}]  # still usable
    finally:
        store.close()


def test_without_the_hop_bound_the_timeout_stops_a_deep_path(dense: Path) -> None:
    """With max_hops raised to 12, the timeout is what stops it (4**12 paths from every node)."""
    store = _store(dense, max_hops=12, timeout_s=1, memory_mb=4096)
    try:
        with pytest.raises(QueryTooCostly, match="stopped after 1 s"):
            store.query_untrusted("MATCH (a)-[*1..12]->(b) RETURN count(*) AS n")
    finally:
        store.close()


def test_rows_are_limited_in_the_query(dense: Path) -> None:
    store = _store(dense, max_rows=50)
    try:
        rows = store.query_untrusted("UNWIND range(1, 10000) AS x RETURN x ORDER BY x")
        assert [r["x"] for r in rows] == list(range(1, 51))
        assert len(store.query_untrusted("MATCH (a)-[*1..3]->(b) RETURN a.id AS a, b.id AS b")) == 50
        assert len(store.query_untrusted("MATCH (a) RETURN a.id AS id LIMIT 7")) == 7
    finally:
        store.close()


@pytest.mark.parametrize("q", LEGITIMATE)
def test_bounded_legitimate_queries_return_the_same_rows(small: Path, q: str) -> None:
    store = _store(small)
    try:
        params = {"page": 1} if "$page" in q else None
        rows = store.query_untrusted(q, params)
        assert rows and rows == store.query(q, params)
    finally:
        store.close()


def test_unbound_parameters_are_refused(small: Path) -> None:
    store = _store(small)
    q = "MATCH (n:SectionChunk) WHERE n.id = $x RETURN n.id AS id"
    try:
        assert len(store._run(q)) == 3  # the premise: without a value Kuzu drops the WHERE (3 rows, not 0)
        for run in (store.query, store.query_untrusted):
            with pytest.raises(RefusedQueryError, match=r"parameter \$x has no value"):
                run(q)
            assert run(q, {"x": "nope"}) == []
            assert run(q, {"x": "d:c1"}) == [{"id": "d:c1"}]
    finally:
        store.close()


def test_the_cypher_retriever_runs_bounded(small: Path) -> None:
    store = _store(small)
    try:
        corpus = type("C", (), {"store": store, "nodes": lambda self, ids: {}})()
        retriever = CypherRetriever(corpus, FixedCypherWriter("MATCH (a)-[*1..]->(b) RETURN a.id AS id"))
        with pytest.raises(RefusedQueryError, match="no upper bound"):
            retriever("q", k=5)
        retriever.writer = FixedCypherWriter("UNWIND range(1, 5000) AS x RETURN x")
        assert len(retriever("q", k=5)) == 5
    finally:
        store.close()


def test_a_slow_query_does_not_hold_up_another_thread(dense: Path) -> None:
    store = _store(dense, max_hops=12, timeout_s=5)
    order: list[str] = []
    started = threading.Event()

    def slow() -> None:
        started.set()
        with contextlib.suppress(QueryTooCostly):
            store.query_untrusted("MATCH (a)-[*1..12]->(b) RETURN count(*) AS n")
        order.append("slow")

    try:
        t = threading.Thread(target=slow)
        t.start()
        started.wait()
        for _ in range(3):
            assert store.query("MATCH (n) RETURN count(*) AS n") == [{"n": N_CHUNKS}]
        order.append("fast")
        t.join()
    finally:
        store.close()
    assert order == ["fast", "slow"]


def test_database_errors_stay_clear(small: Path) -> None:
    store = _store(small)
    try:
        with pytest.raises(GraphQueryError, match="Cannot find property titel"):
            store.query_untrusted("MATCH (n:SectionChunk) RETURN n.titel AS t")
    finally:
        store.close()


_PIECES = ["a", " ", "é", "\n", "'", '"', "\\", "\\\\", "\\'", '\\"', "\\n", "\\N", "\\t", "\\b", "\\f", "\\r",
           "\\x41", "\\X4f", "\\x4", "\\xg0", "\\u0041", "\\U0041", "\\u00e9zz", "\\U0010FFFF", "\\u12", "\\uzzzz",
           "\\q", "\\0", "\\/", "\\a", "x41", "u", "F"]


def _ours(text: str, literal: str) -> bool:
    try:
        toks = tokenize(text)
    except RefusedQueryError:
        return False
    return [t.kind for t in toks] == ["word", "string", "word", "word"] and toks[1].text == literal


def test_the_lexer_reads_string_literals_as_kuzu_does() -> None:
    """3,000 random literals from escape-heavy pieces: the guard accepts a literal as one string token exactly
    when Kuzu runs ``RETURN <literal> AS x`` (a literal read differently would end elsewhere for one of them)."""
    conn = kuzu.Connection(kuzu.Database(":memory:"))
    rng = random.Random(38)
    disagree, accepted = [], 0
    for _ in range(3000):
        quote = rng.choice("'\"")
        literal = quote + "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 5))) + quote
        text = f"RETURN {literal} AS x"
        try:
            conn.execute(text)
            theirs = True
        except RuntimeError:
            theirs = False
        accepted += theirs
        if _ours(text, literal) != theirs:
            disagree.append(literal)
    assert disagree == [] and 300 < accepted < 2700  # both outcomes well represented


def test_the_cli_bounds_typed_queries(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("pymupdf")
    from htmlrag.cli.main import main
    from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus
    from htmlrag.superrag.build.embed import HashingEmbedder
    from htmlrag.testing import pdfs as mk

    db = tmp_path / "db"
    (res,) = build_corpus([mk.report_pdf(tmp_path / "r.pdf")], db, config=CorpusConfig(vector_backend="numpy"),
                          embedder=HashingEmbedder())
    assert res.ok
    q = ["graph", "query", "q", "--db", str(db), "--json", "--cypher"]
    assert main([*q, "MATCH (a)-[*1..]->(b) RETURN count(*) AS n"]) == 1
    assert "no upper bound" in capsys.readouterr().err
    assert main([*q, "MATCH (a)-[*1..4]->(b) RETURN count(*) AS n", "--max-hops", "4"]) == 0
    assert '"kind": "Row"' in capsys.readouterr().out
    assert main([*q, "UNWIND range(1, 5000) AS x RETURN x", "--max-rows", "7", "-k", "50"]) == 0
    assert capsys.readouterr().out.count('"kind": "Row"') == 7
    with pytest.raises(SystemExit) as refused:  # refused while the options are read
        main([*q, "MATCH (n) RETURN n.id AS id", "--max-hops", "0"])
    assert refused.value.code == 2 and "argument --max-hops: must be an integer" in capsys.readouterr().err


#: Each builds a date, time or interval Kuzu's Python reader cannot convert (years past 9999): converting it
#: crashed the whole process (SIGSEGV), the web app with it. Nested in a list, a struct, a map or a union too.
OUT_OF_RANGE_TIMES = [
    "RETURN to_date('99999-01-01') AS d", "RETURN date('99999-01-01') AS d", "RETURN timestamp('99999-01-01') AS d",
    "RETURN cast('99999-01-01' AS DATE) AS d", "RETURN cast('99999-01-01' AS TIMESTAMP_MS) AS d",
    "RETURN cast('99999-01-01' AS TIMESTAMP_TZ) AS d", "RETURN date('2020-01-01') + 3000000 AS d",
    "RETURN [date('99999-01-01')] AS d", "RETURN {a: date('99999-01-01')} AS d",
    "MATCH (n:SectionChunk) RETURN n.id AS id, date('2020-01-01') + n.ord * 1000000 AS d",
]


def test_dates_and_times_a_query_returns_never_crash_the_process(small: Path) -> None:
    """Run in a child process, so that a crash fails this test instead of the test run."""
    import subprocess
    import sys

    code = f"""
import json, sys
from htmlrag.superrag.graph.bounds import QueryLimits
from htmlrag.superrag.graph.readonly import GraphQueryError
from htmlrag.superrag.graph.store import KuzuStore
store = KuzuStore({str(small)!r}, read_only=True, limits=QueryLimits())
out = []
for q in json.loads(sys.argv[1]):
    try:
        store.query_untrusted(q)
        out.append("ran")
    except GraphQueryError as exc:
        out.append(str(exc))
store.close()
print(json.dumps(out))
"""
    p = subprocess.run([sys.executable, "-c", code, json.dumps(OUT_OF_RANGE_TIMES)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"
    for q, outcome in zip(OUT_OF_RANGE_TIMES, json.loads(p.stdout.strip().splitlines()[-1]), strict=True):
        assert "may not return" in outcome and "to_string" in outcome, (q, outcome)
    # the same values as strings, and a date used only inside the query, are fine
    with contextlib.closing(_store(small)) as store:
        assert store.query_untrusted("RETURN to_string(date('99999-01-01')) AS d") == [{"d": "99999-01-01"}]
        assert store.query_untrusted("RETURN date_part('year', date('2024-03-01')) AS y") == [{"y": 2024}]
        assert store.query_untrusted("RETURN {date: 1} AS s") == [{"s": {"date": 1}}]


@pytest.mark.parametrize("q", ["RETURN string_split('héllo', '') AS x", "RETURN split_part('日本', '', 1) AS x",
                               "RETURN '\ud800' AS x", "MATCH (n:SectionChunk) RETURN string_split(n.text, '') AS x"])
def test_values_python_cannot_take_are_a_clear_refusal(small: Path, q: str) -> None:
    """A string split inside a UTF-8 character, a lone surrogate in the query: GraphQueryError (a 400 in the
    app, one line from the command line), never UnicodeDecodeError/TypeError (a 500, a traceback)."""
    with contextlib.closing(_store(small)) as store:
        with pytest.raises(GraphQueryError, match="cannot pass between Python and the database"):
            store.query_untrusted(q)
        assert store.query_untrusted("RETURN 1 AS one") == [{"one": 1}]  # the store is still usable


def test_list_doubling_and_long_chains_are_bounded(dense: Path) -> None:
    """list_concat(l, l) 12 times from range(1, 10000) reached 23 GB (no timeout or memory cap stops list data
    built while planning), and a 9,990-term sum crashed Kuzu: both are refused at their first step past the
    bound (the refused forms here stay harmless should the guard regress); the largest accepted forms run fast."""
    import time

    store = _store(dense, timeout_s=1, memory_mb=64)
    try:
        with pytest.raises(RefusedQueryError, match="can build a list of 20,000 items"):
            store.query_untrusted("WITH range(1, 10000) AS l WITH list_concat(l, l) AS l RETURN size(l) AS n")
        with pytest.raises(RefusedQueryError, match="more than 1000 operators"):
            store.query_untrusted("RETURN " + "+".join(["1"] * 1500) + " AS x")
        t0 = time.perf_counter()
        assert store.query_untrusted("WITH range(1, 5000) AS l WITH list_concat(l, l) AS l "
                                     "RETURN size(l) AS n") == [{"n": 10_000}]
        assert store.query_untrusted("RETURN " + "+".join(["1"] * 1000) + " AS x") == [{"x": 1000}]
        assert store.query_untrusted("UNWIND [1] AS x " + " ".join(["WITH x + x AS x"] * 10)
                                     + " RETURN x") == [{"x": 1024}]
        assert time.perf_counter() - t0 < 5  # ~0.3 s on a loaded 2-core machine
    finally:
        store.close()
