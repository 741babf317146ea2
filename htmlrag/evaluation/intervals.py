"""Confidence intervals, multiple-comparison corrections and detectable differences for per-question scores.

Definitions (every table of a run uses these; the settings are recorded in ``metrics.json["intervals"]``):

- **Cell interval**: the ``confidence`` (95%) bootstrap interval of the mean of one system's per-question
  scores, resampling *questions* with replacement (``scipy.stats.bootstrap``, ``method`` ``percentile`` by
  default, ``n_resamples`` 9999, ``random_state=numpy.random.default_rng(seed)``). The questions enter in the
  run's example order and every cell uses the same seed, so resample *i* draws the same question positions for every system
  scored on the same questions: the intervals of a table are *paired* (they come from the same resampled
  question sets), and a rerun reproduces every bound exactly.
- **Difference interval**: the same bootstrap over the per-question differences ``a_i - b_i`` of two systems on
  the questions both scored.
- **Correction**: every comparison of one table is one family; the p-values of its paired two-sided t-tests
  are adjusted with ``statsmodels.stats.multitest.multipletests`` (``holm`` by default; ``bonferroni``,
  ``fdr_bh``, or ``none``), and a significance mark needs the *adjusted* p below alpha.
- **Smallest detectable difference** (MDE): the smallest absolute mean difference that a paired two-sided
  t-test with ``n`` pairs detects with probability ``power`` (0.8), at the per-test level ``alpha'`` of the
  correction's strictest step (``alpha / m`` for holm, bonferroni and fdr_bh over ``m`` comparisons;
  ``alpha`` without correction): ``MDE = d* x s_d``, where ``d*`` (a standardised effect, Cohen's d of the
  differences) is the root of ``power(d) = power`` for the paired two-sided t-test's power
  ``P(T > t) + P(T < -t)``, ``T`` noncentral t with ``n - 1`` degrees of freedom and noncentrality
  ``d sqrt(n)``, ``t`` the ``1 - alpha'/2`` quantile of the central t (:func:`standardised_effect`:
  ``scipy.stats.nct`` and ``scipy.optimize.brentq``), and ``s_d`` is the sample standard deviation
  (``ddof=1``) of the observed per-question differences. A difference of at least the MDE is marked with
  probability >= power whatever its place in the Holm order. (``statsmodels``' ``TTestPower().solve_power``
  is not used: with scipy 1.17 the noncentral t's lower tail is NaN for large noncentralities, and
  statsmodels 0.15 then returns roots whose power is far from the target -- 2.13 for 8 pairs at
  alpha' = 0.000595, where the power is 0.58; the root is 2.56.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from htmlrag.core.errors import HtmlRagError

#: Corrections for multiple comparisons (``none``: each test at alpha).
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")
#: Bootstrap interval methods of ``scipy.stats.bootstrap``.
METHODS = ("percentile", "basic", "bca")


@dataclass(frozen=True)
class IntervalSettings:
    """How intervals and marks are computed (see the module docstring).

    Attributes:
        confidence: the intervals' confidence level (0.95).
        n_resamples: bootstrap resamples (9999, scipy's default).
        method: ``percentile`` | ``basic`` | ``bca``.
        seed: the bootstrap's random seed (recorded; a rerun gives the same bounds).
        correction: ``holm`` | ``bonferroni`` | ``fdr_bh`` | ``none``.
        power: the power of the smallest detectable difference (0.8).
    """

    confidence: float = 0.95
    n_resamples: int = 9999
    method: str = "percentile"
    seed: int = 0
    correction: str = "holm"
    power: float = 0.8

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise HtmlRagError(f"interval method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.correction not in CORRECTIONS:
            raise HtmlRagError(f"correction must be one of {', '.join(CORRECTIONS)}, got {self.correction!r}")
        if not 0 < self.confidence < 1 or not 0 < self.power < 1 or self.n_resamples < 1:
            raise HtmlRagError("confidence and power must lie in (0, 1) and n_resamples be >= 1")

    def to_dict(self) -> dict[str, object]:
        """JSON-ready, with what is resampled."""
        return {**asdict(self), "unit": "question", "paired": True, "test": "paired two-sided t-test"}


def mean_interval(values: Sequence[float], settings: IntervalSettings | None = None) -> tuple[float, float] | None:
    """The bootstrap interval of the mean of ``values`` (module docstring); ``(v, v)`` when every value is
    ``v`` (no resample can differ); ``None`` with fewer than 2 values."""
    s = settings or IntervalSettings()
    if len(values) < 2:
        return None
    import numpy as np
    from scipy import stats

    x = np.asarray(values, dtype=np.float64)
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    res = stats.bootstrap((x,), np.mean, n_resamples=s.n_resamples, confidence_level=s.confidence,
                          method=s.method, random_state=np.random.default_rng(s.seed), vectorized=True)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(lo) or math.isnan(hi):  # bca on degenerate data: say so rather than print nan
        return None
    return lo, hi


def difference_interval(a: Sequence[float], b: Sequence[float],
                        settings: IntervalSettings | None = None) -> tuple[float, float] | None:
    """The bootstrap interval of the mean of the paired differences ``a[i] - b[i]``."""
    if len(a) != len(b):
        raise HtmlRagError(f"paired interval needs equal lengths, got {len(a)} and {len(b)}")
    return mean_interval([x - y for x, y in zip(a, b, strict=True)], settings)


def adjust(pvalues: Sequence[float | None], method: str = "holm", alpha: float = 0.05) -> list[float | None]:
    """Adjusted p-values of one family (``None`` entries, untested comparisons, stay ``None`` and do not count).

    ``holm``, ``bonferroni``, ``fdr_bh``: ``statsmodels.stats.multitest.multipletests(p, alpha, method)``'s
    corrected p-values; ``none``: the p-values as given.
    """
    if method not in CORRECTIONS:
        raise HtmlRagError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}")
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not idx:
        return out
    if method == "none":
        for i in idx:
            out[i] = float(pvalues[i])  # type: ignore[arg-type]
        return out
    from statsmodels.stats.multitest import multipletests

    _, corrected, _, _ = multipletests([float(pvalues[i]) for i in idx], alpha=alpha, method=method)  # type: ignore[arg-type]
    for i, p in zip(idx, corrected, strict=True):
        out[i] = float(p)
    return out


def per_test_alpha(alpha: float, method: str, comparisons: int) -> float:
    """The per-test level of the correction's strictest step: ``alpha / m`` (holm, bonferroni, fdr_bh), or
    ``alpha`` (none, or a single comparison)."""
    if method == "none" or comparisons <= 1:
        return alpha
    return alpha / comparisons


def detectable_difference(sd_diff: float | None, n: int, alpha: float, power: float = 0.8) -> float | None:
    """The smallest detectable mean difference (module docstring) of a paired two-sided t-test with ``n``
    pairs whose differences have standard deviation ``sd_diff``, at level ``alpha`` and ``power``; ``None``
    when undefined (fewer than 3 pairs or no SD). ``0.0`` when the differences do not vary."""
    if sd_diff is None or n < 3 or math.isnan(sd_diff):
        return None
    if sd_diff == 0:
        return 0.0
    return standardised_effect(n, alpha, power) * float(sd_diff)


def paired_t_power(d: float, n: int, alpha: float) -> float:
    """Power of a paired two-sided t-test with ``n`` pairs at level ``alpha`` for standardised effect ``d``
    (>= 0). The lower tail ``P(T < -t)`` is at most ``alpha / 2`` for ``d >= 0``; where scipy's noncentral t
    gives NaN for it (very large noncentralities) it is taken as 0."""
    from scipy import stats

    df, nc = n - 1, d * math.sqrt(n)
    t = float(stats.t.isf(alpha / 2, df))
    upper = float(stats.nct.sf(t, df, nc))
    if not math.isfinite(upper):
        upper = 1.0 - float(stats.nct.cdf(t, df, nc))
    lower = float(stats.nct.cdf(-t, df, nc))
    if not math.isfinite(lower):
        lower = 0.0
    if not math.isfinite(upper):
        raise HtmlRagError(f"the power of a paired t-test with {n} pairs at d = {d} cannot be computed")
    return upper + lower


def standardised_effect(n: int, alpha: float, power: float = 0.8) -> float:
    """The standardised effect ``d*`` a paired two-sided t-test with ``n`` pairs (n >= 2) detects with
    probability ``power`` at level ``alpha`` (module docstring): the root of :func:`paired_t_power`, bracketed
    by doubling and found with ``scipy.optimize.brentq`` (``xtol`` 1e-10)."""
    from scipy.optimize import brentq

    if n < 2 or not 0 < alpha < 1 or not alpha < power < 1:
        raise HtmlRagError(f"no detectable effect for n={n}, alpha={alpha}, power={power}")
    hi = 1.0
    while paired_t_power(hi, n, alpha) < power:
        hi *= 2
        if hi > 1e9:
            raise HtmlRagError(f"no effect up to d = 1e9 reaches power {power} with {n} pairs at alpha {alpha}")
    return float(brentq(lambda d: paired_t_power(d, n, alpha) - power, 0.0, hi, xtol=1e-10, rtol=1e-12))


def sd_of_differences(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Sample standard deviation (``ddof=1``) of ``a[i] - b[i]`` (``None`` with fewer than 2 pairs)."""
    if len(a) != len(b):
        raise HtmlRagError(f"paired SD needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return None
    import statistics

    return float(statistics.stdev(x - y for x, y in zip(a, b, strict=True)))
