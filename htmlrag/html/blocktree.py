"""The block tree (HtmlRAG Algorithm 1): split a cleaned page into blocks of at most ``max_words`` words.

Breadth-first from the root: a node whose whole content has at most ``max_words`` words becomes one block
(a *leaf* block); otherwise its children are visited and its own direct text (its text plus its children's
tails), if any, becomes a *non-leaf* block. An element without element children is a leaf block whatever its
size. Words are counted per text node with :func:`htmlrag.html.text.count_words` (whitespace-separated pieces;
each CJK character counts one) and summed; an image's alt text counts as its words. Children without any
words (e.g. an empty cell that keeps a row's shape) are not blocks and are never removed by pruning.

Blocks are addressed by *paths* of tag names from the root, where siblings that share a tag name are told
apart by a suffix (``div0``, ``div1``, ...; the released HtmlRAG pruners were trained on this form, numbered
from 0). The suffixes exist only in paths: the tree's elements are never renamed, so HTML serialised from
the tree is plain HTML. ``<head>`` is transparent in paths (``<html><title>``), as in the released pruners'
data. Each block keeps its element so pruning can remove exactly that block.

Everything here is iterative: a page nested 100 000 levels deep does not hit Python's recursion limit, and
paths are stored as parent links so deep trees cost memory linear in their size.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

import lxml.etree as etree

from htmlrag.core.errors import InputError
from htmlrag.html.clean import INLINE, WordCounts, clean_html, serialize
from htmlrag.html.parse import parse_html
from htmlrag.html.text import count_words, has_cjk

_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6", "caption"))


class PathNode:
    """One step of a block path; paths share their prefixes through ``parent`` links."""

    __slots__ = ("depth", "name", "parent")

    def __init__(self, name: str, parent: PathNode | None):
        self.name = name
        self.parent = parent
        self.depth = 1 if parent is None else parent.depth + 1

    def names(self) -> tuple[str, ...]:
        out: list[str] = []
        node: PathNode | None = self
        while node is not None:
            out.append(node.name)
            node = node.parent
        return tuple(reversed(out))


@dataclass(eq=False)
class Block:
    """A block of the tree.

    Attributes:
        index: position in :attr:`BlockTree.blocks` (breadth-first order).
        is_leaf: True when the block is a whole subtree; False when it is only the direct text of an
            element whose children are blocks of their own.
        words: number of words of the block's text.
        text: the block's text (whole subtree for a leaf block; own direct text for a non-leaf block), with
            spaces at block-level element boundaries and image alt text; computed on first use.
        element: the element the block maps to, in :attr:`BlockTree.root`.
        page: index of the page the block comes from (several pages per question).
        position: index of :attr:`element` in document order (``list(root.iter())``); ties in ranking
            are broken by it, and pruning uses it to find the element in a copy of the tree.
    """

    index: int
    is_leaf: bool
    words: int
    element: etree._Element = field(repr=False)
    page: int = 0
    position: int = 0
    _path: PathNode = field(repr=False, default=None)  # type: ignore[assignment]

    _text: str | None = field(repr=False, default=None)
    #: With sibling packing: every element of the block (consecutive siblings), and their positions.
    members: tuple[etree._Element, ...] = field(repr=False, default=())
    member_positions: tuple[int, ...] = field(repr=False, default=())

    @property
    def elements(self) -> tuple[etree._Element, ...]:
        """The elements the block covers: one, or several consecutive siblings when packed."""
        return self.members or (self.element,)

    @property
    def positions(self) -> tuple[int, ...]:
        """Document-order positions of :attr:`elements`."""
        return self.member_positions or (self.position,)

    @property
    def text(self) -> str:
        """The block's text (computed on first use from :attr:`element`)."""
        if self._text is None:
            if not self.is_leaf:
                self._text = _own_text(self.element)
            else:
                self._text = " ".join(subtree_text(e) for e in self.elements)
        return self._text

    @property
    def path(self) -> tuple[str, ...]:
        """Tag names from the root to the block's element, with sibling suffixes (``("html", "body", "div0")``)."""
        return self._path.names()

    @property
    def depth(self) -> int:
        """Length of :attr:`path`."""
        return self._path.depth

    @property
    def path_str(self) -> str:
        """The path as the generative pruners read it: ``"<html><body><div0><p>"``."""
        return "".join(f"<{n}>" for n in self.path)


@dataclass(eq=False)
class BlockTree:
    """A parsed page and its blocks. ``root`` is owned by the tree; pruning works on a copy of it."""

    root: etree._Element | None
    blocks: list[Block]
    max_words: int
    page: int = 0
    #: The page has CJK text (words are counted per character there); unknown counts as True.
    cjk: bool = True
    _rank_texts: list[str] | None = field(default=None, repr=False)
    #: Nearest heading text at each document position of ``root`` (shared with trees over the same root).
    _heading_at: list[str] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.blocks)

    def __iter__(self) -> Iterator[Block]:
        return iter(self.blocks)

    def __getitem__(self, i: int) -> Block:
        return self.blocks[i]

    def html(self) -> str:
        """The page as HTML (plain tag names; no sibling suffixes)."""
        return serialize(self.root)

    def rank_texts(self) -> list[str]:
        """Texts for rankers: each block's text preceded by its context, i.e. the nearest preceding heading
        (``h1``-``h6`` or table ``caption``) and, for table rows, the table's first row. The context helps
        rankers place short blocks (a table row, a list item); it is never part of the pruned output."""
        if self._rank_texts is None:
            self._rank_texts = [f"{c} {b.text}" if c else b.text for b, c in zip(self.blocks, self._contexts(),
                                                                                   strict=True)]
        return self._rank_texts

    def _contexts(self) -> list[str]:
        if self.root is None:
            return ["" for _ in self.blocks]
        if self._heading_at is None:
            self._heading_at = self._walk()
        heading_at = self._heading_at  # block texts not filled by a walk are computed per block on use
        out = []
        for b in self.blocks:
            parts = [heading_at[b.position] if b.position < len(heading_at) else ""]
            el = b.element
            if el.tag == "tr":
                table = el.getparent()
                while table is not None and table.tag != "table":
                    table = table.getparent()
                first = next(table.iter("tr"), None) if table is not None else None
                if first is not None and first is not el:
                    parts.append(" ".join("".join(first.itertext()).split()))
            out.append(" ".join(p for p in parts if p))
        return out

    def _walk(self) -> list[str]:
        """One pass over the page: fills every leaf block's text not yet computed (as :func:`subtree_text`
        would, without a walk per block) and returns the nearest heading text at each document position."""
        parts: list[str] = []
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        heading_at: list[str] = []
        current = ""
        inline, headings, root = INLINE, _HEADINGS, self.root
        add, at = parts.append, heading_at.append
        wanted = {id(e) for b in self.blocks if b.is_leaf and b._text is None for e in b.elements}
        keep = []  # proxies of wanted elements stay alive while their ids are used
        inside = None  # the wanted element being walked (leaf blocks do not nest: no id checks inside one)
        for event, node in etree.iterwalk(root, events=("start", "end")):
            if event == "start":
                tag = node.tag
                if tag in headings:
                    current = " ".join("".join(node.itertext()).split())
                at(current)
                if tag not in inline and node is not root:
                    add(" ")
                if inside is None and id(node) in wanted:
                    start[id(node)] = len(parts)
                    keep.append(node)
                    inside = node
                text = node.text
                if text:
                    add(text)
                if tag == "img" and (alt := node.get("alt")):
                    add(alt)
            else:
                if node is inside:
                    end[id(node)] = len(parts)
                    inside = None
                if node is not root:
                    if node.tag not in inline:
                        add(" ")
                    tail = node.tail
                    if tail:
                        add(tail)
        for b in self.blocks:
            if b.is_leaf and b._text is None:
                b._text = " ".join(
                    (e.get("alt") or "") if e.tag == "img" else "".join(parts[start[id(e)] : end[id(e)]])
                    for e in b.elements)
        return heading_at

    @property
    def paths(self) -> list[str]:
        """Every block's :attr:`Block.path_str`, in block order."""
        return [b.path_str for b in self.blocks]


def _word_counts(root: etree._Element) -> tuple[dict[int, int], list[etree._Element], bool]:
    """Words of every element's content (not its tail), bottom-up in one pass; keyed by ``id(element)``.

    Each text node is counted on its own (a word is never split across two text nodes' counts: after
    cleaning, text nodes meet at tag boundaries, which separate words in rendered HTML).
    """
    elements = list(root.iter())
    cjk = has_cjk("".join(root.itertext()))
    cw = count_words if cjk else (lambda t: len(t.split()))
    counts: dict[int, int] = {}
    for el in reversed(elements):
        n = cw(el.text) if el.text else 0
        if el.tag == "img":
            alt = el.get("alt")
            if alt:
                n += cw(alt)
        for child in el:
            n += counts[id(child)]
            if child.tail:
                n += cw(child.tail)
        counts[id(el)] = n
    return counts, elements, cjk  # the caller keeps `elements` alive: the ids are valid while it does


def _own_text(el: etree._Element) -> str:
    parts = [el.text or ""]
    parts.extend(child.tail or "" for child in el)
    return "".join(parts)


def subtree_text(el: etree._Element) -> str:
    """All text of ``el`` in document order; image alt text stands in for images and block-level element
    boundaries become spaces (so ``<li>Home</li><li>Shop</li>`` reads "Home Shop", not "HomeShop")."""
    if el.tag == "img":
        return el.get("alt") or ""
    parts: list[str] = []
    inline = INLINE
    for event, node in etree.iterwalk(el, events=("start", "end")):
        if event == "start":
            if node.tag not in inline and node is not el:
                parts.append(" ")
            if node.text:
                parts.append(node.text)
            if node.tag == "img" and (alt := node.get("alt")):
                parts.append(alt)
        elif node is not el:
            if node.tag not in inline:
                parts.append(" ")
            if node.tail:
                parts.append(node.tail)
    return "".join(parts)


def _element_children(el: etree._Element) -> list[etree._Element]:
    out = []
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "head" and el.getparent() is None:  # head is transparent in paths
            out.extend(c for c in child if isinstance(c.tag, str))
        else:
            out.append(child)
    return out


def build_block_tree(
    html: str | bytes | etree._Element,
    max_words: int = 256,
    *,
    clean: bool = False,
    page: int = 0,
    max_depth: int | None = None,
    sibling_index_base: int = 0,
    pack_siblings: bool = False,
    name: str = "<input>",
    word_counts: WordCounts | None = None,
    keep_whole: Collection[str] = (),
) -> BlockTree:
    """Split a page into blocks (Algorithm 1 of the HtmlRAG paper; see the module docstring).

    Args:
        html: cleaned HTML (``str``/``bytes``) or an already parsed root element (used as is, not copied).
        max_words: the largest number of words a block may hold (unless it cannot be split further).
        clean: run :func:`htmlrag.clean_html` first (pass already cleaned HTML to avoid doing it twice).
        page: page index recorded on every block.
        max_depth: optional limit on path depth; a node at this depth becomes a leaf block whatever its size.
        sibling_index_base: first suffix number for same-named siblings (0 as in the released pruners).
        pack_siblings: our extension, off by default: when a node is split, runs of consecutive small
            children are packed into one block of up to ``max_words`` words (instead of one block per child),
            so table rows and list items are ranked with their neighbours. A packed block covers several
            elements (:attr:`Block.elements`); its path is its first element's. Generative rankers need one
            element per path: do not pack for them.
        name: how to call the input in error messages.
        word_counts: the counts :func:`htmlrag.html.clean.clean_page_counted` returned with ``html`` (a root
            element cleaned by it), to spare counting again; ``None``: counted here.
        keep_whole: tags whose elements are never divided: each is one leaf block whatever its size (pruning
            passes ``("tr",)`` when it splits a block: a table row is the smallest unit it takes).

    Returns:
        The tree; zero blocks for a page without content.
    """
    if max_words < 1:
        raise InputError(f"{name}: max_words must be >= 1, got {max_words}")
    if isinstance(html, etree._Element):
        root: etree._Element | None = html
    else:
        if clean:
            html = clean_html(html, name=name)
        root = parse_html(html, name)
    if root is None:
        return BlockTree(None, [], max_words, page)
    if word_counts is not None and word_counts.by_id is not None and root is html:
        stats, elements, cjk = word_counts.by_id, list(root.iter()), False
    else:
        stats, elements, cjk = _word_counts(root)
    builder = _TreeBuilder(stats, {id(e): i for i, e in enumerate(elements)}, max_words, page, max_depth,
                           sibling_index_base, pack_siblings, frozenset(keep_whole))
    builder.build(root)
    return BlockTree(root, builder.blocks, max_words, page, cjk)


class _TreeBuilder:
    """The breadth-first walk of :func:`build_block_tree`: ``stats`` are the words of each element's content
    and ``position`` its document-order index (both keyed by ``id``); blocks are appended in walk order."""

    def __init__(self, stats: dict[int, int], position: dict[int, int], max_words: int, page: int,
                 max_depth: int | None, sibling_index_base: int, pack_siblings: bool, keep_whole: frozenset[str]):
        self.stats, self.position = stats, position
        self.max_words, self.page, self.max_depth = max_words, page, max_depth
        self.sibling_index_base, self.pack_siblings = sibling_index_base, pack_siblings
        self.keep_whole = keep_whole
        self.blocks: list[Block] = []

    def add(self, el: etree._Element, path: PathNode, is_leaf: bool, words: int) -> None:
        self.blocks.append(Block(len(self.blocks), is_leaf, words, el, self.page, self.position[id(el)], path))

    def build(self, root: etree._Element) -> None:
        """All blocks of the page under ``root``: the whole page when it is small enough, else a walk that
        splits every node over ``max_words`` words."""
        total = self.stats[id(root)]
        root_path = PathNode(root.tag, None)
        if total <= self.max_words or root.tag in self.keep_whole:
            if total > 0:
                self.add(root, root_path, True, total)
            return
        queue: deque[tuple[etree._Element, PathNode]] = deque([(root, root_path)])
        while queue:
            el, path = queue.popleft()
            children = _element_children(el)
            if not children:
                self.add(el, path, True, self.stats[id(el)])
                continue
            self.split(el, path, children, queue)
            own = count_words(el.text or "") + sum(count_words(c.tail) for c in el if c.tail)
            if own > 0:
                self.add(el, path, False, own)

    def split(self, el: etree._Element, path: PathNode, children: list[etree._Element],
              queue: deque[tuple[etree._Element, PathNode]]) -> None:
        """Blocks for the children of ``el`` (too big to be one block): each child over ``max_words`` is
        queued to be split in turn, the others become leaf blocks (runs of them packed with
        ``pack_siblings``). Children without content are not blocks (an empty cell keeps a row's shape)."""
        counts = Counter(c.tag for c in children)
        seen: Counter[str] = Counter()
        run: list[tuple[etree._Element, PathNode, int]] = []
        run_words = 0  # words of `run` (summing the run per child would be quadratic in a long table)
        max_words, max_depth, stats, keep_whole = self.max_words, self.max_depth, self.stats, self.keep_whole
        for child in children:
            tag = child.tag
            if counts[tag] > 1:
                label = f"{tag}{seen[tag] + self.sibling_index_base}"
                seen[tag] += 1
            else:
                label = tag
            words = stats[id(child)]
            if words == 0 and not (child.tag == "img" and child.get("alt")):
                continue
            child_path = PathNode(label, path)
            if words > max_words and tag not in keep_whole and (max_depth is None or child_path.depth < max_depth):
                self.flush(run)
                run_words = 0
                queue.append((child, child_path))
            elif not self.pack_siblings:
                self.add(child, child_path, True, words)
            else:
                if run and run_words + words > max_words:
                    self.flush(run)
                    run_words = 0
                run.append((child, child_path, words))
                run_words += words
        self.flush(run)

    def flush(self, run: list[tuple[etree._Element, PathNode, int]]) -> None:
        """The packed run of small siblings as one block (a single element: a plain leaf block); empties it."""
        if not run:
            return
        if len(run) == 1:
            self.add(run[0][0], run[0][1], True, run[0][2])
        else:
            first, first_path, _ = run[0]
            position = self.position
            self.blocks.append(Block(len(self.blocks), True, sum(w for _, _, w in run), first, self.page,
                                     position[id(first)], first_path, None, tuple(e for e, _, _ in run),
                                     tuple(position[id(e)] for e, _, _ in run)))
        run.clear()
