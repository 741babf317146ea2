"""Paper artefacts from saved runs: HtmlRAG's tables in the paper's layout, the cost table, Figure 5.

Everything here reads only ``results/`` (each run's ``metrics.json`` and ``config.yaml``), so a table or the
figure can be redrawn at any time without rerunning anything::

    htmlrag-paper table   results/paper_table1_main          # Tables 1, 2, 3, 6, 7: paper layout
    htmlrag-paper info-loss results/paper_table5_info_loss   # Table 5: reference-text EM and tokens
    htmlrag-paper cost    results/paper_table4_cost          # Table 4: parameters, storage, tokens, skipped nodes
    htmlrag-paper figure5 results/paper_figure5_granularity  # Figure 5: metric vs block granularity (PNG)
    htmlrag-paper verify  results/                           # re-score every run, check metrics.json and tables/
    htmlrag-paper report RUN_A RUN_B --out results/report    # frontiers, waterfalls, costs across runs

The paper-experiment configs (``conf/experiment/paper/``) also attach :class:`PaperArtifacts` as a Hydra
callback, which writes the same files when a run or a sweep ends.

Run selection (:mod:`htmlrag.evaluation.runs`): every ``metrics.json`` below the given folders is read (``_hydra`` log
folders skipped). Runs with identical settings are one run written by different code: the one written last
fills the cells. Runs with different settings never share a cell: one row group per reader model (the paper
prints Llama-3.1-8B and -70B as row groups of Table 1), one column group per dataset, and runs of one dataset
whose other settings differ get a column group each, labelled by those settings. Each table is written with
``<stem>.provenance.csv``: the run behind every cell, relative to the results root (``quickstart/093ac65d4f21``).

Layout of the main tables (paper Tables 1-3, 6, 7): one row per system (the system under test last), one
column group per dataset in the paper's order (ASQA, HotpotQA, NQ, TriviaQA, MuSiQue, ELI5, then others),
with the paper's printed columns for that dataset, filled as the authors' notebook fills them: the column
printed "EM" holds our ``hit1`` and the column printed "Hit@1" our ``em`` (:data:`COLUMN_WORDS` says it in
words under every table). Best **bold**, second underlined per column and row group; † as the paper: on the
system under test where its paired t-test against every other system of the row group shows it better with
p < alpha (:mod:`htmlrag.evaluation.tables`). The caption ends with the runs' fidelity.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.options import run_writing
from htmlrag.evaluation.report import write_run_report, write_runs_report
from htmlrag.evaluation.runs import (
    Run,
    deciding,
    differing,
    find_runs,
    is_run,
    label_apart,
    place,
    reader_label,
    select,
    settings_label,
)
from htmlrag.evaluation.scoring.metrics import get_metric
from htmlrag.evaluation.shapes import system_order
from htmlrag.evaluation.store import atomic_write
from htmlrag.evaluation.summary import errors_caption, fidelity_caption
from htmlrag.evaluation.tables import Column, Table, recorded_confidence, recorded_correction
from htmlrag_bench.eval.verify import main as verify_main

log = logging.getLogger("htmlrag-paper")

#: Paper column order and labels of the HtmlRAG test sets.
DATASETS: dict[str, str] = {"asqa": "ASQA", "hotpot_qa": "HotpotQA", "nq": "NQ", "trivia_qa": "Trivia-QA",
                            "musique": "MuSiQue", "eli5": "ELI5"}
#: Labels of the other datasets (column groups of their own, after the paper's).
OTHER_LABELS: dict[str, str] = {"wtq_html_qa": "WTQ-HTML"}
#: The paper's columns per dataset: (our metric, paper header).
#: The paper's printed columns per dataset, in the order of the authors' notebook's header
#: (``EM & Hit@1 & EM & EM & Hit@1 & EM & Hit@1 & EM & ROUGE-L & BLEU``): (our metric, printed header). The
#: notebook fills "EM" with its ``hit1`` and "Hit@1" with its ``exact_match`` (our ``em``).
PAPER_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "asqa": [("hit1", "EM"), ("em", "Hit@1")],
    "hotpot_qa": [("hit1", "EM")],
    "nq": [("hit1", "EM"), ("em", "Hit@1")],
    "trivia_qa": [("hit1", "EM"), ("em", "Hit@1")],
    "musique": [("hit1", "EM")],
    "eli5": [("rouge_l", "ROUGE-L"), ("bleu", "BLEU")],
}
#: What the printed headers hold, in words (a note under every main table).
COLUMN_WORDS = ("Columns are the paper's printed headers, filled as the authors' evaluation notebook fills them: "
                "\"EM\" = our hit1, 1 when at least one gold short answer (SQuAD-normalised) is contained in the "
                "response; \"Hit@1\" = our em, the fraction of gold short answers contained in the response "
                "(the paper's caption defines Hit@1 as the first of these; its notebook prints them this way). "
                "ELI5: ROUGE-L against the best-matching gold answer (mean over questions) and corpus BLEU over "
                "all questions with all gold answers as references (the t-test behind † uses sentence BLEU). "
                "Scores x100.")
#: Metrics scored per dataset in the paper experiments (``${paper_metrics:${dataset.name}}``).
PAPER_METRICS: dict[str, list[str]] = {
    "asqa": ["em", "hit1", "str_em", "rouge_l", "ref_em"],
    "eli5": ["rouge_l", "bleu"],
}
SHORT_METRICS = ["em", "hit1", "exact_match", "f1", "ref_em"]
KINDS = ("table", "info_loss", "cost", "figure5")


def paper_metrics(dataset: str) -> list[str]:
    """Metric names for ``dataset`` in the paper experiments (ASQA and ELI5 have their own; else short QA)."""
    names = PAPER_METRICS.get(str(dataset), SHORT_METRICS)
    for n in names:
        get_metric(n)  # an unknown name raises here, at composition
    return list(names)


#: Datasets whose coarse (step-1) budget is 3/2 of the final one in the authors' evaluation (the fine step
#: keeps 2/3); every other dataset's is twice the final one (the fine step keeps 1/2).
TWO_THIRDS = ("asqa", "nq", "eli5")


def coarse_budget(dataset: str, budget: int) -> int:
    """The step-1 budget for a final ``budget`` on ``dataset``, as the authors' code chooses it
    (``html4rag/tree_rerank_tree_gen.py``, ``fine_trim_ratio="custom"``): 3/2 x budget for ASQA, NQ and ELI5
    (4K -> 6K), 2 x budget for the others (4K -> 8K); 2K -> 3K / 4K, 8K -> 12K / 16K. (The paper's text calls
    the coarse context "8K" throughout.)"""
    budget = int(budget)
    return budget * 3 // 2 if str(dataset) in TWO_THIRDS else budget * 2


def register_resolvers() -> None:
    """Register the ``paper_metrics`` and ``coarse_budget`` resolvers (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("paper_metrics"):
        OmegaConf.register_new_resolver("paper_metrics", paper_metrics)
    if not OmegaConf.has_resolver("coarse_budget"):
        OmegaConf.register_new_resolver("coarse_budget", coarse_budget)


# ---------------------------------------------------------------- runs
def label_of(dataset: str) -> str:
    """The column-group label of a dataset (the paper's spelling, else the config name)."""
    return DATASETS.get(dataset) or OTHER_LABELS.get(dataset, dataset)


def _dataset_order(ds: str) -> tuple[int, str]:
    order = list(DATASETS)
    return (order.index(ds), ds) if ds in order else (len(order), ds)


def _not_reader(key: str) -> bool:
    return key.startswith("reader.")


def arrange(runs: Sequence[Run]) -> list[tuple[str, str, Run]]:
    """``(column group, row group, run)`` for the runs that fill a table (:func:`htmlrag.evaluation.runs.select`): row
    group = the reader model, column group = the dataset plus the non-reader settings that differ among
    its runs; paper dataset order, then row groups in order of appearance."""
    runs = select(runs)
    cols = label_apart(runs, lambda r: label_of(r.dataset), exclude=_not_reader)
    at = place(runs, lambda r: cols[r], reader_label)
    runs = sorted(runs, key=lambda r: (_dataset_order(r.dataset), cols[r]))
    return [(at[r][0], at[r][1], r) for r in runs]


# ---------------------------------------------------------------- tables
def _order(systems: Sequence[str], ours: str | None) -> list[str]:
    """Systems in order, the system under test last (as in the paper)."""
    return [s for s in systems if s != ours] + ([ours] if ours in systems else [])


def _grid(runs: Sequence[Run], pick: Any, caption: str = "", notes: Sequence[str] = ()) -> Any:
    """A :class:`htmlrag.evaluation.tables.Table` over :func:`arrange`'s placement of ``runs``; ``pick(run)`` gives the
    columns of a run: ``[(metric, header, Column keyword arguments)]``."""
    placed = arrange(runs)
    columns: list[Column] = []
    values: dict = {}
    tests: dict = {}
    prov: dict = {}
    intervals: dict = {}
    by_group: dict[str, list[str]] = {}
    ours, alpha = None, 0.05
    for label, group, r in placed:
        ours = ours or r.summary.get("ours")
        alpha = float(r.summary.get("alpha", alpha))
        systems = system_order(r.summary)
        names = by_group.setdefault(group, [])
        names += [x for x in systems if x not in names]
        for m, head, kw in pick(r):
            key = (label, m)
            if key not in values:
                columns.append(Column(label, m, label=head, **kw))
            cell = values.setdefault(key, {})
            for x, e in r.summary["systems"].items():
                cell[(group, x)] = e.get("metrics", {}).get(m)
                prov.setdefault(key, {})[(group, x)] = [r.name]
                if (e.get("intervals") or {}).get(m):
                    intervals.setdefault(key, {})[(group, x)] = tuple(e["intervals"][m])
            tests.setdefault(key, {}).update({(group, b): t for b, t in r.summary.get("tests", {}).get(m, {}).items()})
    rows = [(g, x) for g, names in by_group.items() for x in _order(names, ours)]
    fid = fidelity_caption([r.summary for *_, r in placed], [f"{lb} [{g}]" for lb, g, _ in placed])
    errors = errors_caption([r.summary for *_, r in placed], [f"{lb} [{g}]" for lb, g, _ in placed])
    correction, power = recorded_correction([r.summary for *_, r in placed])
    return Table(columns, rows, values, tests, ours=ours, caption=" ".join(x for x in (caption, fid, errors) if x),
                 alpha=alpha, notes=list(notes), provenance=prov, intervals=intervals, correction=correction,
                 power=power, confidence=recorded_confidence([r.summary for *_, r in placed]),
                 legacy=not any(r.summary.get("intervals") for *_, r in placed))


def main_table(runs: Sequence[Run], caption: str = "", metrics: Sequence[str] | None = None) -> Any:
    """The paper-layout table (Tables 1-3, 6, 7) of ``runs`` (see the module docstring)."""
    def pick(r: Run) -> list[tuple[str, str, dict]]:
        names = r.summary.get("metric_names", [])
        if metrics:
            cols = [(m, m) for m in metrics if m in names]
        elif r.dataset in PAPER_COLUMNS:
            cols = [(m, f"{head} [{m}]") for m, head in PAPER_COLUMNS[r.dataset] if m in names]
        else:
            cols = [(m, m) for m in names]
        return [(m, head, {"higher_is_better": get_metric(m).higher_is_better}) for m, head in cols]

    return _grid(runs, pick, caption, notes=[COLUMN_WORDS])


def info_loss_table(runs: Sequence[Run], caption: str = "") -> Any:
    """Table 5: reference-text EM (x100) and mean context tokens per system and column group."""
    def pick(r: Run) -> list[tuple[str, str, dict]]:
        return [("ref_em", "ref. EM", {}), ("tokens", "tokens", {"scale": 1.0, "digits": 0, "rank": False})]

    return _grid(runs, pick, caption, notes=["ref. EM: 1 when a gold answer (SQuAD-normalised) is contained in the "
                                             "context's text; tokens: mean context tokens."])


#: Table 4 columns: (counter or derived name, header, scale, digits).
COST_COLUMNS = [("params", "params (B)", 1e-9, 3), ("storage_bytes", "storage (GB)", 1e-9, 2),
                ("input_tokens", "avg input tokens", 1.0, 0), ("output_tokens", "avg output tokens", 1.0, 0),
                ("skipped", "skipped nodes (%)", 100.0, 1), ("context", "context tokens", 1.0, 0)]
LLM_CHAT = "LLM Chat"


def cost_values(run: Run) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Table 4 rows (``system / role``, then ``LLM Chat``) and their values in one run.

    ``skipped`` = mean nodes skipped / mean nodes in the token tree (generative pruner only); ``context`` =
    mean tokens of the context handed to the reader. ``LLM Chat`` is the reader reading the system under
    test's context: its parameters and storage as loaded (``metrics.json["reader"]``), mean prompt tokens
    and mean answer tokens.
    """
    order: list[str] = []
    vals: dict[str, dict[str, float]] = {}
    ours = r_ours = run.summary.get("ours")
    for s in _order(system_order(run.summary), ours):
        e = run.summary["systems"][s]
        st = e.get("stage_tokens", {})
        roles = sorted({k.split(":", 1)[1].split(".", 1)[0] for k in st if k.startswith("cost:")})
        for role in roles or ["-"]:
            row = f"{s} / {role}" if role != "-" else s
            order.append(row)
            v = vals.setdefault(row, {})
            for counter in ("params", "storage_bytes", "input_tokens", "output_tokens"):
                if st.get(f"cost:{role}.{counter}") is not None:
                    v[counter] = float(st[f"cost:{role}.{counter}"])
            total, skipped = st.get(f"cost:{role}.nodes_total"), st.get(f"cost:{role}.nodes_skipped")
            if total:
                v["skipped"] = float(skipped or 0) / float(total)
            if e["metrics"].get("tokens") is not None:
                v["context"] = float(e["metrics"]["tokens"])
    reader = run.summary.get("reader") or {}
    rt = (run.summary["systems"].get(r_ours) or {}).get("reader_tokens") or {}
    chat = {k: float(reader[k]) for k in ("params", "storage_bytes") if reader.get(k) is not None}
    chat |= {f"{k}_tokens": float(rt[k]) for k in ("input", "output") if rt.get(k) is not None}
    if chat and reader.get("model") != "none":
        order.append(LLM_CHAT)
        vals[LLM_CHAT] = chat
    return order, vals


def cost_table(runs: Sequence[Run], caption: str = "") -> Any:
    """Table 4 as a :class:`htmlrag.evaluation.tables.Table`: one column group per run (no ranking, no daggers)."""
    placed = arrange(runs)
    columns, values, prov, rows = [], {}, {}, []
    for label, group, r in placed:
        lb = f"{label} [{group}]" if len(placed) > 1 else "cost"
        order, vals = cost_values(r)
        rows += [x for x in order if x not in rows]
        for key, head, scale, digits in COST_COLUMNS:
            columns.append(Column(lb, key, label=head, scale=scale, digits=digits, rank=False))
            values[(lb, key)] = {x: vals[x].get(key) for x in order}
            prov[(lb, key)] = {x: [r.name] for x in order}
    fid = fidelity_caption([r.summary for *_, r in placed])
    errors = errors_caption([r.summary for *_, r in placed], [f"{lb} [{g}]" for lb, g, _ in placed])
    notes = [f"Run: {r.name} ({label}, reader {group})." for label, group, r in placed]
    return Table(columns, rows, values, {}, ours=None, caption=" ".join(x for x in (caption, fid, errors) if x),
                 notes=notes, provenance=prov)


def write_table(table: Any, out_dir: Path, stem: str = "paper") -> dict[str, Path]:
    """``<stem>.md``, ``.csv``, ``.tex`` and ``<stem>.provenance.csv`` of ``table`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"md": out_dir / f"{stem}.md", "csv": out_dir / f"{stem}.csv", "tex": out_dir / f"{stem}.tex",
             "provenance": out_dir / f"{stem}.provenance.csv"}
    atomic_write(paths["md"], table.to_markdown())
    atomic_write(paths["csv"], table.to_csv())
    atomic_write(paths["tex"], table.to_latex())
    atomic_write(paths["provenance"], table.provenance_csv())
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
    runs = select(runs)
    unswept = [r.name for r in runs if r.get(key) is None]
    if unswept:  # (a run without config.yaml, or one that does not set the swept value: no place on the x axis)
        raise InputError(f"figure 5 sweeps {key}, which {', '.join(unswept[:5])} does not record (config.yaml)")
    panels = _panels(runs, key)
    out: dict[str, Any] = {"key": key, "datasets": {}}
    for panel in sorted(set(panels.values()), key=lambda p: (_dataset_order(p[0]), p[1])):
        ds = panel[0]
        rs = sorted((r for r in runs if panels[r] == panel), key=lambda r: r.get(key))
        names = rs[0].summary.get("metric_names", [])
        m = metric or (PAPER_COLUMNS[ds][0][0] if ds in PAPER_COLUMNS else names[0])
        systems = _order(list(dict.fromkeys(x for r in rs for x in system_order(r.summary))),
                         rs[0].summary.get("ours"))
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
        name = f"{ds} ({panel[1]})" if panel[1] else ds
        out["datasets"][name] = {"metric": m, "x": [r.get(key) for r in rs], "curves": curves, "references": refs,
                                 "runs": [r.name for r in rs]}
    return out


def _panels(runs: Sequence[Run], key: str) -> dict[Run, tuple[str, str]]:
    """``(dataset, settings label)`` of each run's Figure 5 panel: runs of a dataset share a panel unless they
    differ in a setting that is not a function of the granularity ``key`` (such settings, e.g. a baseline's
    block size interpolated from it, follow the sweep)."""
    out: dict[Run, tuple[str, str]] = {}
    for ds in {r.dataset for r in runs}:
        rs = [r for r in runs if r.dataset == ds]
        follows = set()
        for k in differing(rs):
            by_x: dict[str, set] = {}
            for r in rs:
                by_x.setdefault(json.dumps(r.get(key)), set()).add(r.settings().get(k))
            if all(len(v) == 1 for v in by_x.values()):
                follows.add(k)
        keys = deciding(rs, [k for k in differing(rs) if k not in follows])
        for r in rs:
            out[r] = (ds, settings_label(r, keys))
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
        ax.set_title(label_of(ds) if ds in DATASETS or ds in OTHER_LABELS else ds)
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
    """Write the artefact of ``kind`` for the runs below ``folder``; returns the files written. A run folder
    without ``out`` is refused, as ``htmlrag-bench-table`` refuses it: its ``tables/`` are the run's own, which
    ``htmlrag-paper verify`` checks, and a paper table written there was a file verify could not account for."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if out is None and is_run(folder):
        raise ValueError(f"{folder} is a run folder: its tables/ are the run's own; give --out (or name the "
                         "experiment folder above it)")
    runs = [r.check() for r in find_runs([folder])]
    if not runs:
        raise FileNotFoundError(f"no runs (metrics.json) below {folder}")
    if kind == "figure5":
        points = figure5_points(runs, metric)
        points["fidelity"] = fidelity_caption([r.summary for r in select(runs)])
        png = out or folder / "figure5.png"
        plot_figure5(points, png, " ".join(x for x in (caption or _caption(runs), points["fidelity"]) if x))

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
def report(folders: Sequence[str], out: Path | None, metric: str | None, ours: str | None) -> list[Path]:
    """``htmlrag-paper report``: :func:`htmlrag.evaluation.report.write_runs_report` over the runs below
    ``folders`` (one run: its own report, rewritten in place)."""
    runs = select([r.check() for r in find_runs(folders)])
    if not runs:
        raise FileNotFoundError(f"no runs (metrics.json) below {' '.join(folders)}")
    if len(runs) == 1 and out is None:
        return write_run_report(runs[0].dir, runs[0].summary, runs[0].rows())
    return write_runs_report(runs, out or Path(folders[0]) / "report", [metric] if metric else None, ours)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: :func:`_main`, an output that cannot be written reported in one line
    (:func:`htmlrag.core.options.run_writing`)."""
    return run_writing("htmlrag-paper", lambda: _main(argv))


def _main(argv: list[str] | None = None) -> int:
    """``htmlrag-paper {table,info-loss,cost,figure5,report} FOLDER...``: artefacts from saved runs only;
    ``htmlrag-paper verify RUN_DIR...``: check saved runs (:mod:`htmlrag_bench.eval.verify`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "verify":
        return verify_main(argv[1:])
    ap = argparse.ArgumentParser(prog="htmlrag-paper", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["table", "info-loss", "cost", "figure5", "report", "verify"],
                    help="verify: htmlrag-paper verify RUN_DIR [RUN_DIR ...] (see htmlrag-paper verify --help)")
    ap.add_argument("folder", nargs="+", help="results/<experiment> (or any folder holding runs); report: several")
    ap.add_argument("--out", help="output folder (tables) or PNG path (figure5)")
    ap.add_argument("--caption", default="")
    ap.add_argument("--metric", help="figure5/report: the metric to plot (default: the paper's first / every metric)")
    ap.add_argument("--ours", help="report: the run label every other run is tested against (default: the last run)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.kind == "report":
        try:
            paths = report(args.folder, Path(args.out) if args.out else None, args.metric, args.ours)
        except (FileNotFoundError, ValueError) as exc:
            log.error("%s", exc)
            return 2
        for p in paths:
            log.info("wrote %s", p)
        return 0
    if len(args.folder) != 1:
        ap.error(f"{args.kind} takes one folder")
    args.folder = args.folder[0]
    try:
        paths = write_artifacts(args.kind.replace("-", "_"), Path(args.folder), args.caption, args.metric,
                                Path(args.out) if args.out else None)
    except (FileNotFoundError, ValueError, HtmlRagError) as exc:  # the message names the run and the problem
        log.error("htmlrag-paper: error: %s", exc)
        return 2
    for p in paths:
        log.info("wrote %s", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
