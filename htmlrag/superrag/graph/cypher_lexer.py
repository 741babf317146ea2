"""A strict lexer for the Cypher that model-written graph queries may use (the first half of the read-only guard).

It splits a query into tokens the way Kuzu's grammar does, but accepts less, so that what the guard checks is
exactly what the database runs:

* **strings** ``'...'`` / ``"..."`` with the escapes Kuzu's lexer (0.11) reads, and no other: ``\\\\ \\'
  \\" \\b \\f \\n \\r \\t`` (either case) and ``\\u``/``\\U`` with four hex digits (eight read as four plus
  plain characters: the string ends at the same place). ``\\xHH`` is *not* one: Kuzu 0.11's lexer fails on it
  and reads the quote as a stray character, so a string with ``\\x`` would end elsewhere for Kuzu than for
  the guard. Any other backslash sequence, or a string left open, is refused (checked against Kuzu itself,
  string by string: ``tests/integration/test_cypher_bounds_kuzu.py``);
* **quoted names** in backticks (a doubled backtick is a backtick inside the name); empty or unclosed: refused;
* **comments** ``// ...`` (to the end of the line) and ``/* ... */`` (not nested; unclosed: refused). Comments
  are dropped: :func:`canonical` rebuilds the query from the tokens, so a comment that another lexer would read
  differently can never hide text from the check;
* **words** ``[A-Za-z_][A-Za-z0-9_]*`` (ASCII only: a look-alike letter such as Greek ``Ε`` or a full-width
  ``Ｃ`` outside a string or a quoted name is refused), **numbers**, **parameters** ``$name``;
* a fixed set of **operators**; every other character outside strings, names and comments (``!``, ``&``,
  ``\\``, a NUL, a non-ASCII space or dash, ...) is refused, naming the character and its offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from htmlrag.core.errors import HtmlRagError


class RefusedQueryError(HtmlRagError, PermissionError):
    """A graph query was refused before execution (the message names the clause, word or character)."""


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is word/name/string/number/param/op; ``pos`` the character offset in the query;
    ``space`` whether whitespace or a comment came before it."""

    kind: str
    text: str
    pos: int
    space: bool = False

    @property
    def upper(self) -> str:
        """The word in upper case (keywords are case-insensitive); other tokens as written."""
        return self.text.upper() if self.kind == "word" else self.text


_WHITESPACE = " \t\n\r\f\v"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:\d+(?:\.\d+)?|\.\d+)(?:[eE]-?\d+)?")
_PARAM = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\d+)")
_ESCAPE = re.compile(r"\\(?:[\\'\"bBfFnNrRtT]|[uU][0-9A-Fa-f]{4})")
OPERATORS = ("..", "<>", "<=", ">=", "=~", "(", ")", "[", "]", "{", "}", ",", ".", ":", ";", "|", "*", "+", "-",
             "/", "%", "^", "=", "<", ">")


def _where(text: str, pos: int) -> str:
    return f"at offset {pos} (near {text[max(0, pos - 12): pos + 12]!r})"


def _string(text: str, pos: int) -> int:
    """End offset (exclusive) of the string literal that starts at ``pos``."""
    quote, i = text[pos], pos + 1
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return i + 1
        if ch == "\\":
            m = _ESCAPE.match(text, i)
            if not m:
                raise RefusedQueryError(f"refused: unknown escape in a string {_where(text, i)}")
            i = m.end()
            continue
        i += 1
    raise RefusedQueryError(f"refused: string literal not closed {_where(text, pos)}")


def _name(text: str, pos: int) -> int:
    """End offset (exclusive) of the backtick-quoted name that starts at ``pos``."""
    i = pos
    while i < len(text) and text[i] == "`":
        close = text.find("`", i + 1)
        if close < 0:
            raise RefusedQueryError(f"refused: `quoted name` not closed {_where(text, pos)}")
        i = close + 1
    if i - pos == 2:
        raise RefusedQueryError(f"refused: empty `` name {_where(text, pos)}")
    return i


def _comment(text: str, pos: int) -> int | None:
    """End offset of the comment that starts at ``pos``, or None when none starts there."""
    if text.startswith("//", pos):
        ends = [e for e in (text.find("\n", pos), text.find("\r", pos)) if e >= 0]
        return min(ends) if ends else len(text)
    if text.startswith("/*", pos):
        close = text.find("*/", pos + 2)
        if close < 0:
            raise RefusedQueryError(f"refused: /* comment not closed {_where(text, pos)}")
        return close + 2
    return None


def _bad_char(text: str, pos: int) -> RefusedQueryError:
    ch = text[pos]
    what = "non-ASCII character" if ord(ch) > 127 else "character"
    return RefusedQueryError(f"refused: {what} {ch!r} (U+{ord(ch):04X}) outside a string or `name` "
                             f"{_where(text, pos)}")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text`` (comments and whitespace dropped; ``Token.space`` records them).

    Raises:
        RefusedQueryError: a character, escape or unclosed literal/comment the guard does not accept.
    """
    out: list[Token] = []
    i, space = 0, False
    while i < len(text):
        ch = text[i]
        if ch in _WHITESPACE:
            i, space = i + 1, True
            continue
        end = _comment(text, i)
        if end is not None:
            i, space = end, True
            continue
        kind, end = _token_at(text, i)
        out.append(Token(kind, text[i:end], i, space))
        i, space = end, False
    return out


def _token_at(text: str, i: int) -> tuple[str, int]:
    ch = text[i]
    if ch in "'\"":
        return "string", _string(text, i)
    if ch == "`":
        return "name", _name(text, i)
    for kind, rx in (("word", _WORD), ("number", _NUMBER), ("param", _PARAM)):
        m = rx.match(text, i)
        if m:
            return kind, m.end()
    for op in OPERATORS:
        if text.startswith(op, i):
            return "op", i + len(op)
    raise _bad_char(text, i)


def canonical(tokens: list[Token]) -> str:
    """The query rebuilt from its tokens: comments removed, each run of whitespace/comments one space.

    This is the text that runs, so the database never sees anything the guard did not see as a token."""
    return "".join((" " if t.space and n else "") + t.text for n, t in enumerate(tokens))
