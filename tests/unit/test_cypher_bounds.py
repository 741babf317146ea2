"""Cost bounds on model-written and typed Cypher (htmlrag.superrag.graph.bounds), without a database: which
queries are refused and why, and the row limit pushed into the text that runs. The database side (the
timeout, the memory cap, the result-size cap, what Kuzu would do without each bound) is in
tests/integration/test_cypher_bounds_kuzu.py.
"""

from __future__ import annotations

import re

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.graph.bounds import (
    QueryLimits,
    QueryTooCostly,
    bound_query,
    check_params,
    fetch_capped,
    value_bytes,
)
from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, tokenize
from htmlrag.superrag.graph.readonly import check_read_only
from tests.helpers.cypher_corpus import LEGITIMATE

LIMITS = QueryLimits()  # max_hops 3, max_rows 1000, max_list 10,000

#: Variable-length relationships without an upper bound, wherever they stand.
UNBOUNDED = [
    "MATCH (a)-[*1..]->(b) RETURN count(*) AS n",
    "MATCH (a)-[*]->(b) RETURN count(*) AS n",
    "MATCH (a)-[*..]->(b) RETURN a.id AS id",
    "MATCH (a)-[*0..]->(b) RETURN a.id AS id",
    "MATCH (a)-[:IS_UNDER*]->(b) RETURN a.id AS id",
    "MATCH (a)-[r:IS_UNDER|HAS_NEXT*2..]->(b) RETURN a.id AS id",
    "MATCH (a)<-[*]-(b) RETURN a.id AS id",
    "MATCH (a)-[*]-(b) RETURN a.id AS id",
    "MATCH p = (a)-[* SHORTEST]->(b) RETURN length(p) AS n",
    "MATCH p = (a)-[* ALL SHORTEST]->(b) RETURN length(p) AS n",
    "MATCH (a) WHERE (a)-[*]->(:Page) RETURN a.id AS id",
    "MATCH (a) WHERE EXISTS { MATCH (a)-[*1..]->(b) } RETURN a.id AS id",
    "MATCH (a) RETURN COUNT { MATCH (a)-[*]->(b) } AS n",
    "MATCH (a)-[:IS_UNDER]->(s) MATCH (s)-[*]->(t) RETURN t.id AS id",
    "MATCH (a) RETURN a.id AS id UNION MATCH (a)-[*]->(b) RETURN b.id AS id",
    "OPTIONAL MATCH (a)-[*1..]->(b) RETURN b.id AS id",
]
#: Upper bounds above the maximum (3).
TOO_DEEP = [
    "MATCH (a)-[*1..8]->(b) RETURN count(*) AS n",
    "MATCH (a)-[*4]->(b) RETURN a.id AS id",
    "MATCH (a)-[*..4]->(b) RETURN a.id AS id",
    "MATCH (a)-[*1..30]->(b) RETURN a.id AS id",
    "MATCH (a)-[* SHORTEST 1..30]->(b) RETURN a.id AS id",
    "MATCH (a)-[:IS_SIMILAR*1..3]->(b), (b)-[*1..99999999999999999999]->(c) RETURN a.id AS id",
    "MATCH (a) WHERE (a)-[:IS_UNDER*1..9]->() RETURN a.id AS id",
]
#: range() with a computed bound, or too many items.
RANGES = [
    "UNWIND range(1, 2000000) AS x RETURN x",
    "RETURN size(range(1, 20000000)) AS n",
    "RETURN range(0, 9223372036854775807, 1) AS x",
    "RETURN range(10, -100000000, -1) AS x",
    "RETURN range(1, 10, 0) AS x",
    "MATCH (n) RETURN size(range(0, n.ord * 5000000)) AS n",
    "MATCH (n) UNWIND range(0, n.ord) AS x RETURN x",
    "RETURN range(1, 1e9) AS x",
    "RETURN range(1, $n) AS x",
    "RETURN range(1) AS x",
    "UNWIND range(1, 3000) AS x UNWIND range(1, 3000) AS y UNWIND range(1, 30000) AS z RETURN count(*) AS n",
]


@pytest.mark.parametrize("q", UNBOUNDED)
def test_unbounded_paths_are_refused(q: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"^refused: variable-length relationship at offset \d+ has no upper "
                                                r"bound; write one of at most 3 hops"):
        bound_query(q, None, LIMITS)


@pytest.mark.parametrize("q", TOO_DEEP)
def test_paths_deeper_than_the_maximum_are_refused(q: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"goes up to \d+ hops; at most 3 are allowed"):
        bound_query(q, None, LIMITS)


@pytest.mark.parametrize("q", RANGES)
def test_big_or_computed_ranges_are_refused(q: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"^refused: range\(\) at offset \d+ "):
        bound_query(q, {"n": 5}, LIMITS)


@pytest.mark.parametrize("q, needle", [
    ("RETURN repeat('a', 300000000) AS s", "repeat() at offset 7 builds 300,000,000 characters; at most 100,000"),
    ("MATCH (n) RETURN repeat(n.text, n.ord) AS s", "repeat() at offset 17 takes a whole-number literal"),
    ("MATCH (n) RETURN lpad(n.text, 1000000, 'x') AS s", "lpad() at offset 17 builds 1,000,000 characters"),
    ("MATCH (n) RETURN rpad(n.text, $n, 'x') AS s", "rpad() at offset 17 takes a whole-number literal"),
    ("RETURN size(repeat('ab', 1e9)) AS n", "repeat() at offset 12 takes a whole-number literal"),
    ("MATCH (n) RETURN repeat(n.text, 100) AS s", "repeat() at offset 17 repeats a string literal only"),
    ("RETURN repeat('abcdefghij', 20000) AS s", "repeat() at offset 7 builds 200,000 characters"),
    ("MATCH (n) RETURN regexp_replace(n.text, ' ', n.text, 'g') AS s", "takes a string literal of at most 16"),
    ("MATCH (n) RETURN regexp_replace(n.text, ' ', '" + "x" * 17 + "', 'g') AS s", "at most 16 characters"),
    ("MATCH (n) RETURN regexp_replace(n.text, ' ') AS s", "takes a string literal of at most 16"),
    ("MATCH (n) RETURN regexp_replace(regexp_replace(n.text, ' ', 'bb', 'g'), 'b', 'cc', 'g') AS s",
     "replaces inside regexp_replace()"),
    ("RETURN regexp_replace(repeat('a', 100000), 'a', 'bbbbbbbbbbbbbbbb', 'g') AS s", "replaces inside repeat()"),
    ("MATCH (n) RETURN regexp_replace(lower(lpad(n.text, 9, 'x')), 'x', 'y') AS s", "replaces inside lpad()"),
    ("MATCH (a), (b) RETURN levenshtein(a.text, b.text) AS d", "levenshtein() at offset 22 takes time quadratic"),
])
def test_strings_of_unbounded_size_are_refused(q: str, needle: str) -> None:
    with pytest.raises(RefusedQueryError, match=re.escape(needle)):
        bound_query(q, {"n": 5}, LIMITS)
    assert bound_query("RETURN repeat('-', 80) AS rule, lpad('7', 5, '0') AS n", None, LIMITS)
    assert bound_query("MATCH (n) RETURN regexp_replace(lower(n.text), '\\\\s+', ' ', 'g') AS t", None, LIMITS)


@pytest.mark.parametrize("q, hops", [("MATCH (a)-[*1..3]->(b) RETURN a.id AS id", 3),
                                     ("MATCH (a)-[*2]->(b) RETURN a.id AS id", 2),
                                     ("MATCH (a)-[*..2]->(b) RETURN a.id AS id", 2),
                                     ("MATCH p = (a)-[* SHORTEST 1..3]->(b) RETURN length(p) AS n", 3),
                                     ("MATCH (a)-[*1..8]->(b) RETURN a.id AS id", 8)])
def test_the_maximum_is_configurable(q: str, hops: int) -> None:
    assert "LIMIT" in bound_query(q, None, QueryLimits(max_hops=hops))
    if hops > 1:
        with pytest.raises(RefusedQueryError, match=f"at most {hops - 1} are allowed"):
            bound_query(q, None, QueryLimits(max_hops=hops - 1))


@pytest.mark.parametrize("q, params", [
    ("MATCH (n) WHERE n.id = $x RETURN n.id AS id", {}),
    ("MATCH (n) WHERE n.id = $x RETURN n.id AS id", None),
    ("MATCH (n) WHERE n.id = $x AND n.ord = $y RETURN n.id AS id", {"x": "a"}),
    ("MATCH (n) WHERE n.id IN $ids RETURN n.id AS id", {"id": ["a"]}),
    ("MATCH (n) RETURN n.id AS id, $0 AS p", {"x": 1}),
    ("UNWIND $rows AS r RETURN r", {}),
])
def test_unbound_parameters_are_refused(q: str, params: dict | None) -> None:
    with pytest.raises(RefusedQueryError, match=r"^refused: parameter \$\w+ has no value"):
        bound_query(q, params, LIMITS)
    with pytest.raises(RefusedQueryError, match="has no value"):  # the trusted path checks them too
        check_params(check_read_only(q), params)


def test_given_parameters_pass() -> None:
    q = "MATCH (n) WHERE n.id = $x AND n.ord > $0 RETURN n.id AS id"
    assert bound_query(q, {"x": "a", "0": 1}, LIMITS).endswith("LIMIT 1000")
    check_params(check_read_only(q), {"x": "a", "0": 1, "unused": 2})


@pytest.mark.parametrize("q, expected", [
    ("MATCH (n) RETURN n.id AS id", "MATCH (n) RETURN n.id AS id LIMIT 1000"),
    ("MATCH (n) RETURN n.id AS id LIMIT 5", "MATCH (n) RETURN n.id AS id LIMIT 5"),
    ("MATCH (n) RETURN n.id AS id LIMIT 2000000", "MATCH (n) RETURN n.id AS id LIMIT 1000"),
    ("MATCH (n) RETURN n.id AS id ORDER BY id SKIP 3", "MATCH (n) RETURN n.id AS id ORDER BY id SKIP 3 LIMIT 1000"),
    ("MATCH (n) RETURN n.id AS id LIMIT $k", "MATCH (n) RETURN n.id AS id LIMIT 1000"),
    ("UNWIND range(1, 2000) AS x RETURN x;", "UNWIND range(1, 2000) AS x RETURN x LIMIT 1000"),
    ("MATCH (n) WITH n LIMIT 5000 RETURN n.id AS id", "MATCH (n) WITH n LIMIT 5000 RETURN n.id AS id LIMIT 1000"),
    ("MATCH (n) RETURN n.id AS id UNION MATCH (m) RETURN m.id AS id LIMIT 7",
     "MATCH (n) RETURN n.id AS id LIMIT 1000 UNION MATCH (m) RETURN m.id AS id LIMIT 7"),
    ("MATCH (n) RETURN * ", "MATCH (n) RETURN * LIMIT 1000"),
])
def test_a_row_limit_is_pushed_into_every_return(q: str, expected: str) -> None:
    assert bound_query(q, {"k": 99999}, LIMITS) == expected


@pytest.mark.parametrize("q", ["MATCH (n) RETURN n.id AS id LIMIT 1 + 1", "MATCH (n) RETURN n.id AS id LIMIT $k",
                               "MATCH (n) RETURN n.id AS id LIMIT 2.5", "MATCH (n) RETURN n.id AS id LIMIT -1",
                               "MATCH (n) RETURN n.id AS id LIMIT toInteger('9')"])
def test_a_limit_that_is_not_a_whole_number_is_refused(q: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"LIMIT at offset \d+ must be a whole number"):
        bound_query(q, {"k": "many"}, LIMITS)


@pytest.mark.parametrize("q", LEGITIMATE)
def test_legitimate_queries_stay_accepted_and_mean_the_same(q: str) -> None:
    params = {"page": 1} if "$page" in q else None
    out = bound_query(q, params, LIMITS)
    assert " limit " in out.lower()  # same rows as the unbounded text: tests/integration/test_cypher_bounds_kuzu.py
    assert bound_query(out, params, LIMITS) == out  # bounding twice changes nothing


def test_write_queries_are_still_refused_by_the_guard() -> None:
    with pytest.raises(RefusedQueryError, match="refused: DETACH"):
        bound_query("MATCH (n) DETACH DELETE n", None, LIMITS)


@pytest.mark.parametrize("kw", [{"max_hops": 0}, {"max_rows": -1}, {"timeout_s": 0}, {"timeout_s": float("nan")},
                                {"max_list": True}, {"memory_mb": 1.5}, {"max_result_bytes": "1"},
                                {"max_string": 0}])
def test_limits_are_validated(kw: dict) -> None:
    with pytest.raises(HtmlRagError, match="query limit"):
        QueryLimits(**kw)


def test_fetch_capped_stops_at_rows_and_refuses_big_results() -> None:
    fetched = []

    def rows(n: int, text: str = "x"):
        for i in range(n):
            fetched.append(i)
            yield {"id": i, "text": text}

    assert len(fetch_capped(rows(10_000), QueryLimits(max_rows=7))) == 7
    assert len(fetched) == 7  # read lazily: rows past the limit are never fetched
    with pytest.raises(QueryTooCostly, match=r"result over 1,000 bytes after \d+ rows"):
        fetch_capped(rows(3, "a" * 600), QueryLimits(max_result_bytes=1000))
    with pytest.raises(QueryTooCostly):
        fetch_capped(iter([{"l": list(range(200))}]), QueryLimits(max_result_bytes=1000))


def test_value_bytes_counts_nested_values() -> None:
    assert value_bytes("é") == 2 and value_bytes(5) == 8 and value_bytes(None) == 8
    assert value_bytes({"a": ["xy", 1]}) == 1 + 8 + 2 + 8
    assert value_bytes({"m": {"k": "v" * 10}}) == 1 + 1 + 10


@pytest.mark.parametrize("lit, ok", [
    (r"'\x41'", False), (r"'\X41'", False), (r"'\u0041'", True), (r"'\U00000041'", True), (r"'\U0041'", True),
    (r"'\u12'", False), (r"'\''", True), (r"'\\'", True), ("'\\\"'", True), (r"'\N'", True), (r"'\q'", False),
    (r"'\0'", False), (r"'\/'", False), ("'a\nb'", True),
])
def test_string_escapes_are_kuzus(lit: str, ok: bool) -> None:
    """Kuzu 0.11's lexer reads \\\\ \\' \\" \\b \\f \\n \\r \\t (either case) and \\u/\\U with four hex digits; not \\x
    (the full comparison against Kuzu itself is in tests/integration/test_cypher_bounds_kuzu.py)."""
    if ok:
        assert [t.kind for t in tokenize(f"RETURN {lit} AS x")] == ["word", "string", "word", "word"]
    else:
        with pytest.raises(RefusedQueryError, match="unknown escape"):
            tokenize(f"RETURN {lit} AS x")


def test_neo4j_untrusted_queries_get_the_bounds_and_a_transaction_timeout() -> None:
    from htmlrag.superrag.graph.neo4j_store import Neo4jStore

    calls: list[tuple] = []

    class Record:
        def __init__(self, i: int) -> None:
            self.i = i

        def data(self) -> dict:
            return {"id": self.i}

    class Tx:
        def run(self, text, params):
            calls.append(("run", text))
            return (Record(i) for i in range(10_000))

    class Session:
        def __init__(self, mode):
            self.mode = mode

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def execute_read(self, fn):
            calls.append(("read", self.mode, getattr(fn, "timeout", None)))
            return fn(Tx())

    class Driver:
        def session(self, database=None, default_access_mode=None):
            return Session(default_access_mode)

    store = Neo4jStore("neo4j://example.invalid", driver=Driver(), limits=QueryLimits(timeout_s=2.5, max_rows=20))
    rows = store.query_untrusted("MATCH (n) RETURN n.id AS id")
    assert len(rows) == 20
    assert calls == [("read", "READ", 2.5), ("run", "MATCH (n) RETURN n.id AS id LIMIT 20")]
    calls.clear()
    for q in ["MATCH (a)-[*]->(b) RETURN a.id AS id", "MATCH (n) WHERE n.id = $x RETURN n.id AS id",
              "UNWIND range(1, 100000) AS x RETURN x", "MATCH (n) DETACH DELETE n"]:
        with pytest.raises(RefusedQueryError):
            store.query_untrusted(q)
    assert calls == []  # refused before reaching the server


@pytest.mark.parametrize("q", [
    "MATCH p = shortestPath((a)-[*]-(b)) RETURN p",           # Neo4j's unbounded shortest paths
    "MATCH p = allShortestPaths((a)-[*]-(b)) RETURN p",
    "RETURN reduce(s = 0, x IN range(1, 10) | s + x) AS r",   # reduce and comprehensions: no grammar for them
    "RETURN [x IN range(1, 10) | x * 2] AS l",
    "MATCH (a) RETURN [(a)-->(b) | b.id] AS l",               # pattern comprehension
    "MATCH (a)((x)-->(y)){1,}(b) RETURN a.id AS id",          # Neo4j 5 quantified path patterns
    "MATCH (a)-[* TRAIL 1..99]->(b) RETURN a.id AS id",       # Kuzu's other recursive kinds
    "MATCH (a)-[* WSHORTEST(score)]->(b) RETURN a.id AS id",
])
def test_other_costly_forms_have_no_grammar(q: str) -> None:
    """Other ways to ask for unbounded work are not in the read-only grammar: refused by the guard."""
    with pytest.raises(RefusedQueryError, match=r"^refused: "):
        bound_query(q, None, QueryLimits(max_hops=1000))


def _doubled(step: str, times: int, start: str = "range(1, 10000)") -> str:
    return f"WITH {start} AS l " + " ".join(f"WITH {step} AS l" for _ in range(times)) + " RETURN size(l) AS n"


#: Lists and strings grown by joining a value to itself (Kuzu builds list data outside its buffer pool, constant
#: ones while planning, before the timeout: list_concat(l, l) 12 times from range(1, 10000) reached 23 GB).
GROWING = [
    (_doubled("list_concat(l, l)", 12), "can build a list of 20,000 items"),
    (_doubled("list_concat(l, l)", 9), "can build a list of 20,000 items"),
    (_doubled("list_cat(l, l)", 1), "list of 20,000 items"),
    (_doubled("array_concat(l, l)", 1), "list of 20,000 items"),
    (_doubled("l + l", 1), "list of 20,000 items"),
    (_doubled("list_concat(l, l)", 2, "range(1, 4000)"), "list of 16,000 items"),
    ("RETURN size(range(1, 6000) + range(1, 6000)) AS n", "list of 12,000 items"),
    ("UNWIND range(1, 10) AS x WITH collect(x) AS l RETURN size(l + l) AS n", "list of 20,000 items"),
    ("MATCH (a) RETURN collect(a.id) + ['x'] AS ids", "list of 10,001 items"),
    (_doubled("l + l", 1, "repeat('ab', 40000)"), "string of 160,000 characters"),
    (_doubled("concat(l, l)", 2, "repeat('a', 30000)"), "string of 120,000 characters"),
]
#: Queries Kuzu's planner cannot take (time quadratic in a flat chain, exponential in an alias used twice).
TOO_BIG_TO_PLAN = [
    ("RETURN " + "+".join(["1"] * 9990) + " AS x", "more than 1000 operators"),  # crashed Kuzu (SIGSEGV)
    ("RETURN " + "+".join(["1"] * 6000) + " AS x", "more than 1000 operators"),  # 11 s planning, past the timeout
    ("MATCH (n) WHERE " + " OR ".join(f"n.ord = {i}" for i in range(600)) + " RETURN n.id AS id",
     "more than 1000 operators"),
    ("RETURN " + " AND ".join(["NOT true"] * 600) + " AS x", "more than 1000 operators"),
    ("UNWIND [1] AS x " + " ".join("WITH x + x AS x" for _ in range(24)) + " RETURN x",
     "tokens long once its aliases are expanded"),  # 408 characters: 41 s and 1.9 GB planning
    ("UNWIND [1] AS x " + " ".join("WITH x + 1 AS x" for _ in range(1000)) + " RETURN x",
     "tokens long once its aliases are expanded"),  # 3.6 s, 1.7 GB
    ("MATCH (n) WITH n.text AS t " + " ".join("WITH t + t AS t" for _ in range(14)) + " RETURN size(t) AS n",
     "tokens long once its aliases are expanded"),
]


@pytest.mark.parametrize("q, needle", GROWING + TOO_BIG_TO_PLAN)
def test_growing_and_unplannable_queries_are_refused(q: str, needle: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"^refused: ") as exc:
        bound_query(q, None, LIMITS)
    assert needle in str(exc.value)


@pytest.mark.parametrize("q", [
    _doubled("list_concat(l, l)", 1, "range(1, 5000)"),           # exactly max_list
    _doubled("list_append(l, 0)", 3, "range(1, 9000)"),           # one item each
    "RETURN " + "+".join(["1"] * 1000) + " AS x",                 # 999 operators
    "UNWIND [1] AS x " + " ".join("WITH x + x AS x" for _ in range(10)) + " RETURN x",
    "UNWIND [1] AS x " + " ".join("WITH x + 1 AS x" for _ in range(100)) + " RETURN x",
    "MATCH (n) WHERE n.ord IN [" + ", ".join(map(str, range(3000))) + "] RETURN n.id AS id",  # a long IN list
    "MATCH (n) WHERE n.id IN [" + ", ".join(f"'d:c{i}'" for i in range(1500)) + "] RETURN n.id AS id",
    "UNWIND range(1, 10000) AS x WITH collect(x) AS l RETURN size(l) AS n, l[0] AS first, l[1] AS second",
    "MATCH (n) WITH collect(n) AS ns UNWIND ns AS n RETURN n.id + ' ' + n.text AS t",
    "RETURN concat(repeat('a', 40000), repeat('b', 40000)) AS s",
])
def test_bounded_growth_and_long_queries_pass(q: str) -> None:
    assert bound_query(q, None, LIMITS).endswith("LIMIT 1000")
