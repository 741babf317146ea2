"""Aggregate saved prediction rows into ``metrics.json`` and tables (no model calls: re-tables need no rerun).

``metrics.json`` is a pure function of the saved rows and the run's identity: rows are taken in example
order, floats are aggregated in that order, and no timing or host information enters it, so two runs of
one configuration (or a killed and resumed run) write byte-identical files.

**Scores that are not numbers.** Loading rows accepts a score that is ``null``, NaN or infinite (it has the shape
of a number; the web app shows such a row as it is), but no mean, interval or t-test can use it. The summary
takes each such score -- and a missing one, and a corpus metric's statistics holding NaN or an infinity -- out of
that metric for that system explicitly: left out of the metric's value, interval, tests and frontier, counted per
system and metric in ``unusable_scores``, logged, and named in the tables' caption (:func:`unusable_caption`).
The harness itself never writes one (:func:`htmlrag.evaluation.scoring.metrics.score_example` refuses it).

**Cut answers.** Rows whose answer was cut at ``max_new_tokens`` (``"truncated": true``) are counted per system
in ``n_truncated`` and named in the caption (:func:`truncated_caption`). Both counts are written only when they
are not zero, so the summaries of runs without such rows are unchanged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from htmlrag.evaluation.frontier import budget_tests, frontier_summary
from htmlrag.evaluation.intervals import (
    IntervalSettings,
    difference_interval,
    mean_interval,
    sd_of_differences,
)
from htmlrag.evaluation.runs import run_name
from htmlrag.evaluation.scoring.budgets import budget_name, split_name
from htmlrag.evaluation.scoring.metrics import aggregate, get_metric
from htmlrag.evaluation.shapes import system_order
from htmlrag.evaluation.stats import compare_to, paired_scores, usable_number
from htmlrag.evaluation.store import atomic_write
from htmlrag.evaluation.tables import UNSCALED, build_table
from htmlrag.evaluation.waterfall import waterfall_summary

log = logging.getLogger(__name__)


def _clean(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def summarize(
    rows: Sequence[Mapping[str, Any]],
    systems: Sequence[str],
    metrics: Sequence[str],
    *,
    ours: str,
    experiment: str,
    run_id: str,
    dataset: str,
    alpha: float = 0.05,
    fidelity: Mapping[str, Any] | None = None,
    reader: Mapping[str, Any] | None = None,
    intervals: IntervalSettings | None = None,
) -> dict[str, Any]:
    """The content of ``metrics.json``.

    For each system: ``n`` (examples scored), ``n_errors``, ``metrics`` (each metric's run value over the
    examples the system scored: the mean, or for corpus-level metrics such as BLEU their corpus formula over
    the saved per-example statistics), ``unusable_scores`` (only when any: per metric, the scored examples whose
    score is missing, null, NaN or infinite, left out of that metric; see the module docstring),
    ``n_truncated`` (only when any: scored examples whose answer was cut at ``max_new_tokens``),
    ``tokens`` (mean context tokens handed to the reader),
    ``reader_tokens`` (mean prompt and answer tokens of the reader, where recorded) and ``stage_tokens``
    (mean tokens after each pipeline stage). ``tests[metric][baseline]`` holds the paired t-test of ``ours``
    against each other system over the ids both scored (on the per-example scores; for BLEU, sentence BLEU).
    ``fidelity`` (:func:`htmlrag_bench.eval.systems.fidelity.describe`) and ``reader`` (model, parameters, storage) are recorded
    as given.

    Intervals (:mod:`htmlrag.evaluation.intervals`, settings ``intervals``, recorded under ``"intervals"``):
    ``systems[s]["intervals"][metric]`` is the bootstrap interval of the mean over the questions (``None`` for
    corpus-level metrics such as BLEU, whose run value is not a mean); each test adds ``sd_diff`` (SD of the
    per-question differences) and ``diff_ci`` (interval of the mean difference). With budget frontiers
    (systems ``name@budget``) ``frontier`` holds each system's curve and its area (:mod:`htmlrag.evaluation.frontier`);
    rows with stage checks give ``waterfall`` (:mod:`htmlrag.evaluation.waterfall`).
    """
    settings = intervals or IntervalSettings()
    rows = sorted(rows, key=lambda r: (r.get("index", 0), r["id"]))
    rows, unusable = usable_scores(rows, systems, metrics)
    scores: dict[str, dict[str, dict[str, float]]] = {m: {s: {} for s in systems} for m in metrics}
    out_sys: dict[str, Any] = {}
    for s in systems:
        out_sys[s], per = _system_entry(rows, s, metrics, settings)
        if unusable.get(s):
            out_sys[s]["unusable_scores"] = unusable[s]
        for m in metrics:
            scores[m][s] = per[m]
    if ours in systems:
        tests = compare_to(scores, ours, metrics) if len(systems) > 1 else {}
    else:  # a budget frontier: ours@b against every other system at the same budget b
        tests = budget_tests(scores, systems, ours, metrics)
    test_dicts = {m: {b: {**t.to_dict(), **_difference(scores[m], _opponent(ours, b, systems), b, settings)}
                      for b, t in by.items()} for m, by in tests.items()}
    extra = _sections(rows, systems, metrics, settings, ours)
    return _clean({
        "experiment": experiment,
        "run_id": run_id,
        "dataset": dataset,
        "ours": ours,
        "alpha": alpha,
        "n_examples": len(rows),
        "n_failed_examples": sum(1 for r in rows if r.get("error")),
        "metric_names": list(metrics),
        "systems": out_sys,
        "system_order": [s for s in systems if s != ours] + ([ours] if ours in systems else []),
        "tests": test_dicts,
        "intervals": settings.to_dict(),
        **extra,
        **({"fidelity": dict(fidelity)} if fidelity is not None else {}),
        **({"reader": dict(reader)} if reader is not None else {}),
    })


def table_texts(summaries: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None = None, caption: str = "",
                labels: Sequence[str] | None = None, run_dirs: Sequence[str | Path] | None = None,
                notes: Sequence[str] = ()) -> dict[str, str]:
    """The texts of ``results.md``, ``results.csv``, ``results.tex`` and ``provenance.csv`` (keys ``md``, ``csv``,
    ``tex``, ``provenance``) for one or several runs' ``metrics.json``: one column group per run, labelled by
    ``labels`` (default: the dataset; two runs with one label raise ``ValueError``). Token columns are printed
    unscaled, lower is better. The caption ends with the runs' fidelity (:func:`fidelity_caption`) and, when
    any system has error rows, how many (:func:`errors_caption`), scores that are not numbers
    (:func:`unusable_caption`) and answers cut at ``max_new_tokens`` (:func:`truncated_caption`). The provenance names each run by :func:`htmlrag.evaluation.runs.run_name` (relative to its results root)."""
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    names = [*(metrics or summaries[0]["metric_names"]), "tokens"]
    directions = {m: get_metric(m).higher_is_better for m in names if m not in UNSCALED} | dict.fromkeys(UNSCALED, False)
    sources = [run_name(d) for d in run_dirs] if run_dirs is not None else None
    table = build_table(summaries, names, labels=labels, sources=sources, directions=directions,
                        scales=dict.fromkeys(UNSCALED, 1.0), unranked=list(UNSCALED),
                        alpha=float(summaries[0].get("alpha", 0.05)),
                        caption=" ".join(x for x in (caption, fidelity_caption(summaries, labels),
                                                     errors_caption(summaries, labels),
                                                     unusable_caption(summaries, labels),
                                                     truncated_caption(summaries, labels)) if x),
                        notes=list(notes))
    return {"md": table.to_markdown() + "\n" + stage_tokens_markdown(summaries, labels), "csv": table.to_csv(),
            "tex": table.to_latex(), "provenance": table.provenance_csv()}


#: File names of :func:`table_texts`' keys.
TABLE_FILES = {"md": "results.md", "csv": "results.csv", "tex": "results.tex", "provenance": "provenance.csv"}


def _scored(row: Mapping[str, Any], s: str) -> bool:
    """Whether system ``s`` scored ``row`` (present, no error in the row or the system)."""
    rec = (row.get("systems") or {}).get(s)
    return isinstance(rec, Mapping) and not rec.get("error") and not row.get("error")


def usable_scores(rows: Sequence[Mapping[str, Any]], systems: Sequence[str], metrics: Sequence[str]
                  ) -> tuple[list[Mapping[str, Any]], dict[str, dict[str, int]]]:
    """``rows`` with every score of ``metrics`` that no mean can use taken out, and how many per system and metric.

    A score is taken out of a system's record (with its corpus statistics) when it is missing, null, NaN or
    infinite, or when the metric is corpus-level and its saved statistics hold NaN or an infinity. Rows are
    copied where they change, never edited. Each system and metric with such scores is logged once (count and
    the first id).

    Returns:
        ``(rows, {system: {metric: count}})`` (systems and metrics without such scores are left out).
    """
    counts: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], Any] = {}
    out: list[Mapping[str, Any]] = []
    for row in rows:
        changed: dict[str, dict[str, Any]] = {}
        for s in systems:
            if not _scored(row, s):
                continue
            rec = row["systems"][s]
            scores = rec.get("scores") if isinstance(rec.get("scores"), Mapping) else {}
            stats = rec.get("metric_stats") if isinstance(rec.get("metric_stats"), Mapping) else {}
            bad = [m for m in metrics if not usable_number(scores.get(m))
                   or (isinstance(stats.get(m), list) and not all(usable_number(v) for v in stats[m]))]
            if not bad:
                continue
            for m in bad:
                counts.setdefault(s, {})[m] = counts.get(s, {}).get(m, 0) + 1
                first.setdefault((s, m), row.get("id"))
            new = dict(rec)
            new["scores"] = {k: v for k, v in scores.items() if k not in bad}
            if stats:
                new["metric_stats"] = {k: v for k, v in stats.items() if k not in bad}
            changed[s] = new
        out.append({**row, "systems": {**row["systems"], **changed}} if changed else row)
    for (s, m), rid in first.items():
        log.warning("system %s, metric %s: %d scored examples hold no usable score (missing, null, NaN or "
                    "infinite; first: id %s); left out of the metric's value, interval and tests",
                    s, m, counts[s][m], rid)
    return out, counts


def _system_entry(rows: Sequence[Mapping[str, Any]], s: str, metrics: Sequence[str], settings: IntervalSettings
                  ) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """One system's entry of ``metrics.json`` (see :func:`summarize`) and its scores ``{metric: {id: score}}``,
    from rows whose unusable scores were taken out (:func:`usable_scores`): a metric's value, interval and
    scores are over the scored examples that hold its score."""
    ok = [r for r in rows if _scored(r, s)]
    entry: dict[str, Any] = {"n": len(ok), "n_errors": len(rows) - len(ok), "metrics": {}, "intervals": {}}
    cut = sum(1 for r in ok if r["systems"][s].get("truncated") is True)
    if cut:
        entry["n_truncated"] = cut
    scores: dict[str, dict[str, float]] = {}
    for m in metrics:
        has = [r for r in ok if m in (r["systems"][s].get("scores") or {})]
        vals = [r["systems"][s]["scores"][m] for r in has]
        scores[m] = {r["id"]: r["systems"][s]["scores"][m] for r in has}
        stats = [(r["systems"][s].get("metric_stats") or {}).get(m) for r in has]
        entry["metrics"][m] = aggregate(m, vals, stats) if vals else None
        ci = mean_interval(vals, settings) if get_metric(m).corpus is None else None
        entry["intervals"][m] = list(ci) if ci is not None else None
    toks = [r["systems"][s]["tokens"] for r in ok]
    entry["metrics"]["tokens"] = sum(toks) / len(toks) if toks else None
    rt = [r["systems"][s].get("reader_tokens") or {} for r in ok]
    for k in ("input", "output"):
        got = [x[k] for x in rt if x.get(k) is not None]
        if got and len(got) == len(ok):
            entry.setdefault("reader_tokens", {})[k] = sum(got) / len(got)
    stage_names = sorted({k for r in ok for k in r["systems"][s].get("stage_tokens", {})})
    entry["stage_tokens"] = {
        k: sum(r["systems"][s]["stage_tokens"].get(k, 0) for r in ok) / len(ok) for k in stage_names
    }
    return entry, scores


def _difference(scores: Mapping[str, Mapping[str, float]], a: str, b: str,
                settings: IntervalSettings) -> dict[str, Any]:
    """``sd_diff`` and ``diff_ci`` of system ``a`` minus ``b`` on the questions both scored."""
    xa, xb = paired_scores(scores, a, b)
    ci = difference_interval(xa, xb, settings) if xa else None
    return {"sd_diff": sd_of_differences(xa, xb), "diff_ci": list(ci) if ci is not None else None}


def _opponent(ours: str, other: str, systems: Sequence[str]) -> str:
    """The row key of the system under test that ``other`` was tested against (``ours@b`` in frontiers)."""
    if ours in systems:
        return ours
    _, budget = split_name(other)
    return budget_name(ours, budget) if budget is not None else ours


def _sections(rows: Sequence[Mapping[str, Any]], systems: Sequence[str], metrics: Sequence[str],
              settings: IntervalSettings, ours: str) -> dict[str, Any]:
    """The frontier and waterfall sections of ``metrics.json`` (present only where the rows have them)."""
    out: dict[str, Any] = {}
    frontier = frontier_summary(rows, systems, metrics, settings, ours)
    if frontier:
        out["frontier"] = frontier
    waterfall = waterfall_summary(rows, systems)
    if waterfall:
        out["waterfall"] = waterfall
    return out


def write_tables(summaries: Sequence[Mapping[str, Any]], out_dir: Path, metrics: Sequence[str] | None = None,
                 caption: str = "", labels: Sequence[str] | None = None,
                 run_dirs: Sequence[str | Path] | None = None, notes: Sequence[str] = ()) -> dict[str, Path]:
    """Write :func:`table_texts` to ``out_dir`` (``results.md``, ``.csv``, ``.tex``, ``provenance.csv``)."""
    texts = table_texts(summaries, metrics, caption, labels, run_dirs, notes)
    paths = {k: out_dir / TABLE_FILES[k] for k in texts}
    for k, text in texts.items():
        atomic_write(paths[k], text)
    return paths


def fidelity_label(record: Any) -> str:
    """One line for a run's recorded fidelity (``metrics.json["fidelity"]``): ``paper``, ``paper, except
    cleaner.keep_hidden=false (fidelity: true)``, or ``unrecorded`` (runs from before fidelity existed)."""
    if not isinstance(record, Mapping) or not record.get("name"):
        return "unrecorded"
    devs = record.get("deviations") or []
    return f"{record['name']}, except {'; '.join(devs)}" if devs else str(record["name"])


def fidelity_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """"Fidelity: paper." when every run has one fidelity, else the fidelity of each column group."""
    each = [fidelity_label(s.get("fidelity")) for s in summaries]
    if len(set(each)) == 1:
        return f"Fidelity: {each[0]}."
    labels = labels or [str(s.get("dataset", "")) for s in summaries]
    return "Fidelity per column group: " + "; ".join(f"{lb}: {f}" for lb, f in zip(labels, each, strict=True)) + "."


def _count(entry: Any, key: str) -> int:
    """``entry[key]`` when it is a positive count (an int), else 0."""
    v = entry.get(key) if isinstance(entry, Mapping) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _per_system_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None, head: str,
                        items: Any) -> str:
    """"<head>: <items of each system, in the table's row order> of <n> examples[; <next run> ...]." -- ``items(name,
    entry)`` gives a system's phrases ("bm25 2"); "" when no system of any run has one."""
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    parts = []
    for run, lb in zip(summaries, labels, strict=True):
        systems = run.get("systems") or {}
        order = [n for n in system_order(run) if n in systems]  # the table's row order
        found = [x for name in order for x in items(name, systems[name])]
        if found:
            where = f"{lb}: " if len(summaries) > 1 else ""
            parts.append(f"{where}{', '.join(found)} of {run.get('n_examples', '?')} examples")
    return f"{head}: {'; '.join(parts)}." if parts else ""


def errors_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """"Error rows (not scored): bm25 2, ours 2 of 6 examples." -- per system, the examples whose context or
    answer failed (``n_errors`` of ``metrics.json``), left out of its scores; "" when there are none."""
    return _per_system_caption(summaries, labels, "Error rows (not scored)",
                               lambda name, e: [f"{name} {n}"] if (n := _count(e, "n_errors")) else [])


def unusable_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """"Scores that are not numbers (left out): bm25 ref_em 1 of 6 examples." -- per system and metric, the
    scored examples whose score was missing, null, NaN or infinite (``unusable_scores`` of ``metrics.json``);
    "" when there are none."""
    def items(name: str, e: Any) -> list[str]:
        per = e.get("unusable_scores") if isinstance(e, Mapping) else None
        return [f"{name} {m} {k}" for m, k in per.items() if _count({"k": k}, "k")] if isinstance(per, Mapping) else []

    return _per_system_caption(summaries, labels, "Scores that are not numbers (left out)", items)


def truncated_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """"Answers cut at max_new_tokens (scored as they are): ours 2 of 6 examples." -- per system, the scored
    examples whose answer was cut (``n_truncated`` of ``metrics.json``); "" when there are none."""
    return _per_system_caption(summaries, labels, "Answers cut at max_new_tokens (scored as they are)",
                               lambda name, e: [f"{name} {n}"] if (n := _count(e, "n_truncated")) else [])


def stage_tokens_markdown(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """A Markdown table of mean tokens after each pipeline stage (raw/cleaned/step1/step2) per system, plus
    the context handed to the reader."""
    stages = ["raw", "cleaned", "step1", "step2"]
    lines = ["Mean tokens per stage (raw pages, cleaned, after step 1, after step 2, context given to the reader):",
             "", "| run | system | " + " | ".join(stages) + " | context |", "|---|---|" + "---:|" * (len(stages) + 1)]
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    for run, lb in zip(summaries, labels, strict=True):
        for sys in system_order(run):
            e = run["systems"][sys]
            cells = [f"{e['stage_tokens'][k]:.0f}" if k in e.get("stage_tokens", {}) else "-" for k in stages]
            ctx = e["metrics"].get("tokens")
            lines.append(f"| {lb} | {sys} | " + " | ".join(cells) + f" | {'-' if ctx is None else f'{ctx:.0f}'} |")
    return "\n".join(lines) + "\n"
