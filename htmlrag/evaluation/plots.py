"""PNG plots of a run's frontier, stage-loss waterfall and quality-vs-cost Pareto front (matplotlib, Agg).

Every plot is drawn from the numbers its table prints (the same dictionaries), so a plot never shows a value
that is not in the run's ``tables/``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, metadata={"Software": None})
    _plt().close(fig)
    return out


def plot_frontier(lines: Sequence[Mapping[str, Any]], metric: str, out: Path, title: str = "",
                  confidence: float = 0.95) -> Path:
    """Metric (%) against mean context tokens (log2 axis), one line per system with its intervals as error
    bars; ``lines``: ``[{"label", "tokens": [...], "means": [...], "intervals": [[lo, hi] | None], "auc"}]``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for line in lines:
        pts = [(t, m, ci) for t, m, ci in zip(line["tokens"], line["means"], line["intervals"], strict=True)
               if t is not None and m is not None]
        if not pts:
            continue
        xs, ys = [p[0] for p in pts], [100 * p[1] for p in pts]
        lo = [100 * (p[1] - p[2][0]) if p[2] else 0.0 for p in pts]
        hi = [100 * (p[2][1] - p[1]) if p[2] else 0.0 for p in pts]
        auc = line.get("auc")
        label = line["label"] + (f" (AUC {100 * auc:.1f})" if auc is not None else "")
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("mean context tokens (log scale)")
    ax.set_ylabel(f"{metric} (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{metric} vs context budget ({100 * confidence:g}% intervals)", fontsize=10)
    fig.tight_layout()
    return _save(fig, out)


def plot_waterfall(waterfall: Mapping[str, Mapping[str, Any]], out: Path, title: str = "") -> Path:
    """One panel per system: the share of questions still holding the gold answer through each stage (bars),
    with each stage's loss in red above its bar."""
    plt = _plt()
    names = list(waterfall)
    cols = min(5, len(names)) or 1  # a frontier system's five budgets on one line
    rows = math.ceil(len(names) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax, name in zip(axes.flat, names, strict=False):
        w = waterfall[name]
        n = w["n"] or 1
        held = [100 * h / n for h in w["held"]]
        lost = [100 * x / n for x in w["lost"]]
        xs = range(len(w["stages"]))
        ax.bar(xs, held, color="#4c72b0")
        ax.bar(xs, lost, bottom=held, color="#dd5555")
        ax.set_xticks(list(xs), w["stages"], rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 100)
        ax.set_ylabel("% of questions")
        ax.set_title(f"{name} (n={w['n']})", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title or "Gold answer held through each stage (blue); lost at that stage (red)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / (3.2 * rows)))  # room for the title above the panels
    return _save(fig, out)


def plot_pareto(points: Sequence[Mapping[str, Any]], out: Path, quality: str, cost: str, title: str = "") -> Path:
    """Quality (%) against cost per question (log axis when it spans a decade), systems on the Pareto front
    joined and filled; ``points``: ``[{"label", "cost", "quality", "interval", "front"}]``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    pts = [p for p in points if p["cost"] is not None and p["quality"] is not None]
    for p in pts:
        ci = p.get("interval")
        yerr = [[100 * (p["quality"] - ci[0])], [100 * (ci[1] - p["quality"])]] if ci else None
        ax.errorbar([p["cost"]], [100 * p["quality"]], yerr=yerr, fmt="o",
                    mfc=None if p["front"] else "white", capsize=3, color="#4c72b0" if p["front"] else "grey")
        ax.annotate(p["label"], (p["cost"], 100 * p["quality"]), fontsize=7, xytext=(4, 4), textcoords="offset points")
    front = sorted((p for p in pts if p["front"]), key=lambda p: p["cost"])
    if len(front) > 1:
        ax.plot([p["cost"] for p in front], [100 * p["quality"] for p in front], "--", color="#4c72b0", alpha=0.6)
    costs = [p["cost"] for p in pts if p["cost"] > 0]
    if costs and max(costs) / min(costs) > 10:
        ax.set_xscale("log")
    ax.set_xlabel(cost)
    ax.set_ylabel(f"{quality} (%)")
    ax.grid(alpha=0.3)
    ax.set_title(title or "Quality vs cost (filled: on the Pareto front)", fontsize=10)
    fig.tight_layout()
    return _save(fig, out)
