"""Golden tests of the registered metrics, including SQuAD normalisation corner cases."""

from __future__ import annotations

import math

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring.metrics import (
    METRICS,
    Metric,
    MetricInput,
    aggregate,
    get_metric,
    normalize_answer,
    register,
    score_example,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Beatles", "beatles"),                       # leading article
        ("a cat and an owl", "cat and owl"),              # articles anywhere, whole words only
        ("Theatre anthem", "theatre anthem"),             # "the"/"an" inside words are kept
        ("St. Asaph, Wales!", "st asaph wales"),          # ASCII punctuation dropped
        ("41,000", "41000"),                              # digit grouping joins
        ("  many\t\nspaces\u00a0here ", "many spaces here"),  # any Unicode whitespace collapses
        ("CAFÉ", "café"),                                 # non-ASCII lower-cased
        ("Cafe\u0301", "café"),                           # NFC: decomposed accent == composed
        ("“quoted” — dash", "“quoted” — dash"),           # non-ASCII punctuation is kept (as in SQuAD)
        ("一九五六年", "一九五六年"),                      # CJK untouched
        ("", ""),
    ],
)
def test_normalize_answer_golden(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def _x(response: str = "", answers=("x",), **kw) -> MetricInput:
    return MetricInput(response=response, answers=list(answers), **kw)


def test_em_is_fraction_of_gold_answers_contained() -> None:
    x = _x("It was released on June 29, 2007 in the US.", ["June 29, 2007", "2004", "the US"])
    assert get_metric("em").fn(x) == pytest.approx(2 / 3)
    assert get_metric("hit1").fn(x) == 1.0


def test_hit1_zero_when_nothing_contained() -> None:
    x = _x("Nobody knows.", ["Margaret Ellis", "Ellis"])
    assert get_metric("em").fn(x) == 0.0
    assert get_metric("hit1").fn(x) == 0.0


def test_containment_is_substring_after_normalisation() -> None:
    # as in the authors' code: substring containment, so "art" is found inside "start"
    assert get_metric("hit1").fn(_x("the start", ["art"])) == 1.0
    assert get_metric("hit1").fn(_x("The Beatles!", ["beatles"])) == 1.0
    assert get_metric("hit1").fn(_x("St Asaph", ["St. Asaph"])) == 1.0


def test_strict_exact_match() -> None:
    assert get_metric("exact_match").fn(_x("The Beatles.", ["beatles"])) == 1.0
    assert get_metric("exact_match").fn(_x("The Beatles were a band", ["beatles"])) == 0.0


def test_token_f1_golden() -> None:
    # pred tokens: [margaret, ellis, engineer]; gold: [margaret, ellis] -> P=2/3 R=1 F1=0.8
    assert get_metric("f1").fn(_x("Margaret Ellis, engineer", ["Margaret Ellis"])) == pytest.approx(0.8)
    assert get_metric("f1").fn(_x("", ["a"])) == 1.0  # both normalise to empty (SQuAD convention)
    assert get_metric("f1").fn(_x("x", ["y", "x"])) == 1.0  # best over gold answers


def test_rouge_l_uses_long_answers_and_best_reference() -> None:
    x = _x("the cat sat on the mat", ["zzz"], long_answers=["a dog ran", "the cat sat on the mat"])
    assert get_metric("rouge_l").fn(x) == pytest.approx(1.0)
    assert 0.0 < get_metric("rouge_l").fn(_x("the cat sat", ["the cat sat on the mat"])) < 1.0


def test_bleu_scaled_to_unit_interval() -> None:
    perfect = get_metric("bleu").fn(_x("the quick brown fox jumps over the lazy dog", ["the quick brown fox jumps over the lazy dog"]))
    assert perfect == pytest.approx(1.0)
    assert get_metric("bleu").fn(_x("completely different words here", ["the quick brown fox jumps"])) < 0.2


def test_str_em_counts_answer_groups() -> None:
    x = _x("It came out on June 29, 2007.", ["June 29, 2007", "2004"], answer_groups=[["June 29, 2007", "29 June 2007"], ["2004"]])
    assert get_metric("str_em").fn(x) == 0.5
    # without groups: the answers are one group of aliases
    assert get_metric("str_em").fn(_x("St Asaph", ["Llanelwy", "St. Asaph"])) == 1.0


def test_ref_em_uses_context_text() -> None:
    x = MetricInput(context="<td>Margaret</td><td>Ellis</td>", context_text="Margaret Ellis", answers=["Margaret Ellis"])
    assert get_metric("ref_em").fn(x) == 1.0
    assert get_metric("ref_em").fn(MetricInput(context="<p>no</p>", answers=["Margaret Ellis"])) == 0.0
    assert get_metric("ref_em").needs == "context"


def test_metric_without_gold_raises_with_metric_name() -> None:
    with pytest.raises(HtmlRagError, match="metric em"):
        score_example(["em"], MetricInput(response="x", answers=[]))
    with pytest.raises(HtmlRagError, match="unknown metric"):
        get_metric("emm")


def test_registry_is_registered_once() -> None:
    assert {"em", "hit1", "exact_match", "f1", "rouge_l", "bleu", "str_em", "ref_em"} <= set(METRICS)
    with pytest.raises(HtmlRagError, match="already registered"):
        register(Metric("em", lambda x: 0.0))
    for m in METRICS.values():
        assert m.fn.__doc__ or m.description


def test_aggregate_is_mean_and_empty_is_nan() -> None:
    assert aggregate("em", [1.0, 0.0, 0.5]) == pytest.approx(0.5)
    assert math.isnan(aggregate("em", []))


def test_properties_hold_for_any_text() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=40), st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4))
    def check(response: str, answers: list[str]) -> None:
        assert normalize_answer(normalize_answer(response)) == normalize_answer(response)  # idempotent
        answers = [a for a in answers if a.strip()] or ["x"]
        x = MetricInput(response=response, answers=answers)
        em, hit = get_metric("em").fn(x), get_metric("hit1").fn(x)
        assert 0.0 <= em <= hit <= 1.0 and (hit == 0.0) == (em == 0.0)
        if get_metric("exact_match").fn(x) == 1.0:
            assert hit == 1.0 and get_metric("f1").fn(x) == 1.0

    check()
