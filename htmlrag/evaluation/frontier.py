"""Budget frontiers: one system's quality at several context budgets, from one ranking per question.

A run with ``pruner.budgets=[512, 1024, ...]`` ranks each question's blocks once per system and fills every
budget from that ranking (:meth:`htmlrag.pruning.pipeline.HtmlRagPipeline.run_budgets`). Its rows keep one
record per (question, system, budget): ``row["systems"]["bm25@1024"]`` (with ``"budget": 1024``), so resuming,
re-tabling and the results browser treat each budget as a system of its own, and :func:`split_name` gives the
system and the budget back.

**Area under the frontier** (one number per system and metric): the normalised area under the metric as a
function of log2(budget), by the trapezoid rule over the run's budgets ``b_1 < ... < b_k``::

    AUC = sum_i (log2 b_{i+1} - log2 b_i) * (m_i + m_{i+1}) / 2  /  (log2 b_k - log2 b_1)

i.e. the metric's mean over the budget range on a log scale (in [0, 1] for scores in [0, 1]; a system that
holds the answer at every budget scores 1). It is linear in the per-budget means, so it is computed per
question (over the questions scored at every budget) and averaged: the same bootstrap interval and paired
t-test as any other cell apply to it (:mod:`htmlrag.evaluation.intervals`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.evaluation.intervals import (
    IntervalSettings,
    difference_interval,
    mean_interval,
    sd_of_differences,
)
from htmlrag.evaluation.scoring.budgets import budget_name, split_name
from htmlrag.evaluation.stats import compare_to, paired_ttest, usable_number

AUC_DEFINITION = ("normalised area under the metric vs log2(budget) (trapezoid rule over the run's budgets, divided "
                  "by the log2 range): the metric's mean over the budget range on a log scale")


def normalised_auc(budgets: Sequence[int], values: Sequence[float]) -> float:
    """The normalised area (module docstring) of ``values`` at ``budgets`` (ascending, at least two)."""
    if len(budgets) != len(values) or len(budgets) < 2:
        raise ValueError(f"the area needs >= 2 budgets with one value each, got {len(budgets)} and {len(values)}")
    xs = [math.log2(b) for b in budgets]
    if any(b >= c for b, c in itertools.pairwise(xs)):
        raise ValueError(f"budgets must be strictly ascending, got {list(budgets)}")
    area = sum((x1 - x0) * (y0 + y1) / 2 for x0, x1, y0, y1 in zip(xs, xs[1:], values, values[1:]))
    return area / (xs[-1] - xs[0])


def frontier_groups(systems: Sequence[str]) -> dict[str, list[tuple[int, str]]]:
    """``{system: [(budget, row key), ...]}`` (budgets ascending) for the systems named ``name@budget``."""
    out: dict[str, list[tuple[int, str]]] = {}
    for name in systems:
        base, budget = split_name(name)
        if budget is not None:
            out.setdefault(base, []).append((budget, name))
    return {b: sorted(v) for b, v in out.items()}


def scores_by_id(rows: Sequence[Mapping[str, Any]], name: str, metric: str) -> dict[str, float]:
    """``{question id: score}`` of one row key and metric, over the rows where it was scored without error."""
    out = {}
    for r in rows:
        e = (r.get("systems") or {}).get(name) or {}
        if r.get("error") or e.get("error") or not usable_number((e.get("scores") or {}).get(metric)):
            continue  # (a missing, null, NaN or infinite score is no score: summary.usable_scores)
        out[str(r["id"])] = float(e["scores"][metric])
    return out


def question_aucs(rows: Sequence[Mapping[str, Any]], points: Sequence[tuple[int, str]],
                  metric: str) -> dict[str, float]:
    """Per question scored at every budget of ``points`` (``[(budget, row key)]``): its normalised area."""
    per = [scores_by_id(rows, name, metric) for _, name in points]
    ids = [i for i in per[0] if all(i in p for p in per[1:])] if per else []
    budgets = [b for b, _ in points]
    return {i: normalised_auc(budgets, [p[i] for p in per]) for i in ids}


@dataclass
class Curve:
    """One system's frontier for one metric: per budget the mean, its interval, the questions and the mean
    context tokens; the area with its interval and the per-question areas (for paired tests)."""

    budgets: list[int]
    means: list[float | None]
    intervals: list[list[float] | None]
    n: list[int]
    tokens: list[float | None]
    auc: float | None = None
    auc_interval: list[float] | None = None
    auc_scores: dict[str, float] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (without the per-question areas)."""
        return {"budgets": self.budgets, "means": self.means, "intervals": self.intervals, "n": self.n,
                "tokens": self.tokens, "auc": self.auc, "auc_interval": self.auc_interval,
                "auc_n": len(self.auc_scores)}


def _mean_tokens(rows: Sequence[Mapping[str, Any]], name: str) -> float | None:
    toks = [float(e["tokens"]) for r in rows if not r.get("error")
            for e in [(r.get("systems") or {}).get(name) or {}] if not e.get("error") and e.get("tokens") is not None]
    return sum(toks) / len(toks) if toks else None


def curve(rows: Sequence[Mapping[str, Any]], points: Sequence[tuple[int, str]], metric: str,
          settings: IntervalSettings) -> Curve:
    """The :class:`Curve` of one system (``points``: ``[(budget, row key)]``, ascending) from the rows."""
    c = Curve([b for b, _ in points], [], [], [], [])
    for _, name in points:
        vals = list(scores_by_id(rows, name, metric).values())
        ci = mean_interval(vals, settings)
        c.means.append(sum(vals) / len(vals) if vals else None)
        c.intervals.append(list(ci) if ci is not None else None)
        c.n.append(len(vals))
        c.tokens.append(_mean_tokens(rows, name))
    if len(points) >= 2:
        c.auc_scores = question_aucs(rows, points, metric)
        vals = list(c.auc_scores.values())
        if vals:
            c.auc = sum(vals) / len(vals)
            ci = mean_interval(vals, settings)
            c.auc_interval = list(ci) if ci is not None else None
    return c


def compare(a: Mapping[str, float], b: Mapping[str, float], settings: IntervalSettings) -> dict[str, Any]:
    """Paired t-test of ``a - b`` on the ids both have (sorted), with ``sd_diff`` and ``diff_ci``."""
    ids = sorted(set(a) & set(b))
    xa, xb = [a[i] for i in ids], [b[i] for i in ids]
    ci = difference_interval(xa, xb, settings) if ids else None
    return {**paired_ttest(xa, xb).to_dict(), "sd_diff": sd_of_differences(xa, xb),
            "diff_ci": list(ci) if ci is not None else None}


def frontier_summary(rows: Sequence[Mapping[str, Any]], systems: Sequence[str], metrics: Sequence[str],
                     settings: IntervalSettings, ours: str | None = None) -> dict[str, Any]:
    """The ``frontier`` section of ``metrics.json`` (``{}`` when no system has budgets): per system and metric
    its :class:`Curve`, and the paired t-tests of the areas of ``ours`` (default: the last system) against
    every other system (the per-budget tests are ``metrics.json["tests"]``, keyed by row key)."""
    groups = frontier_groups(systems)
    if not groups:
        return {}
    curves = {base: {m: curve(rows, pts, m, settings) for m in metrics} for base, pts in groups.items()}
    ours = ours if ours in groups else list(groups)[-1]
    tests: dict[str, dict[str, Any]] = {}
    for m in metrics:
        mine = curves[ours][m].auc_scores
        tests[m] = {base: compare(mine, cs[m].auc_scores, settings) for base, cs in curves.items()
                    if base != ours and mine and cs[m].auc_scores}
    budgets = sorted({b for pts in groups.values() for b, _ in pts})
    return {"budgets": budgets, "auc": AUC_DEFINITION, "ours": ours,
            "systems": {base: {m: c.to_dict() for m, c in cs.items()} for base, cs in curves.items()},
            "auc_tests": tests}


def budget_tests(scores: Mapping[str, Mapping[str, Mapping[str, float]]], systems: Sequence[str], ours: str,
                 metrics: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per budget, the paired t-tests of ``ours@b`` against every other ``name@b``:
    ``result[metric][other@b]`` (``scores[metric][row key][id]``)."""
    by_budget: dict[int, list[str]] = {}
    for name in systems:
        _, b = split_name(name)
        if b is not None:
            by_budget.setdefault(b, []).append(name)
    out: dict[str, dict[str, Any]] = {m: {} for m in metrics}
    for b, names in sorted(by_budget.items()):
        mine = budget_name(ours, b)
        if mine not in names or len(names) < 2:
            continue
        sub = {m: {n: scores[m][n] for n in names} for m in metrics}
        for m, by in compare_to(sub, mine, metrics).items():
            out[m].update(by)
    return out
