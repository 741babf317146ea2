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

A metric that cannot be computed raises :class:`~htmlrag.errors.HtmlRagError`; it is never skipped.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.errors import HtmlRagError

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
    """

    name: str
    fn: Callable[[MetricInput], float]
    higher_is_better: bool = True
    needs: str = "response"
    aggregate: Callable[[Sequence[float]], float] = field(default=lambda xs: sum(xs) / len(xs) if xs else float("nan"))
    description: str = ""


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


def rouge_l(x: MetricInput) -> float:
    """ROUGE-L F-measure (rouge-score, Porter stemming) of the response against the best-matching reference.

    References are the long answers when the example has them (ASQA, ELI5), else the short answers; the
    best F-measure over references is kept (the authors select the reference with the highest ROUGE-L).
    """
    if not _ROUGE:
        from rouge_score import rouge_scorer

        _ROUGE.append(rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True))
    scorer = _ROUGE[0]
    return max(scorer.score(ref, x.response)["rougeL"].fmeasure for ref in _references(x))


def bleu(x: MetricInput) -> float:
    """Sentence BLEU (sacrebleu, exp smoothing, 13a tokenizer) against all references, scaled to [0, 1]."""
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


for _m in (
    Metric("em", em, description="fraction of gold short answers contained in the response (SQuAD-normalised)"),
    Metric("hit1", hit1, description="1 if any gold short answer is contained in the response (SQuAD-normalised)"),
    Metric("exact_match", exact_match, description="1 if the normalised response equals a normalised gold answer"),
    Metric("f1", token_f1, description="max over gold answers of SQuAD token F1"),
    Metric("rouge_l", rouge_l, description="ROUGE-L F (rouge-score, stemmed), best reference"),
    Metric("bleu", bleu, description="sentence BLEU (sacrebleu) / 100 against all references"),
    Metric("str_em", str_em, description="ASQA STR-EM: fraction of answer groups with an alias in the response"),
    Metric("ref_em", ref_em, needs="context",
           description="1 if any gold answer is contained in the context text handed to the reader"),
    Metric("response_tokens", response_tokens, higher_is_better=False,
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


def aggregate(name: str, values: Sequence[float]) -> float:
    """Aggregate saved per-example scores of metric ``name`` with its registered aggregation."""
    return float(get_metric(name).aggregate(list(values)))
