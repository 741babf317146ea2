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
  query timeout: ``range(0, n.ord * 5000000)`` reached 13 GB before it was killed);
* refuses an **unbound parameter** (``$name`` without a value: Kuzu then drops the whole ``WHERE``);
* pushes a **row limit** into the query: every ``RETURN`` gets ``LIMIT`` :attr:`QueryLimits.max_rows`, or keeps
  a smaller literal one (a ``LIMIT`` that is not a whole number or a given parameter is refused).

While it runs, the store applies the rest (:class:`~htmlrag.superrag.graph.store.KuzuStore`,
:class:`~htmlrag.superrag.graph.neo4j_store.Neo4jStore`): a **wall-clock timeout** (Kuzu's query timeout,
Neo4j's transaction timeout), a **memory cap** (the buffer pool of Kuzu's read-only database), and a
**result-size cap** (:func:`fetch_capped`: at most ``max_rows`` rows and ``max_result_bytes`` bytes of returned
values, counted while the rows are fetched).

The library's own queries are trusted (fixed text, bounded by construction) and run without these bounds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
        memory_mb: Kuzu's buffer pool for read-only databases, in MB: what one query may hold in memory
            (Kuzu's default is 80% of the machine's memory).
    """

    max_hops: int = 3
    timeout_s: float = 10.0
    max_rows: int = 1000
    max_result_bytes: int = 2_000_000
    max_list: int = 10_000
    memory_mb: int = 512

    def __post_init__(self) -> None:
        for name in ("max_hops", "max_rows", "max_result_bytes", "max_list", "memory_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise HtmlRagError(f"query limit {name} must be a whole number >= 1, got {value!r}")
        if not (isinstance(self.timeout_s, int | float) and math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise HtmlRagError(f"query limit timeout_s must be a number of seconds > 0, got {self.timeout_s!r}")


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
        if name.text.lower() == "range":
            _check_range(name, [tokens[a:b] for a, b in spans], limits)
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
