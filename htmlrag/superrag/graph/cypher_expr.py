"""Expression rules of the read-only Cypher recogniser (:class:`~htmlrag.superrag.graph.cypher_grammar.Recognizer`
mixes them in). Precedence, loosest first, as in Kuzu's grammar without the bitwise operators: OR, XOR, AND,
NOT, comparison, ``+ -``, ``* / %``, ``^``, the string/list/null predicates, unary ``+ -``, then an atom with
property look-ups, indexing and slicing. Function calls are checked against the recogniser's ``functions``.
"""

from __future__ import annotations

from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, Token

#: Clauses a query may use.
READ_CLAUSES = ("MATCH", "OPTIONAL MATCH", "WHERE", "WITH", "UNWIND", "RETURN", "ORDER BY", "SKIP", "LIMIT",
                "UNION [ALL]")
#: Words with a meaning in the grammar: never a variable name.
KEYWORDS = frozenset("""MATCH OPTIONAL WHERE WITH UNWIND RETURN ORDER BY SKIP LIMIT UNION ALL DISTINCT AS ASC
ASCENDING DESC DESCENDING AND OR XOR NOT IN IS NULL TRUE FALSE STARTS ENDS CONTAINS CASE WHEN THEN ELSE END
EXISTS COUNT ANY NONE SINGLE SHORTEST CAST""".split())
MAX_DEPTH = 60
#: Operators (binary, unary, property look-ups, indexing) a query may hold. Kuzu's parser and planner take time
#: quadratic in a flat chain (``RETURN 1+1+...``: 1,000 terms 0.14 s, 3,000 1.1 s, 6,000 11 s -- planning, before
#: the query timeout applies -- and 9,990 crash the process), and nesting (MAX_DEPTH) does not see a flat chain.
MAX_OPERATORS = 1000
_COMPARE = ("=", "<>", "<", "<=", ">", ">=")
_BINARY: tuple[tuple[str, ...], ...] = (("OR",), ("XOR",), ("AND",))
_QUANTIFIERS = ("ALL", "ANY", "NONE", "SINGLE")


class Cursor:
    """A position in a token list, with the helpers every rule uses."""

    def __init__(self, tokens: list[Token], functions: frozenset[str]) -> None:
        self.toks, self.functions, self.i, self.depth, self.operators = tokens, functions, 0, 0, 0
        #: What the cost bounds (:mod:`~htmlrag.superrag.graph.bounds`) look at, filled while parsing:
        #: variable-length relationships as (``*`` token, upper bound or None), function calls as (name token,
        #: token spans ``(start, end)`` of the arguments), and each RETURN as (index of its LIMIT keyword or
        #: None, index just past its projection).
        self.hops: list[tuple[Token, int | None]] = []
        self.calls: list[tuple[Token, list[tuple[int, int]]]] = []
        self.returns: list[tuple[int | None, int]] = []
        #: Expressions in clause order, as (clause number, clause word, alias or None, start, end) token spans:
        #: WITH/RETURN items, UNWIND lists, WHERE, ORDER BY, SKIP, LIMIT (what bounds.py expands aliases in).
        self.items: list[tuple[int, str, str | None, int, int]] = []
        #: Index of each list literal's ``[`` -> its number of elements; of each call's name -> index past ``)``.
        self.lists: dict[int, int] = {}
        self.call_ends: dict[int, int] = {}

    def operator(self) -> None:
        """Count one operator (refused past :data:`MAX_OPERATORS`)."""
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            raise self.error(f"more than {MAX_OPERATORS} operators in one query (long flat expressions cost the "
                             "database's planner time quadratic in their length, before any timeout applies)")

    def accept_op(self, *values: str) -> bool:
        """:meth:`accept` an operator, counting it."""
        if self.accept(*values):
            self.operator()
            return True
        return False

    def peek(self, ahead: int = 0) -> Token | None:
        """The token ``ahead`` places after the current one (None past the end)."""
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def at(self, *values: str, ahead: int = 0) -> bool:
        """True when that token is a word or operator among ``values`` (words in upper case)."""
        t = self.peek(ahead)
        return t is not None and t.kind in ("word", "op") and t.upper in values

    def accept(self, *values: str) -> bool:
        """Step over the current token when :meth:`at` ``values``."""
        if self.at(*values):
            self.i += 1
            return True
        return False

    def expect(self, value: str, what: str = "") -> None:
        """Step over ``value`` or refuse."""
        if not self.accept(value):
            raise self.error(f"expected {value}{what}")

    def error(self, problem: str) -> RefusedQueryError:
        """A refusal naming ``problem`` and the current token."""
        t = self.peek()
        where = f"{t.text!r} at offset {t.pos}" if t else "the end of the query"
        return RefusedQueryError(f"refused: {problem}, found {where} (read-only queries may use only "
                                 f"{', '.join(READ_CLAUSES)} and allowed functions)")

    def nest(self) -> None:
        """Enter a nested expression or map (refused past :data:`MAX_DEPTH`)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH}")

    def is_variable(self, ahead: int = 0) -> bool:
        """True when that token can be a variable: a `quoted name` or a word that is not a keyword."""
        t = self.peek(ahead)
        return t is not None and (t.kind == "name" or (t.kind == "word" and t.upper not in KEYWORDS))

    def variable(self) -> None:
        """Step over a variable or refuse."""
        if not self.is_variable():
            raise self.error("expected a name")
        self.i += 1

    def schema_name(self) -> None:
        """A label, relationship type or property key: any word or `quoted name`."""
        t = self.peek()
        if t is None or t.kind not in ("word", "name"):
            raise self.error("expected a label or property name")
        self.i += 1

    def number(self) -> int | None:
        """Step over an integer literal if there is one and return its value (else None)."""
        t = self.peek()
        if t is not None and t.kind == "number" and t.text.isdigit():
            self.i += 1
            return int(t.text)
        return None

    def properties(self) -> None:
        """``{key: expr, ...}`` (property maps in patterns, and map literals)."""
        self.expect("{")
        self.nest()
        if not self.at("}"):
            while True:
                t = self.peek()
                if t is None or t.kind not in ("word", "name", "string"):
                    raise self.error("expected a map key")
                self.i += 1
                self.expect(":", " after a map key")
                self.expr()
                if not self.accept(","):
                    break
        self.expect("}", " closing the map")
        self.depth -= 1

    def expr(self) -> None:  # defined by ExpressionRules
        raise NotImplementedError


class ExpressionRules(Cursor):
    """Expression rules; the pattern rules they use (path patterns, ``EXISTS { MATCH ... }``) come from the
    recogniser."""

    def pattern(self) -> None:
        raise NotImplementedError

    def node(self) -> None:
        raise NotImplementedError

    def relationship(self) -> None:
        raise NotImplementedError

    def expr(self) -> None:
        """One expression (the loosest level: OR)."""
        self.nest()
        self._binary(0)
        self.depth -= 1

    def _binary(self, level: int) -> None:
        if level == len(_BINARY):
            self._not()
            return
        self._binary(level + 1)
        while self.accept_op(*_BINARY[level]):
            self._binary(level + 1)

    def _not(self) -> None:
        while self.accept_op("NOT"):
            pass
        self._arith(0)
        while self.accept_op(*_COMPARE):
            self._arith(0)

    def _arith(self, level: int) -> None:
        ops = (("+", "-"), ("*", "/", "%"), ("^",))
        if level == len(ops):
            self._predicate()
            return
        self._arith(level + 1)
        while self.accept_op(*ops[level]):
            self._arith(level + 1)

    def _predicate(self) -> None:
        self._unary()
        while True:
            if self.accept_op("=~", "CONTAINS", "IN"):
                self._unary()
            elif self.accept_op("STARTS", "ENDS"):
                self.expect("WITH", " after STARTS/ENDS")
                self._unary()
            elif self.accept_op("IS"):
                self.accept("NOT")
                self.expect("NULL", " after IS [NOT]")
            else:
                return

    def _unary(self) -> None:
        while self.accept_op("-", "+"):
            pass
        self._atom()
        while True:
            if self.accept_op("."):
                self.schema_name()
            elif self.accept_op("["):
                self._index()
            else:
                return

    def _index(self) -> None:
        """After ``[``: ``expr]``, ``[expr]..[expr]]`` or ``[expr]:[expr]]``."""
        if not self.at("..", ":"):
            self.expr()
        if self.accept("..", ":") and not self.at("]"):
            self.expr()
        self.expect("]", " closing the index")

    def _atom(self) -> None:
        t = self.peek()
        if t is None:
            raise self.error("expected an expression")
        nxt = self.peek(1)
        call = nxt is not None and nxt.kind == "op" and nxt.text in ("(", "{")
        if t.kind in ("number", "string", "param") or t.upper in ("TRUE", "FALSE", "NULL"):
            self.i += 1
        elif t.upper == "CASE":
            self._case()
        elif t.upper in ("EXISTS", "COUNT") and call and nxt.text == "{":
            self.i += 1
            self._subquery()
        elif t.upper in _QUANTIFIERS and call and nxt.text == "(":
            self._quantifier()
        elif t.kind == "word" and call and nxt.text == "(":
            self._call()
        elif t.kind == "op" and t.text == "[":
            self._list()
        elif t.kind == "op" and t.text == "{":
            self.properties()
        elif t.kind == "op" and t.text == "(":
            self._paren_or_path()
        elif self.is_variable():
            self.i += 1
        else:
            word = t.text.upper() if t.kind == "word" else None
            raise self.error(f"{word} is not allowed in an expression" if word else "expected an expression")

    def _call(self) -> None:
        t = self.peek()
        name, at = t.text.lower(), self.i
        if name not in self.functions:
            raise RefusedQueryError(f"refused: function {t.text}() at offset {t.pos} is not on the allowed list "
                                    "(htmlrag.superrag.graph.cypher_grammar.FUNCTIONS)")
        self.i += 2
        self.nest()
        if name == "count" and self.accept("*"):
            pass
        elif name == "cast":
            self.expr()
            if self.accept("AS"):
                self.schema_name()
                while self.accept("["):
                    self.number()
                    self.expect("]")
            else:
                self.expect(",", " or AS in CAST")
                self.expr()
        else:
            self.accept("DISTINCT")
            spans: list[tuple[int, int]] = []
            if not self.at(")"):
                while True:
                    start = self.i
                    self.expr()
                    spans.append((start, self.i))
                    if not self.accept(","):
                        break
            self.calls.append((t, spans))
        self.expect(")", f" closing {t.text}(")
        self.call_ends[at] = self.i
        self.depth -= 1

    def _list(self) -> None:
        at, n = self.i, 0
        self.expect("[")
        if not self.at("]"):
            self.expr()
            n = 1
            while self.accept(","):
                self.expr()
                n += 1
        self.expect("]", " closing the list")
        self.lists[at] = n

    def _case(self) -> None:
        self.i += 1
        if not self.at("WHEN"):
            self.expr()
        if not self.at("WHEN"):
            raise self.error("expected WHEN in CASE")
        while self.accept("WHEN"):
            self.expr()
            self.expect("THEN", " in CASE")
            self.expr()
        if self.accept("ELSE"):
            self.expr()
        self.expect("END", " closing CASE")

    def _subquery(self) -> None:
        """``{ MATCH pattern [WHERE expr] }`` after EXISTS or COUNT."""
        self.expect("{")
        self.nest()
        self.expect("MATCH", " (EXISTS/COUNT subqueries hold one MATCH)")
        self.pattern()
        if self.accept("WHERE"):
            self.expr()
        self.expect("}", " closing the subquery")
        self.depth -= 1

    def _quantifier(self) -> None:
        """``ALL|ANY|NONE|SINGLE ( x IN list WHERE predicate )``."""
        self.i += 2
        self.variable()
        self.expect("IN", " in a list predicate")
        self.expr()
        self.expect("WHERE", " in a list predicate")
        self.expr()
        self.expect(")", " closing the list predicate")

    def _paren_or_path(self) -> None:
        """A path pattern (a node pattern followed by a relationship) or a parenthesised expression."""
        close = self._matching(self.i)
        after = [self.peek(close - self.i + k) for k in (1, 2)]
        texts = [t.text if t is not None and t.kind == "op" else "" for t in after]
        if (texts[0] == "<" and texts[1] == "-") or (texts[0] == "-" and texts[1] in ("-", "[")):
            self.node()
            while self.at("-", "<"):
                self.relationship()
                self.node()
            return
        self.i += 1
        self.expr()
        self.expect(")", " closing the parenthesis")

    def _matching(self, start: int) -> int:
        """Index of the token closing the bracket at ``start`` (brackets of any kind must nest properly)."""
        pairs, stack = {"(": ")", "[": "]", "{": "}"}, []
        for j in range(start, len(self.toks)):
            t = self.toks[j]
            if t.kind != "op":
                continue
            if t.text in pairs:
                stack.append(pairs[t.text])
            elif t.text in (")", "]", "}"):
                if not stack or stack.pop() != t.text:
                    break
                if not stack:
                    return j
        raise self.error("unbalanced brackets")
