"""The authors' metric protocol on hand-computed fixtures: corpus BLEU (13a, 4-grams, clipped counts, no
smoothing, brevity penalty against each example's shortest reference), ROUGE-L against the best-matching
reference without stemming, and the run value computed from saved per-example statistics."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("sacrebleu")
pytest.importorskip("rouge_score")

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring.metrics import (
    MetricInput,
    aggregate,
    bleu_stats,
    corpus_bleu,
    example_stats,
    rouge_l,
    score_example,
)
from htmlrag.evaluation.summary import summarize

#: (response, references): the counts in the comments are worked out by hand.
FIXTURE = [
    # 6 tokens; refs of 6 and 7 tokens (shortest 6). Clipped matches: 1-grams the x2, cat, on, mat = 5 of 6;
    # 2-grams "the cat", "on the", "the mat" = 3 of 5; 3-grams "on the mat" = 1 of 4; 4-grams 0 of 3.
    ("the cat sat on the mat", ["the cat is on the mat", "there is a cat on the mat"]),
    # 6 tokens; refs of 7 and 4 (shortest 4). 1-grams 6 of 6 ("a dog" from the second reference); 2-grams
    # 5 of 5; 3-grams 3 of 4 (not "a dog runs"); 4-grams 2 of 3 ("dog runs in the", "runs in the park").
    ("a dog runs in the park", ["the dog runs in the park today", "a dog is running"]),
    # 1 token; refs of 4 and 4 (shortest 4). 1-gram 1 of 1; no longer n-grams.
    ("yes", ["yes it is true", "yes , indeed so"]),
]


def _x(response: str, refs: list[str]) -> MetricInput:
    return MetricInput(response=response, answers=["x"], long_answers=refs)


def test_bleu_statistics_per_example_by_hand() -> None:
    assert bleu_stats(_x(*FIXTURE[0])) == [6, 6, 5, 3, 1, 0, 6, 5, 4, 3]
    assert bleu_stats(_x(*FIXTURE[1])) == [6, 4, 6, 5, 3, 2, 6, 5, 4, 3]
    assert bleu_stats(_x(*FIXTURE[2])) == [1, 4, 1, 0, 0, 0, 1, 0, 0, 0]


def test_corpus_bleu_with_brevity_penalty_and_several_references() -> None:
    """Summed over the corpus: precisions 12/13, 8/10, 4/8, 2/6; 13 hypothesis tokens against 6 + 4 + 4 = 14
    shortest-reference tokens, so the brevity penalty is exp(1 - 14/13)."""
    expected = math.exp(1 - 14 / 13) * (12 / 13 * 8 / 10 * 4 / 8 * 2 / 6) ** 0.25
    got = corpus_bleu([bleu_stats(_x(r, refs)) for r, refs in FIXTURE])
    assert got == pytest.approx(expected, rel=1e-9)
    assert got == pytest.approx(0.548449, abs=1e-6)
    # not the mean of per-example scores, and not sacrebleu's default "closest reference" length (17 here)
    sentences = [score_example(["bleu"], _x(r, refs))["bleu"] for r, refs in FIXTURE]
    assert abs(sum(sentences) / 3 - got) > 0.05
    closest = math.exp(1 - 17 / 13) * (12 / 13 * 8 / 10 * 4 / 8 * 2 / 6) ** 0.25
    assert abs(got - closest) > 0.1


def test_corpus_bleu_is_zero_without_any_four_gram_match() -> None:
    assert corpus_bleu([bleu_stats(_x(*FIXTURE[0]))]) == 0.0  # no smoothing


def test_rouge_l_best_reference_without_stemming() -> None:
    # LCS "the cats are" with the second reference: P = R = 3/4
    assert rouge_l(_x("the cats are running", ["a cat runs", "the cats are sleeping"])) == pytest.approx(0.75)
    # stemming would match cats/cat and running/runs; the authors' scorer does not stem
    assert rouge_l(_x("cats running", ["cat runs"])) == 0.0


def test_run_value_of_bleu_comes_from_saved_statistics() -> None:
    rows = []
    for i, (r, refs) in enumerate(FIXTURE):
        x = _x(r, refs)
        rows.append({"id": f"q{i}", "index": i, "systems": {"s": {
            "tokens": 1, "scores": score_example(["bleu", "rouge_l"], x),
            "metric_stats": example_stats(["bleu", "rouge_l"], x), "error": None}}})
    summary = summarize(rows, ["s"], ["bleu", "rouge_l"], ours="s", experiment="e", run_id="r", dataset="eli5")
    assert summary["systems"]["s"]["metrics"]["bleu"] == pytest.approx(0.548449, abs=1e-6)
    mean_rouge = sum(r["systems"]["s"]["scores"]["rouge_l"] for r in rows) / 3
    assert summary["systems"]["s"]["metrics"]["rouge_l"] == pytest.approx(mean_rouge)
    assert set(rows[0]["systems"]["s"]["metric_stats"]) == {"bleu"}  # only corpus metrics keep statistics


def test_corpus_metric_without_statistics_is_an_error() -> None:
    with pytest.raises(HtmlRagError, match="per-example statistics"):
        aggregate("bleu", [0.1, 0.2])
    with pytest.raises(HtmlRagError, match="not every row"):
        aggregate("bleu", [0.1, 0.2], [bleu_stats(_x(*FIXTURE[0])), None])
