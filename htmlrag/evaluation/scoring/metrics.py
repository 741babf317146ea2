"""QA metrics, registered once: each with its per-example function, its aggregation and its direction.

Every metric takes one :class:`MetricInput` (the reader's response, the context handed to the reader, the
gold answers) and returns a float for that example. A run saves these per-example scores; aggregates are
computed from the saved scores with the metric's ``aggregate`` (the mean, in [0, 1]; tables print x100).

Normalisation (:func:`normalize_answer`) is SQuAD's: lower-case, drop ASCII punctuation (``string.punctuation``),
drop the articles *a*, *an*, *the* as whole words, collapse whitespace (any Unicode whitespace). We apply
Unicode NFC first so that composed and decomposed accents compare equal; nothing else is changed (non-ASCII
punctuation such as curly quotes is kept, exactly as in SQuAD and in the HtmlRAG authors' code).

The paper's **EM** and **Hit@1** are containment measures, as computed by the HtmlRAG authors' evaluation
code (``evaluate_utils.calculate_short_answer_EM``): with ``G`` the gold short answers of one question,

- ``em`` = |{g in G : normalize(g) is a substring of normalize(response)}| / |G|
- ``hit1`` = 1 if at least one normalize(g) is a substring of normalize(response), else 0.

Note: the authors' results notebook prints these two numbers under swapped headers; we name each by what it
computes, so compare our ``em`` with the notebook's "Hit@1" column and our ``hit1`` with its "EM" column.

Long-form answers (ELI5), as the authors' notebook scores them (``jupyter/eval_scrips.ipynb``):

- ``rouge_l``: ROUGE-L F-measure (rouge-score, no stemming, its default tokenizer) of the response against the
  gold answer that matches it best (chosen per example by that same ROUGE-L); the run's value is the mean
  over examples (the notebook's ``BootstrapAggregator`` reports the median of 1000 bootstrap means, a random
  estimate of that mean).
- ``bleu``: one corpus BLEU over all predictions, each with all its gold answers as references (sacrebleu's
  13a tokenisation, 4-grams, clipped counts, no smoothing, the brevity penalty against the sum of each
  example's *shortest* reference, as the authors' ``nmt_bleu.compute_bleu``), x 1/100. A row stores each
  example's sufficient statistics; the per-example score kept for paired t-tests is sentence BLEU
  (sacrebleu, exp smoothing, effective order), since corpus BLEU does not split into examples.

A metric that cannot be computed raises :class:`~htmlrag.core.errors.HtmlRagError`; it is never skipped.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.errors import HtmlRagError

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: NFC, lower-case, remove ASCII punctuation, remove articles, collapse whitespace."""
    text = unicodedata.normalize("NFC", text).lower()
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class MetricInput:
    """What a metric sees for one example.

    Attributes:
        response: the reader's answer ("" with ``reader=none``).
        context: the context handed to the reader, after cutting it to the reader's window.
        answers: gold short answers (aliases or several answers of a multi-answer question).
        long_answers: gold long-form answers (ASQA, ELI5); may be empty.
        answer_groups: for ASQA, one list of aliases per disambiguated sub-question; may be empty.
        context_text: the context as plain text (tags removed), used for reference-text EM.
    """

    response: str = ""
    context: str = ""
    answers: Sequence[str] = ()
    long_answers: Sequence[str] = ()
    answer_groups: Sequence[Sequence[str]] = ()
    context_text: str | None = None


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
        name: registry key (also the column name in ``predictions.jsonl`` and ``metrics.json``).
        fn: per-example score function.
        higher_is_better: direction, used to mark the best and second-best cells of a table.
        needs: ``"response"`` (needs a reader) or ``"context"`` (computable with ``reader=none``).
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
    aggregate: Callable[[Sequence[float]], float] = field(default=lambda xs: sum(xs) / len(xs) if xs else float("nan"))
    description: str = ""
    stats: Callable[[MetricInput], list[float]] | None = None
    corpus: Callable[[Sequence[Sequence[float]]], float] | None = None
    inputs: tuple[str, ...] = ("response", "answers")


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS`; a second registration of one name is an error."""
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


def _gold(x: MetricInput, what: str = "answers") -> list[str]:
    gold = [a for a in (x.answers if what == "answers" else x.long_answers) if isinstance(a, str) and a.strip()]
    if not gold:
        raise HtmlRagError(f"metric needs gold {what}, but the example has none")
    return gold


def _contained(gold: Sequence[str], text: str) -> list[bool]:
    norm = normalize_answer(text)
    return [normalize_answer(g) in norm for g in gold]


def em(x: MetricInput) -> float:
    """Paper EM: the fraction of gold short answers whose normalised form is contained in the response."""
    hits = _contained(_gold(x), x.response)
    return sum(hits) / len(hits)


def hit1(x: MetricInput) -> float:
    """Paper Hit@1: 1.0 when at least one normalised gold short answer is contained in the response."""
    return float(any(_contained(_gold(x), x.response)))


def exact_match(x: MetricInput) -> float:
    """Strict exact match: 1.0 when the normalised response equals some normalised gold answer."""
    resp = normalize_answer(x.response)
    return float(any(resp == normalize_answer(g) for g in _gold(x)))


def token_f1(x: MetricInput) -> float:
    """SQuAD token F1: the best over gold answers of the F1 of whitespace tokens of the normalised strings."""
    pred = normalize_answer(x.response).split()
    best = 0.0
    for g in _gold(x):
        gold = normalize_answer(g).split()
        common = Counter(pred) & Counter(gold)
        same = sum(common.values())
        if not pred or not gold:
            score = float(pred == gold)
        elif same == 0:
            score = 0.0
        else:
            p, r = same / len(pred), same / len(gold)
            score = 2 * p * r / (p + r)
        best = max(best, score)
    return best


def _references(x: MetricInput) -> list[str]:
    refs = [a for a in x.long_answers if isinstance(a, str) and a.strip()]
    return refs or _gold(x)


_ROUGE: list[Any] = []


def _rouge_scorer() -> Any:
    if not _ROUGE:
        from rouge_score import rouge_scorer

        _ROUGE.append(rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False))
    return _ROUGE[0]


def rouge_l(x: MetricInput) -> float:
    """ROUGE-L F-measure (rouge-score, no stemming) of the response against its best-matching reference.

    References are the long answers when the example has them (ASQA, ELI5), else the short answers. The
    authors' ``select_candidate`` picks the reference with the highest ROUGE-L and scores against it, which
    is the maximum over references (when every reference scores 0 the score is 0 either way).
    """
    scorer = _rouge_scorer()
    return max(scorer.score(ref, x.response)["rougeL"].fmeasure for ref in _references(x))


BLEU_ORDER = 4
_TOK13A: list[Any] = []


def _bleu_tokens(text: str) -> list[str]:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    if not _TOK13A:
        _TOK13A.append(Tokenizer13a())
    return _TOK13A[0](text.strip()).split()


def _ngrams(tokens: Sequence[str], order: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for n in range(1, order + 1) for i in range(len(tokens) - n + 1))


def bleu_stats(x: MetricInput) -> list[float]:
    """BLEU sufficient statistics of one example against all its references (13a tokens):
    ``[hypothesis length, shortest reference length, matches 1..4, hypothesis n-grams 1..4]``; matches are
    clipped by the largest count of each n-gram in any one reference."""
    hyp = _bleu_tokens(x.response)
    refs = [_bleu_tokens(r) for r in _references(x)]
    best: Counter = Counter()
    for r in refs:
        best |= _ngrams(r, BLEU_ORDER)
    overlap = _ngrams(hyp, BLEU_ORDER) & best
    matches = [0] * BLEU_ORDER
    for gram, c in overlap.items():
        matches[len(gram) - 1] += c
    totals = [max(0, len(hyp) - n + 1) for n in range(1, BLEU_ORDER + 1)]
    return [float(len(hyp)), float(min(len(r) for r in refs)), *map(float, matches), *map(float, totals)]


def corpus_bleu(stats: Sequence[Sequence[float]]) -> float:
    """Corpus BLEU / 100 from :func:`bleu_stats` of every example (summed; sacrebleu's formula, no smoothing,
    the brevity penalty against the summed shortest-reference lengths)."""
    from sacrebleu.metrics import BLEU

    if not stats:
        return float("nan")
    sums = [sum(float(s[i]) for s in stats) for i in range(2 + 2 * BLEU_ORDER)]
    correct = [int(v) for v in sums[2 : 2 + BLEU_ORDER]]
    total = [int(v) for v in sums[2 + BLEU_ORDER :]]
    res = BLEU.compute_bleu(correct, total, int(sums[0]), int(sums[1]), smooth_method="none",
                            max_ngram_order=BLEU_ORDER)
    return float(res.score) / 100.0


def bleu(x: MetricInput) -> float:
    """Sentence BLEU (sacrebleu, exp smoothing, effective order, 13a) against all references, / 100: the
    per-example score for paired t-tests. The run's BLEU is :func:`corpus_bleu` (see the module doc)."""
    from sacrebleu.metrics import BLEU

    return BLEU(effective_order=True).sentence_score(x.response, _references(x)).score / 100.0


def str_em(x: MetricInput) -> float:
    """ASQA STR-EM (ALCE): the fraction of answer groups with at least one alias contained in the response.

    Groups are the disambiguated sub-questions' short answers (``answer_groups``); an example without groups
    counts its ``answers`` as one group of aliases.
    """
    groups = [[a for a in g if a.strip()] for g in x.answer_groups] or [_gold(x)]
    groups = [g for g in groups if g]
    if not groups:
        raise HtmlRagError("str_em needs at least one non-empty answer group")
    return sum(any(_contained(g, x.response)) for g in groups) / len(groups)


def ref_em(x: MetricInput) -> float:
    """Reference-text EM (paper Table 5): 1.0 when a normalised gold answer is contained in the context text.

    The context is the one handed to the reader (after cutting to its window), as plain text with tags
    removed, so it measures information loss of cleaning/pruning independent of any reader.
    """
    text = x.context_text if x.context_text is not None else x.context
    return float(any(_contained(_gold(x), text)))


def response_tokens(x: MetricInput) -> float:
    """Number of whitespace tokens of the response (not a quality measure; lower is shorter)."""
    return float(len(x.response.split()))


_SHORT = ("response", "answers")
_LONG = ("response", "answers", "long_answers")
for _m in (
    Metric("em", em, description="fraction of gold short answers contained in the response (SQuAD-normalised)",
           inputs=_SHORT),
    Metric("hit1", hit1, inputs=_SHORT,
           description="1 if any gold short answer is contained in the response (SQuAD-normalised)"),
    Metric("exact_match", exact_match, inputs=_SHORT,
           description="1 if the normalised response equals a normalised gold answer"),
    Metric("f1", token_f1, description="max over gold answers of SQuAD token F1", inputs=_SHORT),
    Metric("rouge_l", rouge_l, inputs=_LONG,
           description="ROUGE-L F (rouge-score, no stemming) against the best-matching reference"),
    Metric("bleu", bleu, stats=bleu_stats, corpus=corpus_bleu, inputs=_LONG,
           description="corpus BLEU / 100 (13a, 4-grams, no smoothing, all references; shortest-reference "
                       "brevity penalty); per example: smoothed sentence BLEU for t-tests"),
    Metric("str_em", str_em, inputs=("response", "answers", "answer_groups"),
           description="ASQA STR-EM: fraction of answer groups with an alias in the response"),
    Metric("ref_em", ref_em, needs="context", inputs=("context", "answers"),
           description="1 if any gold answer is contained in the context text handed to the reader"),
    Metric("response_tokens", response_tokens, higher_is_better=False, inputs=("response",),
           description="whitespace tokens in the response"),
):
    register(_m)


def score_example(names: Sequence[str], x: MetricInput) -> dict[str, float]:
    """Per-example scores for the metrics ``names``; a failing metric raises with the metric's name."""
    out: dict[str, float] = {}
    for name in names:
        metric = get_metric(name)
        try:
            out[name] = float(metric.fn(x))
        except HtmlRagError as exc:
            raise HtmlRagError(f"metric {name}: {exc}") from exc
    return out


def example_stats(names: Sequence[str], x: MetricInput) -> dict[str, list[float]]:
    """Sufficient statistics of the corpus-level metrics among ``names`` for one example (saved with the row)."""
    out: dict[str, list[float]] = {}
    for name in names:
        metric = get_metric(name)
        if metric.stats is not None:
            try:
                out[name] = [float(v) for v in metric.stats(x)]
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
