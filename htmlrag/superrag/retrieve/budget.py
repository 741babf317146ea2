"""Ranked evidence cut to a token budget, the way HtmlRAG fills a reader's budget with ranked blocks.

Retrievers return evidence of different sizes (150-word text windows, section chunks, table chunks of 15 rows,
whole tables appended by the expansion step), so "the top 10" holds different amounts of text per retriever.
To compare them at equal evidence size, each ranked list is cut to the same number of tokens: the items are
taken greedily in rank order; one that does not fit the room left is skipped and later, smaller items may still
fill it (HtmlRAG's ``fill="skip"`` walk, :func:`htmlrag.pruning.prune.prune_to_budget`). The top-ranked item alone
larger than the whole budget is kept cut to the budget (``oversize="truncate"``), so a retriever whose best
item is huge still gets its best evidence and never more than the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag.pruning.tokens import TokenCounter


@dataclass
class BudgetCut:
    """What a budget kept.

    Attributes:
        texts: the kept items' texts in rank order (the first may be cut to the budget).
        kept: their indexes in the ranked input.
        tokens: tokens of the kept texts, summed (each counted alone; no separators).
        budget: the budget, in tokens.
    """

    texts: list[str]
    kept: list[int]
    tokens: int
    budget: int


def fill_budget(texts: Sequence[str], counter: TokenCounter, budget: int) -> BudgetCut:
    """The best-first ``texts`` cut to ``budget`` tokens of ``counter`` (see the module docstring).

    Raises:
        ValueError: ``budget`` is not positive.
    """
    if budget <= 0:
        raise ValueError(f"budget must be a positive number of tokens, got {budget}")
    out: list[str] = []
    kept: list[int] = []
    used = 0
    for i, (text, n) in enumerate(zip(texts, counter.count_many(list(texts)), strict=True)):
        if used + n <= budget:
            out.append(text)
            kept.append(i)
            used += n
        elif not kept and n > budget:  # the best item alone is over the budget: its first `budget` tokens
            cut = counter.truncate(text, budget)
            out.append(cut)
            kept.append(i)
            used = counter.count(cut)
        if budget - used <= 0:
            break
    return BudgetCut(out, kept, used, budget)
