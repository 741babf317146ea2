"""PNG plots of a run's frontier, stage-loss waterfall and quality-vs-cost Pareto front (matplotlib, Agg), and
the record of what each was drawn from (``plots/plots.json``).

Every plot is drawn from the numbers its table prints (the same dictionaries), so a plot never shows a value
that is not in the run's ``tables/``.

**Plot records.** PNG bytes are not reproducible across matplotlib and FreeType releases, so a plot cannot be
checked by drawing it again and comparing bytes. Instead :func:`write_plots` records, per PNG it writes, the
SHA-256 of the canonical JSON of exactly the data the plot is drawn from (:attr:`Plot.data`: the lines, panels
or points, and the metric, labels and title shown on it; :func:`data_digest`) and the SHA-256 of the PNG file
written, in ``plots/plots.json`` (:data:`PLOT_RECORDS`)::

    {"format": 1, "plots": {"pareto.png": {"kind": "pareto", "data_sha256": "...", "png_sha256": "..."}, ...}}

``htmlrag-paper verify`` recomputes each plot's data from the run (the writer's own function,
:func:`htmlrag.evaluation.report.run_plots`) and compares both digests: a PNG swapped in from another run or
edited, a PNG deleted or added, and a plot left stale after the numbers it shows were rewritten are each named.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag.core.io import atomic_write as write_whole
from htmlrag.core.io import sha256_file
from htmlrag.evaluation.store import atomic_write, dump_json

#: The record of a run's plots, in its ``plots/`` folder (module docstring).
PLOT_RECORDS = "plots.json"
#: The ``metrics.json`` key by which a run says that the harness wrote :data:`PLOT_RECORDS` with it (its value:
#: the record's path in the run, :data:`PLOT_RECORD_PATH`). Without it (runs written before the record) a missing
#: record is a note; with it, a deleted one is a finding of ``htmlrag-paper verify``.
PLOT_RECORD_KEY = "plot_record"
PLOT_RECORD_PATH = f"plots/{PLOT_RECORDS}"
#: The version of :data:`PLOT_RECORDS`' shape.
RECORDS_FORMAT = 1
#: The fields of one plot's record.
RECORD_FIELDS = ("kind", "data_sha256", "png_sha256")


def canonical(value: Any) -> Any:
    """``value`` as its stored JSON reads back: mappings with string keys in sorted order (``dump_json`` sorts
    them: a reader of ``metrics.json`` iterates its systems by name, the run that wrote it in the order they
    ran), tuples as lists, numpy scalars as Python numbers, and non-finite floats (NaN, inf: numbers the project
    never uses) as ``null``, as ``metrics.json`` stores them. A value JSON cannot hold raises ``TypeError``."""
    if isinstance(value, Mapping):
        return {k: canonical(v) for k, v in sorted(((str(k), v) for k, v in value.items()), key=lambda kv: kv[0])}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # a numpy scalar
        return canonical(value.item())
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (:func:`canonical`; sorted keys, no spaces, floats as ``repr``
    writes them, so the same stored numbers always give the same text)."""
    return json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def data_digest(kind: str, data: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a plot's kind and data: what ``plots.json`` records as
    ``data_sha256``."""
    return hashlib.sha256(canonical_json({"kind": kind, "data": data}).encode("utf-8")).hexdigest()


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path) -> Path:
    """Write the figure as a PNG through a temporary file and a rename: a reader (or ``verify``) sees the old
    image or the new one, never a half-written one."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None})
    _plt().close(fig)
    write_whole(out, buf.getvalue())
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


#: What draws each kind of plot.
PLOTTERS = {"frontier": plot_frontier, "waterfall": plot_waterfall, "pareto": plot_pareto}


@dataclass(frozen=True)
class Plot:
    """One plot of a run: its kind (a key of :data:`PLOTTERS`) and exactly the data it is drawn from, the
    keyword arguments of its plot function but ``out`` (lines, panels or points, and the metric, labels and
    title shown on it). Built by :func:`htmlrag.evaluation.report.run_plots` for the writer and for ``verify``."""

    kind: str
    data: Mapping[str, Any]

    def digest(self) -> str:
        """:func:`data_digest` of this plot."""
        return data_digest(self.kind, self.data)

    def draw(self, out: Path) -> Path:
        """Draw the plot to the PNG ``out`` (matplotlib, imported here: reading or checking records needs none)."""
        return PLOTTERS[self.kind](out=out, **self.data)


def write_plots(folder: Path, plots: Mapping[str, Plot]) -> list[Path]:
    """Draw each plot to ``folder/<name>`` and then write ``folder/plots.json`` (atomically) recording, per
    name, its kind, :meth:`Plot.digest` and the SHA-256 of the PNG as written. The record is written, empty,
    when there is nothing to draw as well: a PNG added to such a run later is named by ``verify``."""
    out: list[Path] = []
    records: dict[str, dict[str, str]] = {}
    for name, plot in plots.items():
        path = plot.draw(folder / name)
        records[name] = {"kind": plot.kind, "data_sha256": plot.digest(), "png_sha256": sha256_file(path)}
        out.append(path)
    atomic_write(folder / PLOT_RECORDS, dump_json({"format": RECORDS_FORMAT, "plots": records}))
    return [*out, folder / PLOT_RECORDS]


def _hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def read_plot_records(path: Path) -> dict[str, dict[str, str]]:
    """The records of ``plots.json`` by PNG name.

    Raises:
        OSError: the file cannot be read (a folder in its place).
        ValueError: it is not JSON, or not of the shape :func:`write_plots` writes (naming what is wrong):
            an edited record, never a traceback of whoever reads it.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("plots"), dict):
        raise ValueError('not an object with a "plots" object')
    if set(data) != {"format", "plots"} or type(data["format"]) is not int or data["format"] != RECORDS_FORMAT:
        raise ValueError(f"keys {sorted(data)} / format {data.get('format')!r} (the harness writes format "
                         f"{RECORDS_FORMAT} and keys ['format', 'plots'])")
    for name, rec in data["plots"].items():
        if not name.endswith(".png") or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"{name!r} is not the name of a PNG in plots/")
        if not isinstance(rec, dict) or set(rec) != set(RECORD_FIELDS):
            raise ValueError(f"{name}: not a record of the fields {list(RECORD_FIELDS)}")
        if not isinstance(rec["kind"], str) or rec["kind"] not in PLOTTERS or \
                not (_hex64(rec["data_sha256"]) and _hex64(rec["png_sha256"])):
            raise ValueError(f"{name}: an unknown kind or a digest that is not 64 hex digits")
    return data["plots"]
