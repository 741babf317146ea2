"""Lossless HTML cleaning: keep every piece of visible text, drop everything that costs tokens without meaning.

What :func:`clean_html` does, in order:

1. Decode (bytes: BOM, declared charset, UTF-8, Windows-1252) and parse with libxml2 (lxml); comments,
   processing instructions and the doctype go at parse time.
2. Drop ``script``, ``style``, ``noscript``, ``template``, ``iframe`` (and a few other non-visible
   elements) with their contents, and everything in ``<head>`` except ``<title>``.
3. Strip attributes except an allow-list that carries meaning: ``alt``/``title`` on images,
   ``colspan``/``rowspan`` (when not 1) on cells, optionally ``href`` on links.
4. In one bottom-up pass: normalise whitespace (collapse runs; drop it at block boundaries; ``<pre>`` keeps
   its whitespace exactly), replace ``<br>``/``<hr>`` by a space, drop elements with no text and no meaningful
   content (images with alt text, and empty cells that hold a table row's shape, are meaningful), and unwrap
   chains of single-child wrappers (``div > div > p`` becomes ``p``). Structural tags (html, body, title,
   headings, paragraphs, lists, tables, pre, blockquote) are never unwrapped.
5. Serialise as HTML (well-formed: every element closed, text escaped).

*Lossless* means: every run of visible text of the input's body, whitespace-normalised, appears in the
output's text in the same order (:func:`htmlrag.lossless.check_lossless` tests exactly this).
"""

from __future__ import annotations

import re
import lxml.etree as etree

from htmlrag.errors import InputError
from htmlrag.parse import parse_html

#: Elements removed together with their content.
DROP_WITH_CONTENT: tuple[str, ...] = (
    "script", "style", "noscript", "template", "iframe", "object", "embed", "applet", "canvas",
    "audio", "video", "source", "track", "map", "link", "meta", "base", "param", "frameset", "frame",
    "noembed", "noframes",
)
#: Never unwrapped, even when they wrap a single child.
STRUCTURAL: frozenset[str] = frozenset(
    "html head body title h1 h2 h3 h4 h5 h6 p pre blockquote table thead tbody tfoot tr td th caption "
    "ul ol li dl dt dd img figcaption".split()
)
#: Inline (phrasing) elements; every other element is treated as block-level for whitespace.
INLINE: frozenset[str] = frozenset(
    "a abbr b bdi bdo big cite code data del dfn em font i ins kbd label mark q rp rt ruby s samp small "
    "span strike strong sub sup time tt u var img br wbr".split()
)
_CELLS = frozenset(("td", "th"))
_BREAKS = frozenset(("br", "hr", "wbr"))
_HAS_ATTRIBUTES = etree.XPath("//*[@*]")
_COMMON_ATTRIBUTES = (
    "class id style href src alt title width height type name value rel target role lang dir content "
    "property itemprop itemscope itemtype colspan rowspan align valign border cellpadding cellspacing "
    "bgcolor color face size data-src srcset sizes loading decoding onclick onload onerror tabindex "
    "aria-hidden aria-label aria-labelledby aria-describedby aria-expanded aria-controls aria-live "
    "hidden method action for placeholder frameborder scrolling allowfullscreen async defer charset "
    "http-equiv xmlns nowrap clear span summary scope headers abbr start reversed datetime cite "
    "data-id data-url data-type data-href data-original data-lazy-src data-reactid data-testid "
    "data-component data-module data-track data-analytics data-index data-name data-value "
    "data-toggle data-target rules frame usemap shape coords label media crossorigin integrity"
).split()


def _attributes_to_keep(root: etree._Element, keep_href: bool) -> list[tuple[etree._Element, dict]]:
    saved: list[tuple[etree._Element, dict]] = []
    for img in root.iter("img"):
        kept = {k: v for k in ("alt", "title") if (v := img.get(k)) and v.strip()}
        if kept:
            saved.append((img, kept))
    for cell in root.iter("td", "th"):
        kept = {k: v for k in ("colspan", "rowspan") if (v := (cell.get(k) or "").strip()) and v != "1"}
        if kept:
            saved.append((cell, kept))
    if keep_href:
        for a in root.iter("a"):
            href = a.get("href")
            if href and not href.lower().startswith("javascript:"):
                saved.append((a, {"href": href}))
    return saved


def _strip_attributes(root: etree._Element, keep_href: bool) -> None:
    saved = _attributes_to_keep(root, keep_href)
    etree.strip_attributes(root, *_COMMON_ATTRIBUTES)  # in C: most attributes on real pages
    for el in _HAS_ATTRIBUTES(root):  # the rest, on the few elements that still carry one
        el.attrib.clear()
    for el, attrs in saved:
        for k, v in attrs.items():
            el.set(k, v)


def _remove(el: etree._Element, parent: etree._Element, sep: str = "") -> None:
    """Remove ``el`` (and its subtree) but keep its tail text in place."""
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + sep + tail
        else:
            parent.text = (parent.text or "") + sep + tail
    parent.remove(el)


def _unwrap_child(el: etree._Element, child: etree._Element) -> None:
    """Replace ``el``'s only child by the child's content (``el.text`` is blank, ``child.tail`` blank)."""
    el.text = child.text
    el.remove(child)  # its blank tail goes with it
    for grandchild in list(child):
        el.append(grandchild)  # moves, with the grandchild's tail


def clean_html(html: str | bytes, *, keep_href: bool = False, name: str = "<input>") -> str:
    """Clean a page losslessly (see the module docstring for exactly what is removed).

    Args:
        html: the page, as ``str`` or raw ``bytes`` (the encoding is detected).
        keep_href: keep ``href`` on links (off by default: URLs cost many tokens).
        name: how to call the input in error messages.

    Returns:
        The cleaned page as an HTML string; ``""`` for an input with no content.

    Raises:
        InputError: the input is not a page (binary data, wrong type), with ``name`` in the message.
    """
    root = parse_html(html, name)
    if root is None:
        return ""
    try:
        root = clean_tree(root, keep_href=keep_href)
        if not len(root) and not (root.text or "").strip():
            return ""
        return serialize(root)
    except (etree.LxmlError, ValueError, TypeError) as exc:  # pragma: no cover - defensive
        raise InputError(f"{name}: cleaning failed: {exc}") from exc


def serialize(root: etree._Element | None) -> str:
    """Serialise a (cleaned) tree as HTML text."""
    if root is None:
        return ""
    return etree.tostring(root, method="html", encoding="unicode")


def clean_tree(root: etree._Element, *, keep_href: bool = False) -> etree._Element:
    """Clean a parsed tree in place and return its root (see :func:`clean_html`)."""
    # Head: keep the first non-empty <title> only.
    for head in root.findall("head"):
        title = next((t for t in head.iter("title") if (t.text or "").strip()), None)
        for child in list(head):
            if child is not title:
                _remove(child, head)
        head.text = None
    etree.strip_elements(root, *DROP_WITH_CONTENT, with_tail=False)
    _strip_attributes(root, keep_href)

    # Keep every proxy alive in `elements` first: the id() sets below rely on lxml reusing live proxies.
    elements = list(root.iter())
    in_pre: set[int] = set()
    for pre in root.iter("pre", "textarea", "xmp", "listing", "plaintext"):
        in_pre.update(id(e) for e in pre.iter())
        if pre.tag in ("xmp", "listing", "plaintext"):
            pre.tag = "pre"  # raw-text elements: serialised as <pre> so that their text is escaped safely
    shape_only: set[int] = set()
    structural, inline, cells, breaks = STRUCTURAL, INLINE, _CELLS, _BREAKS
    for el in reversed(elements):
        tag = el.tag
        parent = el.getparent()
        if not isinstance(tag, str):  # entity references or leftovers: keep their tail only
            if parent is not None:
                _remove(el, parent)
            continue
        if tag in breaks:
            if parent is not None:
                _remove(el, parent, sep=" ")
            continue
        pre = id(el) in in_pre if in_pre else False
        block = tag not in inline

        # -- whitespace of el.text and the children's tails (children are final by now)
        text = el.text
        if text and not pre:
            if text.isspace():
                text = None if block else " "
            else:
                lead, trail = text[0].isspace(), text[-1].isspace()
                text = " ".join(text.split())
                if lead and not block:
                    text = " " + text
                if trail:
                    text += " "
        n = len(el)
        contentful = bool(text and not text.isspace())
        if n:
            prev = None
            for child in el:
                cblock = child.tag not in inline
                if cblock and not pre:  # whitespace just before a block child is insignificant
                    if prev is None:
                        if text:
                            text = text.rstrip()
                    elif prev.tail:
                        prev.tail = prev.tail.rstrip() or None
                tail = child.tail
                if tail:
                    if not pre:
                        if tail.isspace():
                            tail = None if cblock else " "
                        else:
                            lead, trail = tail[0].isspace(), tail[-1].isspace()
                            tail = " ".join(tail.split())
                            if lead and not cblock:
                                tail = " " + tail
                            if trail:
                                tail += " "
                    if tail and not tail.isspace():
                        contentful = True
                    child.tail = tail or None
                if not contentful and id(child) not in shape_only:
                    contentful = True
                prev = child
            if block and not pre and prev.tail:
                prev.tail = prev.tail.rstrip() or None
        elif block and text and not pre:
            text = text.rstrip()
        el.text = text or None

        if parent is None:  # the root stays, whatever it holds
            continue
        if not contentful:
            if tag == "img" and el.get("alt"):
                continue
            if tag in cells:
                shape_only.add(id(el))
                continue
            _remove(el, parent, sep="" if tag in inline else " ")
            continue

        # -- unwrap a single-child wrapper (el holds exactly one child and no text of its own)
        if n == 1 and el.text is None:
            child = el[0]
            if child.tail is None:
                ctag = child.tag
                child_inline = ctag in inline
                if tag not in structural and not (block and child_inline and ctag not in structural):
                    # remove el: the child takes its place
                    tail = el.tail
                    parent.replace(el, child)
                    child.tail = tail
                elif ctag not in structural and ctag != "img" and not (not child_inline and tag in inline):
                    _unwrap_child(el, child)
    return root
