"""Ranked evidence cut to a token budget (``htmlrag.superrag.retrieve.budget``): greedy in rank order, an item
that does not fit is skipped and smaller later ones fill the room, the best item alone over the budget is cut
to it; never more than the budget. Checked with a word counter and with the project's default tokenizer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from htmlrag.superrag.retrieve.budget import fill_budget


class Words:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])


def _text(n: int, tag: str) -> str:
    return " ".join([tag] * n)


def test_greedy_in_rank_order_skipping_what_does_not_fit() -> None:
    texts = [_text(40, "a"), _text(50, "b"), _text(30, "c"), _text(25, "d"), _text(5, "e")]
    cut = fill_budget(texts, Words(), 100)
    assert cut.kept == [0, 1, 4] and cut.tokens == 95  # c (30) and d (25) do not fit after a+b; e does
    assert cut.texts == [texts[0], texts[1], texts[4]]
    assert fill_budget(texts, Words(), 1000).kept == [0, 1, 2, 3, 4]


def test_the_best_item_over_the_whole_budget_is_cut_to_it() -> None:
    texts = [_text(500, "a"), _text(10, "b")]
    cut = fill_budget(texts, Words(), 100)
    assert cut.kept == [0] and cut.tokens == 100 and cut.texts[0] == _text(100, "a")
    later = fill_budget([_text(10, "b"), _text(500, "a"), _text(20, "c")], Words(), 100)
    assert later.kept == [0, 2] and later.tokens == 30  # a later oversized item is skipped, not cut


def test_budget_holds_with_the_default_tokenizer() -> None:
    from htmlrag.pruning.tokens import load_tokenizer

    tok = load_tokenizer()
    texts = ["Revenue | $18,120 | $5,931 | 206%\nGraphics | 3,475 | 2,115", "Net income rose " * 60, "Gross margin 74.0%"]
    for budget in (5, 40, 200, 1500):
        cut = fill_budget(texts, tok, budget)
        assert cut.tokens == sum(tok.count(t) for t in cut.texts) <= budget
    with pytest.raises(ValueError):
        fill_budget(texts, tok, 0)
