"""Aggregate saved prediction rows into ``metrics.json`` and tables (no model calls: re-tables need no rerun).

``metrics.json`` is a pure function of the saved rows and the run's identity: rows are taken in example
order, floats are aggregated in that order, and no timing or host information enters it, so two runs of
one configuration (or a killed and resumed run) write byte-identical files.
"""

from __future__ import annotations

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
from htmlrag.evaluation.stats import compare_to, paired_scores
from htmlrag.evaluation.store import atomic_write
from htmlrag.evaluation.tables import UNSCALED, build_table
from htmlrag.evaluation.waterfall import waterfall_summary


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
    the saved per-example statistics), ``tokens`` (mean context tokens handed to the reader),
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
    scores: dict[str, dict[str, dict[str, float]]] = {m: {s: {} for s in systems} for m in metrics}
    out_sys: dict[str, Any] = {}
    for s in systems:
        out_sys[s], per = _system_entry(rows, s, metrics, settings)
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
    any system has error rows, how many (:func:`errors_caption`). The provenance names each run by :func:`htmlrag.evaluation.runs.run_name` (relative to its results root)."""
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    names = [*(metrics or summaries[0]["metric_names"]), "tokens"]
    directions = {m: get_metric(m).higher_is_better for m in names if m not in UNSCALED} | dict.fromkeys(UNSCALED, False)
    sources = [run_name(d) for d in run_dirs] if run_dirs is not None else None
    table = build_table(summaries, names, labels=labels, sources=sources, directions=directions,
                        scales=dict.fromkeys(UNSCALED, 1.0), unranked=list(UNSCALED),
                        alpha=float(summaries[0].get("alpha", 0.05)),
                        caption=" ".join(x for x in (caption, fidelity_caption(summaries, labels),
                                                     errors_caption(summaries, labels)) if x),
                        notes=list(notes))
    return {"md": table.to_markdown() + "\n" + stage_tokens_markdown(summaries, labels), "csv": table.to_csv(),
            "tex": table.to_latex(), "provenance": table.provenance_csv()}


#: File names of :func:`table_texts`' keys.
TABLE_FILES = {"md": "results.md", "csv": "results.csv", "tex": "results.tex", "provenance": "provenance.csv"}
def _system_entry(rows: Sequence[Mapping[str, Any]], s: str, metrics: Sequence[str], settings: IntervalSettings
                  ) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """One system's entry of ``metrics.json`` (see :func:`summarize`) and its scores ``{metric: {id: score}}``."""
    ok = [r for r in rows if s in r.get("systems", {}) and not r["systems"][s].get("error") and not r.get("error")]
    entry: dict[str, Any] = {"n": len(ok), "n_errors": len(rows) - len(ok), "metrics": {}, "intervals": {}}
    scores: dict[str, dict[str, float]] = {}
    for m in metrics:
        vals = [r["systems"][s]["scores"][m] for r in ok]
        scores[m] = {r["id"]: r["systems"][s]["scores"][m] for r in ok}
        stats = [(r["systems"][s].get("metric_stats") or {}).get(m) for r in ok]
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


def errors_caption(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """"Error rows (not scored): bm25 2, ours 2 of 6 examples." -- per system, the examples whose context or
    answer failed (``n_errors`` of ``metrics.json``), left out of its scores; "" when there are none."""
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    parts = []
    for run, lb in zip(summaries, labels, strict=True):
        systems = run.get("systems") or {}
        order = [n for n in run.get("system_order") or systems if n in systems]  # the table's row order
        bad = [f"{name} {systems[name]['n_errors']}" for name in order if isinstance(systems[name], Mapping)
               and isinstance(systems[name].get("n_errors"), int) and systems[name]["n_errors"] > 0]
        if bad:
            where = f"{lb}: " if len(summaries) > 1 else ""
            parts.append(f"{where}{', '.join(bad)} of {run.get('n_examples', '?')} examples")
    return f"Error rows (not scored): {'; '.join(parts)}." if parts else ""


def stage_tokens_markdown(summaries: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str:
    """A Markdown table of mean tokens after each pipeline stage (raw/cleaned/step1/step2) per system, plus
    the context handed to the reader."""
    stages = ["raw", "cleaned", "step1", "step2"]
    lines = ["Mean tokens per stage (raw pages, cleaned, after step 1, after step 2, context given to the reader):",
             "", "| run | system | " + " | ".join(stages) + " | context |", "|---|---|" + "---:|" * (len(stages) + 1)]
    labels = list(labels) if labels is not None else [str(s.get("dataset", "")) for s in summaries]
    for run, lb in zip(summaries, labels, strict=True):
        for sys in run.get("system_order") or run["systems"]:
            e = run["systems"][sys]
            cells = [f"{e['stage_tokens'][k]:.0f}" if k in e.get("stage_tokens", {}) else "-" for k in stages]
            ctx = e["metrics"].get("tokens")
            lines.append(f"| {lb} | {sys} | " + " | ".join(cells) + f" | {'-' if ctx is None else f'{ctx:.0f}'} |")
    return "\n".join(lines) + "\n"
