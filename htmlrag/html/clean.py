"""Lossless HTML cleaning: keep every piece of visible text, drop everything that costs tokens without meaning.

What :func:`clean_html` does, in order:

1. Decode (bytes: BOM, declared charset, UTF-8, Windows-1252) and parse with libxml2 (lxml); comments,
   processing instructions and the doctype go at parse time.
2. Drop ``script``, ``style``, ``noscript``, ``template``, ``iframe`` (and a few other non-visible
   elements) with their contents, and everything in ``<head>`` except ``<title>``; also elements hidden by
   their own markup (:func:`is_hidden`: an inline ``display:none`` or ``visibility:hidden`` style, the
   ``hidden`` attribute), e.g. Wikipedia's sort keys (``7002188700000000000188.7`` before ``188.7``) and
   coordinate microformats, unless ``keep_hidden``. Links unwrapped in step 3 are not looked at (there are
   twice as many links as spans in Wikipedia pages, and none is hidden).
3. Strip attributes except an allow-list that carries meaning: ``alt``/``title`` on images,
   ``colspan``/``rowspan`` (when not 1) on cells, optionally ``href`` on links. Inline tags that mean nothing
   without attributes (``span``, ``font``, ... and ``a`` unless links are kept) are unwrapped.
4. In one bottom-up pass: normalise whitespace (collapse runs; drop it at block boundaries; ``<pre>`` keeps
   its whitespace exactly), replace ``<br>``/``<hr>`` by a space, drop elements with no text and no meaningful
   content (images with alt text, and empty cells that hold a table row's shape, are meaningful), and unwrap
   chains of single-child wrappers (``div > div > p`` becomes ``p``). Structural tags (html, body, title,
   headings, paragraphs, lists, tables, pre, blockquote, textarea) are never unwrapped, and no element is
   moved into a parent that the HTML parser would close before it (``<ul><div><pre>`` stays:
   :data:`htmlrag.html.nesting.NOT_KEPT`).
5. Serialise as HTML (well-formed: every element closed, text escaped).

*Stable*: every output is a fixed point, ``clean_html(clean_html(x)) == clean_html(x)``, and it parses back
to the tree cleaning returned. So whitespace follows the rules of an element's final context (an inline
element's edge space unwrapped into a block goes: ``<td> <b>OC </b></td>`` gives ``<td>OC</td>``), and in the
rare page where stripping inline tags left an element in a parent the parser closes before it
(``<p><span><div>``), the cleaned tree is parsed and cleaned once more (:func:`clean_tree`; 1 of the 581
shared pages).

*Lossless* means: every run of visible text of the input's body, whitespace-normalised, appears in the
output's text in the same order (:func:`htmlrag.html.lossless.check_lossless` tests exactly this; text inside
:func:`is_hidden` elements is not visible).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import lxml.etree as etree

from htmlrag.core.errors import InputError
from htmlrag.html.nesting import NOT_KEPT, NOT_KEPT_UNDER
from htmlrag.html.parse import parse_html
from htmlrag.html.text import has_cjk

#: Elements removed together with their content.
DROP_WITH_CONTENT: tuple[str, ...] = (
    "script", "style", "noscript", "template", "iframe", "object", "embed", "applet", "canvas",
    "audio", "video", "source", "track", "map", "link", "meta", "base", "param", "frameset", "frame",
    "noembed", "noframes",
)
#: Never unwrapped, even when they wrap a single child.
STRUCTURAL: frozenset[str] = frozenset(
    "html head body title h1 h2 h3 h4 h5 h6 p pre blockquote table thead tbody tfoot tr td th caption "
    "ul ol li dl dt dd img figcaption textarea".split()
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
_ATTR_TAGS = frozenset(("img", "td", "th", "a"))  # the only elements that keep attributes
_BREAKS = frozenset(("br", "hr", "wbr"))
_PRE_TAGS = frozenset(("pre", "textarea"))  # text kept verbatim (xmp, listing, plaintext are renamed pre)


def _hidden_style(style: str | None) -> bool:
    """An inline style with ``display:none`` or ``visibility:hidden`` (case and spaces ignored)."""
    if not style:
        return False
    s = style.lower()
    if "none" not in s and "hidden" not in s:
        return False
    s = "".join(s.split())
    return "display:none" in s or "visibility:hidden" in s


def is_hidden(el: etree._Element) -> bool:
    """Hidden by its own markup: the ``hidden`` attribute or an inline ``display:none`` /
    ``visibility:hidden`` style. Browsers do not render such an element's text."""
    return el.get("hidden") is not None or _hidden_style(el.get("style"))


def _trim_before(el: etree._Element, parent: etree._Element) -> None:
    """Rule for a block element ``el``: no whitespace just before it (its previous sibling's tail, or its
    parent's text when it comes first)."""
    prev = el.getprevious()
    if prev is not None:
        if prev.tail and prev.tail[-1].isspace():
            prev.tail = prev.tail.rstrip() or None
    elif parent.text and parent.text[-1].isspace():
        parent.text = parent.text.rstrip() or None


class _Parts:
    """Text a removal appended to an element's tail or text, not joined yet (``parts``: non-empty strings in
    order; ``solid``: one holds a character that is not whitespace)."""

    __slots__ = ("parts", "solid")

    def __init__(self, parts: deque[str], solid: bool):
        self.parts, self.solid = parts, solid


class _Pending:
    """Tails of removed elements on their way to the text before them, joined once.

    Removing an element keeps its tail: it goes to the end of its previous sibling's tail, or of its parent's
    text. Joined at once, a run of n removed siblings (``a<br>a<br>...``, ``<b></b>a <b></b>a ...``) copies the
    growing text n times: 100,000 ``<br>`` took 26 s and 10 GB. Here the parts wait in a queue per receiving
    element (:meth:`attach`) and are joined when that element is looked at (:meth:`tail_of`, :meth:`text_of`)
    or at the end (:meth:`flush`): the same texts, each character copied a bounded number of times."""

    def __init__(self) -> None:
        self.tails: dict[int, tuple[etree._Element, _Parts]] = {}
        self.texts: dict[int, tuple[etree._Element, _Parts]] = {}

    def take(self, el: etree._Element) -> _Parts:
        """``el``'s tail with what waits for it, taken off ``el`` (which is being removed)."""
        _, p = self.tails.pop(id(el), (None, None))
        own = el.tail
        if p is None:
            return _Parts(deque((own,)) if own else deque(), bool(own) and not own.isspace())
        if own:
            p.parts.appendleft(own)
            p.solid = p.solid or not own.isspace()
        return p

    def attach(self, el: etree._Element, parent: etree._Element, p: _Parts, sep: str = "",
               settled: bool = False) -> None:
        """Remove ``el`` (and its subtree) but keep its tail, given as parts (``p``: :meth:`take`, maybe
        processed), in place: at the end of the previous sibling's tail, or of the parent's text, after ``sep``.

        ``settled``: ``el``'s later siblings are cleaned already (the bottom-up pass, outside ``<pre>``). A block
        element among them took the whitespace just before it off ``el``'s tail; with ``el`` gone and no tail,
        the whitespace before it is the text before ``el``, which loses its trailing whitespace too (``<img>
        <b></b><div>``: ``<img><div>``, as a second cleaning would give)."""
        if p.parts:
            if sep:
                p.parts.appendleft(sep)
            prev = el.getprevious()
            table, target = (self.tails, prev) if prev is not None else (self.texts, parent)
            held = table.get(id(target))
            if held is None:
                table[id(target)] = (target, p)
            else:  # (only one removal reaches an element in the bottom-up pass; in document order: short parts)
                held[1].parts.extend(p.parts)
                held[1].solid = held[1].solid or p.solid
        elif settled and (nxt := el.getnext()) is not None and nxt.tag not in INLINE:
            self.trim_before(el, parent)
        parent.remove(el)

    def remove(self, el: etree._Element, parent: etree._Element, sep: str = "", settled: bool = False) -> None:
        """:meth:`attach` with ``el``'s tail as it is."""
        if not el.tail and id(el) not in self.tails:  # nothing to move (most removed elements)
            if settled and (nxt := el.getnext()) is not None and nxt.tag not in INLINE:
                self.trim_before(el, parent)
            parent.remove(el)
            return
        self.attach(el, parent, self.take(el), sep, settled)

    def trim_before(self, el: etree._Element, parent: etree._Element) -> None:
        """:func:`_trim_before`, on the text waiting for the previous sibling (or parent) first."""
        prev = el.getprevious()
        held = (self.tails.get(id(prev)) if prev is not None else self.texts.get(id(parent))) \
            if self.tails or self.texts else None
        if held is not None:
            parts = held[1].parts
            while parts:
                last = parts.pop()
                kept = last.rstrip()
                if kept:
                    parts.append(kept)
                    return
        if prev is not None:  # (_trim_before, with the sibling already looked up: this runs for every block)
            if prev.tail and prev.tail[-1].isspace():
                prev.tail = prev.tail.rstrip() or None
        elif parent.text and parent.text[-1].isspace():
            parent.text = parent.text.rstrip() or None

    def tail_of(self, el: etree._Element) -> str | None:
        """``el.tail`` with what waits for it joined (and stored)."""
        held = self.tails.pop(id(el), None)
        if held is not None:
            el.tail = ((el.tail or "") + "".join(held[1].parts)) or None
        return el.tail

    def text_of(self, el: etree._Element) -> str | None:
        """``el.text`` with what waits for it joined (and stored)."""
        held = self.texts.pop(id(el), None)
        if held is not None:
            el.text = ((el.text or "") + "".join(held[1].parts)) or None
        return el.text

    def flush(self) -> None:
        """Join everything still waiting."""
        for el, _ in list(self.tails.values()):
            self.tail_of(el)
        for el, _ in list(self.texts.values()):
            self.text_of(el)


def _trim_inner_ends(el: etree._Element) -> None:
    """Rule for a block element ``el``: no whitespace at its inner ends. Its text starts with no space and ends
    with none unless an inline child follows; its last child's tail ends with no space. (Texts outside
    ``<pre>`` are collapsed by now: single spaces are their only whitespace.)"""
    text = el.text
    n = len(el)
    if text and (text[0] == " " or text[-1] == " "):
        text = text.lstrip()
        if not n or el[0].tag not in INLINE:
            text = text.rstrip()
        el.text = text or None
    if n:
        last = el[-1]
        if last.tail and last.tail[-1] == " ":
            last.tail = last.tail.rstrip() or None


def _unwrap_child(el: etree._Element, child: etree._Element, moved: list[etree._Element] | None) -> None:
    """Replace ``el``'s only child by the child's content (``el.text`` is blank, ``child.tail`` blank); the
    moved grandchildren that are single-child wrappers go to ``moved`` (not ``None`` if there are any)."""
    el.text = child.text
    el.remove(child)  # its blank tail goes with it
    for grandchild in list(child):
        el.append(grandchild)  # moves, with the grandchild's tail
        if grandchild.text is None and len(grandchild) == 1:
            moved.append(grandchild)  # type: ignore[union-attr]


def clean_html(html: str | bytes, *, keep_href: bool = False, name: str = "<input>", keep_hidden: bool = False,
               ) -> str:
    """Clean a page losslessly (see the module docstring for exactly what is removed).

    Args:
        html: the page, as ``str`` or raw ``bytes`` (the encoding is detected).
        keep_href: keep ``href`` on links (off by default: URLs cost many tokens).
        name: how to call the input in error messages.
        keep_hidden: keep elements hidden by their markup (:func:`is_hidden`; dropped by default: no reader
            of the page sees them).

    Returns:
        The cleaned page as an HTML string; ``""`` for an input with no content.

    Raises:
        InputError: the input is not a page (binary data, wrong type), with ``name`` in the message.
    """
    return clean_page(html, keep_href=keep_href, name=name, keep_hidden=keep_hidden)[0]


def clean_page(html: str | bytes, *, keep_href: bool = False, name: str = "<input>", keep_hidden: bool = False,
               ) -> tuple[str, etree._Element | None]:
    """:func:`clean_html` that also returns the cleaned tree (``None`` when the result is empty), so a
    block tree can be built from it without parsing the cleaned HTML again: the parse of the cleaned HTML is
    this very tree (same elements, same paths; see *Stable* in the module docstring)."""
    html_out, root, _ = _clean(html, keep_href, name, None, keep_hidden=keep_hidden)
    return html_out, root


def clean_page_counted(html: str | bytes, *, keep_href: bool = False, name: str = "<input>",
                       serialize_html: bool = True, keep_hidden: bool = False,
                       ) -> tuple[str | None, etree._Element | None, WordCounts | None]:
    """:func:`clean_page` that also returns the word counts of the cleaned tree's elements
    (:class:`WordCounts`; ``None`` for an empty result or a page with CJK text), for
    :func:`htmlrag.html.blocktree.build_block_tree` to use instead of counting again. With
    ``serialize_html=False`` the cleaned HTML is not built (``None`` in its place, ``""`` still for an empty
    page): for callers that only need the tree."""
    return _clean(html, keep_href, name, WordCounts({}, []), serialize_html, keep_hidden)


def _clean(html: str | bytes, keep_href: bool, name: str, counts: WordCounts | None, serialize_html: bool = True,
           keep_hidden: bool = False) -> tuple[str | None, etree._Element | None, WordCounts | None]:
    root = parse_html(html, name)
    if root is None:
        return "", None, None
    try:
        root = clean_tree(root, keep_href=keep_href, word_counts=counts, keep_hidden=keep_hidden)
        if not len(root) and not (root.text or "").strip():
            return "", None, None
        out = serialize(root) if serialize_html else None
        return out, root, (None if counts is None or counts.cjk else counts)
    except (etree.LxmlError, ValueError, TypeError) as exc:  # pragma: no cover - defensive
        raise InputError(f"{name}: cleaning failed: {exc}") from exc


def serialize(root: etree._Element | None) -> str:
    """Serialise a (cleaned) tree as HTML text."""
    if root is None:
        return ""
    return etree.tostring(root, method="html", encoding="unicode")


def _kept_attributes(el: etree._Element, tag: str, keep_href: bool) -> dict[str, str] | None:
    """The attributes of ``el`` that cleaning keeps (see the module docstring), or ``None``."""
    if tag == "img":
        kept = {k: v for k in ("alt", "title") if (v := el.get(k)) and v.strip()}
    elif tag in _CELLS:
        cs, rs = el.get("colspan"), el.get("rowspan")
        if cs is None and rs is None:
            return None
        kept = {k: w for k, v in (("colspan", cs), ("rowspan", rs)) if v and (w := v.strip()) and w != "1"}
    elif tag == "a" and keep_href:
        href = el.get("href")
        kept = {"href": href} if href and not href.lower().startswith("javascript:") else None
    else:
        return None
    return kept or None


@dataclass(eq=False)
class WordCounts:
    """Words of every element's content (its text and its descendants', image alt text included; not its
    tail), keyed by ``id(element)``, for a tree :func:`clean_tree` cleaned: what
    :func:`htmlrag.html.blocktree.build_block_tree` would count, computed during cleaning at almost no cost.
    Words are whitespace-separated pieces (valid for pages without CJK text, where the block tree counts
    each CJK character; :func:`clean_page` drops the counts for those). ``alive`` keeps the element proxies
    alive, so that the ids stay valid while the counts are used; :meth:`release` lets them go (a page kept in
    a cache then costs no more memory than its tree)."""

    by_id: dict[int, int] | None
    alive: list[etree._Element]
    #: The cleaned text (or an image's alt text) has a CJK character: the counts do not apply then.
    cjk: bool = False

    def release(self) -> None:
        """Drop the counts and the proxies (a block tree built afterwards counts words itself)."""
        self.by_id = None
        self.alive = []


#: How many times at most :func:`clean_tree` cleans the parse of its own result (once is always enough).
_MAX_RECLEANS = 2


def clean_tree(root: etree._Element, *, keep_href: bool = False,
               word_counts: WordCounts | None = None, keep_hidden: bool = False) -> etree._Element:
    """Clean a parsed tree in place and return its root (see :func:`clean_html`).

    ``word_counts``: if given (empty), it is filled with the word counts of the cleaned tree's elements.

    The result is what the HTML parser gives back for its serialisation (so cleaning it again changes
    nothing). In rare pages, unwrapping inline tags put an element directly in a parent that the parser closes
    before it (``<p><span><div>`` became ``<p><div>``; :data:`htmlrag.html.nesting.NOT_KEPT`): the pass notes
    it, and the cleaned tree is then serialised, parsed and cleaned again, and that new root is returned (the
    parser ends the ``p`` there, as it does when it reads the cleaned page).
    """
    for rounds_left in range(_MAX_RECLEANS, -1, -1):
        if not _clean_in_place(root, keep_href, word_counts, keep_hidden) or not rounds_left:
            break
        reparsed = parse_html(serialize(root))
        if reparsed is None:  # pragma: no cover - the tree holds an element below the root
            break
        root = reparsed
        if word_counts is not None and word_counts.by_id:
            word_counts.by_id.clear()
    return root


def _clean_in_place(root: etree._Element, keep_href: bool, word_counts: WordCounts | None,
                    keep_hidden: bool) -> bool:
    """One cleaning of ``root`` in place; True when an element is left where the parser would not keep it."""
    _keep_first_title(root)
    _strip_in_c(root, keep_href, keep_hidden)
    # Keep every proxy alive in `elements` first: the id() sets below rely on lxml reusing live proxies.
    elements = list(root.iter())
    pre_text, pre_tail = _preformatted(root)
    cleaner = _BottomUp(keep_href, keep_hidden, pre_text, pre_tail, word_counts)
    cjk = cleaner.run(elements)
    for el, attrs in cleaner.saved_attributes:  # the pass cleared every element's attributes
        for k, v in attrs.items():
            el.set(k, v)
    if word_counts is not None:
        word_counts.alive = elements
        word_counts.cjk = cjk
    return cleaner.not_kept


def _keep_first_title(root: etree._Element) -> None:
    """Empty ``<head>`` but for its first non-empty ``<title>``."""
    for head in root.findall("head"):
        title = next((t for t in head.iter("title") if (t.text or "").strip()), None)
        pending = _Pending()
        for child in list(head):
            if child is not title:
                pending.remove(child, head)
        pending.flush()
        head.text = None


def _strip_in_c(root: etree._Element, keep_href: bool, keep_hidden: bool) -> None:
    """Steps lxml does in C: drop non-content elements with their content (entity references, comments and
    processing instructions too; their tails stay), and unwrap the inline tags that carry no meaning once
    attributes are gone (text and children stay in place; this also spares :class:`_BottomUp` a third of the
    elements of a typical page). Hidden inline elements go before they are unwrapped (the other hidden
    elements in :class:`_BottomUp`; links are not looked at: 2x the spans in Wikipedia pages, none hidden)."""
    etree.strip_elements(root, *DROP_WITH_CONTENT, etree.Entity, etree.Comment, etree.ProcessingInstruction,
                         with_tail=False)
    unwrap = UNWRAP_INLINE if keep_href else (*UNWRAP_INLINE, "a")
    if not keep_hidden:
        pending = _Pending()
        for el in [e for e in root.iter(*UNWRAP_INLINE) if is_hidden(e)]:
            parent = el.getparent()  # None: inside a hidden element removed just before
            if parent is not None:
                pending.remove(el, parent)
        pending.flush()
    etree.strip_tags(root, *unwrap)


def _preformatted(root: etree._Element) -> tuple[set[int], set[int]]:
    """``id()`` of the elements whose text, and of those whose tail, is inside ``<pre>`` (kept verbatim).
    Raw-text elements (``xmp``, ``listing``, ``plaintext``) become ``<pre>`` so that their text is escaped."""
    pre_text: set[int] = set()
    pre_tail: set[int] = set()
    for pre in root.iter("pre", "textarea", "xmp", "listing", "plaintext"):
        for e in pre.iter():
            pre_text.add(id(e))
            if e is not pre:
                pre_tail.add(id(e))
        if pre.tag in ("xmp", "listing", "plaintext"):
            pre.tag = "pre"
    return pre_text, pre_tail


def _collapse(s: str, lead: bool, trail: bool) -> tuple[str, int]:
    """``s`` (not blank) with its whitespace runs collapsed to one space and its ends trimmed, except one space
    kept where ``s`` starts (``lead``) or ends (``trail``) with whitespace; and its number of words."""
    words = s.split()
    out = " ".join(words)
    if lead and s[0].isspace():
        out = " " + out
    if trail and s[-1].isspace():
        out += " "
    return out, len(words)


class _BottomUp:
    """The bottom-up pass of :func:`clean_tree` (step 4 of :func:`clean_html`) over a tree's elements.

    Children are final when their parent is visited. Per element: attributes, its text, its tail, the
    whitespace just before it if block-level, removal when it holds nothing, its word count, and the unwrapping
    of a single-child wrapper. Word counts go bottom-up: ``inner[id(el)]`` sums what el's processed children
    contribute (their words and their tails' words); every change cleaning makes to a text after its element
    is processed keeps its words (whitespace trimmed, a wrapper swapped for its only child), so each count is
    final when made.
    """

    def __init__(self, keep_href: bool, keep_hidden: bool, pre_text: set[int], pre_tail: set[int],
                 word_counts: WordCounts | None):
        self.keep_href, self.drop_hidden = keep_href, not keep_hidden
        self.pre_text, self.pre_tail = pre_text, pre_tail
        self.counting = word_counts is not None
        self.counts: dict[int, int] = word_counts.by_id if word_counts is not None else {}
        self.inner: dict[int, int] = {}
        self.shape_only: set[int] = set()  # empty cells kept for a row's shape
        self.saved_attributes: list[tuple[etree._Element, dict]] = []  # restored after the pass
        self.links: set[int] = set()  # ids of links that keep their href (keep_href): never unwrapped
        #: An element sits in a parent that libxml2's parser would close before it (:data:`NOT_KEPT`).
        self.not_kept = False
        self.pending = _Pending()  # removed elements' tails on their way (see _Pending)

    def run(self, elements: list[etree._Element]) -> bool:
        """:meth:`_run`, then what still waits is joined."""
        try:
            return self._run(elements)
        finally:
            self.pending.flush()

    def _run(self, elements: list[etree._Element]) -> bool:
        """Clean ``elements`` (a tree's elements in document order) from the last; True if a text had CJK."""
        inline, breaks, attr_tags, pre_text, pre_tail = INLINE, _BREAKS, _ATTR_TAGS, self.pre_text, self.pre_tail
        any_pre, drop_hidden, counting = bool(pre_text), self.drop_hidden, self.counting
        counts, inner, shape_only, not_kept_under = self.counts, self.inner, self.shape_only, NOT_KEPT_UNDER
        pending = self.pending
        pending_texts, pending_tails = pending.texts, pending.tails  # (looked up here: this loop is the hot path)
        # CJK text makes the counts invalid (the block tree counts each CJK character): looked for in each text
        # while counting, until found (a non-ASCII test first: most texts are ASCII).
        look = counting
        for el in reversed(elements):
            tag, attrib, eid = el.tag, el.attrib, id(el)
            alt_words = 0  # words of an image's alt text (such an image is kept without other content)
            if attrib:
                if drop_hidden and (((style := attrib.get("style")) and _hidden_style(style)) or "hidden" in attrib):
                    parent = el.getparent()  # its subtree was cleaned for nothing (bottom-up): rare
                    if parent is not None:
                        pending.remove(el, parent, "" if tag in inline else " ", not (any_pre and eid in pre_tail))
                        continue
                if tag in attr_tags and (alt := self.save_attributes(el, tag)):
                    alt_words = len(alt.split())
                    look = look and (alt.isascii() or not has_cjk(alt))
                attrib.clear()
            parent = el.getparent()
            if parent is None:
                look = self.finish_root(el, look)
                continue
            if tag in breaks:
                pending.remove(el, parent, " ", not (any_pre and eid in pre_tail))
                continue
            block, n = tag not in inline, len(el)
            # el's text, el's tail, and the whitespace just before el if el is block-level.
            in_pre = any_pre and eid in pre_text
            text, text_words = (el.text if eid not in pending_texts else pending.text_of(el)), 0
            if text:
                if in_pre:
                    text_words = len(text.split()) if counting else 0
                    look = look and (text.isascii() or not has_cjk(text))
                elif text.isspace():
                    el.text = text = None
                else:
                    look = look and (text.isascii() or not has_cjk(text))
                    text, text_words = _collapse(text, not block, not block or n > 0)
                    el.text = text
            if n and block and not in_pre:  # no whitespace at the inner ends of a block element
                last = el[-1]
                if last.tail and last.tail[-1] == " ":
                    last.tail = last.tail.rstrip() or None
                if text and el[0].tag not in inline and text[-1] == " ":
                    el.text = text = text.rstrip() or None
            tail_in_pre = any_pre and eid in pre_tail
            drop = not ((text and not text.isspace()) or (n and (not shape_only or _has_content(el, shape_only))))
            if drop and not alt_words and tag not in _CELLS:
                self.drop_unjoined(el, parent, block, tail_in_pre)
                continue
            tail, tail_words = (el.tail if eid not in pending_tails else pending.tail_of(el)), 0
            if tail:
                if tail_in_pre:
                    tail_words = len(tail.split()) if counting else 0
                    look = look and (tail.isascii() or not has_cjk(tail))
                elif tail.isspace():
                    el.tail = None if block else " "
                else:
                    look = look and (tail.isascii() or not has_cjk(tail))
                    el.tail, tail_words = _collapse(tail, not block, True)
            if block and not tail_in_pre:  # nor just before it
                pending.trim_before(el, parent)
            if drop:  # (an image with alt text or a cell: the others went above)
                self.keep_empty(el, parent, tag, alt_words, tail_words)
                continue
            if counting:
                words_el = text_words + alt_words + inner.pop(eid, 0) if n else text_words + alt_words
                counts[eid] = words_el
                pid = id(parent)
                inner[pid] = inner.get(pid, 0) + words_el + tail_words
            if (under := not_kept_under.get(tag)) is not None and parent.tag in under:
                self.not_kept = True  # stripping inline tags put el where the parser would not keep it
            if n == 1 and el.text is None:
                _unwrap_single(el, parent, tag, block, in_pre, links=self.links)
        return not look if counting else False

    def drop_unjoined(self, el: etree._Element, parent: etree._Element, block: bool, tail_in_pre: bool) -> None:
        """Remove an element that holds nothing (and is no cell or image with alt text) as the pass would after
        processing its tail -- without joining that tail (:class:`_Pending`). The processing left to do is
        what changes more than whitespace runs, which the receiving text collapses when it is processed: a
        tail of whitespace only is none after a block element and one space after an inline one; the
        whitespace just before a block element goes."""
        pending = self.pending
        if not el.tail and id(el) not in pending.tails:  # nothing to move (most removed elements)
            if block and not tail_in_pre:
                pending.trim_before(el, parent)
            pending.remove(el, parent, settled=not tail_in_pre)
            return
        p = pending.take(el)
        if p.parts and not p.solid and not tail_in_pre:
            p.parts = deque() if block else deque((" ",))
        if block and not tail_in_pre:
            pending.trim_before(el, parent)
        pending.attach(el, parent, p, " " if block else "", not tail_in_pre)

    def save_attributes(self, el: etree._Element, tag: str) -> str | None:
        """Remember the attributes of ``el`` that cleaning keeps (:func:`_kept_attributes`; the pass clears
        them all); returns an image's kept alt text (``None`` otherwise)."""
        kept = _kept_attributes(el, tag, self.keep_href)
        if not kept:
            return None
        self.saved_attributes.append((el, kept))
        if tag == "a":
            self.links.add(id(el))
        return kept.get("alt") if tag == "img" else None

    def finish_root(self, root: etree._Element, look: bool) -> bool:
        """Normalise the root's text and its last child's tail, count its words; returns ``look`` (False once
        a CJK text is seen)."""
        text = self.pending.text_of(root)
        if text and id(root) not in self.pre_text:
            root.text = " ".join(text.split()) or None
        if len(root):
            last = root[-1]
            if last.tail:
                last.tail = last.tail.rstrip() or None
        if self.counting:
            self.counts[id(root)] = len((root.text or "").split()) + self.inner.get(id(root), 0)
            if look and root.text and not root.text.isascii() and has_cjk(root.text):
                look = False
        return look

    def keep_empty(self, el: etree._Element, parent: etree._Element, tag: str, alt_words: int,
                   tail_words: int) -> None:
        """``el`` holds nothing but stays: an image with alt text, or an empty cell (a row's shape), counted.
        (Every other empty element went before its tail was processed: :meth:`drop_unjoined`.)"""
        if tag in _CELLS:
            if not alt_words:
                self.shape_only.add(id(el))
            if parent.tag in NOT_KEPT_UNDER[tag]:  # as in run(): a cell that stripping moved (<b><th>)
                self.not_kept = True
        if self.counting:
            self.counts[id(el)] = alt_words
            pid = id(parent)
            self.inner[pid] = self.inner.get(pid, 0) + alt_words + tail_words


def _has_content(el: etree._Element, shape_only: set[int]) -> bool:
    """``el`` (without text of its own) holds more than the empty cells in ``shape_only`` (a row's shape)."""
    for child in el:  # noqa: SIM110 (any() over a generator here: cleaning ~5% slower, measured)
        if id(child) not in shape_only or (child.tail and not child.tail.isspace()):
            return True
    return False


def _unwrap_single(el: etree._Element, parent: etree._Element, tag: str, block: bool, in_pre: bool,
                   moved: list[etree._Element] | None = None, links: set[int] | frozenset[int] = frozenset()) -> None:
    """Unwrap a single-child wrapper (``el`` holds one child and no text of its own): ``el`` gives way to
    its child, or the child to its content, unless structure forbids (:data:`STRUCTURAL`) or the HTML parser
    would not keep an element so moved in its new parent (:data:`htmlrag.html.nesting.NOT_KEPT`: ``<pre>`` in
    ``<ul>``, ``<p>`` in ``<b>``, ``<li>`` in ``<li>``), so that a cleaned page parses back as cleaned.

    Whitespace then follows the rules of the new context (outside ``<pre>``, ``in_pre``): a block child that
    took an inline ``el``'s place has no whitespace just before or after it, and a block ``el`` that took its
    inline child's content has none at its inner ends (``<td><b>OC </b></td>`` gives ``<td>OC</td>``).
    A moved element that is a wrapper itself, whose unwrapping its old parent may have refused, is unwrapped in
    its new place too (``<b><div><p>`` in a ``<div>``: ``<p>``); ``moved`` collects those when given, else
    they are done here. A link that keeps its ``href`` (``links``: ids, with ``keep_href``) is never unwrapped,
    neither as the wrapper nor as the only child (``<p><a href=u>text</a></p>`` keeps its link)."""
    child = el[0]
    if child.tail is not None and not child.tail.isspace():
        return
    if links and (id(el) in links or id(child) in links):
        return
    ctag = child.tag
    child_inline = ctag in INLINE
    todo = moved
    if tag not in STRUCTURAL and not (block and child_inline and ctag not in STRUCTURAL):
        if ctag in NOT_KEPT.get(parent.tag, ()):
            return
        tail = el.tail  # remove el: the child takes its place
        parent.replace(el, child)
        if not block and not child_inline and not in_pre:
            child.tail = (tail.lstrip() or None) if tail else None
            _trim_before(child, parent)
        else:
            child.tail = tail
        if child.text is None and len(child) == 1:
            if moved is None:
                todo = [child]
            else:
                moved.append(child)
    elif ctag not in STRUCTURAL and not (not child_inline and tag in INLINE):
        if len(child):
            not_kept = NOT_KEPT.get(tag, ())
            for grandchild in child:
                if grandchild.tag in not_kept:
                    return
            todo = [] if moved is None else moved
            # el itself is looked at again once the moved grandchildren are done (a stack: they go on top):
            # unwrapping them may leave el a single-child wrapper again (<body><option><b><option>a: the
            # body takes <b>, the <b> gives way to the inner <option>, and the body wraps it alone).
            todo.append(el)
        child.tail = None
        _unwrap_child(el, child, todo)
        if child_inline and not in_pre:
            _trim_inner_ends(el)
    while moved is None and todo:
        x = todo.pop()
        xtag, xparent = x.tag, x.getparent()
        if xparent is not None and x.text is None and len(x) == 1:
            _unwrap_single(x, xparent, xtag, xtag not in INLINE, in_pre or xtag in _PRE_TAGS, todo, links)
