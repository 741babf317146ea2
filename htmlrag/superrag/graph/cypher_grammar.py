"""The read-only subset of Cypher that model-written graph queries may use: a recursive-descent recogniser over
:func:`~htmlrag.superrag.graph.cypher_lexer.tokenize` (the second half of the read-only guard).

It is an **allowlist**: a query is accepted only when the whole token list parses as::

    query    := single (UNION [ALL] single)* [';']
    single   := ( [OPTIONAL] MATCH pattern [WHERE expr] | UNWIND expr AS name | WITH projection [WHERE expr] )*
                RETURN projection
    projection := [DISTINCT] ('*' | item) (',' item)* [ORDER BY expr [ASC|DESC] (',' ...)*] [SKIP expr] [LIMIT expr]
    pattern  := [name '='] node (relationship node)* (',' ...)*     node := '(' [name] [':' labels] [{map}] ')'
    relationship := ['<'] '-' ['[' [name] [':' types] ['*' [SHORTEST|ALL SHORTEST] [n] ['..' [n]]] [{map}] ']'] '-' ['>']

and expressions built from literals, ``$parameters``, names, property look-ups, indexing and slicing, lists,
maps, ``CASE``, the operators of Kuzu's grammar but the bitwise ones (``OR XOR AND NOT = <> < <= > >= + - * / %
^ =~ IN``, ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``, ``IS [NOT] NULL``), ``EXISTS { MATCH ... }`` /
``COUNT { MATCH ... }``, ``ALL/ANY/NONE/SINGLE(x IN list WHERE ...)``, path patterns in ``WHERE``, and calls of
**allowlisted functions only** (:data:`FUNCTIONS`). Anything else -- another clause, a function not on the list,
a second statement -- raises :class:`~htmlrag.superrag.graph.cypher_lexer.RefusedQueryError` naming it.
"""

from __future__ import annotations

from htmlrag.superrag.graph.cypher_expr import KEYWORDS, READ_CLAUSES, ExpressionRules
from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, Token

#: Functions a query may call (lower case; Kuzu and Neo4j names). None of them reads or writes files, settings
#: or other databases. Table functions (``CALL f()``, ``LOAD FROM f()``) are refused with their clauses.
FUNCTIONS = frozenset("""
count sum avg min max collect
lower upper lcase ucase tolower toupper trim ltrim rtrim substring substr left right concat contains
starts_with ends_with prefix suffix size length reverse lpad rpad repeat string_split split_part split
regexp_matches regexp_replace regexp_extract regexp_extract_all levenshtein initcap replace tostring
abs ceil ceiling floor round sqrt sign ln log log2 log10 pow power exp pi
range list_contains list_has list_extract list_element list_concat list_cat list_slice list_sort
list_reverse_sort list_distinct list_unique list_sum list_product list_position list_to_string list_append
list_prepend array_contains array_extract array_concat head last tail keys
id label labels offset nodes rels relationships properties type start_node end_node startnode endnode
is_trail is_acyclic cost coalesce ifnull nullif cast to_int64 to_int32 to_int16 to_double to_float to_string
tointeger tofloat toboolean to_date date timestamp date_part datepart
""".split())
__all__ = ["FUNCTIONS", "KEYWORDS", "READ_CLAUSES", "Recognizer", "variable_name"]
_CLAUSE_START = frozenset({"MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN"})


def variable_name(t: Token) -> str:
    """A variable's name: a word as written, a `quoted name` without its backticks."""
    return t.text[1:-1].replace("``", "`") if t.kind == "name" else t.text


class Recognizer(ExpressionRules):
    """Checks a token list against the read-only grammar (one use per query: :meth:`query`)."""

    def __init__(self, tokens: list[Token], functions: frozenset[str] = FUNCTIONS) -> None:
        super().__init__(tokens, functions)
        self.clause = 0

    # -- statements -----------------------------------------------------------------------------------
    def query(self) -> None:
        """The whole token list: one statement, optionally ended by ``;``."""
        if not self.toks:
            raise RefusedQueryError("refused: empty query")
        self.single()
        while self.accept("UNION"):
            self.accept("ALL")
            self.single()
        if self.accept(";") and self.peek() is not None:
            raise RefusedQueryError(f"refused: more than one statement (a second one starts with "
                                    f"{self.peek().text!r} at offset {self.peek().pos})")  # type: ignore[union-attr]
        if self.peek() is not None:
            raise self.error("expected the end of the query after RETURN")

    def single(self) -> None:
        while True:
            self.clause += 1
            t = self.peek()
            if t is None or t.kind != "word" or t.upper not in _CLAUSE_START:
                word = t.text.upper() if t is not None and t.kind == "word" else None
                raise self.error(f"{word} is not a read clause" if word else "expected a read clause")
            self.i += 1
            if t.upper in ("MATCH", "OPTIONAL"):
                if t.upper == "OPTIONAL":
                    self.expect("MATCH", " after OPTIONAL")
                self.pattern()
                if self.accept("WHERE"):
                    self.span("WHERE")
            elif t.upper == "UNWIND":
                start = self.i
                self.expr()
                end = self.i
                self.expect("AS", " in UNWIND")
                self.variable()
                self.items.append((self.clause, "UNWIND", variable_name(self.toks[self.i - 1]), start, end))
            else:
                limit = self.projection(t.upper)
                if t.upper == "RETURN":
                    self.returns.append((limit, self.i))
                    return
                if self.accept("WHERE"):
                    self.span("WHERE")

    def span(self, kind: str, alias: str | None = None) -> None:
        """An expression, recorded in :attr:`items` under ``kind``."""
        start = self.i
        self.expr()
        self.items.append((self.clause, kind, alias, start, self.i))

    def projection(self, kind: str = "RETURN") -> int | None:
        """``[DISTINCT] items [ORDER BY ...] [SKIP e] [LIMIT e]``; returns the index of LIMIT (None: none)."""
        self.accept("DISTINCT")
        if not self.accept("*"):
            self.item(kind)
        while self.accept(","):
            self.item(kind)
        if self.accept("ORDER"):
            self.expect("BY", " after ORDER")
            self.sort_item()
            while self.accept(","):
                self.sort_item()
        if self.accept("SKIP"):
            self.span("SKIP")
        limit = self.i if self.at("LIMIT") else None
        if self.accept("LIMIT"):
            self.span("LIMIT")
        return limit

    def item(self, kind: str = "RETURN") -> None:
        start = self.i
        self.expr()
        end = self.i
        alias = None
        if self.accept("AS"):
            self.variable()
            alias = variable_name(self.toks[self.i - 1])
        self.items.append((self.clause, kind, alias, start, end))

    def sort_item(self) -> None:
        self.span("ORDER BY")
        self.accept("ASC", "ASCENDING", "DESC", "DESCENDING")

    # -- patterns -------------------------------------------------------------------------------------
    def pattern(self) -> None:
        while True:
            if self.is_variable() and self.at("=", ahead=1):
                self.i += 2
            self.node()
            while self.at("-", "<"):
                self.relationship()
                self.node()
            if not self.accept(","):
                return

    def node(self) -> None:
        self.expect("(", " (a node pattern)")
        if self.is_variable():
            self.i += 1
        if self.accept(":"):
            self.schema_name()
            while self.at("|", ":"):
                if self.accept("|"):
                    self.accept(":")
                else:
                    self.i += 1
                self.schema_name()
        if self.at("{"):
            self.properties()
        self.expect(")", " closing the node pattern")

    def relationship(self) -> None:
        left = self.accept("<")
        self.expect("-", " (a relationship pattern)")
        if self.accept("["):
            self.rel_detail()
            self.expect("]", " closing the relationship pattern")
        self.expect("-", " (a relationship pattern)")
        if self.accept(">") and left:
            raise self.error("a relationship cannot point both ways")

    def rel_detail(self) -> None:
        if self.is_variable():
            self.i += 1
        if self.accept(":"):
            self.schema_name()
            while self.accept("|"):
                self.accept(":")
                self.schema_name()
        star = self.peek()
        if self.accept("*"):
            if self.accept("ALL"):
                self.expect("SHORTEST", " after *ALL")
            else:
                self.accept("SHORTEST")
            upper = self.number()  # `*n`: exactly n hops
            if self.accept(".."):
                upper = self.number()  # `*n..` and `*..`: no upper bound (Kuzu then allows 30, Neo4j any)
            self.hops.append((star, upper))  # type: ignore[arg-type]
        if self.at("{"):
            self.properties()
