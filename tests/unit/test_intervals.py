"""Intervals, corrections and detectable differences against scipy and statsmodels on known inputs, and what
a table prints from them."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.intervals import (
    IntervalSettings,
    adjust,
    detectable_difference,
    difference_interval,
    mean_interval,
    paired_t_power,
    per_test_alpha,
    sd_of_differences,
    standardised_effect,
)
from htmlrag.evaluation.tables import build_table

A = [1.0, 0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0]
B = [0.0, 0.0, 1.0, 0.0, 0.5, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5, 1.0]


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_mean_interval_is_scipys_bootstrap_with_the_recorded_seed(method: str) -> None:
    s = IntervalSettings(method=method, n_resamples=2000, seed=7, confidence=0.9)
    ref = stats.bootstrap((np.array(A),), np.mean, n_resamples=2000, confidence_level=0.9, method=method,
                          random_state=np.random.default_rng(7), vectorized=True).confidence_interval
    assert mean_interval(A, s) == pytest.approx((ref.low, ref.high))
    assert mean_interval(A, s) == mean_interval(list(A), s)  # a rerun gives the same bounds, exactly
    assert mean_interval(A, IntervalSettings(method=method, n_resamples=2000, seed=8)) != mean_interval(A, s)


def test_degenerate_samples() -> None:
    assert mean_interval([1.0] * 5) == (1.0, 1.0)   # nothing to resample differently
    assert mean_interval([0.3]) is None             # one question: no interval
    assert mean_interval([]) is None


def test_paired_difference_interval_and_sd() -> None:
    diffs = np.array(A) - np.array(B)
    ref = stats.bootstrap((diffs,), np.mean, n_resamples=9999, method="percentile",
                          random_state=np.random.default_rng(0), vectorized=True).confidence_interval
    assert difference_interval(A, B) == pytest.approx((ref.low, ref.high))
    assert sd_of_differences(A, B) == pytest.approx(float(np.std(diffs, ddof=1)))
    with pytest.raises(HtmlRagError):
        difference_interval(A, B[:-1])


@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh"])
def test_adjust_is_statsmodels_multipletests(method: str) -> None:
    p = [0.01, 0.04, 0.03, 0.5, 0.001]
    expected = multipletests(p, alpha=0.05, method=method)[1]
    assert adjust(p, method) == pytest.approx(list(expected))
    with_gaps = adjust([0.01, None, 0.04, 0.03, None, 0.5, 0.001], method)  # untested comparisons do not count
    assert [x for x in with_gaps if x is not None] == pytest.approx(list(expected))
    assert with_gaps[1] is None and with_gaps[4] is None


def test_no_correction_and_unknown_methods() -> None:
    assert adjust([0.01, 0.2], "none") == [0.01, 0.2]
    with pytest.raises(HtmlRagError, match="correction"):
        adjust([0.1], "sidak-ish")
    with pytest.raises(HtmlRagError):
        IntervalSettings(correction="nope")
    with pytest.raises(HtmlRagError):
        IntervalSettings(method="jackknife")


def test_detectable_difference_is_the_root_of_the_paired_t_tests_power() -> None:
    sd, n = 0.42, 300
    mde = detectable_difference(sd, n, 0.05 / 12)
    # the definition: a true difference of exactly the MDE is detected with probability 0.8 (statsmodels'
    # power, and ours)
    assert TTestPower().power(effect_size=mde / sd, nobs=n, alpha=0.05 / 12) == pytest.approx(0.8, abs=1e-6)
    assert paired_t_power(mde / sd, n, 0.05 / 12) == pytest.approx(0.8, abs=1e-9)
    assert standardised_effect(30, 0.05) == pytest.approx(0.5292, abs=1e-4)  # G*Power's d for 30 pairs
    assert detectable_difference(0.0, n, 0.05) == 0.0
    assert detectable_difference(None, n, 0.05) is None and detectable_difference(0.4, 2, 0.05) is None
    assert per_test_alpha(0.05, "holm", 12) == pytest.approx(0.05 / 12)
    assert per_test_alpha(0.05, "none", 12) == 0.05 and per_test_alpha(0.05, "bonferroni", 1) == 0.05


@pytest.mark.parametrize("n", [3, 4, 5, 8, 12, 30, 300])  # (fewer than 3 pairs: no MDE)
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 12, 0.000595, 1e-6])
def test_the_detectable_effect_has_the_power_asked_for_at_small_n_and_strict_alpha(n: int, alpha: float) -> None:
    """Where scipy's noncentral t gives NaN in the lower tail (few pairs, a strict corrected alpha), statsmodels
    0.15's solve_power returned effects of far lower power (8 pairs at 0.000595: 2.13, power 0.58); the root
    found here has the power asked for, by scipy's noncentral t computed term by term."""
    from scipy import stats

    d = standardised_effect(n, alpha, 0.8)
    df, nc = n - 1, d * n ** 0.5
    t = stats.t.isf(alpha / 2, df)
    assert float(stats.nct.sf(t, df, nc)) == pytest.approx(0.8, abs=alpha / 2 + 1e-9)
    assert standardised_effect(n, alpha, 0.9) > d > standardised_effect(n, alpha, 0.5)


def _run(correction: str = "holm") -> dict:
    tests = {"base": {"p": 0.01, "mean_a": 0.5, "mean_b": 0.3, "n": 16, "sd_diff": 0.4},
             "text": {"p": 0.04, "mean_a": 0.5, "mean_b": 0.45, "n": 16, "sd_diff": 0.2}}
    return {"dataset": "d", "ours": "ours", "intervals": {"correction": correction, "power": 0.8},
            "systems": {"base": {"metrics": {"em": 0.3}, "intervals": {"em": [0.2, 0.4]}},
                        "text": {"metrics": {"em": 0.45}, "intervals": {"em": [0.35, 0.55]}},
                        "ours": {"metrics": {"em": 0.5}, "intervals": {"em": [0.41, 0.6]}}},
            "system_order": ["base", "text", "ours"], "tests": {"em": tests}}


def test_table_prints_intervals_the_correction_and_the_detectable_difference() -> None:
    t = build_table([_run()], ["em"])
    md = t.to_markdown()
    assert "| ours | **50.00**† [41.00, 60.00] |" in md                  # Holm: 0.02 and 0.04 adjusted: marked
    assert t.dagger(t.columns[0], ("", "ours"))
    level = 0.05 / 2
    mdes = sorted(100 * standardised_effect(16, level, 0.8) * sd for sd in (0.4, 0.2))
    assert "holm correction over the table's 2 comparisons (alpha 0.05)" in md
    mid = (mdes[0] + mdes[1]) / 2  # the median of two (the upper one was printed as the median)
    assert f"{mid:.2f} points (median over comparisons; range {mdes[0]:.2f}-{mdes[1]:.2f})" in md
    assert "n = 16 questions per comparison" in md
    tex = t.to_latex()
    assert "\\scriptsize [41.00, 60.00]" in tex and "holm correction" in tex
    rows = list(csv.DictReader(io.StringIO(t.to_csv())))
    base = next(r for r in rows if r["system"] == "base")
    assert (base["ci_low"], base["ci_high"], base["correction"]) == ("0.2", "0.4", "holm")
    assert float(base["p_adjusted"]) == pytest.approx(multipletests([0.01, 0.04], method="holm")[1][0])
    bonf = build_table([_run("bonferroni")], ["em"])
    assert not bonf.dagger(bonf.columns[0], ("", "ours"))                # 0.04 x 2 = 0.08


def test_the_interval_level_printed_is_the_one_the_run_recorded() -> None:
    """A run with metric.confidence=0.9 has 90% intervals: its notes said 95% whatever the setting."""
    run = _run()
    run["intervals"]["confidence"] = 0.9
    md = build_table([run], ["em"]).to_markdown()
    assert "Brackets: 90% bootstrap interval" in md and "95%" not in md


def test_runs_from_before_intervals_are_tabled_as_they_were() -> None:
    """A run that recorded no interval settings (written before them) keeps its table: the paper's uncorrected
    rule, no interval, no line of n and detectable difference, the CSV's former columns; so its stored tables
    still verify. One run that recorded them is enough for the corrected table."""
    old = _run()
    del old["intervals"]
    for e in old["systems"].values():
        del e["intervals"]
    t = build_table([old], ["em"])
    md = t.to_markdown()
    assert t.legacy and t.correction == "none"
    assert "| ours | **50.00**† |" in md  # uncorrected: p 0.01 and 0.04 < 0.05
    assert "adjusted" not in md and "correction over" not in md and "Smallest detectable" not in md
    assert next(csv.reader(io.StringIO(t.to_csv())))[-1] == "dagger"
    mixed = build_table([old, {**_run(), "dataset": "e"}], ["em"])
    assert not mixed.legacy and mixed.correction == "holm"
