"""The metric registry: one table, :data:`METRICS`, lists every metric once, each with its per-example
function, its direction, what it needs, how a run's value is computed and its exact definition.

The per-example functions live with what they measure: the QA metrics in :mod:`htmlrag.evaluation.scoring.qa`,
the document-QA metrics in :mod:`htmlrag.docqa.metrics` (the evaluation imports the stages below it, never the
other way). Nothing registers itself on import: a metric is in the table, or it is added explicitly with
:func:`register` (a user's own metric). A run saves the per-example scores; aggregates are computed from the
saved scores with the metric's ``aggregate`` (the mean, in [0, 1]; tables print x100), or for a corpus-level
metric (BLEU) with its ``corpus`` formula from the saved per-example statistics.

A metric that cannot be computed raises :class:`~htmlrag.core.errors.HtmlRagError`; it is never skipped. A score or
statistic that is not a finite number (NaN, an infinity) counts as not computed: it raises, naming the metric, so
the system's row is an error row instead of a row holding a NaN that no mean can use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from htmlrag.core.answers import MetricInput, normalize_answer
from htmlrag.core.errors import HtmlRagError
from htmlrag.docqa import metrics as docqa
from htmlrag.evaluation.scoring import qa
from htmlrag.evaluation.scoring.qa import (
    BLEU_ORDER,
    bleu,
    bleu_stats,
    corpus_bleu,
    em,
    exact_match,
    hit1,
    ref_em,
    response_tokens,
    rouge_l,
    str_em,
    token_f1,
)

__all__ = [
    "BLEU_ORDER", "METRICS", "Metric", "MetricInput", "aggregate", "bleu", "bleu_stats", "corpus_bleu", "em",
    "exact_match", "example_stats", "get_metric", "hit1", "mean", "normalize_answer", "ref_em", "register",
    "response_tokens", "rouge_l", "score_example", "str_em", "token_f1",
]


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean (NaN for no values): how most metrics combine their per-example scores."""
    return sum(values) / len(values) if values else float("nan")


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
        name: registry key (also the column name in ``predictions.jsonl`` and ``metrics.json``).
        fn: per-example score function.
        higher_is_better: direction, used to mark the best and second-best cells of a table.
        needs: ``"response"`` (needs a reader), ``"context"`` (computable with ``reader=none``) or ``"judge"``
            (written by the LLM judge step after a run, never computed per example).
        aggregate: how per-example scores combine (default: arithmetic mean).
        description: the exact definition, shown in ``--help`` and the README.
        stats: for a corpus-level metric, the example's sufficient statistics (saved with the row).
        corpus: for a corpus-level metric, the run's value from every example's ``stats`` (used instead of
            ``aggregate``; the per-example scores then only serve the paired tests).
        inputs: the :class:`MetricInput` fields the score reads (``response``, ``answers``, ``long_answers``,
            ``answer_groups``, ``context``); ``htmlrag-paper verify`` re-scores a saved row only when the row
            holds all of them. ``("judge",)``: a verdict of the LLM judge step, never re-scored.
    """

    name: str
    fn: Callable[[MetricInput], float]
    higher_is_better: bool = True
    needs: str = "response"
    aggregate: Callable[[Sequence[float]], float] = mean
    description: str = ""
    stats: Callable[[MetricInput], list[float]] | None = None
    corpus: Callable[[Sequence[Sequence[float]]], float] | None = None
    inputs: tuple[str, ...] = ("response", "answers")


def _table(*metrics: Metric) -> dict[str, Metric]:
    table: dict[str, Metric] = {}
    for m in metrics:
        if m.name in table:
            raise HtmlRagError(f"metric {m.name!r} is listed twice")
        table[m.name] = m
    return table


#: What the metrics read (``Metric.inputs``).
_SHORT = ("response", "answers")
_LONG = ("response", "answers", "long_answers")
_CONTEXT = ("context", "answers", "answer_groups")
_ANSWER = ("response", "answers", "answer_groups")

#: Every metric, once. Column names in ``predictions.jsonl`` and ``metrics.json`` are these names.
METRICS: dict[str, Metric] = _table(
    # --- QA (htmlrag.evaluation.scoring.qa) --------------------------------------------------------------
    Metric("em", qa.em, inputs=_SHORT, description="fraction of gold short answers contained in the response (SQuAD-normalised)"),
    Metric("hit1", qa.hit1, inputs=_SHORT,
           description="1 if any gold short answer is contained in the response (SQuAD-normalised)"),
    Metric("exact_match", qa.exact_match, inputs=_SHORT,
           description="1 if the normalised response equals a normalised gold answer"),
    Metric("f1", qa.token_f1, inputs=_SHORT, description="max over gold answers of SQuAD token F1"),
    Metric("rouge_l", qa.rouge_l, inputs=_LONG,
           description="ROUGE-L F (rouge-score, no stemming) against the best-matching reference"),
    Metric("bleu", qa.bleu, stats=qa.bleu_stats, corpus=qa.corpus_bleu, inputs=_LONG,
           description="corpus BLEU / 100 (13a, 4-grams, no smoothing, all references; shortest-reference "
                       "brevity penalty); per example: smoothed sentence BLEU for t-tests"),
    Metric("str_em", qa.str_em, inputs=("response", "answers", "answer_groups"),
           description="ASQA STR-EM: fraction of answer groups with an alias in the response"),
    Metric("ref_em", qa.ref_em, needs="context", inputs=("context", "answers"),
           description="1 if any gold answer is contained in the context text handed to the reader"),
    Metric("response_tokens", qa.response_tokens, higher_is_better=False, inputs=("response",),
           description="whitespace tokens in the response"),
    # --- document QA (htmlrag.docqa.metrics) --------------------------------------------------------------
    Metric("evidence_recall", docqa.evidence_recall, needs="context", inputs=_CONTEXT,
           description="share of the gold answer's key items (numbers, else key phrases) in the context text"),
    Metric("evidence_hit", docqa.evidence_hit, needs="context", inputs=_CONTEXT,
           description="1 if at least half of the gold key items are in the context text"),
    Metric("answer_recall", docqa.answer_recall, inputs=_ANSWER, description="share of the gold key items in the answer"),
    Metric("answer_hit", docqa.answer_hit, inputs=_ANSWER,
           description="1 if at least half of the gold key items are in the answer"),
    Metric("answer_f1", docqa.answer_f1, inputs=("response", "answers", "long_answers"),
           description="SQuAD token F1 against the full gold answer"),
    Metric("judge", docqa.judge_step_only, needs="judge", inputs=("judge",),
           description="LLM judge verdict (1 correct, 0 wrong; no valid verdict counts 0, see judge_invalid)"),
    Metric("judge_invalid", docqa.judge_step_only, needs="judge", higher_is_better=False, inputs=("judge",),
           description="1 if the judge gave no valid verdict (unparsable reply or failed request)"),
)


def register(metric: Metric) -> Metric:
    """Add a metric of one's own to :data:`METRICS` (explicitly, at the caller's start-up); a name already in
    the table is an error."""
    if metric.name in METRICS:
        raise HtmlRagError(f"metric {metric.name!r} is already registered")
    METRICS[metric.name] = metric
    return metric


def get_metric(name: str) -> Metric:
    """Return the registered metric ``name``; the error lists the known names."""
    try:
        return METRICS[name]
    except KeyError:
        raise HtmlRagError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None


def score_example(names: Sequence[str], x: MetricInput) -> dict[str, float]:
    """Per-example scores for the metrics ``names``; a failing metric raises with the metric's name."""
    out: dict[str, float] = {}
    for name in names:
        metric = get_metric(name)
        try:
            out[name] = _finite(float(metric.fn(x)), "score")
        except HtmlRagError as exc:
            raise HtmlRagError(f"metric {name}: {exc}") from exc
    return out


def _finite(value: float, what: str) -> float:
    """``value``, or :class:`HtmlRagError` when it is NaN or infinite (a score no aggregate can use)."""
    if not math.isfinite(value):
        raise HtmlRagError(f"the {what} is {value!r}, not a finite number")
    return value


def example_stats(names: Sequence[str], x: MetricInput) -> dict[str, list[float]]:
    """Sufficient statistics of the corpus-level metrics among ``names`` for one example (saved with the row)."""
    out: dict[str, list[float]] = {}
    for name in names:
        metric = get_metric(name)
        if metric.stats is not None:
            try:
                out[name] = [_finite(float(v), "statistic") for v in metric.stats(x)]
            except HtmlRagError as exc:
                raise HtmlRagError(f"metric {name}: {exc}") from exc
    return out


def aggregate(name: str, values: Sequence[float], stats: Sequence[Sequence[float]] | None = None) -> float:
    """The run's value of metric ``name``: its corpus formula over the examples' saved ``stats`` for a
    corpus-level metric, else its aggregation of the per-example ``values``.

    Raises:
        HtmlRagError: a corpus-level metric without one saved statistics record per example.
    """
    metric = get_metric(name)
    if metric.corpus is not None:
        if stats is None or len(stats) != len(values) or any(s is None for s in stats):
            raise HtmlRagError(f"metric {name} is computed over the corpus from per-example statistics, but "
                               f"{'none were' if not stats else 'not every row has them'} saved (rows written by "
                               "older code: rerun the evaluation)")
        return float(metric.corpus(list(stats)))
    return float(metric.aggregate(list(values)))
