"""Every table of one run's ``tables/`` folder, as texts, from its ``metrics.json`` and rows alone.

The harness writes a finished run's tables with :func:`run_tables`, and ``htmlrag-paper verify`` recomputes
them with the same function and compares: one code path, so a table that verifies is the table the run wrote.

- ``results.md``, ``results.csv``, ``results.tex``, ``provenance.csv``: the run's table
  (:func:`htmlrag.evaluation.summary.table_texts`);
- ``by_<key>/results.*``: one column group per value of the example metadata ``key`` (``docqa.subsets``), from
  the value each row recorded (``row["metadata"][key]``), plus ``all``;
- ``pairwise.md`` / ``pairwise.json``: paired t-tests between every two systems, per group and metric.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from htmlrag.evaluation.intervals import IntervalSettings, adjust
from htmlrag.evaluation.shapes import system_order
from htmlrag.evaluation.stats import paired_scores, paired_ttest, usable_number
from htmlrag.evaluation.summary import TABLE_FILES, summarize, table_texts

Rows = Sequence[Mapping[str, Any]]


def subset_value(row: Mapping[str, Any], key: str) -> str | None:
    """The value of metadata ``key`` the row recorded (``None`` when the row does not hold it)."""
    meta = row.get("metadata")
    if not isinstance(meta, Mapping) or key not in meta:
        return None
    return str(meta[key])


def subset_groups(rows: Rows, keys: Sequence[str]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """``[("all", rows), ("key=value", rows with that value), ...]`` for every key, values sorted."""
    groups: list[tuple[str, list[Mapping[str, Any]]]] = [("all", list(rows))]
    for key in keys:
        values = sorted({str(subset_value(r, key)) for r in rows})
        groups += [(f"{key}={v}", [r for r in rows if str(subset_value(r, key)) == v]) for v in values]
    return groups


def pairwise_tests(groups: Sequence[tuple[str, Rows]], systems: Sequence[str], metrics: Sequence[str],
                   alpha: float = 0.05, correction: str = "holm") -> tuple[str, list[dict[str, Any]]]:
    """Paired t-tests (:func:`htmlrag.evaluation.stats.paired_ttest`, ids scored by both) of every two systems,
    per group and metric, corrected over all of them as one family (``correction``,
    :func:`htmlrag.evaluation.intervals.adjust`); †: adjusted p < alpha. Returns the Markdown table and the
    records."""
    recs: list[dict[str, Any]] = []
    for label, rows in groups:
        for m in metrics:
            scores: dict[str, dict[str, float]] = {s: {} for s in systems}
            for r in rows:
                if r.get("error"):
                    continue
                for s in systems:
                    e = r["systems"].get(s) or {}
                    if not e.get("error") and usable_number((e.get("scores") or {}).get(m)):
                        scores[s][r["id"]] = e["scores"][m]
            for a, b in combinations(systems, 2):
                xa, xb = paired_scores(scores, a, b)
                if not xa:
                    continue
                t = paired_ttest(xa, xb)
                recs.append({"group": label, "metric": m, "a": a, "b": b, **t.to_dict()})
    for r, pa in zip(recs, adjust([r["p"] for r in recs], correction, alpha), strict=True):
        r["p_adjusted"], r["significant"] = pa, pa is not None and pa < alpha
    lines = [f"Paired two-sided t-tests between systems (ids both scored; † {correction}-adjusted p < {alpha} over "
             f"the {sum(r['p'] is not None for r in recs)} tests of this table). Means x100.", "",
             "| group | metric | a | b | n | mean a | mean b | p | adjusted p |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in recs:
        p = "-" if r["p"] is None else f"{r['p']:.3g}"
        pa = "-" if r["p_adjusted"] is None else f"{r['p_adjusted']:.3g}{' †' if r['significant'] else ''}"
        lines.append(f"| {r['group']} | {r['metric']} | {r['a']} | {r['b']} | {r['n']} | {100 * r['mean_a']:.1f} | "
                     f"{100 * r['mean_b']:.1f} | {p} | {pa} |")
    return "\n".join(lines) + "\n", recs


def recorded_settings(summary: Mapping[str, Any]) -> IntervalSettings | None:
    """The interval settings a run recorded (``metrics.json["intervals"]``), ``None`` for runs from before."""
    rec = summary.get("intervals")
    if not isinstance(rec, Mapping):
        return None
    names = IntervalSettings.__dataclass_fields__
    return IntervalSettings(**{k: v for k, v in rec.items() if k in names})


def _subset_tables(summary: Mapping[str, Any], rows: Rows, key: str, caption: str, run: str) -> dict[str, str]:
    """``by_<key>/results.*``: the run's rows split by the value of ``key``, one column group per value."""
    systems = system_order(summary)
    metrics = list(summary["metric_names"])
    parts = subset_groups(rows, [key])
    summaries = [summarize(part, systems, metrics, ours=str(summary.get("ours")),
                           experiment=str(summary.get("experiment", "")), run_id=str(summary.get("run_id", "")),
                           dataset=label, alpha=float(summary.get("alpha", 0.05)), fidelity=summary.get("fidelity"),
                           intervals=recorded_settings(summary))
                 for label, part in parts]
    texts = table_texts(summaries, metrics, caption=f"{caption} (by {key})".strip(), run_dirs=[run] * len(summaries))
    return {f"by_{key}/{TABLE_FILES[k]}": v for k, v in texts.items()}


def run_tables(summary: Mapping[str, Any], rows: Rows, *, run: str, caption: str = "", subsets: Sequence[str] = (),
               pairwise: bool = False) -> dict[str, str]:
    """Every table file of one run, ``{path under tables/: text}``.

    Args:
        summary: the run's ``metrics.json``.
        rows: the run's rows (used only for subset tables and pairwise tests).
        run: the run's name in provenance (:func:`htmlrag.evaluation.runs.run_name`).
        caption: the experiment's caption (the fidelity is appended).
        subsets: metadata keys to split by (each row's ``metadata``).
        pairwise: also write ``pairwise.md`` and ``pairwise.json``.
    """
    out = {TABLE_FILES[k]: v for k, v in table_texts([summary], summary["metric_names"], caption=caption,
                                                     run_dirs=[run]).items()}
    for key in subsets:
        out.update(_subset_tables(summary, rows, key, caption, run))
    if pairwise:  # in the harness's order: the system under test, then the baselines
        order = system_order(summary)
        systems = [o for o in order if o == summary.get("ours")] + [o for o in order if o != summary.get("ours")]
        md, data = pairwise_tests(subset_groups(rows, subsets), systems, list(summary["metric_names"]),
                                  alpha=float(summary.get("alpha", 0.05)),
                                  correction=(recorded_settings(summary) or IntervalSettings()).correction)
        out["pairwise.md"] = md
        out["pairwise.json"] = json.dumps(data, indent=1)
    return out
