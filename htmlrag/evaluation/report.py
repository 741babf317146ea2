"""The tables and plots beside ``results.md``: budget frontiers, the stage-loss waterfall, the cost/Pareto table,
for one run (:func:`write_run_report`, called when a run ends, and again by anything that re-derives a run's
tables from its folder) or across runs (:func:`write_runs_report`, ``htmlrag-paper report``).

Everything is read from the run folders: ``metrics.json`` (means, intervals, tests, the frontier and waterfall
sections, the interval settings and seed), the rows (``predictions.jsonl``: per-question scores for cross-run
tests, the cost ledger) and ``cost.json`` / the price table given. Written per run::

    tables/frontier_<metric>.{md,csv,tex,provenance.csv}   plots/frontier_<metric>.png
    tables/waterfall.{md,csv,tex}                            plots/waterfall.png
    tables/cost.{md,csv,tex}      cost.json                  plots/pareto.png
                                                             plots/plots.json (what each plot was drawn from)

A checker that re-derives a run's tables from its folder calls ``write_run_report(run.dir, run.summary,
run.rows())`` (the price table is then the one ``cost.json`` recorded); the bootstrap seed and settings come from
``metrics.json["intervals"]``, so the intervals come out the same.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.evaluation.costs import PriceTable, cost_summary, pareto_front
from htmlrag.evaluation.frontier import (
    AUC_DEFINITION,
    budget_name,
    compare,
    curve,
    frontier_groups,
    scores_by_id,
)
from htmlrag.evaluation.grid import Grid, cell, write_formats
from htmlrag.evaluation.intervals import IntervalSettings
from htmlrag.evaluation.plots import Plot, canonical, plot_frontier, plot_waterfall, write_plots
from htmlrag.evaluation.runs import label_apart, run_name
from htmlrag.evaluation.scoring.budgets import split_name
from htmlrag.evaluation.scoring.metrics import get_metric
from htmlrag.evaluation.scoring.stages import ORDER
from htmlrag.evaluation.shapes import in_system_order, system_order
from htmlrag.evaluation.store import atomic_write, dump_json
from htmlrag.evaluation.summary import errors_caption
from htmlrag.evaluation.tables import Column, Table, percent

log = logging.getLogger(__name__)


@dataclass
class FrontierRow:
    """One line of a frontier table: its row group and label, its curve (``Curve.to_dict()``), the run it was
    read from, and its tests against the system under test of its group (key: budget, or ``"AUC"``)."""

    group: str
    label: str
    curve: Mapping[str, Any]
    source: str
    tests: dict[Any, Mapping[str, Any]] = field(default_factory=dict)


def frontier_table(rows: Sequence[FrontierRow], metric: str, ours: str, *, caption: str = "", alpha: float = 0.05,
                   settings: IntervalSettings | None = None, higher_is_better: bool = True, errors: str = "") -> Table:
    """A :class:`~htmlrag.evaluation.tables.Table`: per budget the metric (with its interval) and the mean context
    tokens, then the area under the frontier; † on ``ours`` where it beats every other line of its row group
    (adjusted over every comparison of the table)."""
    s = settings or IntervalSettings()
    budgets = sorted({int(b) for r in rows for b in r.curve["budgets"]})
    cols: list[Column] = []
    for b in budgets:
        cols += [Column(str(b), metric, higher_is_better=higher_is_better),
                 Column(str(b), "tokens", higher_is_better=False, scale=1.0, digits=0, rank=False)]
    cols.append(Column("AUC", metric, label="area", higher_is_better=higher_is_better))
    values: dict = {c.key: {} for c in cols}
    intervals: dict = {c.key: {} for c in cols}
    tests: dict = {c.key: {} for c in cols}
    prov: dict = {c.key: {} for c in cols}
    for r in rows:
        key = (r.group, r.label)
        c = r.curve
        for i, b in enumerate(c["budgets"]):
            values[(str(b), metric)][key] = c["means"][i]
            values[(str(b), "tokens")][key] = c["tokens"][i]
            if c["intervals"][i]:
                intervals[(str(b), metric)][key] = tuple(c["intervals"][i])
        values[("AUC", metric)][key] = c.get("auc")
        if c.get("auc_interval"):
            intervals[("AUC", metric)][key] = tuple(c["auc_interval"])
        for k, t in r.tests.items():
            tests[(str(k), metric)][key] = t
        for col in cols:
            prov[col.key][key] = [r.source]
    notes = [f"Columns per budget: {metric} (%) with its {percent(s.confidence)} bootstrap interval, and the mean "
             "context tokens. "
             f"area: {AUC_DEFINITION} (x100).", *([errors] if errors else [])]
    return Table(cols, [(r.group, r.label) for r in rows], values, tests, ours=ours, caption=caption, alpha=alpha,
                 notes=notes, provenance=prov, intervals=intervals, correction=s.correction, power=s.power,
                 confidence=s.confidence)


def frontier_order(summary: Mapping[str, Any]) -> list[str]:
    """The systems of a run's frontier (``metrics.json["frontier"]["systems"]``, names without the budget) in the
    order its frontier table and plot list them: as their first budget comes in
    :func:`~htmlrag.evaluation.shapes.system_order` (any other after them by name), the frontier's system under
    test last."""
    fr = summary.get("frontier") or {}
    systems = fr.get("systems") or {}
    ours = fr.get("ours")
    bases = [b for b in dict.fromkeys(split_name(s)[0] for s in system_order(summary)) if b in systems]
    placed = set(bases)
    order = bases + sorted(b for b in systems if b not in placed)
    return [n for n in order if n != ours] + ([ours] if ours in systems else [])


def _run_rows(summary: Mapping[str, Any], metric: str, source: str) -> list[FrontierRow]:
    """The frontier lines of one run in :func:`frontier_order`, with the run's tests."""
    fr = summary.get("frontier") or {}
    ours = fr.get("ours")
    names = frontier_order(summary)
    out = []
    for base in names:
        c = fr["systems"][base].get(metric)
        if c is None:
            continue
        tests: dict[Any, Mapping[str, Any]] = {}
        if base != ours:
            for b in c["budgets"]:
                t = summary.get("tests", {}).get(metric, {}).get(budget_name(base, b))
                if t:
                    tests[b] = t
            if (fr.get("auc_tests", {}).get(metric) or {}).get(base):
                tests["AUC"] = fr["auc_tests"][metric][base]
        out.append(FrontierRow("", base, c, source, tests))
    return out


def _lines(rows: Sequence[FrontierRow]) -> list[dict[str, Any]]:
    return [{"label": " ".join(x for x in (r.group, r.label) if x), **r.curve} for r in rows]


def run_frontier_caption(metric: str) -> str:
    """The caption of one run's frontier table (its writer's and :mod:`~htmlrag.evaluation.verify`'s)."""
    return f"{metric} at each context budget, from one ranking per question"


def recorded_settings(summary: Mapping[str, Any]) -> IntervalSettings:
    """The interval settings a run recorded (``metrics.json["intervals"]``), else the defaults."""
    rec = summary.get("intervals") or {}
    keys = ("confidence", "n_resamples", "method", "seed", "correction", "power")
    return IntervalSettings(**{k: rec[k] for k in keys if k in rec})


def waterfall_grid(waterfall: Mapping[str, Mapping[str, Any]], caption: str = "", errors: str = "") -> Grid:
    """Per system: the share of questions holding the gold answer through each stage, the stage that loses
    most (with its loss) and the answers right without the context holding the gold."""
    names = list(dict.fromkeys(st for w in waterfall.values() for st in w["stages"]))
    stages = [s for s in ORDER if s in names] + [s for s in names if s not in ORDER]
    header = ["system", "n", *stages, "loses most at", "loss", "answer w/o context"]
    rows = []
    for name, w in waterfall.items():
        n = w["n"] or 1
        held = dict(zip(w["stages"], w["held"], strict=True))
        lost = dict(zip(w["stages"], w["lost"], strict=True))
        worst = w.get("worst")
        rows.append([cell(name), cell(w["n"], "{:d}"), *(cell(held[s] / n if s in held else None, "{:.1f}", 100)
                                                          for s in stages),
                     cell(worst or "(none)"), cell(lost[worst] / n if worst else 0.0, "{:.1f}", 100),
                     cell(w.get("answer_without_context", 0), "{:d}")])
    notes = ["Held through a stage (%): every stage up to it holds the gold answer (the run's containment rule, "
             "htmlrag.evaluation.waterfall). loss: the share of questions lost at the stage that loses most.",
             *([errors] if errors else [])]
    return Grid(header, rows, caption or "Where the gold answer is lost: stage-loss waterfall", notes)


def cost_grid(cost: Mapping[str, Any], caption: str = "", errors: str = "", confidence: float = 0.95) -> Grid:
    """Quality and cost per system (means per question) with the Pareto front marked."""
    prices = cost["prices"]
    models = sorted({m for rec in cost["systems"].values() for m in rec["tokens"]})
    header = ["system", f"{cost['metric']} (%)", f"{percent(confidence)} interval", "s/question", "GPU-s/question",
              *(f"{m} {k}" for m in models for k in ("in", "out")), f"{prices['currency']}/1k questions", "Pareto"]
    rows = []
    for name, rec in cost["systems"].items():
        ci = rec.get("interval")
        tok = [cell((rec["tokens"].get(m) or {}).get(k), "{:.0f}") for m in models for k in ("input", "output")]
        rows.append([cell(name), cell(rec["quality"], "{:.2f}", 100),
                     cell(f"[{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else None),
                     cell(rec["seconds"], "{:.3f}"), cell(rec["gpu_seconds"], "{:.3f}"), *tok,
                     cell(rec["money"], "{:.4f}", 1000), cell("yes" if rec["front"] else "")])
    unpriced = sorted({m for rec in cost["systems"].values() for m in rec["unpriced"]})
    notes = [f"Price table {prices['name']!r}: per million tokens {json.dumps(prices['models'], sort_keys=True)}, "
             f"GPU-hour {prices['gpu_hour']}, CPU-hour {prices['cpu_hour']} ({prices['currency']}). Pareto: on the "
             f"front of {cost['metric']} against {cost['axis']} per question. Tokens and seconds: means per question.",
             *([f"Unpriced models (tokens reported, not priced): {', '.join(unpriced)}."] if unpriced else []),
             *([errors] if errors else [])]
    return Grid(header, rows, caption or "Quality and cost per question", notes)


def judge_grid(report: Mapping[str, Any], summary: Mapping[str, Any]) -> Grid:
    """``tables/judge_agreement``: per system the judged score with its interval, the verdicts' agreement
    (Krippendorff's alpha of the draws, and of the two models) and the answers flagged; ``report``: the run's
    ``judge.json`` (:func:`htmlrag.docqa.judge.judge_report`)."""
    draws, models = report["agreement"]["draws"], report["agreement"].get("models") or {}
    header = ["system", "judge (%)", f"{percent(recorded_settings(summary).confidence)} interval", "draws",
              "alpha (draws)", "flagged", "alpha (two models)"]
    rows = []
    for s in [*system_order(summary), "all"]:
        if s not in draws:
            continue
        e = summary["systems"].get(s, {})
        ci = (e.get("intervals") or {}).get("judge")
        rows.append([cell(s), cell((e.get("metrics") or {}).get("judge"), "{:.2f}", 100),
                     cell(f"[{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else None), cell(report["draws"], "{:d}"),
                     cell(draws[s]["alpha"], "{:.3f}"), cell(draws[s]["disagreements"], "{:d}"),
                     cell((models.get(s) or {}).get("alpha"), "{:.3f}")])
    notes = [f"Judge {report['judge']} ({report['model']}), {report['draws']} draw(s) per answer; alpha: "
             "Krippendorff's alpha (nominal) over the verdicts, draws as raters (htmlrag.docqa.agreement); flagged: "
             "answers whose draws disagree (listed in judge.json). The judged score is the mean verdict over the draws, "
             "its interval the run's bootstrap over questions."]
    return Grid(header, rows, "LLM judge: score and agreement", notes)


def run_report_tables(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], prices: PriceTable,
                      source: str) -> tuple[dict[str, Table | Grid], dict[str, Any]]:
    """The frontier, waterfall and cost tables of one run by their file stem under ``tables/``, and its cost
    summary (``cost.json``; ``{}``: no row has a cost ledger). :func:`write_run_report` writes these, and
    :mod:`~htmlrag.evaluation.verify` recomputes them from the run's folder: one definition for both."""
    out: dict[str, Table | Grid] = {}
    errors = errors_caption([summary])
    if summary.get("frontier"):
        settings = recorded_settings(summary)
        for m in summary.get("metric_names") or []:
            lines = _run_rows(summary, m, source)
            if lines:
                out[f"frontier_{m}"] = frontier_table(
                    lines, m, summary["frontier"]["ours"], alpha=float(summary.get("alpha", 0.05)),
                    caption=run_frontier_caption(m), settings=settings,
                    higher_is_better=get_metric(m).higher_is_better, errors=errors)
    if summary.get("waterfall"):
        out["waterfall"] = waterfall_grid(_falls(summary), errors=errors)
    cost = run_cost(summary, rows, prices)
    if cost:
        out["cost"] = cost_grid(cost, errors=errors, confidence=recorded_settings(summary).confidence)
    return out, cost


def run_cost(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], prices: PriceTable) -> dict[str, Any]:
    """The run's cost summary (``cost.json``; ``{}``: no rows, or no row has a cost ledger)."""
    return cost_summary(rows, summary, prices) if rows else {}


def _falls(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {s: summary["waterfall"][s] for s in in_system_order(summary, summary["waterfall"])}


def run_plots(summary: Mapping[str, Any], cost: Mapping[str, Any]) -> dict[str, Plot]:
    """The plots of one run by file name under ``plots/``, each with exactly the data it is drawn from
    (:class:`~htmlrag.evaluation.plots.Plot`): a frontier per metric with frontier lines, the waterfall, the
    quality-vs-cost front when the run has a cost summary. :func:`write_run_report` draws these and records
    their digests; :mod:`~htmlrag.evaluation.verify` recomputes them from the run's folder: one definition for
    both.

    The systems come in the order of the run's tables (:func:`~htmlrag.evaluation.shapes.system_order`; the
    frontier's lines in :func:`frontier_order`), never in the order ``summary`` and ``cost`` hold them: the run's
    own writer holds them in memory in the order the systems ran, a reader of ``metrics.json`` and ``cost.json``
    by name, and the same numbers must give the same data and digest. Both are read as stored
    (:func:`~htmlrag.evaluation.plots.canonical`: NaN as ``null``, tuples as lists) before the data is taken."""
    summary, cost = canonical(summary), canonical(cost)
    out: dict[str, Plot] = {}
    if summary.get("frontier"):
        confidence = recorded_settings(summary).confidence
        for m in summary.get("metric_names") or []:
            lines = _run_rows(summary, m, "")
            if lines:  # (the frontier table's condition: run_report_tables)
                out[f"frontier_{m}.png"] = Plot("frontier", {"lines": _lines(lines), "metric": m,
                                                              "confidence": confidence, "title": ""})
    if summary.get("waterfall"):
        out["waterfall.png"] = Plot("waterfall", {"waterfall": _falls(summary), "title": ""})
    if cost:
        axis = "money" if cost["axis"] == "money" else "seconds"
        names = in_system_order(summary, cost["systems"])
        points = [{"label": s, "cost": r[axis], "quality": r["quality"], "interval": r["interval"], "front": r["front"]}
                  for s in names for r in [cost["systems"][s]]]
        unit = f"{cost['prices']['currency']} per question" if axis == "money" else "seconds per question"
        out["pareto.png"] = Plot("pareto", {"points": points, "quality": cost["metric"], "cost": unit, "title": ""})
    return out


def recorded_prices(run_dir: Path) -> PriceTable:
    """The price table a run's ``cost.json`` recorded (none when it has no readable one)."""
    try:
        recorded = json.loads((run_dir / "cost.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    return PriceTable.from_dict(recorded.get("prices") if isinstance(recorded, Mapping) else None)


def write_run_report(run_dir: Path, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                     prices: PriceTable | None = None) -> list[Path]:
    """Every table and plot of this module for one run (see the module docstring), and ``plots/plots.json``,
    the record of what each plot was drawn from (:func:`~htmlrag.evaluation.plots.write_plots`); ``prices``:
    the price table (``None``: the one the run's ``cost.json`` recorded, else none)."""
    tables = run_dir / "tables"
    source = run_name(run_dir)  # relative to the results root
    made, cost = run_report_tables(summary, rows, recorded_prices(run_dir) if prices is None else prices, source)
    out: list[Path] = []
    for stem, table in made.items():
        out += list(write_formats(table, tables, stem).values())
    if cost:
        atomic_write(run_dir / "cost.json", dump_json(cost))
        out.append(run_dir / "cost.json")
    out += write_plots(run_dir / "plots", run_plots(summary, cost))
    return out


def cross_run_frontier(runs: Sequence[Any], labels: Sequence[str], metric: str, ours: str,
                       settings: IntervalSettings) -> list[FrontierRow]:
    """Frontier lines of several runs (``runs``: :class:`htmlrag.evaluation.runs.Run`), one row group per system
    and one line per run (its label); each run's line is tested against the ``ours`` run's line of the same
    system, budget by budget and on the area, paired by question id."""
    lines: dict[str, dict[str, tuple[Any, dict[int, dict[str, float]], str]]] = {}
    for run, label in zip(runs, labels, strict=True):
        rows = run.rows()
        for base, pts in frontier_groups(list(run.summary.get("systems") or [])).items():
            c = curve(rows, pts, metric, settings)
            by_budget = {b: scores_by_id(rows, name, metric) for b, name in pts}
            lines.setdefault(base, {})[label] = (c, by_budget, run.name)
    out = []
    for base, by_label in lines.items():
        mine = by_label.get(ours)
        for label, (c, scores, src) in sorted(by_label.items(), key=lambda kv: kv[0] == ours):
            tests: dict[Any, Mapping[str, Any]] = {}
            if mine is not None and label != ours:
                for b in c.budgets:
                    if b in mine[1]:
                        tests[b] = compare(mine[1][b], scores[b], settings)
                tests["AUC"] = compare(mine[0].auc_scores, c.auc_scores, settings)
            out.append(FrontierRow(base, label, c.to_dict(), src, tests))
    return out


def write_runs_report(runs: Sequence[Any], out: Path, metrics: Sequence[str] | None = None,
                      ours: str | None = None) -> list[Path]:
    """The frontier, waterfall and cost tables and plots over several runs (``htmlrag-paper report``): the runs
    are labelled by the settings that tell them apart (``fidelity=paper``); frontiers get one row group per
    system and one line per run, each tested against the ``ours`` run (default: the last run given) with the
    first run's recorded interval settings; waterfalls and costs list ``system (run label)``."""
    named = label_apart(runs, lambda r: "")
    labels = [named[r] or r.run_id for r in runs]
    ours = ours or labels[-1]
    if ours not in labels:
        raise ValueError(f"--ours {ours!r} is not a run label; labels: {labels}")
    settings = recorded_settings(runs[0].summary)
    errors = errors_caption([r.summary for r in runs], labels)
    written: list[Path] = []
    for m in metrics or runs[0].summary.get("metric_names") or []:
        rows = cross_run_frontier(runs, labels, m, ours, settings)
        if not rows:
            continue
        table = frontier_table(rows, m, ours, alpha=float(runs[0].summary.get("alpha", 0.05)), settings=settings,
                               caption=f"{m} at each context budget; each run against {ours}",
                               higher_is_better=get_metric(m).higher_is_better, errors=errors)
        table.notes.append("Runs: " + "; ".join(f"{lb}: {r.name}" for r, lb in zip(runs, labels, strict=True)))
        written += list(write_formats(table, out / "tables", f"frontier_{m}").values())
        written.append(plot_frontier(_lines(rows), m, out / "plots" / f"frontier_{m}.png",
                                     confidence=recorded_settings(runs[0].summary).confidence))
    sources = "Runs: " + "; ".join(f"{lb}: {r.name}" for r, lb in zip(runs, labels, strict=True))
    falls = {f"{s} ({lb})": r.summary["waterfall"][s] for r, lb in zip(runs, labels, strict=True)
             for s in in_system_order(r.summary, r.summary.get("waterfall") or {})}
    if falls:
        grid = waterfall_grid(falls, errors=errors)
        grid.notes.append(sources)
        written += list(write_formats(grid, out / "tables", "waterfall").values())
        written.append(plot_waterfall(falls, out / "plots" / "waterfall.png"))
    costs = [(r.json("cost.json") or {}, lb) for r, lb in zip(runs, labels, strict=True)]
    costs = [(c, lb) for c, lb in costs if c.get("systems")]
    if costs:
        merged = dict(costs[0][0])
        merged["systems"] = {f"{s} ({lb})": rec for c, lb in costs for s, rec in c["systems"].items()}
        front = pareto_front({s: (rec["quality"], rec[merged["axis"]]) for s, rec in merged["systems"].items()})
        for s, rec in merged["systems"].items():
            rec["front"] = s in front
        grid = cost_grid(merged, errors=errors, confidence=recorded_settings(runs[0].summary).confidence)
        grid.notes.append(sources + " (each run's cost.json; its price table)")
        written += list(write_formats(grid, out / "tables", "cost").values())
    return written
