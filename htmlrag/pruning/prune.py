"""Greedy block-tree pruning to a token budget (HtmlRAG Algorithm 2), exact and incremental.

Given the block trees of one question's pages and one score per block, keep blocks in score order while the
pruned context still fits ``budget`` tokens, and remove every other block exactly: a removed leaf block
disappears with its subtree; a removed non-leaf block loses only its own direct text (its children are
blocks of their own). Elements left without content are then dropped and single-child wrappers unwrapped
(the cleaning rules), pages with nothing kept are left out, and the pages are joined with ``separator``.

Token accounting is incremental and lazy: blocks are tokenized in rank order, in batches, only while they
could still fit (a block whose lower bound shows it cannot fit the room left is skipped without tokenizing
it: half its words, for tokenizers where a word is at least one token, then the segments of its markup,
:func:`htmlrag.pruning.tokens.segment_count`, for tokenizers whose vocabulary passed that check, after the cheaper
bound its tags alone give, :func:`_tags_lower_bound`); a kept block costs
its serialised size plus the open/close tags of the ancestors it brings in. This estimate selects the
blocks. The final context is then tokenized once to verify it; if tokenizer merges across boundaries pushed
it over the budget, the lowest-ranked kept blocks are dropped until it fits. The result never exceeds the
budget. (Re-tokenizing the whole context after every block, the toolkit's loop, is quadratic.)

Ties in score are broken by page order, then document order. With ``fill="skip"`` (default) a block that
does not fit is skipped and smaller, lower-ranked blocks may still fill the budget; ``fill="stop"`` stops at
the first block that does not fit (the paper's Algorithm 2 reads either way; both are offered). A leaf block
that alone exceeds the budget, reached while at least half the budget is free, is split (a packed run into
its elements, otherwise its subtree re-split at half its words, recursively as needed; a table row is the
smallest part a split takes: a cell means little without the rest of its row) and its parts take
its place in the ranking, ordered among themselves by the ranker when one is given. With ``split_to_fill=N``
(our extension; 0, the default here, is the paper's rule) up to N blocks that do not fit the room left, but
would fit an empty budget, are split the same way, so the room goes to the best parts of a higher-ranked
block instead of to whole lower-ranked ones. If no block fits at
all, ``oversize="truncate"`` (default) keeps the top-ranked block with its text cut to the budget,
``oversize="drop"`` returns an empty context.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import lxml.etree as etree
import numpy as np

from htmlrag.core.errors import BudgetError, InputError
from htmlrag.html.blocktree import Block, BlockTree, PathNode, build_block_tree, subtree_text
from htmlrag.html.clean import clean_tree, serialize
from htmlrag.html.formats import compact_html, convert, elements_to_text
from htmlrag.html.text import count_words
from htmlrag.pruning.tokens import TokenCounter
from htmlrag.rankers.base import Ranker


@dataclass
class PruneResult:
    """The pruned context of one question.

    Attributes:
        context: the pruned pages joined by the separator, converted to ``fmt``.
        pages: pruned HTML per input page (``""`` where nothing was kept), always HTML.
        kept: ``(page, block index)`` of the kept blocks, in rank order.
        tokens: tokens of :attr:`context` in the budget tokenizer.
        budget: the budget, in tokens.
        truncated: True when the top block was cut to fit (``oversize="truncate"``).
        tokenizer_calls: full-context verifications made (1 in the common case).
        estimated_tokens: the incremental estimate of the kept blocks' tokens (before verification).
        dropped_after_check: blocks dropped because the verified context exceeded the budget.
        trees, scores: the block trees and scores ``kept`` refers to (the input ones, or new ones where a
            block larger than the budget was split).
    """

    context: str
    pages: list[str]
    kept: list[tuple[int, int]]
    tokens: int
    budget: int
    truncated: bool = False
    tokenizer_calls: int = 0
    estimated_tokens: int = 0
    dropped_after_check: int = 0
    trees: list[BlockTree] = field(default_factory=list, repr=False)
    scores: list[np.ndarray] = field(default_factory=list, repr=False)


class WalkMemo:
    """Token costs, markups and segment bounds of the blocks of one set of trees, shared by several walks over
    them (the budgets of a frontier): a later walk does not tokenize a block an earlier one counted. Only the
    trees' own blocks are kept (parts of split blocks live for one walk: their ids may be reused later).
    Entries are per context format."""

    def __init__(self, trees: Sequence[BlockTree]) -> None:
        self.trees = list(trees)  # keeps the blocks, hence their ids, alive
        self.allowed = {id(b) for t in self.trees for b in t.blocks}
        self.tables: dict[str, tuple[dict[int, int], dict[int, str], dict[int, int]]] = {}

    def get(self, fmt: str) -> tuple[dict[int, int], dict[int, str], dict[int, int]]:
        """Copies of the (cost, markup, segments) tables of ``fmt``."""
        cost, markups, segments = self.tables.get(fmt, ({}, {}, {}))
        return dict(cost), dict(markups), dict(segments)

    def keep(self, fmt: str, cost: dict[int, int], markups: dict[int, str], segments: dict[int, int]) -> None:
        """Remember a walk's entries of the trees' own blocks."""
        mine = self.tables.setdefault(fmt, ({}, {}, {}))
        for table, new in zip(mine, (cost, markups, segments), strict=True):
            table.update((k, v) for k, v in new.items() if k in self.allowed)


def rank_blocks(trees: Sequence[BlockTree], scores: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """``(page, block index)`` pairs ordered by score (descending), ties by page then document order."""
    if len(scores) != len(trees):
        raise InputError(f"got scores for {len(scores)} pages but {len(trees)} block trees")
    items = []
    for ti, (tree, s) in enumerate(zip(trees, scores, strict=True)):
        s = np.asarray(s, dtype=np.float64).reshape(-1)
        if len(s) != len(tree.blocks):
            raise InputError(f"page {ti}: {len(s)} scores for {len(tree.blocks)} blocks")
        if np.isnan(s).any():
            raise InputError(f"page {ti}: the ranker returned NaN scores")
        items.extend((-float(s[bi]), ti, b.position, bi) for bi, b in enumerate(tree.blocks))
    items.sort()
    return [(ti, bi) for _, ti, _, bi in items]


def _block_markup(block: Block, fmt: str = "html") -> str:
    """What a block adds to the context: its HTML (leaf) or own text (non-leaf) in ``fmt``: for text, its
    elements converted as the context will be (a line per block element, a table row per line); for
    Markdown, markdownify of its HTML. An estimate: the final context is verified by tokenizing it."""
    el = block.element
    if fmt not in ("html", "compact_html"):
        if not block.is_leaf:
            return " ".join(block.text.split()) + "\n"
        if fmt == "text":
            return elements_to_text(block.elements) + "\n"
        markup = "".join(etree.tostring(e, method="html", encoding="unicode", with_tail=False) for e in block.elements)
        return convert(markup, fmt) + "\n"
    if block.is_leaf:
        markup = "".join(etree.tostring(e, method="html", encoding="unicode", with_tail=False) for e in block.elements)
        return compact_html(markup) if fmt == "compact_html" else markup
    return (el.text or "") + "".join(c.tail or "" for c in el)


class _Skeleton:
    """Tokens of the open/close tags of ancestors brought in by kept blocks."""

    def __init__(self, tokenizer: TokenCounter):
        self.tokenizer = tokenizer
        self._tag_cost: dict[str, int] = {}
        self.opened: set[int] = set()
        self._alive: list[etree._Element] = []  # keeps proxies alive so id() stays unique

    def tag_cost(self, tag: str) -> int:
        c = self._tag_cost.get(tag)
        if c is None:
            c = self.tokenizer.count(f"<{tag}></{tag}>")
            self._tag_cost[tag] = c
        return c

    def new_ancestors(self, block: Block) -> list[etree._Element]:
        el = block.element
        node = el if not block.is_leaf else el.getparent()
        out = []
        while node is not None and id(node) not in self.opened:
            out.append(node)
            node = node.getparent()
        return out

    def open(self, nodes: list[etree._Element]) -> None:
        for n in nodes:
            self.opened.add(id(n))
            self._alive.append(n)


def _cut(el: etree._Element, room: int, tokenizer: TokenCounter) -> None:
    """Keep only the first ``room`` tokens of text of ``el`` (document order), structure preserved."""
    used = 0
    for event, node in etree.iterwalk(el, events=("start", "end")):
        if event == "end" and node is el:
            return
        attr = "text" if event == "start" else "tail"
        s = getattr(node, attr)
        if not s:
            continue
        n = tokenizer.count(s)
        if used + n <= room:
            used += n
            continue
        setattr(node, attr, tokenizer.truncate(s, max(0, room - used)) or None)
        if attr == "text":
            for c in list(node):
                node.remove(c)
            if node is not el:
                node.tail = None
        cur = node
        while cur is not el:
            parent = cur.getparent()
            for sib in list(cur.itersiblings()):
                parent.remove(sib)
            if parent is not el:
                parent.tail = None
            cur = parent
        return


def _materialise(trees: Sequence[BlockTree], keep: set[tuple[int, int]],
                 truncate: tuple[int, int, int, TokenCounter] | None = None) -> list[str]:
    """Pruned HTML per page: remove every block not in ``keep`` from a copy of each page.

    ``truncate = (page, block, room, tokenizer)`` cuts that block's text to ``room`` tokens.
    """
    kept_blocks = {id(trees[ti].blocks[bi]) for ti, bi in keep}
    cut = None
    if truncate is not None:
        cut = (id(trees[truncate[0]].blocks[truncate[1]]), truncate[2], truncate[3])
    return _materialise_blocks([t.root for t in trees], [t.blocks for t in trees], kept_blocks, cut)


def _materialise_blocks(roots: Sequence[etree._Element | None], page_blocks: Sequence[Sequence[Block]],
                        kept: set[int], cut: tuple[int, int, TokenCounter] | None = None) -> list[str]:
    """:func:`_materialise` on blocks given by identity: ``page_blocks[i]`` are page i's current blocks,
    ``kept`` the ``id()`` of the kept ones, ``cut = (id, room, tokenizer)`` the block cut to ``room`` tokens.

    Pages are built from what is kept (:func:`_pruned_copy`); the cut block takes the removal path
    (:func:`_materialise_by_removal`, which gives the same pages, at the cost of copying whole pages)."""
    if cut is not None:
        return _materialise_by_removal(roots, page_blocks, kept, cut)
    pages: list[str] = []
    for root0, blocks in zip(roots, page_blocks, strict=True):
        root = _pruned_copy(root0, blocks, kept) if root0 is not None else None
        if root is None:
            pages.append("")
            continue
        pages.append(_finish_page(root))
    return pages


def _finish_page(root: etree._Element) -> str:
    """A pruned page copy, cleaned (elements left empty go, wrappers unwrap) and serialised; ``""`` if empty."""
    root = clean_tree(root)
    return serialize(root) if len(root) or (root.text or "").strip() else ""


def _pruned_copy(root0: etree._Element, blocks: Sequence[Block], kept: set[int]) -> etree._Element | None:
    """A copy of the page ``root0`` without the blocks not kept, or ``None`` when nothing is kept.

    The same tree as :func:`_materialise_by_removal` leaves before cleaning, built without copying what is
    removed: a removed leaf block (most of a page under a small budget) is skipped and its tail joins the
    previous sibling's tail or the parent's text; kept leaf blocks and elements without blocks inside (an
    empty table cell) are copied whole; the elements above blocks are copied without children and rebuilt
    the same way, a non-kept non-leaf block without its own text (its text and its children's tails)."""
    leaf_kept: dict[int, bool] = {}  # id(leaf block element) -> kept
    own_kept: dict[int, bool] = {}  # id(non-leaf block element) -> kept
    any_kept = False
    starts: list[etree._Element] = []
    for b in blocks:
        k = id(b) in kept
        any_kept = any_kept or k
        if b.is_leaf:
            for e in b.elements:
                leaf_kept[id(e)] = k
                starts.append(e)
        else:
            own_kept[id(b.element)] = k
            starts.append(b.element)
    if not any_kept:
        return None
    if leaf_kept.get(id(root0)):  # the whole page is one kept block
        return copy.deepcopy(root0)
    above: set[int] = set()  # elements with blocks inside: rebuilt child by child
    alive: list[etree._Element] = []  # their proxies, kept alive so that the ids stay theirs
    for e in starts:
        node = e if id(e) in own_kept else e.getparent()
        while node is not None and id(node) not in above:
            above.add(id(node))
            alive.append(node)
            node = node.getparent()
    if id(root0) not in above:
        raise InputError("a block does not belong to its page's tree")

    return _rebuild(root0, leaf_kept, own_kept, above)


def _rebuild(root0: etree._Element, leaf_kept: dict[int, bool], own_kept: dict[int, bool], above: set[int]
             ) -> etree._Element:
    """The rebuilding walk of :func:`_pruned_copy`, with an explicit stack (pages nest up to 2,048 levels, deeper
    than Python's recursion limit): each element above blocks is copied without children, then its children are
    appended -- removed leaf blocks skipped (their tails kept in place), other elements above blocks queued to be
    rebuilt the same way, everything else copied whole."""
    out_root = root0.makeelement(root0.tag, root0.attrib)
    stack = [(root0, out_root)]
    while stack:
        node, out = stack.pop()
        no_own = own_kept.get(id(node)) is False  # a non-kept non-leaf block loses its own text
        out.text = None if no_own else node.text
        last = None
        for child in node:
            tail = None if no_own else child.tail
            cid = id(child)
            k = leaf_kept.get(cid)
            if k is False:  # a removed leaf block: its tail stays in place
                if tail:
                    if last is not None:
                        last.tail = (last.tail or "") + tail
                    else:
                        out.text = (out.text or "") + tail
                continue
            if k is None and cid in above:
                c = child.makeelement(child.tag, child.attrib)
                stack.append((child, c))
            else:
                c = copy.deepcopy(child)
            c.tail = tail
            out.append(c)
            last = c
    return out_root


def _materialise_by_removal(roots: Sequence[etree._Element | None], page_blocks: Sequence[Sequence[Block]],
                            kept: set[int], cut: tuple[int, int, TokenCounter] | None = None) -> list[str]:
    """:func:`_materialise_blocks` by copying each page whole and removing every block not kept."""
    pages: list[str] = []
    for root0, blocks in zip(roots, page_blocks, strict=True):
        if root0 is None or not any(id(b) in kept for b in blocks):
            pages.append("")
            continue
        root = copy.deepcopy(root0)
        elements = list(root.iter())
        # Non-leaf blocks first (they only lose text), then leaf blocks (whole subtrees), deepest first.
        for b in blocks:
            if b.is_leaf:
                continue
            if cut is not None and id(b) == cut[0]:
                el = elements[b.position]
                el.text = cut[2].truncate(el.text or "", cut[1]) or None
                for child in el:
                    child.tail = None
            elif id(b) not in kept:
                el = elements[b.position]
                el.text = None
                for child in el:
                    child.tail = None
        leaves = [(b, pos) for b in blocks if b.is_leaf for pos in b.positions]
        for b, pos in sorted(leaves, key=lambda bp: -bp[0].depth):
            el = elements[pos]
            if cut is not None and id(b) == cut[0]:
                _cut(el, cut[1], cut[2])
                continue
            if id(b) in kept:
                continue
            parent = el.getparent()
            if parent is None:  # the whole page is one block and it goes
                root = None
                break
            tail = el.tail
            prev = el.getprevious()
            if tail:
                if prev is not None:
                    prev.tail = (prev.tail or "") + tail
                else:
                    parent.text = (parent.text or "") + tail
            parent.remove(el)
        if root is None:
            pages.append("")
            continue
        pages.append(_finish_page(root))
    return pages


def _words_lower_bound(block: Block, cjk: bool, usable: bool) -> int:
    """A cheap lower bound on a block's token cost: in tokenizers that split on whitespace before anything
    else (SentencePiece, byte-level BPE) every whitespace-separated word is at least one token; halved,
    because a word split by an inline tag (``<b>Ban</b>fe``) is counted twice. 0 where it is not known to
    hold (other tokenizers, CJK text). Used only to skip blocks that cannot fit without tokenizing them."""
    if not usable or cjk:
        return 0
    return block.words // 2


def _tags_lower_bound(markup: str) -> int:
    """Segments (:func:`htmlrag.pruning.tokens.segment_count`) the tags of serialised HTML make at least, counted
    without a regex: every ``<`` opens a tag (text and attribute values are escaped), and n tags give n
    names and the punctuation around them, at least 2n + 1 segments. For a leaf block's markup, where it
    often decides alone that a block cannot fit the room left."""
    return 2 * markup.count("<") + 1


#: Splits never divide a table row (:func:`_split_block`) nor a block made of its cells.
_ROW = "tr"
_CELLS = frozenset(("td", "th"))


def _split_block(block: Block) -> list[Block] | None:
    """The parts of a block that alone exceeds the budget, or ``None`` if it cannot be split.

    A packed run of siblings splits into its elements; a leaf block with element children is re-split at
    half its words (its subtree, as :func:`build_block_tree` would). Parts keep their place in the page
    (positions, paths), so pruning removes them exactly.

    A table row is the smallest unit a split takes (a cell means little without the others of its row: a
    header cell without its value, in every format): a row is not split, rows inside the block stay whole
    whatever their size, and a block of cells (a row the block tree divided because it exceeds its words)
    is not divided further."""
    tags = [e.tag for e in block.elements]
    if tags == [_ROW] or all(t in _CELLS for t in tags):
        return None
    if block.members:
        parts = []
        for e, pos in zip(block.members, block.member_positions, strict=True):
            node = PathNode(e.tag, block._path.parent)
            parts.append(Block(0, True, count_words(subtree_text(e)), e, block.page, pos, node))
        return parts
    if not block.is_leaf or len(block.element) == 0 or block.words < 2:
        return None
    sub = build_block_tree(block.element, max(1, block.words // 2), page=block.page, keep_whole=(_ROW,))
    if not sub.blocks or (len(sub.blocks) == 1 and sub.blocks[0].element is block.element):
        return None
    for sb in sub.blocks:
        sb.position += block.position
        sb._path = _graft(block._path, sb._path)
    return sub.blocks


def _graft(prefix, sub):
    """Path node of ``sub`` (rooted at the split block's element) re-rooted under ``prefix``."""
    names = sub.names()[1:]
    node = prefix
    for n in names:
        node = type(prefix)(n, node)
    return node


def prune_to_budget(
    trees: Sequence[BlockTree],
    scores: Sequence[np.ndarray],
    budget: int,
    tokenizer: TokenCounter,
    *,
    fmt: str = "html",
    fill: str = "skip",
    oversize: str = "truncate",
    separator: str = "\n",
    ranker: Ranker | None = None,
    question: str | None = None,
    max_exact_checks: int = 16,
    count_batch: int = 8,
    split_min_room: float = 0.5,
    split_to_fill: int = 0,
    split_fill_min_room: int = 16,
    memo: WalkMemo | None = None,
) -> PruneResult:
    """Keep the best blocks of ``trees`` within ``budget`` tokens of ``tokenizer`` (see module docstring).

    Args:
        trees: one block tree per page, in retrieval order (not modified).
        scores: one score array per tree (higher is kept first), e.g. from a :class:`~htmlrag.rankers.Ranker`.
        budget: the largest number of tokens of the returned context.
        tokenizer: the token counter of the reader (or of the next pruning step).
        fmt: ``html``, ``compact_html``, ``text`` or ``markdown``; the budget holds for the context in this
            format.
        fill: ``skip`` or ``stop`` (what to do with a block that does not fit).
        oversize: ``truncate`` or ``drop`` (what to do when no block fits at all).
        separator: placed between pages.
        ranker: if given (with ``question``), the parts of a block split because it exceeded the budget are
            ordered by it (one call on the parts alone); otherwise they keep document order. Either way the
            parts take the split block's place in the ranking.
        question: the question, for ``ranker``.
        max_exact_checks: how many near-miss blocks (estimate just over the budget) are checked by
            tokenizing the candidate context exactly.
        split_min_room: a block larger than the whole budget is split (its parts take its place in the
            ranking) when the walk reaches it with at least this fraction of the budget free; later, it is
            skipped like any block that does not fit (parts are at most the budget; with less than half of
            it left they rarely fit, and splitting every big low-ranked block would cost more than it adds).
        split_to_fill: how many blocks that do not fit the room left (but would fit an empty budget) may be
            split so that their best parts, rather than lower-ranked blocks, fill that room (0: none, the
            paper's rule). Parts are ordered as above and take the block's place in the ranking.
        split_fill_min_room: such a split is only tried with at least this many tokens free.
        count_batch: blocks tokenized by the first batched call (then twice as many per call, up to 32x);
            blocks are counted lazily, in rank order, and only while they could still fit.
        memo: token counts shared with other walks over the same ``trees`` (:class:`WalkMemo`; the result is
            the same with or without it, and with a tokenizer that counts the same text the same way).

    Raises:
        BudgetError: ``budget`` is not a positive integer.
        InputError: scores do not match the trees.
    """
    if not isinstance(budget, (int, np.integer)) or budget <= 0:
        raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
    if fill not in ("skip", "stop") or oversize not in ("truncate", "drop"):
        raise InputError(f"fill must be skip|stop and oversize truncate|drop, got {fill!r}, {oversize!r}")
    if split_to_fill < 0:
        raise InputError(f"split_to_fill must be >= 0, got {split_to_fill}")
    ranked = rank_blocks(trees, scores)  # validates the scores
    scores = [np.asarray(s, dtype=np.float64).reshape(-1) for s in scores]
    if not ranked:
        return PruneResult("", ["" for _ in trees], [], 0, budget, trees=list(trees), scores=list(scores))
    walk = _Walk(trees, scores, ranked, budget, tokenizer, fmt=fmt, separator=separator, ranker=ranker,
                 question=question, count_batch=count_batch, split_room=max(1, math.ceil(budget * split_min_room)),
                 split_to_fill=split_to_fill, split_fill_min_room=split_fill_min_room,
                 max_exact_checks=max_exact_checks)
    if memo is not None:
        walk.cost, walk.markups, walk.segments = memo.get(fmt)
    walk.run(fill)
    if memo is not None:
        memo.keep(fmt, walk.cost, walk.markups, walk.segments)
    return walk.result(oversize)


class _Walk:
    """The greedy walk of :func:`prune_to_budget`: its state, and its steps as methods.

    ``order`` holds ``(page, block, score)`` in rank order; a split block is replaced in place by its parts.
    Costs, markups and segment counts are keyed by ``id(block)`` (blocks replaced by their parts stay alive in
    ``retired``, so ids stay unique). ``kept`` and ``est`` are the kept blocks in rank order and the tokens
    each added to the estimate ``total``.
    """

    def __init__(self, trees: Sequence[BlockTree], scores: list[np.ndarray], ranked: list[tuple[int, int]],
                 budget: int, tokenizer: TokenCounter, *, fmt: str, separator: str, ranker: Ranker | None,
                 question: str | None, count_batch: int, split_room: int, split_to_fill: int,
                 split_fill_min_room: int, max_exact_checks: int):
        self.trees, self.scores, self.roots = trees, scores, [t.root for t in trees]
        self.budget, self.tokenizer, self.fmt, self.separator = budget, tokenizer, fmt, separator
        self.ranker, self.question = ranker, question
        self.html_like = fmt in ("html", "compact_html")
        self.use_lb = bool(getattr(tokenizer, "words_lower_bound", False))
        self.seg_lb = tokenizer.lower_bound if getattr(tokenizer, "segments_lower_bound", False) else None
        self.cjk = [getattr(t, "cjk", True) for t in trees]
        self.markups: dict[int, str] = {}
        self.segments: dict[int, int] = {}
        self.cost: dict[int, int] = {}
        self.out_of_reach: set[int] = set()  # blocks whose lower bound exceeded the reach: the room only shrinks
        self.order: list[tuple[int, Block, float]] = [(ti, trees[ti].blocks[bi], float(scores[ti][bi]))
                                                      for ti, bi in ranked]
        self.split_pages: dict[int, dict[int, tuple[Block, float]]] = {}  # page -> {id(block): (block, score)}
        self.fill_parts: set[int] = set()  # parts of blocks split to fill the room (and their parts)
        self.retired: list[Block] = []  # blocks replaced by their parts
        self.sep_cost = tokenizer.count(separator) if separator else 0
        self.skel = _Skeleton(tokenizer)
        self.pages_open: set[int] = set()
        self.kept: list[tuple[int, Block]] = []
        self.est: list[int] = []
        self.total = 0
        self.exact_checks, self.max_exact_checks = 0, max_exact_checks
        self.count_batch = self.batch_size = count_batch  # doubles per call: few counts or few calls
        self.split_room, self.split_fill_min_room = split_room, split_fill_min_room
        self.fill_splits = split_to_fill

    def markup(self, b: Block) -> str:
        m = self.markups.get(id(b))
        if m is None:
            m = self.markups[id(b)] = _block_markup(b, self.fmt)
        return m

    def lower(self, tj: int, b: Block, limit: int) -> int:
        """A lower bound on block b's token count, from its words, then (when that does not already
        exceed ``limit``) from its markup's segments (:func:`htmlrag.pruning.tokens.segment_count`)."""
        lb = _words_lower_bound(b, self.cjk[tj], self.use_lb)
        if lb > limit or self.seg_lb is None:
            return lb
        sb = self.segments.get(id(b))
        if sb is None:
            m = self.markup(b)
            if self.html_like and b.is_leaf:
                tb = _tags_lower_bound(m)
                if tb > limit:
                    return max(lb, tb)  # the full count (a regex over the markup) is not needed
            sb = self.segments[id(b)] = self.seg_lb(m)
        return max(lb, sb)

    def current_blocks(self, ti: int) -> list[Block]:
        """Page ``ti``'s blocks, split ones replaced by their parts."""
        sp = self.split_pages.get(ti)
        return self.trees[ti].blocks if sp is None else [b for b, _ in sp.values()]

    def count_ahead(self, i: int, room: int) -> None:
        """Tokenize block i and up to ``batch_size`` uncounted blocks after it that could still fit, in one
        call (then twice as many per call, up to 32x ``count_batch``)."""
        order, cost, out_of_reach, size = self.order, self.cost, self.out_of_reach, self.batch_size
        batch = [order[i][1]] if id(order[i][1]) not in cost else []
        for tj, b, _ in itertools.islice(order, i + 1, None):
            if id(b) in cost or id(b) in out_of_reach:
                continue
            if self.lower(tj, b, room) <= room:
                batch.append(b)
                if len(batch) >= size:
                    break
            else:
                out_of_reach.add(id(b))
        for b, c in zip(batch, self.tokenizer.count_many([self.markup(b) for b in batch]), strict=True):
            cost[id(b)] = c
        self.batch_size = min(32 * self.count_batch, 2 * size)

    def split_in_place(self, i: int, to_fill: bool = False) -> bool:
        """Replace ``order[i]`` by its parts (False if it cannot be split)."""
        order = self.order
        ti, block, score = order[i]
        parts = _split_block(block)
        if not parts:
            return False
        if to_fill or id(block) in self.fill_parts:
            self.fill_parts.update(id(p) for p in parts)
        self.retired.append(block)  # keeps its id unique: costs and markups are keyed by id
        placed = _order_parts(parts, ti, score, order, i, self.ranker, self.question, self.trees[ti])
        # The first part takes the block's slot; the others follow the blocks tied with it.
        j = i + 1
        while j < len(order) and order[j][2] >= score:
            j += 1
        order[j:j] = placed[1:]
        order[i] = placed[0]
        sp = self.split_pages.get(ti)
        if sp is None:  # first split on this page: its blocks, from which split ones are then replaced
            sp = self.split_pages[ti] = {id(b): (b, float(s))
                                         for b, s in zip(self.trees[ti].blocks, self.scores[ti], strict=True)}
        del sp[id(block)]
        for _, p, s in placed:
            sp[id(p)] = (p, s)
        return True

    def run(self, fill: str) -> None:
        """Walk the ranked blocks: keep each block that fits the room left; split those that may be split."""
        order, budget, cost = self.order, self.budget, self.cost
        i = 0
        while i < len(order):
            ti, block, _ = order[i]
            room = budget - self.total
            if room <= 0:
                break
            # The largest estimate the near-miss check could still accept: a block whose lower bound exceeds
            # it is skipped without tokenizing it, as counting it would have decided.
            reach = max(room + 8, room * 4 // 3 + 1)
            can_split = room >= self.split_room
            can_fill = self.fill_splits > 0 and room >= self.split_fill_min_room
            lb = self.lower(ti, block, max(reach, budget) if can_split else reach)
            if lb > reach and not can_split and not (can_fill and lb <= budget):  # cannot fit, cannot split
                if fill == "stop":
                    break
                i += 1
                continue
            if lb <= budget and id(block) not in cost:
                self.count_ahead(i, reach)
            # lb > budget: certainly too big (a count a shared WalkMemo holds is not used then: a walk of its own
            # never counts such a block, and the near-miss check below must see what it would see)
            c = cost.get(id(block), budget + 1) if lb <= budget else budget + 1
            if c > budget and can_split and self.split_in_place(i):
                continue
            if self.keep_if_fits(ti, block, c):
                pass
            elif can_fill and c <= budget and self.split_in_place(i, to_fill=True):
                self.fill_splits -= 1
                continue
            elif fill == "stop":
                break
            i += 1

    def keep_if_fits(self, ti: int, block: Block, c: int) -> bool:
        """Keep ``block`` (``c`` tokens) if it fits with the ancestors' tags and separator it brings in."""
        skel, budget = self.skel, self.budget
        anc = skel.new_ancestors(block)
        extra = c + (sum(skel.tag_cost(a.tag) for a in anc) if self.html_like else 0)
        if ti not in self.pages_open and self.pages_open:
            extra += self.sep_cost
        fits = self.total + extra <= budget
        if (not fits and (not self.kept or self.total + extra - budget <= max(8, extra // 4))
                and self.exact_checks < self.max_exact_checks and not (self.kept and id(block) in self.fill_parts)):
            # The estimate is conservative (tags merge across boundaries, and a wrapper left holding one block
            # is unwrapped: "<div><b>alpha</b></div>" is estimated at 22 tokens and materialises as 11): check
            # near misses exactly, and every block while nothing is kept yet, so the top-ranked block that fits
            # is always kept (each check tokenizes the whole context: not for the small parts that fill the
            # last room).
            self.exact_checks += 1
            actual = self.context_tokens({id(b) for _, b in self.kept} | {id(block)})
            if actual <= budget:
                fits = True
                extra = actual - self.total
        if not fits:
            return False
        self.kept.append((ti, block))
        self.est.append(extra)
        self.total += extra
        skel.open(anc)
        self.pages_open.add(ti)
        return True

    def context_tokens(self, kept: set[int]) -> int:
        """Exact tokens of the context that keeps the blocks ``kept`` (ids)."""
        trial = _materialise_blocks(self.roots, [self.current_blocks(p) for p in range(len(self.trees))], kept)
        return self.tokenizer.count(self.separator.join(convert(p, self.fmt) for p in trial if p))

    def final_trees(self) -> tuple[list[BlockTree], list[np.ndarray], dict[int, int]]:
        """The trees and scores the result refers to (the input ones, or new ones for pages where blocks were
        split), and each current block's index in its final tree (keyed by ``id``)."""
        out_trees, out_scores = list(self.trees), list(self.scores)
        index_of: dict[int, int] = {}
        for ti, t in enumerate(self.trees):
            if ti not in self.split_pages:
                for bi, b in enumerate(t.blocks):
                    index_of[id(b)] = bi
                continue
            items = sorted(self.split_pages[ti].values(), key=lambda bs: bs[0].position)
            blocks = []
            for bi, (b, _) in enumerate(items):
                blocks.append(dataclasses.replace(b, index=bi))
                index_of[id(b)] = bi
            out_trees[ti] = BlockTree(t.root, blocks, t.max_words, t.page, self.cjk[ti])
            out_scores[ti] = np.array([s for _, s in items], dtype=np.float64)
        return out_trees, out_scores, index_of

    def result(self, oversize: str) -> PruneResult:
        """The verified context: the kept blocks (fewer if tokenizer merges pushed it over the budget), or
        when none fits, the top block cut to the budget (``oversize="truncate"``)."""
        out_trees, out_scores, index_of = self.final_trees()
        all_blocks = [self.current_blocks(p) for p in range(len(self.trees))]
        kept, est, budget = self.kept, self.est, self.budget
        calls = dropped = 0
        while True:
            pages = _materialise_blocks(self.roots, all_blocks, {id(b) for _, b in kept})
            context = self.separator.join(convert(p, self.fmt) for p in pages if p)
            tokens = self.tokenizer.count(context)
            calls += 1
            if tokens <= budget:
                break
            # Over budget after boundary effects: drop the lowest-ranked kept blocks worth the overflow, but
            # check again before the top-ranked one goes (a later block can bring back a wrapper its estimate
            # did not count -- "<div>" unwrapped around one kept block returns with a second -- and the top
            # block alone, which the walk checked exactly, fits).
            over = tokens - budget
            while kept and over > 0 and (len(kept) > 1 or over == tokens - budget):
                over -= est.pop()
                kept.pop()
                dropped += 1
        if kept or oversize == "drop":
            keys = [(ti, index_of[id(b)]) for ti, b in kept]
            return PruneResult(context, pages, keys, tokens, budget, False, calls, self.total, dropped, out_trees,
                               out_scores)
        res = self.truncate_top(all_blocks, index_of)
        res.tokenizer_calls += calls
        res.dropped_after_check, res.trees, res.scores = dropped, out_trees, out_scores
        return res

    def truncate_top(self, all_blocks: list[list[Block]], index_of: dict[int, int]) -> PruneResult:
        """No block fits: the top-ranked block with its text cut to the budget (structure kept, text cut at the
        end), or an empty context if not even its tags fit."""
        ti, top, _ = self.order[0]
        budget, tokenizer = self.budget, self.tokenizer
        room, calls = budget, 0
        for _ in range(12):
            pages = _materialise_blocks(self.roots, all_blocks, {id(top)}, (id(top), room, tokenizer))
            context = self.separator.join(convert(p, self.fmt) for p in pages if p)
            tokens = tokenizer.count(context)
            calls += 1
            if tokens <= budget:
                truncated = bool(context)
                return PruneResult(context, pages, [(ti, index_of[id(top)])] if truncated else [], tokens, budget,
                                   truncated, calls, self.total)
            room -= tokens - budget + 1
            if room <= 0:
                break
        return PruneResult("", ["" for _ in self.trees], [], 0, budget, False, calls, self.total)


def _order_parts(parts: list[Block], ti: int, score: float, order: list[tuple[int, Block, float]], i: int,
                 ranker: Ranker | None, question: str | None, tree: BlockTree) -> list[tuple[int, Block, float]]:
    """The parts of the split block ``order[i]``, in the order they replace it, with scores that keep
    :func:`rank_blocks` on the final trees equal to the walk: just below ``score``, above the next block."""
    if ranker is not None and question is not None and len(parts) > 1:
        sub = BlockTree(tree.root, parts, tree.max_words, tree.page, tree.cjk)
        sub._heading_at = tree._heading_at  # same page: no second walk over it for the parts' contexts
        own = np.asarray(ranker.score(question, [sub])[0], dtype=np.float64).reshape(-1)
        if len(own) != len(parts) or np.isnan(own).any():
            raise InputError(f"page {ti}: the ranker returned {len(own)} scores for {len(parts)} split parts")
        idx = sorted(range(len(parts)), key=lambda k: (-own[k], parts[k].position))
    else:
        idx = sorted(range(len(parts)), key=lambda k: parts[k].position)
    nxt = next((s for _, _, s in order[i + 1 :] if s < score), score - 1.0)
    step = (score - nxt) / (len(parts) + 1)
    out = []
    for k, j in enumerate(idx):
        s = score - step * k if k else score
        out.append((ti, parts[j], s))
    return out
