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
* refuses a list that can grow past :attr:`QueryLimits.max_list` items or a string past
  :attr:`QueryLimits.max_string` characters, with sizes bounded over each expression and through aliases
  (``list_concat(l, l)``, ``l + l``, ``concat(s, s)`` in WITH chains), and a query of more than
  :data:`MAX_EXPANDED_TOKENS` tokens once its aliases are expanded (:func:`_check_growth`: what Kuzu's planner
  copies, before the timeout applies);
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
from htmlrag.superrag.graph.cypher_grammar import Recognizer, variable_name
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
    _check_growth(tokens, rec, limits)
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


#: Tokens a query may hold once every WITH/UNWIND alias is replaced by the expression it names, summed over its
#: expressions. Kuzu's planner copies an alias's expression into each use, so ``WITH x + x AS x`` repeated 24
#: times (408 characters) took 41 s and 1.9 GB while planning, before the timeout applies (20 times: 2.4 s), and
#: ``WITH x + 1 AS x`` 1,000 times 3.6 s and 1.7 GB. Without aliases used twice a query cannot reach the cap (it
#: holds at most MAX_QUERY_CHARS tokens).
MAX_EXPANDED_TOKENS = 20_000


def _check_growth(tokens: list[Token], rec: Recognizer, limits: QueryLimits) -> None:
    """Refuse a query whose expressions, with aliases expanded, are too big to plan (:data:`MAX_EXPANDED_TOKENS`)
    or can build a list of more than ``max_list`` items or a string of more than ``max_string`` characters.

    Sizes are upper bounds, added over an expression: ``range()`` its items, a list literal its elements, a string
    literal, ``repeat``/``lpad``/``rpad`` their length, ``collect()`` the whole allowance (a collected list is
    capped by the memory limit alone, so nothing may be added to it), an alias what its expression holds. So a
    list or string doubled (``list_concat(l, l)``, ``l + l``, ``concat(s, s)``, in WITH chains) is refused once
    it could pass the limit: list data is built outside Kuzu's buffer pool, and constant expressions while the
    query is planned, before the timeout (``list_concat(l, l)`` 12 times from ``range(1, 10000)``: 23 GB).
    """
    aliases: dict[str, tuple[int, int, int]] = {}  # name -> (expanded tokens, list items, characters)
    total = 0
    for clause in sorted({c for c, *_ in rec.items}):
        defined: dict[str, tuple[int, int, int]] = {}
        for _, kind, alias, start, end in (it for it in rec.items if it[0] == clause):
            expanded, items, chars = _measure(tokens, start, end, rec, aliases, limits)
            total += expanded
            where = f"{kind} expression at offset {tokens[start].pos}"
            if total > MAX_EXPANDED_TOKENS:
                raise RefusedQueryError(f"refused: {where} makes the query {total:,} tokens long once its aliases "
                                        f"are expanded; at most {MAX_EXPANDED_TOKENS:,} are allowed (an alias used "
                                        "several times is copied into each use when the query is planned)")
            _check_sizes(where, items, chars, limits)
            if alias is not None:
                whole_range = (kind == "UNWIND" and start in rec.call_ends and rec.call_ends[start] == end
                               and tokens[start].text.lower() == "range")
                # an UNWIND alias is one element (a new column, not a copy of the expression)
                defined[alias] = (1, 0, 0) if whole_range else (1, items, chars) if kind == "UNWIND" else \
                    (expanded, items, chars)
        aliases.update(defined)


def _check_sizes(where: str, items: int, chars: int, limits: QueryLimits) -> None:
    if items > limits.max_list:
        raise RefusedQueryError(f"refused: {where} can build a list of {items:,} items; at most "
                                f"{limits.max_list:,} are allowed (lists joined or doubled, or joined to a collect())")
    if chars > limits.max_string:
        raise RefusedQueryError(f"refused: {where} can build a string of {chars:,} characters; at most "
                                f"{limits.max_string:,} are allowed (strings joined or doubled)")


def _measure(tokens: list[Token], start: int, end: int, rec: Recognizer, aliases: dict[str, tuple[int, int, int]],
             limits: QueryLimits) -> tuple[int, int, int]:
    """(expanded tokens, list items, characters) of ``tokens[start:end]`` (see :func:`_check_growth`)."""
    expanded = items = chars = 0
    j = start
    while j < end:
        t = tokens[j]
        fn = t.text.lower() if j in rec.call_ends else None
        if fn in _SIZED or fn in _SCALAR:
            stop = rec.call_ends[j]
            inner = _measure(tokens, j + 1, stop, rec, aliases, limits)
            expanded += 1 + inner[0]
            args = _split_args(tokens[j + 2 : stop - 1])
            if fn == "range":  # literal arguments, checked above
                items += _range_items(args)
            elif fn == "collect":
                items, chars = items + limits.max_list, chars + limits.max_string
            elif fn in _SIZED:  # repeat of a literal, lpad/rpad: their length, checked above
                n = (_literal_int(args[1]) or 0) if len(args) > 1 else 0
                chars += n * (len(args[0][0].text) - 2 if fn == "repeat" and args[0] else 1)
            else:  # a number or a boolean of what its arguments build
                _check_sizes(f"the argument of {t.text}() at offset {t.pos}", inner[1], inner[2], limits)
            j = stop
            continue
        items += rec.lists.get(j, 0)
        if t.kind == "string":
            chars += len(t.text) - 2
        prev = tokens[j - 1] if j > start else None
        nxt = tokens[j + 1] if j + 1 < len(tokens) else None
        name = variable_name(t) if t.kind in ("word", "name") else None
        if (name in aliases and not (prev is not None and prev.kind == "op" and prev.text in (".", ":"))
                and not (nxt is not None and nxt.kind == "op" and nxt.text in ("(", ":"))):
            x, n_items, n_chars = aliases[name]
            expanded += x
            if not (nxt is not None and nxt.kind == "op" and nxt.text == "."):  # a property: not the whole value
                items, chars = items + n_items, chars + n_chars
        else:
            expanded += 1
        j += 1
    return expanded, items, chars


#: Calls whose result's size :func:`_measure` knows (their arguments' sizes do not add to it), and calls that
#: return a number or a boolean.
_SIZED = frozenset({"range", "repeat", "lpad", "rpad", "collect"})
_SCALAR = frozenset("""size length count sum avg list_contains list_has array_contains list_position list_sum
list_product starts_with ends_with prefix suffix contains regexp_matches id offset to_int64 to_int32 to_int16
to_double to_float tointeger tofloat toboolean is_trail is_acyclic cost""".split())


def _split_args(toks: list[Token]) -> list[list[Token]]:
    """A call's argument tokens split at its top-level commas."""
    args: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "op" and t.text in ("(", "[", "{"):
            depth += 1
        elif t.kind == "op" and t.text in (")", "]", "}"):
            depth -= 1
        elif t.kind == "op" and t.text == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    return args if args != [[]] else []


def _range_items(args: list[list[Token]]) -> int:
    values = [_literal_int(a) for a in args]
    if len(values) not in (2, 3) or any(v is None for v in values):
        return 0
    start, stop, step = (*values, 1) if len(values) == 2 else values  # type: ignore[misc]
    return max(0, (stop - start) // step + 1) if step else 0


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
