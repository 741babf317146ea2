"""Greedy block-tree pruning to a token budget (HtmlRAG Algorithm 2), exact and incremental.

Given the block trees of one question's pages and one score per block, keep blocks in score order while the
pruned context still fits ``budget`` tokens, and remove every other block exactly: a removed leaf block
disappears with its subtree; a removed non-leaf block loses only its own direct text (its children are
blocks of their own). Elements left without content are then dropped and single-child wrappers unwrapped
(the cleaning rules), pages with nothing kept are left out, and the pages are joined with ``separator``.

Token accounting is incremental: every block's serialised size is counted once (in one batched tokenizer
call) plus the open/close tags of ancestors that a kept block brings in; this estimate selects the blocks.
The final context is then tokenized once to verify it; if tokenizer merges across boundaries pushed it over
the budget, the lowest-ranked kept blocks are dropped until it fits. The result never exceeds the budget.

Ties in score are broken by page order, then document order. With ``fill="skip"`` (default) a block that
does not fit is skipped and smaller, lower-ranked blocks may still fill the budget; ``fill="stop"`` stops at
the first block that does not fit (the paper's Algorithm 2 reads either way; both are offered). If no block
fits at all, ``oversize="truncate"`` (default) keeps the top-ranked block with its text cut to the budget,
``oversize="drop"`` returns an empty context. Before that, a leaf block that alone exceeds the budget is split
into smaller blocks (its subtree re-split at half its words, recursively); the parts inherit its score.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import lxml.etree as etree
import numpy as np

from htmlrag.blocktree import Block, BlockTree, _PathNode, _subtree_text, build_block_tree
from htmlrag.clean import clean_tree, serialize
from htmlrag.errors import BudgetError, InputError
from htmlrag.formats import compact_html, convert
from htmlrag.rankers.base import Ranker
from htmlrag.text import count_words
from htmlrag.tokens import TokenCounter


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
    """What a block adds to the context: its HTML (leaf) or own text (non-leaf); for text and Markdown
    contexts its text plus a line break (an estimate; the final context is verified by tokenizing it)."""
    el = block.element
    if fmt not in ("html", "compact_html"):
        return " ".join(block.text.split()) + "\n"
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
    pages: list[str] = []
    for ti, tree in enumerate(trees):
        if tree.root is None or not any((ti, bi) in keep for bi in range(len(tree.blocks))):
            pages.append("")
            continue
        root = copy.deepcopy(tree.root)
        elements = list(root.iter())
        # Non-leaf blocks first (they only lose text), then leaf blocks (whole subtrees), deepest first.
        for b in tree.blocks:
            if not b.is_leaf and truncate is not None and (ti, b.index) == truncate[:2]:
                el = elements[b.position]
                el.text = truncate[3].truncate(el.text or "", truncate[2]) or None
                for child in el:
                    child.tail = None
            elif not b.is_leaf and (ti, b.index) not in keep:
                el = elements[b.position]
                el.text = None
                for child in el:
                    child.tail = None
        leaves = [(b, pos) for b in tree.blocks if b.is_leaf for pos in b.positions]
        for b, pos in sorted(leaves, key=lambda bp: -bp[0].depth):
            el = elements[pos]
            if truncate is not None and (ti, b.index) == truncate[:2]:
                _cut(el, truncate[2], truncate[3])
                continue
            if (ti, b.index) in keep:
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
        root = clean_tree(root)
        has_content = len(root) or (root.text or "").strip()
        pages.append(serialize(root) if has_content else "")
    return pages


def _split_oversize(trees: Sequence[BlockTree], scores: Sequence[np.ndarray], budget: int,
                    tokenizer: TokenCounter, fmt: str = "html",
                    ) -> tuple[list[BlockTree], list[np.ndarray], dict[tuple[int, int], int]]:
    """Split leaf blocks that alone exceed the budget into smaller blocks (halving ``max_words``).

    The parts inherit the block's score (so they are kept in document order among themselves); the input
    trees are not changed: split trees are new :class:`BlockTree` objects over the same parsed pages.
    """
    out_trees: list[BlockTree] = []
    out_scores: list[np.ndarray] = []
    costs: dict[tuple[int, int], int] = {}
    for ti, (tree, sc) in enumerate(zip(trees, scores, strict=True)):
        sc = np.asarray(sc, dtype=np.float64).reshape(-1)
        if len(sc) != len(tree.blocks):
            raise InputError(f"page {ti}: {len(sc)} scores for {len(tree.blocks)} blocks")
        pending = list(zip(tree.blocks, sc, strict=True))
        c = tokenizer.count_many([_block_markup(b, fmt) for b, _ in pending])
        final: list[tuple[Block, float, int]] = []
        while pending:
            nxt: list[tuple[Block, float]] = []
            for (b, s), cost in zip(pending, c, strict=True):
                if b.members and cost > budget:  # a packed run of siblings: split it into its elements first
                    for e, pos in zip(b.members, b.member_positions, strict=True):
                        node = _PathNode(e.tag, b._path.parent)
                        nxt.append((Block(0, True, count_words(_subtree_text(e)), e, b.page, pos, node), s))
                    continue
                if cost <= budget or not b.is_leaf or len(b.element) == 0 or b.words < 2:
                    final.append((b, s, cost))
                    continue
                sub = build_block_tree(b.element, max(1, b.words // 2), page=b.page)
                for sb in sub.blocks:
                    sb.position += b.position
                    sb._path = _graft(b._path, sb._path)
                    nxt.append((sb, s))
            pending = nxt
            c = tokenizer.count_many([_block_markup(b, fmt) for b, _ in pending]) if pending else []
        if len(final) == len(tree.blocks):
            out_trees.append(tree)
            out_scores.append(sc)
            for bi, (_, _, cost) in enumerate(final):
                costs[(ti, bi)] = cost
            continue
        final.sort(key=lambda t: t[0].position)
        blocks = []
        for bi, (b, _, cost) in enumerate(final):
            blocks.append(dataclasses.replace(b, index=bi))
            costs[(ti, bi)] = cost
        out_trees.append(BlockTree(tree.root, blocks, tree.max_words, tree.page))
        out_scores.append(np.array([s for _, s, _ in final], dtype=np.float64))
    return out_trees, out_scores, costs


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
) -> PruneResult:
    """Keep the best blocks of ``trees`` within ``budget`` tokens of ``tokenizer`` (see module docstring).

    Args:
        trees: one block tree per page, in retrieval order (not modified).
        scores: one score array per tree (higher is kept first), e.g. from a :class:`~htmlrag.rankers.Ranker`.
        budget: the largest number of tokens of the returned context.
        tokenizer: the token counter of the reader (or of the next pruning step).
        fmt: ``html``, ``text`` or ``markdown``; the budget holds for the context in this format.
        fill: ``skip`` or ``stop`` (what to do with a block that does not fit).
        oversize: ``truncate`` or ``drop`` (what to do when no block fits at all).
        separator: placed between pages.
        ranker: if given (with ``question``), blocks split because they exceeded the budget are scored by
            it (all blocks are re-scored in one call so scores stay comparable); otherwise parts inherit
            the score of the block they come from.
        question: the question, for ``ranker``.
        max_exact_checks: how many near-miss blocks (estimate just over the budget) are checked by
            tokenizing the candidate context exactly.

    Raises:
        BudgetError: ``budget`` is not a positive integer.
        InputError: scores do not match the trees.
    """
    if not isinstance(budget, (int, np.integer)) or budget <= 0:
        raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
    if fill not in ("skip", "stop") or oversize not in ("truncate", "drop"):
        raise InputError(f"fill must be skip|stop and oversize truncate|drop, got {fill!r}, {oversize!r}")
    split_trees, scores, costs_of = _split_oversize(trees, scores, budget, tokenizer, fmt)
    if ranker is not None and question is not None and any(a is not b for a, b in zip(split_trees, trees)):
        scores = ranker.score(question, split_trees)
    trees = split_trees
    ranked = rank_blocks(trees, scores)
    if not ranked:
        return PruneResult("", ["" for _ in trees], [], 0, budget, trees=list(trees), scores=list(scores))

    block_of = {(ti, bi): trees[ti].blocks[bi] for ti, bi in ranked}
    costs = [costs_of[k] for k in ranked]
    sep_cost = tokenizer.count(separator) if separator else 0
    skel = _Skeleton(tokenizer)
    pages_open: set[int] = set()
    kept: list[tuple[int, int]] = []
    est: list[int] = []
    total = 0
    exact_checks = 0
    for key, cost in zip(ranked, costs, strict=True):
        block = block_of[key]
        anc = skel.new_ancestors(block)
        extra = cost + (sum(skel.tag_cost(a.tag) for a in anc) if fmt in ("html", "compact_html") else 0)
        if key[0] not in pages_open and pages_open:
            extra += sep_cost
        fits = total + extra <= budget
        if not fits and total + extra - budget <= max(8, extra // 4) and exact_checks < max_exact_checks:
            # The estimate is conservative (tags merge across boundaries): check near misses exactly.
            exact_checks += 1
            trial = _materialise(trees, {*kept, key})
            actual = tokenizer.count(separator.join(convert(p, fmt) for p in trial if p))
            if actual <= budget:
                fits = True
                extra = actual - total
        if fits:
            kept.append(key)
            est.append(extra)
            total += extra
            skel.open(anc)
            pages_open.add(key[0])
        elif fill == "stop":
            break

    calls = 0
    dropped = 0
    while True:
        pages = _materialise(trees, set(kept))
        context = separator.join(convert(p, fmt) for p in pages if p)
        tokens = tokenizer.count(context)
        calls += 1
        if tokens <= budget:
            break
        # Over budget after boundary effects: drop the lowest-ranked kept blocks worth the overflow.
        over = tokens - budget
        while kept and over > 0:
            over -= est.pop()
            kept.pop()
            dropped += 1
    if kept or oversize == "drop":
        return PruneResult(context, pages, kept, tokens, budget, False, calls, total, dropped, list(trees),
                           list(scores))

    # No block fits: keep the top-ranked block cut to the budget (structure kept, text cut at the end).
    top = ranked[0]
    room = budget
    for _ in range(12):
        pages = _materialise(trees, {top}, (top[0], top[1], room, tokenizer))
        context = separator.join(convert(p, fmt) for p in pages if p)
        tokens = tokenizer.count(context)
        calls += 1
        if tokens <= budget:
            truncated = bool(context)
            return PruneResult(context, pages, [top] if truncated else [], tokens, budget, truncated, calls, total,
                               dropped, list(trees), list(scores))
        room -= tokens - budget + 1
        if room <= 0:
            break
    return PruneResult("", ["" for _ in trees], [], 0, budget, False, calls, total, dropped, list(trees),
                       list(scores))
