"""Paper artefacts from saved runs: HtmlRAG's tables in the paper's layout, the cost table, Figure 5.

Everything here reads only ``results/`` (each run's ``metrics.json`` and ``config.yaml``), so a table or the
figure can be redrawn at any time without rerunning anything::

    htmlrag-paper table   results/paper_table1_main          # Tables 1, 2, 3, 6, 7: paper layout
    htmlrag-paper info-loss results/paper_table5_info_loss   # Table 5: reference-text EM and tokens
    htmlrag-paper cost    results/paper_table4_cost          # Table 4: parameters, storage, tokens, skipped nodes
    htmlrag-paper figure5 results/paper_figure5_granularity  # Figure 5: metric vs block granularity (PNG)

The paper-experiment configs (``conf/experiment/paper/``) also attach :class:`PaperArtifacts` as a Hydra
callback, which writes the same files when a run or a sweep ends.

Run selection: every ``metrics.json`` below the given folders is read (``_hydra`` log folders skipped);
when several runs share a column group (dataset and budget; for Figure 5 also the granularity), the newest
run wins and the others are listed in the log (old runs stay on disk when the code or config changed).

Layout of the main tables (paper Tables 1-3, 6, 7): one row per system (the system under test last), one
column group per dataset in the paper's order (ASQA, HotpotQA, NQ, TriviaQA, MuSiQue, ELI5, then others),
with the paper's metrics for that dataset. The paper's "EM" is our ``hit1`` and its "Hit@1" our ``em``
(see README, Metrics), so headers read ``EM [hit1]``. Best **bold**, second underlined, † where the paired
t-test against the system under test (saved by the harness) has p < alpha.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("htmlrag-paper")

#: Paper column order and labels of the HtmlRAG test sets.
DATASETS: dict[str, str] = {"asqa": "ASQA", "hotpot_qa": "HotpotQA", "nq": "NQ", "trivia_qa": "Trivia-QA",
                            "musique": "MuSiQue", "eli5": "ELI5"}
#: Labels of the other datasets (column groups of their own, after the paper's).
OTHER_LABELS: dict[str, str] = {"wtq_html_qa": "WTQ-HTML"}
#: The paper's columns per dataset: (our metric, paper header).
PAPER_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "asqa": [("hit1", "EM"), ("em", "Hit@1")],
    "hotpot_qa": [("hit1", "EM")],
    "nq": [("em", "Hit@1"), ("hit1", "EM")],
    "trivia_qa": [("em", "Hit@1"), ("hit1", "EM")],
    "musique": [("hit1", "EM")],
    "eli5": [("rouge_l", "ROUGE-L"), ("bleu", "BLEU")],
}
#: Metrics scored per dataset in the paper experiments (``${paper_metrics:${dataset.name}}``).
PAPER_METRICS: dict[str, list[str]] = {
    "asqa": ["em", "hit1", "str_em", "rouge_l", "ref_em"],
    "eli5": ["rouge_l", "bleu"],
}
SHORT_METRICS = ["em", "hit1", "exact_match", "f1", "ref_em"]
KINDS = ("table", "info_loss", "cost", "figure5")


def paper_metrics(dataset: str) -> list[str]:
    """Metric names for ``dataset`` in the paper experiments (ASQA and ELI5 have their own; else short QA)."""
    from htmlrag.metrics import get_metric

    names = PAPER_METRICS.get(str(dataset), SHORT_METRICS)
    for n in names:
        get_metric(n)  # an unknown name raises here, at composition
    return list(names)


def register_resolvers() -> None:
    """Register the ``paper_metrics`` resolver (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("paper_metrics"):
        OmegaConf.register_new_resolver("paper_metrics", paper_metrics)


# ---------------------------------------------------------------- runs
@dataclass
class Run:
    """One saved run: its folder, ``metrics.json`` and resolved ``config.yaml``."""

    dir: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    mtime: float

    @property
    def dataset(self) -> str:
        return str(self.summary.get("dataset", ""))

    def get(self, dotted: str, default: Any = None) -> Any:
        """A config value by dotted path (``pruner.budget``)."""
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node


def find_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Every run (a folder with ``metrics.json``) at or below ``paths``, Hydra log folders skipped."""
    import yaml

    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "metrics.json").is_file():
            found.append(p / "metrics.json")
        elif p.is_dir():
            found.extend(f for f in sorted(p.rglob("metrics.json")) if "_hydra" not in f.parts)
    runs = []
    for f in found:
        cfg_file = f.parent / "config.yaml"
        config = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
        runs.append(Run(f.parent, json.loads(f.read_text(encoding="utf-8")), config or {}, f.stat().st_mtime))
    return runs


def latest(runs: Sequence[Run], key: Any) -> list[Run]:
    """The newest run per ``key(run)`` (in key order of first appearance); older ones are logged."""
    best: dict[Any, Run] = {}
    for r in runs:
        k = key(r)
        if k not in best or r.mtime > best[k].mtime:
            if k in best:
                log.info("run %s superseded by newer %s", best[k].dir, r.dir)
            best[k] = r
        else:
            log.info("run %s superseded by newer %s", r.dir, best[k].dir)
    return list(best.values())


def _dataset_order(ds: str) -> tuple[int, str]:
    order = list(DATASETS)
    return (order.index(ds), ds) if ds in order else (len(order), ds)


def column_groups(runs: Sequence[Run]) -> list[tuple[str, Run]]:
    """``(label, run)`` per column group: one per dataset and final budget (newest run each), paper order."""
    runs = latest(runs, lambda r: (r.dataset, r.get("pruner.budget")))
    budgets: dict[str, set] = {}
    for r in runs:
        budgets.setdefault(r.dataset, set()).add(r.get("pruner.budget"))
    out = []
    for r in sorted(runs, key=lambda r: (_dataset_order(r.dataset), r.get("pruner.budget") or 0)):
        label = label_of(r.dataset)
        if len(budgets[r.dataset]) > 1:
            label += f" {_budget_label(r.get('pruner.budget'))}"
        out.append((label, r))
    return out


def label_of(dataset: str) -> str:
    """The column-group label of a dataset (the paper's spelling, else the config name)."""
    return DATASETS.get(dataset) or OTHER_LABELS.get(dataset, dataset)


def _budget_label(budget: Any) -> str:
    if not isinstance(budget, int):
        return str(budget)
    return f"{budget // 1024}K" if budget % 1024 == 0 else str(budget)


# ---------------------------------------------------------------- tables
def _rows(runs: Sequence[Run]) -> list[str]:
    rows: list[str] = []
    ours = None
    for r in runs:
        ours = ours or r.summary.get("ours")
        for s in r.summary.get("system_order") or r.summary["systems"]:
            if s not in rows:
                rows.append(s)
    if ours in rows:  # the system under test last, as in the paper
        rows = [s for s in rows if s != ours] + [ours]
    return rows


def main_table(runs: Sequence[Run], caption: str = "", metrics: Sequence[str] | None = None) -> Any:
    """The paper-layout table (Tables 1-3, 6, 7) of ``runs`` (see the module docstring)."""
    from htmlrag.metrics import get_metric
    from htmlrag.tables import Column, Table

    groups = column_groups(runs)
    columns, values, pvalues = [], {}, {}
    alpha, ours = 0.05, None
    for label, r in groups:
        names = r.summary.get("metric_names", [])
        if metrics:
            cols = [(m, m) for m in metrics if m in names]
        elif r.dataset in PAPER_COLUMNS:
            cols = [(m, f"{head} [{m}]") for m, head in PAPER_COLUMNS[r.dataset] if m in names]
        else:
            cols = [(m, m) for m in names]
        ours = ours or r.summary.get("ours")
        alpha = float(r.summary.get("alpha", alpha))
        for m, head in cols:
            col = Column(label, m, label=head, higher_is_better=get_metric(m).higher_is_better)
            columns.append(col)
            values[(label, m)] = {s: e["metrics"].get(m) for s, e in r.summary["systems"].items()}
            pvalues[(label, m)] = {b: t.get("p") for b, t in r.summary.get("tests", {}).get(m, {}).items()}
    return Table(columns, _rows([r for _, r in groups]), values, pvalues, ours=ours, caption=caption, alpha=alpha)


def info_loss_table(runs: Sequence[Run], caption: str = "") -> Any:
    """Table 5: reference-text EM (x100) and mean context tokens per system and column group."""
    from htmlrag.tables import Column, Table

    groups = column_groups(runs)
    columns, values, pvalues = [], {}, {}
    ours, alpha = None, 0.05
    for label, r in groups:
        ours = ours or r.summary.get("ours")
        alpha = float(r.summary.get("alpha", alpha))
        columns.append(Column(label, "ref_em", label="ref. EM"))
        columns.append(Column(label, "tokens", label="tokens", scale=1.0, digits=0, rank=False))
        for m in ("ref_em", "tokens"):
            values[(label, m)] = {s: e["metrics"].get(m) for s, e in r.summary["systems"].items()}
        pvalues[(label, "ref_em")] = {b: t.get("p") for b, t in r.summary.get("tests", {}).get("ref_em", {}).items()}
    return Table(columns, _rows([r for _, r in groups]), values, pvalues, ours=ours, caption=caption, alpha=alpha)


#: Table 4 columns: (counter or derived name, header, scale, digits).
COST_COLUMNS = [("params", "params (B)", 1e-9, 3), ("storage_bytes", "storage (GB)", 1e-9, 2),
                ("input_tokens", "avg input tokens", 1.0, 0), ("output_tokens", "avg output tokens", 1.0, 0),
                ("skipped", "skipped nodes (%)", 100.0, 1), ("context", "context tokens", 1.0, 0)]


def cost_values(runs: Sequence[Run]) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Table 4 rows (``system / role``) and their values, averaged over the given runs (newest per dataset).

    ``skipped`` = mean nodes skipped / mean nodes in the token tree (generative pruner only); ``context`` =
    mean tokens of the context handed to the reader.
    """
    runs = latest(runs, lambda r: r.dataset)
    acc: dict[str, dict[str, list[float]]] = {}
    order: list[str] = []
    for r in runs:
        for s in _rows([r]):
            e = r.summary["systems"][s]
            st = e.get("stage_tokens", {})
            roles = sorted({k.split(":", 1)[1].split(".", 1)[0] for k in st if k.startswith("cost:")})
            for role in roles or ["-"]:
                row = f"{s} / {role}" if role != "-" else s
                if row not in order:
                    order.append(row)
                vals = acc.setdefault(row, {})
                for counter in ("params", "storage_bytes", "input_tokens", "output_tokens"):
                    v = st.get(f"cost:{role}.{counter}")
                    if v is not None:
                        vals.setdefault(counter, []).append(float(v))
                total, skipped = st.get(f"cost:{role}.nodes_total"), st.get(f"cost:{role}.nodes_skipped")
                if total:
                    vals.setdefault("skipped", []).append(float(skipped or 0) / float(total))
                if e["metrics"].get("tokens") is not None:
                    vals.setdefault("context", []).append(float(e["metrics"]["tokens"]))
    return order, {row: {k: sum(v) / len(v) for k, v in vals.items() if v} for row, vals in acc.items()}


def cost_table(runs: Sequence[Run], caption: str = "") -> Any:
    """Table 4 as a :class:`htmlrag.tables.Table` (no ranking, no daggers)."""
    from htmlrag.tables import Column, Table

    rows, vals = cost_values(runs)
    columns = [Column("cost", key, label=head, scale=scale, digits=digits, rank=False)
               for key, head, scale, digits in COST_COLUMNS]
    values = {("cost", key): {row: vals[row].get(key) for row in rows} for key, *_ in COST_COLUMNS}
    return Table(columns, rows, values, {}, ours=None, caption=caption)


def write_table(table: Any, out_dir: Path, stem: str = "paper") -> dict[str, Path]:
    """``<stem>.md``, ``.csv`` and ``.tex`` of ``table`` in ``out_dir`` (atomic writes)."""
    from htmlrag.results import atomic_write

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"md": out_dir / f"{stem}.md", "csv": out_dir / f"{stem}.csv", "tex": out_dir / f"{stem}.tex"}
    atomic_write(paths["md"], table.to_markdown())
    atomic_write(paths["csv"], table.to_csv())
    atomic_write(paths["tex"], table.to_latex())
    return paths


# ---------------------------------------------------------------- Figure 5
SWEEP_KEYS = ("pruner.max_words2", "pruner.max_words")


def sweep_key(runs: Sequence[Run]) -> str:
    """The granularity key that differs between ``runs`` (``pruner.max_words2``, else ``pruner.max_words``)."""
    for key in SWEEP_KEYS:
        if len({r.get(key) for r in runs}) > 1:
            return key
    raise ValueError(f"the runs do not differ in any of {SWEEP_KEYS}: nothing to plot against")


def _system_config(r: Run, system: str) -> Any:
    if system == r.summary.get("ours"):
        return {"pruner": r.get("pruner"), "ranker": r.get("ranker"), "cleaner": r.get("cleaner")}
    return r.get(f"baselines.{system}")


def figure5_points(runs: Sequence[Run], metric: str | None = None) -> dict[str, Any]:
    """Per dataset: the metric, the granularities, one curve per system whose configuration varies with the
    granularity, and one constant per reference system (configuration identical in every run: the dashed
    line). Values are x100."""
    key = sweep_key(runs)
    runs = latest(runs, lambda r: (r.dataset, r.get(key)))
    out: dict[str, Any] = {"key": key, "datasets": {}}
    for ds in sorted({r.dataset for r in runs}, key=_dataset_order):
        rs = sorted((r for r in runs if r.dataset == ds), key=lambda r: r.get(key))
        names = rs[0].summary.get("metric_names", [])
        m = metric or (PAPER_COLUMNS[ds][0][0] if ds in PAPER_COLUMNS else names[0])
        systems = _rows(rs)
        curves, refs = {}, {}
        for s in systems:
            ys = [r.summary["systems"].get(s, {}).get("metrics", {}).get(m) for r in rs]
            ys = [None if y is None else 100.0 * y for y in ys]
            configs = [json.dumps(_system_config(r, s), sort_keys=True, default=str) for r in rs]
            if len(set(configs)) == 1 and len(rs) > 1:
                good = [y for y in ys if y is not None]
                refs[s] = sum(good) / len(good) if good else None
            else:
                curves[s] = ys
        out["datasets"][ds] = {"metric": m, "x": [r.get(key) for r in rs], "curves": curves, "references": refs,
                               "runs": [str(r.dir) for r in rs]}
    return out


def plot_figure5(points: Mapping[str, Any], out: Path, title: str = "") -> Path:
    """Draw :func:`figure5_points` to a PNG: one panel per dataset, granularity on a log2 axis, one line per
    pruner, the strongest reference system as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(points["datasets"])
    if not datasets:
        raise ValueError("no runs to plot")
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        p = points["datasets"][ds]
        for name, ys in p["curves"].items():
            xs = [x for x, y in zip(p["x"], ys, strict=True) if y is not None]
            ax.plot(xs, [y for y in ys if y is not None], marker="o", label=name)
        refs = {k: v for k, v in p["references"].items() if v is not None}
        if refs:
            best = max(refs, key=refs.__getitem__)
            ax.axhline(refs[best], linestyle="--", color="grey", label=f"{best} (best baseline)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(p["x"], [str(x) for x in p["x"]])
        ax.set_xlabel(f"block granularity (words, {points['key']})")
        ax.set_ylabel(f"{p['metric']} (%)")
        ax.set_title(label_of(ds))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- artefacts
def write_artifacts(kind: str, folder: Path, caption: str = "", metric: str | None = None,
                    out: Path | None = None) -> list[Path]:
    """Write the artefact of ``kind`` for the runs below ``folder``; returns the files written."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    runs = find_runs([folder])
    if not runs:
        raise FileNotFoundError(f"no runs (metrics.json) below {folder}")
    if kind == "figure5":
        points = figure5_points(runs, metric)
        png = out or folder / "figure5.png"
        plot_figure5(points, png, caption)
        from htmlrag.results import atomic_write

        atomic_write(png.with_suffix(".json"), json.dumps(points, indent=1, default=_json_default) + "\n")
        return [png, png.with_suffix(".json")]
    build = {"table": main_table, "info_loss": info_loss_table, "cost": cost_table}[kind]
    table = build(runs, caption=caption or _caption(runs))
    paths = write_table(table, out or folder / "tables")
    log.info("%s", paths["md"].read_text(encoding="utf-8"))
    return list(paths.values())


def _caption(runs: Sequence[Run]) -> str:
    return str(runs[0].config.get("caption", "")) if runs else ""


def _json_default(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    return str(x)


try:
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover - hydra is part of the [eval] extra
    _Callback = object  # type: ignore[assignment, misc]


class PaperArtifacts(_Callback):  # type: ignore[misc, valid-type]
    """Hydra callback: after a run or a sweep, write the experiment's paper artefact for every run below
    ``<paths.results>/<name>`` (``kind``: ``table``, ``info_loss``, ``cost`` or ``figure5``).

    A failure is logged, not raised: the runs are saved, and ``htmlrag-paper`` redraws from them.
    """

    def __init__(self, kind: str = "table") -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.kind = kind

    def _write(self, config: Any) -> None:
        try:
            folder = Path(config.paths.results) / str(config.name)
            for p in write_artifacts(self.kind, folder):
                log.info("paper artefact: %s", p)
        except Exception:
            log.exception("could not write the %s artefact; redraw with htmlrag-paper", self.kind)

    def on_run_end(self, config: Any, **kwargs: Any) -> None:
        self._write(config)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        self._write(config)


# ---------------------------------------------------------------- command line
def main(argv: list[str] | None = None) -> int:
    """``htmlrag-paper {table,info-loss,cost,figure5} FOLDER...``: artefacts from saved runs only."""
    ap = argparse.ArgumentParser(prog="htmlrag-paper", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["table", "info-loss", "cost", "figure5"])
    ap.add_argument("folder", help="results/<experiment> (or any folder holding runs)")
    ap.add_argument("--out", help="output folder (tables) or PNG path (figure5)")
    ap.add_argument("--caption", default="")
    ap.add_argument("--metric", help="figure5: the metric to plot (default: the paper's first for the dataset)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        paths = write_artifacts(args.kind.replace("-", "_"), Path(args.folder), args.caption, args.metric,
                                Path(args.out) if args.out else None)
    except (FileNotFoundError, ValueError) as exc:
        log.error("%s", exc)
        return 2
    for p in paths:
        log.info("wrote %s", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
