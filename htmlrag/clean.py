"""Lossless HTML cleaning: keep every piece of visible text, drop everything that costs tokens without meaning.

What :func:`clean_html` does, in order:

1. Decode (bytes: BOM, declared charset, UTF-8, Windows-1252) and parse with libxml2 (lxml); comments,
   processing instructions and the doctype go at parse time.
2. Drop ``script``, ``style``, ``noscript``, ``template``, ``iframe`` (and a few other non-visible
   elements) with their contents, and everything in ``<head>`` except ``<title>``.
3. Strip attributes except an allow-list that carries meaning: ``alt``/``title`` on images,
   ``colspan``/``rowspan`` (when not 1) on cells, optionally ``href`` on links. Inline tags that mean nothing
   without attributes (``span``, ``font``, ... and ``a`` unless links are kept) are unwrapped.
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
#: Inline tags unwrapped outright (plus ``a`` unless links are kept).
UNWRAP_INLINE: tuple[str, ...] = ("span", "font", "abbr", "bdi", "bdo", "data", "time", "big", "small", "tt",
                                  "label", "nobr", "wbr")
_CELLS = frozenset(("td", "th"))
_BREAKS = frozenset(("br", "hr", "wbr"))


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
    return clean_page(html, keep_href=keep_href, name=name)[0]


def clean_page(html: str | bytes, *, keep_href: bool = False, name: str = "<input>",
               ) -> tuple[str, etree._Element | None]:
    """:func:`clean_html` that also returns the cleaned tree (``None`` when the result is empty), so a
    block tree can be built from it without parsing the cleaned HTML again. Its blocks are those of the
    parsed HTML, except in pages where cleaning left a nesting the HTML parser undoes (a ``<p>`` inside a
    ``<p>``): there sibling numbers in paths can differ (2 of 2129 trees of the shared pages)."""
    root = parse_html(html, name)
    if root is None:
        return "", None
    try:
        root = clean_tree(root, keep_href=keep_href)
        if not len(root) and not (root.text or "").strip():
            return "", None
        return serialize(root), root
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
    saved_attributes = _attributes_to_keep(root, keep_href)  # all attributes go in the pass below
    alt_images = {id(el) for el, attrs in saved_attributes if "alt" in attrs and el.tag == "img"}
    # Inline tags that carry no meaning once attributes are gone are unwrapped in C (text and children
    # stay in place); this also spares the Python pass below a third of the elements of a typical page.
    etree.strip_tags(root, *(UNWRAP_INLINE if keep_href else (*UNWRAP_INLINE, "a")))

    # Keep every proxy alive in `elements` first: the id() sets below rely on lxml reusing live proxies.
    elements = list(root.iter())
    pre_text: set[int] = set()  # elements whose text is inside <pre> (kept verbatim)
    pre_tail: set[int] = set()  # elements whose tail is inside <pre>
    for pre in root.iter("pre", "textarea", "xmp", "listing", "plaintext"):
        for e in pre.iter():
            pre_text.add(id(e))
            if e is not pre:
                pre_tail.add(id(e))
        if pre.tag in ("xmp", "listing", "plaintext"):
            pre.tag = "pre"  # raw-text elements: serialised as <pre> so that their text is escaped safely
    shape_only: set[int] = set()
    structural, inline, cells, breaks = STRUCTURAL, INLINE, _CELLS, _BREAKS
    for el in reversed(elements):
        attrib = el.attrib
        if attrib:
            attrib.clear()
        tag = el.tag
        parent = el.getparent()
        if parent is None:
            _normalise_root(el, inline, pre_text)
            continue
        if not isinstance(tag, str):  # entity references or leftovers: keep their tail only
            _remove(el, parent)
            continue
        if tag in breaks:
            _remove(el, parent, sep=" ")
            continue
        block = tag not in inline
        # Children are final by now; each child already normalised its own tail. Here: el's text, el's tail,
        # and the whitespace just before el if el is block-level.
        text = el.text
        if text and id(el) not in pre_text:
            if text.isspace():
                text = None
            else:
                lead, trail = text[0].isspace(), text[-1].isspace()
                text = " ".join(text.split())
                if lead and not block:
                    text = " " + text
                if trail and (not block or len(el)):
                    text += " "
            el.text = text
        n = len(el)
        if n and block and id(el) not in pre_text:
            last = el[-1]
            if last.tail and last.tail[-1] == " ":
                last.tail = last.tail.rstrip() or None
            first = el[0]
            if text and first.tag not in inline and text[-1] == " ":
                el.text = text = text.rstrip() or None
        tail = el.tail
        if tail and id(el) not in pre_tail:
            if tail.isspace():
                tail = None if block else " "
            else:
                lead, trail = tail[0].isspace(), tail[-1].isspace()
                tail = " ".join(tail.split())
                if lead and not block:
                    tail = " " + tail
                if trail:
                    tail += " "
            el.tail = tail
        if block and id(el) not in pre_tail:  # whitespace just before a block element is insignificant
            prev = el.getprevious()
            if prev is not None:
                if prev.tail and prev.tail[-1].isspace():
                    prev.tail = prev.tail.rstrip() or None
            elif parent.text and parent.text[-1].isspace():
                parent.text = parent.text.rstrip() or None

        contentful = bool(text) and not text.isspace()
        if not contentful and n:
            if not shape_only:
                contentful = True
            else:
                for child in el:
                    if id(child) not in shape_only or (child.tail and not child.tail.isspace()):
                        contentful = True
                        break
        if not contentful:
            if tag == "img" and id(el) in alt_images:
                continue
            if tag in cells:
                shape_only.add(id(el))
                continue
            _remove(el, parent, sep="" if tag in inline else " ")
            continue

        # -- unwrap a single-child wrapper (el holds exactly one child and no text of its own)
        if n == 1 and el.text is None:
            child = el[0]
            if child.tail is None or child.tail.isspace():
                ctag = child.tag
                child_inline = ctag in inline
                if tag not in structural and not (block and child_inline and ctag not in structural):
                    # remove el: the child takes its place
                    tail = el.tail
                    parent.replace(el, child)
                    child.tail = tail
                elif ctag not in structural and not (not child_inline and tag in inline):
                    child.tail = None
                    _unwrap_child(el, child)
    for el, attrs in saved_attributes:
        for k, v in attrs.items():
            el.set(k, v)
    return root


def _normalise_root(root: etree._Element, inline: frozenset[str], pre_text: set[int]) -> None:
    text = root.text
    if text and id(root) not in pre_text:
        root.text = " ".join(text.split()) or None
    if len(root):
        last = root[-1]
        if last.tail:
            last.tail = last.tail.rstrip() or None
