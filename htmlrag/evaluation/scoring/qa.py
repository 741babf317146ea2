"""The QA metrics' per-example functions (the registry, :mod:`htmlrag.evaluation.scoring.metrics`, lists them).

Every function takes one :class:`~htmlrag.core.answers.MetricInput` (the reader's response, the context handed
to the reader, the gold answers) and returns a float for that example; answers are compared after SQuAD
normalisation (:func:`~htmlrag.core.answers.normalize_answer`).

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

from collections import Counter
from collections.abc import Sequence
from typing import Any

from htmlrag.core.answers import MetricInput, normalize_answer
from htmlrag.core.errors import HtmlRagError


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
