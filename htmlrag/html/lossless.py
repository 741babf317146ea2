"""The losslessness check for cleaning: every visible text run of the input survives, in order.

A *visible text run* is one text node of the input's ``<body>`` (an element's text or tail) outside the
elements :data:`htmlrag.html.clean.DROP_WITH_CONTENT` and the elements hidden by their markup
(:func:`htmlrag.html.clean.is_hidden`, unless ``keep_hidden``), whitespace-normalised, and non-empty. The cleaned output's
text is the concatenation of all its text nodes, whitespace-normalised. The check passes when the runs are
found in that text one after another (each search starts where the previous match ended).
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.etree as etree

from htmlrag.html.clean import DROP_WITH_CONTENT, is_hidden
from htmlrag.html.parse import parse_html
from htmlrag.html.text import normalize_ws

_HIDDEN = frozenset(DROP_WITH_CONTENT)


def visible_text_runs(html: str | bytes, keep_hidden: bool = False) -> list[str]:
    """The whitespace-normalised visible text runs of a page's body, in document order."""
    root = parse_html(html)
    if root is None:
        return []
    runs: list[str] = []
    for body in root.iter("body"):
        _collect(body, runs, keep_hidden)
    return runs


def _collect(body: etree._Element, runs: list[str], keep_hidden: bool) -> None:
    # Iterative pre-order walk with an explicit stack: pages can nest thousands of levels deep.
    stack: list[tuple[etree._Element, bool]] = [(body, False)]
    while stack:
        el, tail_only = stack.pop()
        if tail_only:
            if el.tail and (t := normalize_ws(el.tail)):
                runs.append(t)
            continue
        if isinstance(el.tag, str) and el.tag not in _HIDDEN and (keep_hidden or not is_hidden(el)):
            if el.text and (t := normalize_ws(el.text)):
                runs.append(t)
            children = list(el)
            for child in reversed(children):
                stack.append((child, True))
                stack.append((child, False))


def output_text(cleaned_html: str) -> str:
    """All text of a cleaned page, concatenated and whitespace-normalised."""
    root = parse_html(cleaned_html)
    if root is None:
        return ""
    return normalize_ws("".join(t for t in root.itertext() if isinstance(t, str)))


@dataclass(frozen=True)
class LosslessReport:
    """Outcome of :func:`check_lossless`: how many runs were found and the first missing one."""

    runs: int
    found: int
    first_missing: str | None

    @property
    def ok(self) -> bool:
        """True when every run was found in order."""
        return self.found == self.runs


def check_lossless(original: str | bytes, cleaned: str, keep_hidden: bool = False) -> LosslessReport:
    """Check that every visible text run of ``original`` appears in ``cleaned``'s text, in order
    (``keep_hidden``: text in :func:`htmlrag.html.clean.is_hidden` elements counts as visible too)."""
    runs = visible_text_runs(original, keep_hidden)
    text = output_text(cleaned)
    pos = 0
    for i, run in enumerate(runs):
        at = text.find(run, pos)
        if at < 0:
            return LosslessReport(len(runs), i, run)
        pos = at + len(run)
    return LosslessReport(len(runs), len(runs), None)
