"""The ranker protocol shared by BM25, embedding and generative rankers (and the fakes in tests)."""

from __future__ import annotations

import math
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


#: The largest :class:`PagePrior` weight (``--page-prior``): far above any useful one (0.5 is the measured best)
MAX_PAGE_PRIOR = 1000.0


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
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) \
                or not 0 <= weight <= MAX_PAGE_PRIOR:
            raise ValueError(f"page prior weight must be a finite number within 0-{MAX_PAGE_PRIOR:g}, got {weight!r}")
        self.ranker, self.weight = ranker, weight
        self.name = f"{ranker.name}+page{weight:g}"

    def __getattr__(self, attr: str):  # needs_paths, contextual, cache, ... of the wrapped ranker
        return getattr(self.__dict__["ranker"], attr)

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        return add_page_prior(self.ranker.score(question, trees), self.weight)


def add_page_prior(scores: Sequence[np.ndarray], weight: float) -> list[np.ndarray]:
    """Per-page scores with ``weight * max(page scores)`` added to every block of the page (see PagePrior).

    Raises:
        ValueError: the prior overflows float32 (a huge weight or score): finite scores never become infinite
            or NaN here.
    """
    out = []
    for i, s in enumerate(scores):
        s = np.asarray(s, dtype=np.float32)
        if not (weight and len(s)):
            out.append(s)
            continue
        top = s.max()
        with np.errstate(over="ignore", invalid="ignore"):  # float32 as always; an overflow is refused below
            res = s + np.float32(weight) * top
        if not np.isfinite(res).all() and np.isfinite(s).all():
            raise ValueError(f"page {i + 1}: page prior weight {weight:g} x best block score {top:g} overflows "
                             "the scores; use a smaller weight")
        out.append(res)
    return out
