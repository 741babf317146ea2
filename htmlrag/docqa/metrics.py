"""Document-QA metrics: the per-example functions; the registry (:data:`htmlrag.evaluation.scoring.metrics.METRICS`)
lists them with their directions and what they need.

Gold key items (see :mod:`htmlrag.docqa.items`) travel in ``MetricInput.answer_groups``: one group per item
(a group may list aliases; it counts as found when any alias is). Examples without groups use the key items
of their first gold answer (without the question's numbers excluded, since metrics do not see the question).

- ``evidence_recall``: share of the gold items found in the context handed to the reader (plain text).
- ``evidence_hit``: 1 when ``evidence_recall >= 0.5`` (the SuperRAG bench's "evidence hit").
- ``answer_recall`` / ``answer_hit``: the same on the reader's answer (containment of the gold's numbers and
  key phrases in the answer).
- ``answer_f1``: SQuAD token F1 of the answer against the full gold answer (``long_answers``, else ``answers``).
- ``judge`` / ``judge_invalid``: the LLM judge's verdict (1 correct, 0 wrong) and whether no valid verdict
  was obtained; computed by the judge step after a run (:mod:`htmlrag.docqa.judge`), never per example here.
"""

from __future__ import annotations

from collections import Counter

from htmlrag.core.answers import MetricInput, normalize_answer
from htmlrag.core.errors import HtmlRagError
from htmlrag.docqa.items import ItemMatcher, gold_items

HIT_THRESHOLD = 0.5


def _groups(x: MetricInput) -> list[list[str]]:
    groups = [[a for a in g if isinstance(a, str) and a.strip()] for g in x.answer_groups]
    groups = [g for g in groups if g]
    if groups:
        return groups
    gold = [a for a in x.answers if isinstance(a, str) and a.strip()]
    if not gold:
        raise HtmlRagError("metric needs gold key items (answer_groups) or a gold answer, but the example has none")
    _, items = gold_items("", gold[0])
    if not items:
        raise HtmlRagError("the gold answer has no key items")
    return [[i] for i in items]


def _recall(x: MetricInput, text: str) -> float:
    m = ItemMatcher(text)
    groups = _groups(x)
    return sum(any(m.found(a) for a in g) for g in groups) / len(groups)


def evidence_recall(x: MetricInput) -> float:
    """Share of gold key items found in the context text handed to the reader."""
    return _recall(x, x.context_text if x.context_text is not None else x.context)


def evidence_hit(x: MetricInput) -> float:
    """1.0 when at least half of the gold key items are in the context text."""
    return float(evidence_recall(x) >= HIT_THRESHOLD)


def answer_recall(x: MetricInput) -> float:
    """Share of gold key items found in the reader's answer."""
    return _recall(x, x.response)


def answer_hit(x: MetricInput) -> float:
    """1.0 when at least half of the gold key items are in the reader's answer."""
    return float(answer_recall(x) >= HIT_THRESHOLD)


def answer_f1(x: MetricInput) -> float:
    """SQuAD token F1 of the answer against the full gold answer(s), best over references."""
    refs = [a for a in (x.long_answers or x.answers) if isinstance(a, str) and a.strip()]
    if not refs:
        raise HtmlRagError("answer_f1 needs a gold answer")
    pred = normalize_answer(x.response).split()
    best = 0.0
    for ref in refs:
        gold = normalize_answer(ref).split()
        same = sum((Counter(pred) & Counter(gold)).values())
        if pred and gold and same:
            p, r = same / len(pred), same / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def judge_step_only(x: MetricInput) -> float:
    """``judge`` / ``judge_invalid`` are written by the LLM judge step after a run: asked per example, raise."""
    raise HtmlRagError("judge scores come from the LLM judge step (configure judge=...), not from per-example "
                       "metrics; remove 'judge'/'judge_invalid' from metric.names")
