"""Cost bounds on model-written and typed graph queries (the ``cypher`` retriever, ``htmlrag graph query
--cypher``, the app's Cypher box): the read-only guard (:mod:`~htmlrag.superrag.graph.readonly`) decides *what*
a query may do, this module *how much* it may cost.

Before a query runs, :func:`bound_query`

* refuses a **variable-length relationship** without an upper bound (``*``, ``*1..``, ``*..``, ``* SHORTEST``:
  Kuzu then allows 30 hops, Neo4j any number) or with one above :attr:`QueryLimits.max_hops` (a path pattern's
  cost grows as the branching factor to the power of its hops: ``[*1..8]`` on a 31-node graph took 87 s and
  6.9 GB), wherever the pattern stands (MATCH, WHERE, EXISTS/COUNT subqueries);
* refuses ``range()`` unless its arguments are whole-number literals making at most
  :attr:`QueryLimits.max_list` items (Kuzu builds the list outside its buffer pool and does not stop it at the
  query timeout: ``range(0, n.ord * 5000000)`` reached 13 GB before it was killed), and ``repeat``, ``lpad`` and
  ``rpad`` unless their length is a whole-number literal of at most :attr:`QueryLimits.max_string` (a constant
  ``repeat('a', 300000000)`` is computed while the query is planned, before the timeout applies: 1.9 GB),
  ``regexp_replace`` with a replacement that is not a short literal or inside another string-growing call, and
  ``levenshtein`` (quadratic, and a single call is not stopped by the timeout);
* refuses an **unbound parameter** (``$name`` without a value: Kuzu then drops the whole ``WHERE``);
* pushes a **row limit** into the query: every ``RETURN`` gets ``LIMIT`` :attr:`QueryLimits.max_rows`, or keeps
  a smaller literal one (a ``LIMIT`` that is not a whole number or a given parameter is refused).

While it runs, the store applies the rest (:class:`~htmlrag.superrag.graph.store.KuzuStore`,
:class:`~htmlrag.superrag.graph.neo4j_store.Neo4jStore`): a **wall-clock timeout** (Kuzu's query timeout,
Neo4j's transaction timeout), a **memory cap** (the buffer pool of a read-only Kuzu database these queries have
to themselves: strings grown by nesting ``replace`` and lists built by ``collect`` stop there), and a
**result-size cap** (:func:`fetch_capped`: at most ``max_rows`` rows and ``max_result_bytes`` bytes of returned
values, counted while the rows are fetched).

The library's own queries are trusted (fixed text, bounded by construction) and run without these bounds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.graph.cypher_grammar import Recognizer
from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, Token, canonical, tokenize
from htmlrag.superrag.graph.readonly import check_read_only

__all__ = ["QueryLimits", "QueryTooCostly", "bound_query", "check_params", "fetch_capped", "value_bytes"]


class QueryTooCostly(HtmlRagError):
    """An accepted query ran into a cost bound (time, memory or result size); the message names the bound."""


@dataclass(frozen=True)
class QueryLimits:
    """Bounds on one model-written or typed query.

    Attributes:
        max_hops: largest upper bound of a variable-length relationship (``-[*1..3]->``); default 3.
        timeout_s: wall-clock seconds a query may run (Kuzu's query timeout, Neo4j's transaction timeout).
        max_rows: rows returned at most (pushed into the query as ``LIMIT``).
        max_result_bytes: bytes of returned values at most (strings as UTF-8, lists and maps summed).
        max_list: items of a ``range()`` at most.
        memory_mb: the buffer pool, in MB, of the read-only Kuzu database these queries run on (a database
            of their own: Kuzu caps memory per database); what they may hold in memory together.
        max_string: characters of a string a query may build with ``repeat``, ``lpad`` or ``rpad``.
    """

    max_hops: int = 3
    timeout_s: float = 10.0
    max_rows: int = 1000
    max_result_bytes: int = 2_000_000
    max_list: int = 10_000
    memory_mb: int = 256
    max_string: int = 100_000

    #: The largest value of each limit (far above any useful one): a bigger one is a mistake, refused before
    #: it reaches the database (Kuzu takes the timeout as whole milliseconds and reserves memory for its
    #: buffer pool: 1,000,000 MB cost 2.3 GB for a two-row query)
    MAX: ClassVar[Mapping[str, int]] = {"max_hops": 1000, "timeout_s": 86_400, "max_rows": 10_000_000,
                                        "max_result_bytes": 1_000_000_000, "max_list": 10_000_000,
                                        "memory_mb": 16_384, "max_string": 100_000_000}

    def __post_init__(self) -> None:
        for name in ("max_hops", "max_rows", "max_result_bytes", "max_list", "memory_mb", "max_string"):
            value, top = getattr(self, name), self.MAX[name]
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise HtmlRagError(f"query limit {name} must be a whole number within 1-{top:,}, got {value!r}")
        t, top = self.timeout_s, self.MAX["timeout_s"]
        if isinstance(t, bool) or not (isinstance(t, int | float) and math.isfinite(t) and 0 < t <= top):
            raise HtmlRagError(f"query limit timeout_s must be a number of seconds > 0 and <= {top:,}, got {t!r}")


def check_params(cypher: str, params: Mapping[str, Any] | None) -> None:
    """Refuse a query whose ``$parameters`` are not all given (``cypher`` as :func:`check_read_only` returns it).

    Raises:
        RefusedQueryError: names the first missing parameter.
    """
    missing = sorted(_param_names(cypher) - set(params or {}))
    if missing:
        raise RefusedQueryError(f"refused: parameter ${missing[0]} has no value (every $name in a query must be "
                                "given; an unbound parameter would make the database drop the condition it is in)")


@functools.lru_cache(maxsize=512)
def _param_names(cypher: str) -> frozenset[str]:
    return frozenset(t.text[1:] for t in tokenize(cypher) if t.kind == "param")


def bound_query(cypher: str, params: Mapping[str, Any] | None = None, limits: QueryLimits | None = None) -> str:
    """The query as it must run under ``limits`` (read-only guard, then the bounds of the module docstring).

    Raises:
        RefusedQueryError: the guard refuses it, or a bound does (the message names the bound and the limit).
    """
    limits = limits or QueryLimits()
    tokens = tokenize(check_read_only(cypher))
    rec = Recognizer(tokens)
    rec.query()
    for star, upper in rec.hops:
        _check_hops(star, upper, limits)
    for name, spans in rec.calls:
        fn, args = name.text.lower(), [tokens[a:b] for a, b in spans]
        if fn == "range":
            _check_range(name, args, limits)
        elif fn in ("lpad", "rpad"):
            _check_size(name, args, limits)
        elif fn == "repeat":
            _check_repeat(name, args, limits)
        elif fn == "regexp_replace":
            _check_replace(name, args, rec.calls)
        elif fn in _SLOW:
            raise RefusedQueryError(f"refused: {name.text}() at offset {name.pos} {_SLOW[fn]}")
    check_params(canonical(tokens), params)
    return canonical(_limit_rows(tokens, rec.returns, params, limits))


def _check_hops(star: Token, upper: int | None, limits: QueryLimits) -> None:
    if upper is None:
        raise RefusedQueryError(f"refused: variable-length relationship at offset {star.pos} has no upper bound; "
                                f"write one of at most {limits.max_hops} hops, e.g. -[*1..{limits.max_hops}]->")
    if upper > limits.max_hops:
        raise RefusedQueryError(f"refused: variable-length relationship at offset {star.pos} goes up to {upper} "
                                f"hops; at most {limits.max_hops} are allowed (the cost grows exponentially with "
                                "the hops)")


def _literal_int(span: list[Token]) -> int | None:
    texts = [t.text for t in span]
    if len(texts) == 2 and texts[0] == "-":
        texts = ["-" + texts[1]]
    if len(texts) == 1 and texts[0].lstrip("-").isdigit():
        return int(texts[0])
    return None


def _check_range(name: Token, args: list[list[Token]], limits: QueryLimits) -> None:
    values = [_literal_int(a) for a in args]
    if len(values) not in (2, 3) or any(v is None for v in values):
        raise RefusedQueryError(f"refused: range() at offset {name.pos} takes 2 or 3 whole-number literals in "
                                "typed or model-written queries (a computed bound can build a list of any size)")
    start, stop, step = (*values, 1) if len(values) == 2 else values  # type: ignore[misc]
    if step == 0:
        raise RefusedQueryError(f"refused: range() at offset {name.pos} has a step of 0")
    items = max(0, (stop - start) // step + 1)
    if items > limits.max_list:
        raise RefusedQueryError(f"refused: range() at offset {name.pos} makes {items:,} items; at most "
                                f"{limits.max_list:,} are allowed")


#: Functions whose output can be much longer than their input.
_GROWING = frozenset({"repeat", "lpad", "rpad", "regexp_replace"})
_MAX_REPLACEMENT = 16
#: Functions refused in typed and model-written queries, with the reason.
_SLOW = {"levenshtein": "takes time quadratic in the strings' length, and one call is not stopped by the timeout "
                        "(two 30,000-character strings: 2.8 s past a 1 s timeout)"}


def _check_size(name: Token, args: list[list[Token]], limits: QueryLimits) -> None:
    """``lpad``/``rpad(s, n, pad)``: the output is ``n`` characters; ``n`` a literal within the limit."""
    value = _literal_int(args[1]) if len(args) > 1 else None
    if value is None:
        raise RefusedQueryError(f"refused: {name.text}() at offset {name.pos} takes a whole-number literal as its "
                                "length in typed or model-written queries (a computed length can build a string of "
                                "any size)")
    if value > limits.max_string:
        raise RefusedQueryError(f"refused: {name.text}() at offset {name.pos} builds {value:,} characters; at most "
                                f"{limits.max_string:,} are allowed")


def _check_repeat(name: Token, args: list[list[Token]], limits: QueryLimits) -> None:
    """``repeat(s, n)``: ``s`` a string literal and ``n`` a whole-number literal, ``len(s) * n`` within the limit
    (a node's text repeated can be any size)."""
    _check_size(name, args, limits)
    if not (len(args[0]) == 1 and args[0][0].kind == "string"):
        raise RefusedQueryError(f"refused: repeat() at offset {name.pos} repeats a string literal only in typed or "
                                "model-written queries")
    total = (len(args[0][0].text) - 2) * (_literal_int(args[1]) or 0)
    if total > limits.max_string:
        raise RefusedQueryError(f"refused: repeat() at offset {name.pos} builds {total:,} characters; at most "
                                f"{limits.max_string:,} are allowed")


def _check_replace(name: Token, args: list[list[Token]], calls: list[tuple[Token, list[tuple[int, int]]]]) -> None:
    """``regexp_replace(s, pattern, replacement[, options])``: a short literal replacement, and no string-growing
    call inside ``s`` (Kuzu builds the result outside its buffer pool, and one call is not stopped by the
    timeout: two nested replacements of a node's text ran 153 s before failing)."""
    if len(args) < 3 or not (len(args[2]) == 1 and args[2][0].kind == "string"
                             and len(args[2][0].text) - 2 <= _MAX_REPLACEMENT):
        raise RefusedQueryError(f"refused: regexp_replace() at offset {name.pos} takes a string literal of at most "
                                f"{_MAX_REPLACEMENT} characters as its replacement in typed or model-written queries")
    lo, hi = args[0][0].pos, args[0][-1].pos  # character offsets of the first argument
    inner = [c for c, _ in calls if c.text.lower() in _GROWING and lo <= c.pos <= hi]
    if inner:
        raise RefusedQueryError(f"refused: regexp_replace() at offset {name.pos} replaces inside {inner[0].text}() "
                                "(nested string-growing calls can build strings of any size)")


def _limit_rows(tokens: list[Token], returns: list[tuple[int | None, int]], params: Mapping[str, Any] | None,
                limits: QueryLimits) -> list[Token]:
    """``tokens`` with every RETURN limited to ``limits.max_rows`` rows (see the module docstring)."""
    out = list(tokens)
    for limit_at, end in sorted(returns, key=lambda r: r[1], reverse=True):  # from the back: indexes stay valid
        cap = limits.max_rows
        if limit_at is None:
            out[end:end] = [Token("word", "LIMIT", -1, True), Token("number", str(cap), -1, True)]
            continue
        expr = out[limit_at + 1 : end]
        value = _literal_int(expr)
        if value is None and len(expr) == 1 and expr[0].kind == "param":
            given = (params or {}).get(expr[0].text[1:])
            value = given if isinstance(given, int) and not isinstance(given, bool) else None
        if value is None or value < 0:
            raise RefusedQueryError(f"refused: LIMIT at offset {out[limit_at].pos} must be a whole number (or a "
                                    "parameter given one) in typed or model-written queries")
        out[limit_at + 1 : end] = [Token("number", str(min(value, cap)), -1, True)]
    return out


def value_bytes(value: Any) -> int:
    """Approximate size of a returned value: UTF-8 bytes of strings, 8 per number, lists and maps summed."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, Mapping):
        return sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 8 + sum(value_bytes(v) for v in value)
    return 8


def fetch_capped(rows: Iterable[dict[str, Any]], limits: QueryLimits) -> list[dict[str, Any]]:
    """At most ``limits.max_rows`` rows of ``rows`` (an iterator read lazily).

    Raises:
        QueryTooCostly: the values fetched so far exceed ``limits.max_result_bytes``.
    """
    out: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        size += value_bytes(row)
        if size > limits.max_result_bytes:
            raise QueryTooCostly(f"graph query result over {limits.max_result_bytes:,} bytes after {len(out)} rows "
                                 "(the size limit for typed or model-written queries): return fewer or shorter "
                                 "values, e.g. substring(n.text, 0, 200)")
        out.append(row)
        if len(out) >= limits.max_rows:
            break
    return out
