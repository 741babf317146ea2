"""The ranker protocol shared by BM25, embedding and generative rankers (and the fakes in tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from htmlrag.blocktree import BlockTree


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
