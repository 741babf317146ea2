"""The ranker protocol shared by BM25, embedding and generative rankers (and the fakes in tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from htmlrag.html.blocktree import BlockTree


@runtime_checkable
class Ranker(Protocol):
    """Scores every block of one question's pages.

    ``score`` receives all the pages retrieved for the question (one :class:`BlockTree` each, in retrieval
    order) and returns one float array per tree with one score per block, in block order. Higher scores are
    kept first by the pruner. Scores are comparable across the trees of one call. A ranker never changes
    the trees.
    """

    name: str

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        """Score the blocks of ``trees`` for ``question``."""
        ...


class PagePrior:
    """Adds page-level evidence to any ranker's block scores: every block of a page gets
    ``weight * (the page's best block score)`` added, so among blocks that score alike those of the page
    that matches the question best come first (document-level evidence in passage ranking).

    Our extension, not in the paper. On wtq-html-qa (300 questions, BM25, 1024/2048 tokens) ``weight=0.5``
    raised answer retention by 0.3-3 points in every format (``scripts/bench_prune.py``; chosen on that set).
    Parts of a split block are ordered by the wrapped scores of the parts alone, where the prior is one
    constant and changes nothing.
    """

    def __init__(self, ranker: Ranker, weight: float = 0.5):
        if weight < 0:
            raise ValueError(f"page prior weight must be >= 0, got {weight}")
        self.ranker, self.weight = ranker, weight
        self.name = f"{ranker.name}+page{weight:g}"

    def __getattr__(self, attr: str):  # needs_paths, contextual, cache, ... of the wrapped ranker
        return getattr(self.__dict__["ranker"], attr)

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        return add_page_prior(self.ranker.score(question, trees), self.weight)


def add_page_prior(scores: Sequence[np.ndarray], weight: float) -> list[np.ndarray]:
    """Per-page scores with ``weight * max(page scores)`` added to every block of the page (see PagePrior)."""
    out = []
    for s in scores:
        s = np.asarray(s, dtype=np.float32)
        out.append(s + np.float32(weight) * s.max() if (weight and len(s)) else s)
    return out
