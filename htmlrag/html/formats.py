"""Context formats, converted *after* pruning (HtmlRAG Appendix A): HTML, plain text, Markdown.

- ``html``: the pruned HTML as is.
- ``text``: the text of the HTML with a line break at every block-level boundary (a table row is one line,
  its cells separated by a space, as in plain-text extraction: the table structure is what the HTML format
  is for), whitespace normalised per line; image alt text is kept in brackets.
- ``markdown``: ``markdownify`` with ATX headings. Nesting deeper than :data:`MARKDOWN_MAX_DEPTH` levels
  (Markdown has no use for it, and markdownify walks the tree recursively) is written as the ``text`` format
  inside its ancestor at that level: one line per block element, every word kept (:func:`bound_depth`).
- ``compact_html``: the same HTML with the end tags that HTML lets a document omit (``</td>``, ``</th>``,
  ``</tr>``, ``</li>``, ``</thead>``, ``</tbody>``, ``</tfoot>``, ``</dt>``, ``</dd>``, ``</option>``)
  left out: still valid HTML that every HTML parser reads back to the same tree, about 30% fewer tokens on
  tables. Our extension, not in the paper.
"""

from __future__ import annotations

import re
from typing import Literal

import lxml.etree as etree

from htmlrag.core.errors import InputError
from htmlrag.html.clean import INLINE
from htmlrag.html.parse import parse_html

Format = Literal["html", "compact_html", "text", "markdown"]
FORMATS: tuple[str, ...] = ("html", "compact_html", "text", "markdown")
_OPTIONAL_END = re.compile(r"</(?:td|th|tr|li|thead|tbody|tfoot|dt|dd|option)>")


def compact_html(html: str) -> str:
    """``html`` without the end tags HTML allows to omit (see the module docstring)."""
    return _OPTIONAL_END.sub("", html)


def html_to_text(html: str) -> str:
    """Plain text of ``html``: one line per block-level element; a table row is one line."""
    if not html.strip():
        return ""
    return elements_to_text(_roots(html))


def elements_to_text(roots) -> str:
    """:func:`html_to_text` of already parsed elements (each with its subtree, without its tail)."""
    parts: list[str] = []
    for root in roots:
        for event, el in etree.iterwalk(root, events=("start", "end")):
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag in ("td", "th"):
                    parts.append(" ")
                elif tag not in INLINE:
                    parts.append("\n")
                if el.text:
                    parts.append(el.text)
                if tag == "img" and (alt := el.get("alt")):
                    parts.append(f"[{alt}]")
            else:
                if tag not in INLINE and tag not in ("td", "th"):
                    parts.append("\n")
                if el is not root and el.tail:
                    parts.append(el.tail)
        parts.append("\n")
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


_DOC_START = re.compile(r"<html[\s>]", re.IGNORECASE)


def _roots(html: str) -> list[etree._Element]:
    """One parsed root per document: a context of several pages joined with newlines holds several
    ``<html>`` documents, and libxml2 keeps only the first of them when they are parsed as one."""
    starts = [m.start() for m in _DOC_START.finditer(html)]
    pieces = [html] if len(starts) <= 1 else [html[: starts[0]]] + [
        html[a:b] for a, b in zip(starts, [*starts[1:], len(html)], strict=True)]
    roots = (parse_html(p) for p in pieces if p.strip())
    return [r for r in roots if r is not None]


#: Levels of nesting (from ``<html>``) that the Markdown format keeps; deeper content becomes text lines.
MARKDOWN_MAX_DEPTH = 128


def _as_text_lines(el: etree._Element) -> None:
    """Replace the content of ``el`` by its text lines (:func:`elements_to_text`), joined by ``<br>``."""
    lines = elements_to_text([el]).split("\n")
    tail = el.tail
    for c in list(el):
        el.remove(c)
    el.text = lines[0] if lines else None
    for line in lines[1:]:
        etree.SubElement(el, "br").tail = "\n" + line  # the newline keeps words apart for any reader
    el.tail = tail


def bound_depth(html: str, max_depth: int = MARKDOWN_MAX_DEPTH) -> str:
    """``html`` unchanged when it nests at most ``max_depth`` levels; otherwise re-serialised with the content
    of every element at level ``max_depth`` replaced by its text lines (:func:`elements_to_text`, joined by
    ``<br>``): every word is kept, the nesting is bounded. An iterative walk: any depth."""
    if html.count("<") <= max_depth:  # fewer tags than levels: nothing to do (the common case, no parsing)
        return html
    roots = _roots(html)
    changed = False
    for root in roots:
        stack = [(root, 1)]
        while stack:
            el, depth = stack.pop()
            if depth >= max_depth and len(el):
                _as_text_lines(el)
                changed = True
                continue
            stack.extend((c, depth + 1) for c in el if isinstance(c.tag, str))
    if not changed:
        return html
    return "\n".join(etree.tostring(r, method="html", encoding="unicode") for r in roots)


def html_to_markdown(html: str) -> str:
    """Markdown of ``html`` via markdownify (ATX headings, no links' targets since cleaning drops them);
    nesting is bounded first (:func:`bound_depth`)."""
    from markdownify import markdownify

    if not html.strip():
        return ""
    md = markdownify(bound_depth(html), heading_style="ATX", strip=["title"])
    lines = [line.rstrip() for line in md.splitlines()]
    out: list[str] = []
    for line in lines:  # collapse runs of blank lines
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def convert(html: str, fmt: str) -> str:
    """Convert (pruned) HTML to ``fmt`` (``html``, ``text`` or ``markdown``)."""
    if fmt == "html":
        return html
    if fmt == "compact_html":
        return compact_html(html)
    if fmt == "text":
        return html_to_text(html)
    if fmt == "markdown":
        return html_to_markdown(html)
    raise InputError(f"unknown context format {fmt!r}; choose one of {', '.join(FORMATS)}")
