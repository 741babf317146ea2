"""Significance tests between systems evaluated on the same questions.

We use the paired two-sided t-test (``scipy.stats.ttest_rel``) on per-example scores, pairing by question
id: only ids scored without error by both systems enter the test. Ties everywhere (all differences zero)
give ``p = 1``; a constant non-zero difference gives ``p = 0``. For yes/no outcomes (an answer retained or
not) :func:`mcnemar_exact` is the exact test: it looks only at the questions where the systems disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from htmlrag.core.errors import HtmlRagError


@dataclass(frozen=True)
class TTest:
    """Result of a paired two-sided t-test of ``a - b``.

    Attributes:
        n: number of paired examples.
        mean_a: mean of system a's scores; ``mean_b`` likewise.
        t: the t statistic (``None`` when undefined: fewer than 2 pairs).
        p: the two-sided p-value (``None`` when undefined).
    """

    n: int
    mean_a: float
    mean_b: float
    t: float | None
    p: float | None

    def significant(self, alpha: float = 0.05) -> bool:
        """True when ``p < alpha``."""
        return self.p is not None and self.p < alpha

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready fields."""
        return asdict(self)



def usable_number(x: Any) -> bool:
    """True for a score a mean can use: an int or a float (not a boolean), finite. A missing, null, NaN or
    infinite score is no score (:func:`htmlrag.evaluation.summary.usable_scores` counts and reports it)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)

def paired_ttest(a: Sequence[float], b: Sequence[float]) -> TTest:
    """Paired two-sided t-test of equal means for scores ``a[i]`` and ``b[i]`` of the same example ``i``.

    Raises:
        HtmlRagError: the sequences differ in length.
    """
    if len(a) != len(b):
        raise HtmlRagError(f"paired t-test needs equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    mean_a = sum(a) / n if n else math.nan
    mean_b = sum(b) / n if n else math.nan
    if n < 2:
        return TTest(n, mean_a, mean_b, None, None)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    if all(d == diffs[0] for d in diffs):
        if diffs[0] == 0:
            return TTest(n, mean_a, mean_b, 0.0, 1.0)
        return TTest(n, mean_a, mean_b, math.copysign(math.inf, diffs[0]), 0.0)
    from scipy import stats

    res = stats.ttest_rel(a, b)
    return TTest(n, mean_a, mean_b, float(res.statistic), float(res.pvalue))


@dataclass(frozen=True)
class McNemar:
    """Exact two-sided McNemar test of paired yes/no outcomes.

    Attributes:
        n: number of paired examples.
        a_only: examples where only system a succeeds; ``b_only`` likewise.
        p: two-sided p-value of ``a_only`` vs ``b_only`` under "either is equally likely" (binomial, 1/2);
            1.0 when the systems never disagree.
    """

    n: int
    a_only: int
    b_only: int
    p: float

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready fields."""
        return asdict(self)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Exact McNemar test for outcomes ``a[i]``, ``b[i]`` (truthy = success) of the same example ``i``.

    Raises:
        HtmlRagError: the sequences differ in length.
    """
    if len(a) != len(b):
        raise HtmlRagError(f"McNemar test needs equal lengths, got {len(a)} and {len(b)}")
    a_only = sum(1 for x, y in zip(a, b) if x and not y)
    b_only = sum(1 for x, y in zip(a, b) if y and not x)
    d = a_only + b_only
    if d == 0:
        return McNemar(len(a), 0, 0, 1.0)
    from scipy import stats

    return McNemar(len(a), a_only, b_only, float(stats.binomtest(a_only, d, 0.5).pvalue))


def paired_scores(
    scores: Mapping[str, Mapping[str, float]], sys_a: str, sys_b: str
) -> tuple[list[float], list[float]]:
    """Align ``scores[system][id]`` of two systems on the ids both have, in sorted id order."""
    ids = sorted(set(scores.get(sys_a, {})) & set(scores.get(sys_b, {})))
    return [scores[sys_a][i] for i in ids], [scores[sys_b][i] for i in ids]


def compare_to(
    scores: Mapping[str, Mapping[str, Mapping[str, float]]], ours: str, metrics: Sequence[str]
) -> dict[str, dict[str, TTest]]:
    """T-tests of system ``ours`` against every other system.

    Args:
        scores: ``scores[metric][system][example id]``.
        ours: the system under test.
        metrics: metric names to test.

    Returns:
        ``result[metric][baseline]``.
    """
    out: dict[str, dict[str, TTest]] = {}
    for m in metrics:
        by_sys = scores.get(m, {})
        if ours not in by_sys:
            raise HtmlRagError(f"t-test: system {ours!r} has no {m} scores; systems: {sorted(by_sys)}")
        out[m] = {}
        for other in sorted(by_sys):
            if other != ours:
                a, b = paired_scores(by_sys, ours, other)
                out[m][other] = paired_ttest(a, b)
    return out
