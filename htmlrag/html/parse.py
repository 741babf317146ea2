"""Parse HTML into an lxml tree, robustly.

lxml/libxml2 is the fast path. libxml2 stops parsing at nesting depth 2048 and silently drops the rest of
the page, so when it reports that limit we re-tokenise the page with the standard library's tokenizer,
flatten nesting below :data:`MAX_DEPTH` (the deep tags are dropped, their text kept) and parse the result.
No text is lost either way. A page with a start tag over 32 KB goes through the same tokenizer first, each
element keeping its first :data:`MAX_ATTRS` attributes (libxml2's time is quadratic in an element's attributes).
"""

from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser as _StdTokenizer

import lxml.etree as etree

from htmlrag.core.errors import InputError
from htmlrag.html.encoding import to_utf8

#: Nesting depth kept by the fallback path; deeper start/end tags are dropped (their text is kept).
MAX_DEPTH = 1024
#: Attributes kept per element when a tag is huge: libxml2's time grows with the square of an element's
#: attribute count (300,000 attributes on one <div>, a 3.5 MB page: over 90 s), the standard tokenizer's does not.
MAX_ATTRS = 1000
#: A start tag this long (bytes) sends the page through the standard tokenizer first, keeping MAX_ATTRS attributes.
_HUGE_TAG = re.compile(rb"<[A-Za-z][^<>]{32768}")

_VOID = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr basefont frame".split()
)
_RAW = frozenset(("script", "style"))


def _parser() -> etree.HTMLParser:
    # A fresh parser per call: lxml parsers are not thread-safe and keep an error log. Plain etree elements
    # (not lxml.html's): its Python-level class lookup costs more than the parse itself.
    return etree.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True, no_network=True,
        recover=True, compact=True, default_doctype=False,
    )


class _Flattener(_StdTokenizer):
    """Re-serialises a page while dropping tags nested deeper than ``max_depth``.

    It keeps the stack of open elements: an end tag closes the nearest open element of its name (and, as
    HTML does, the ones opened inside it), so the end tag of a kept element -- ``</head>`` after thousands of
    unclosed ``<noscript>`` -- is kept, and what follows it is shallow again."""

    def __init__(self, max_depth: int, max_attrs: int | None = None):
        super().__init__(convert_charrefs=False)
        self.max_depth, self.max_attrs = max_depth, max_attrs
        self.out: list[str] = []
        self.depth = 0  # kept elements open
        self.stack: list[tuple[str, bool]] = []  # open elements: (name, kept)
        self.where: dict[str, list[int]] = {}  # name -> positions in the stack, nearest last

    def _tag(self, tag: str, attrs: list, end: str = ">") -> str:
        if self.max_attrs is None or len(attrs) <= self.max_attrs:
            return self.get_starttag_text() or f"<{tag}{end}"
        kept = "".join(f' {k}="{html_lib.escape(v, quote=True)}"' if v is not None else f" {k}"
                       for k, v in attrs[: self.max_attrs])
        return f"<{tag}{kept}{end}"

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            self.out.append(self._tag(tag, attrs))
            return
        kept = self.depth < self.max_depth
        self.where.setdefault(tag, []).append(len(self.stack))
        self.stack.append((tag, kept))
        if kept:
            self.depth += 1
            self.out.append(self._tag(tag, attrs))
        else:
            self.out.append(" ")

    def handle_startendtag(self, tag, attrs):
        self.out.append(self._tag(tag, attrs, "/>"))

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        open_at = self.where.get(tag)
        if not open_at:  # nothing of that name is open: the parser decides (as before)
            self.out.append(f"</{tag}>")
            return
        at = open_at[-1]
        kept = self.stack[at][1]
        while len(self.stack) > at:  # close it and everything opened inside it
            name, was_kept = self.stack.pop()
            self.where[name].pop()
            self.depth -= was_kept
        self.out.append(f"</{tag}>" if kept else " ")

    def handle_data(self, data):
        self.out.append(html_lib.escape(data, quote=False) if self.cdata_elem is None else data)

    def handle_entityref(self, name):
        self.out.append(f"&{name};")

    def handle_charref(self, name):
        self.out.append(f"&#{name};")

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")


def flatten_deep_nesting(html: str, max_depth: int = MAX_DEPTH, max_attrs: int | None = None) -> str:
    """Return ``html`` with tags below ``max_depth`` removed (text kept); comments and PIs are dropped; with
    ``max_attrs``, each element keeps its first ``max_attrs`` attributes."""
    tok = _Flattener(max_depth, max_attrs)
    tok.feed(html)
    tok.close()
    return "".join(tok.out)


def tree_depth(root: etree._Element) -> int:
    """Levels of element nesting under and including ``root`` (an iterative walk: any depth)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        el, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in el if isinstance(c.tag, str))
    return deepest


def shallow_html(html: str, max_depth: int) -> str:
    """``html`` as it is when its parsed tree nests at most ``max_depth`` levels; otherwise with the tags
    below ``max_depth`` dropped and their text kept (:func:`flatten_deep_nesting`). For code that parses pages
    with libxml2's default limit of 256 levels (which silently drops everything deeper: LangChain's
    ``HTMLSectionSplitter``) or walks them recursively."""
    if html.count("<") <= max_depth:  # fewer tags than levels: nothing to do, no parsing
        return html
    root = parse_html(html)
    if root is None or tree_depth(root) <= max_depth:
        return html
    return flatten_deep_nesting(etree.tostring(root, method="html", encoding="unicode"), max_depth)


def _depth_limited(parser: etree.HTMLParser) -> bool:
    return any("depth" in (e.message or "").lower() for e in parser.error_log)


def parse_html(html: str | bytes, name: str = "<input>") -> etree._Element | None:
    """Parse a page (``str`` or ``bytes``) into its ``<html>`` root element.

    Returns ``None`` for an input with no content (empty or whitespace only). Never raises from inside
    the parser: failures become :class:`InputError` naming ``name``.
    """
    data = to_utf8(html, name)
    if not data.strip():
        return None
    if _HUGE_TAG.search(data):  # an element with (perhaps) very many attributes: see MAX_ATTRS
        data = flatten_deep_nesting(data.decode("utf-8", errors="replace"), max_depth=1 << 30,
                                    max_attrs=MAX_ATTRS).encode("utf-8")
    parser = _parser()
    try:
        root = etree.fromstring(data, parser=parser)
        if root is not None and _depth_limited(parser):
            parser = _parser()
            text = data.decode("utf-8", errors="replace")
            root = etree.fromstring(flatten_deep_nesting(text).encode("utf-8"), parser=parser)
    except etree.ParserError as exc:  # "Document is empty": only markup without elements or text
        if "empty" in str(exc).lower():
            return None
        raise InputError(f"{name}: HTML parser failed: {exc}") from exc
    except (etree.LxmlError, ValueError) as exc:
        raise InputError(f"{name}: HTML parser failed: {exc}") from exc
    if root is None:
        return None
    if root.tag != "html":  # libxml2 always wraps in <html>, but be explicit about what we return
        html_el = etree.Element("html")
        html_el.append(root)
        root = html_el
    return root
