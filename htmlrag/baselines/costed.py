"""HtmlRAG's two-step pruning with model-cost counters (Table 4) and explicit sibling packing (Table 3).

:class:`CostedPipeline` is :class:`htmlrag.pruning.pipeline.HtmlRagPipeline` plus, per example, the cost of each
ranking step in ``stage_tokens`` (``cost:step1.*``, ``cost:step2.*``; see :mod:`htmlrag.baselines`):

- an embedding ranker: tokens its model reads (every ranked text capped at the model's maximum sequence
  length, plus the instructed question), parameters and their bytes;
- the generative pruner: prompt tokens after truncation (input), path tokens fed along the token tree
  (output), token-tree nodes in total and skipped without computation, forward calls (from
  ``GenerativeRanker.last_stats``), parameters and bytes;
- BM25: zeros (no neural model).

The paper's "block tree -> DOM tree" ablation is ``max_words1 = max_words2 = 1`` with
``pack_siblings=False``: every element with more than one word is split into its children, so each block
is one element (its own direct text for inner elements), i.e. pruning on the DOM tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag.baselines.base import cost_keys, model_size
from htmlrag.baselines.chunk_rerank import ranker_costs
from htmlrag.html.blocktree import BlockTree
from htmlrag.pruning.pipeline import HtmlRagPipeline, PipelineResult
from htmlrag.pruning.tokens import TokenCounter
from htmlrag.rankers.base import Ranker


def generative_costs(ranker: Any) -> dict[str, float]:
    """Counters of the generative ranker's last call (zeros for other rankers)."""
    stats = getattr(ranker, "last_stats", None)
    if stats is None:
        return {}
    size = model_size(ranker._model) if getattr(ranker, "_model", None) is not None else {}
    return {"input_tokens": float(stats.prompt_tokens), "output_tokens": float(stats.tree_tokens),
            "nodes_total": float(stats.nodes_total), "nodes_skipped": float(stats.nodes_skipped),
            "forward_calls": float(stats.forward_calls), **size}


class CostedPipeline(HtmlRagPipeline):
    """:class:`~htmlrag.pruning.pipeline.HtmlRagPipeline` that also records each step's model cost.

    Args are those of :class:`~htmlrag.pruning.pipeline.HtmlRagPipeline` (``budget`` is the final budget, an alias
    of ``budget2`` so that the harness can pass it by the common name).
    """

    def __init__(self, ranker1: Ranker | None, ranker2: Ranker | None, tokenizer: TokenCounter, budget: int = 4096,
                 budget1: int = 6144, max_words1: int = 256, max_words2: int = 128, fmt: str = "html",
                 fill: str = "skip", pack_siblings: bool = True, clean: bool = False, split_to_fill: int = 4,
                 split_oversize: bool = True) -> None:
        super().__init__(ranker1, ranker2, tokenizer, budget1=budget1, budget2=budget, max_words1=max_words1,
                         max_words2=max_words2, fmt=fmt, clean=clean, fill=fill, pack_siblings=pack_siblings,
                         split_to_fill=split_to_fill, split_oversize=split_oversize)
        self._costs: dict[str, float] = {}

    def _rank(self, question: str, pages: Sequence[str], ranker: Ranker, max_words: int,
              roots: Sequence[object] | None = None) -> tuple[list[BlockTree], list]:
        trees, scores = super()._rank(question, pages, ranker, max_words, roots)
        role = "step1" if ranker is self.ranker1 and "cost:step1.input_tokens" not in self._costs else "step2"
        if getattr(ranker, "needs_paths", False):
            counters = generative_costs(ranker)
        else:
            texts = [" ".join(x.split()) for t in trees
                     for x in (t.rank_texts() if getattr(ranker, "contextual", False) else [b.text for b in t.blocks])]
            counters = ranker_costs(ranker, question, texts)
        self._costs.update(cost_keys(role, counters))
        return trees, scores

    def run_budgets(self, question: str, pages: Sequence[str | bytes], budgets: Sequence[int]
                    ) -> dict[int, PipelineResult]:
        """As :meth:`HtmlRagPipeline.run_budgets`, with ``cost:step1.*``/``cost:step2.*`` in ``stage_tokens``."""
        self._costs = {}
        results = super().run_budgets(question, pages, budgets)
        for res in results.values():
            res.stage_tokens.update(self._costs)
        return results
