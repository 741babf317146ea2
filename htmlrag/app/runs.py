"""The results browser's reading of ``results/`` (layout: :mod:`htmlrag.evaluation.store`); it never writes there.

A run is a folder ``results/<experiment>/<run-id>/`` holding ``config.yaml`` or ``metrics.json`` (a run without
``metrics.json`` is shown as incomplete; a run whose files cannot be read or have the wrong shape is listed and
flagged with the problem, never hiding the other runs; its rows, when malformed, give a 400 naming the file, the
line and the field). Rows are read with :meth:`htmlrag.evaluation.store.RunStore.all_rows`, which
only reads (a torn last line is skipped, never cut). Experiment-level artefacts (``figure5.png``, ``tables/``) are listed with
their experiment. A run's fidelity is read from ``metrics.json["fidelity"]`` (``{"name", "deviations"}``), else
from ``config.yaml``'s ``fidelity`` group; runs from before fidelity existed show ``unrecorded``.
"""

from __future__ import annotations

import csv
import io
import math
import time
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from htmlrag.app.files import PathRefused, resolve_under
from htmlrag.app.markdown import render
from htmlrag.core.errors import InputError
from htmlrag.evaluation.runs import is_run, open_run, special_files
from htmlrag.evaluation.tables import printed

ARTEFACT_EXTS = (".png", ".jpg", ".md", ".csv", ".tex", ".json")
MAX_CSV_ROWS = 500


def metric_html(value: Any, metric: str) -> Markup:
    """A metric value as the paper tables print it (x100 with 2 decimals; tokens as whole numbers), the full
    value on hover: ``<span title="0.8333333333333334">83.33</span>``; text as it is, nothing for no value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return escape("" if value is None else value)
    if isinstance(value, float) and math.isnan(value):
        return Markup("")
    return Markup('<span class="num" title="{}">{}</span>').format(repr(value), printed(metric, float(value)))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def csv_cells(rows: list[list[str]], raw_values: bool = True) -> list[list[dict[str, str]]]:
    """A CSV table for display: ``value`` cells of a ``metric`` column printed as the tables print that metric
    (``raw_values``: the file holds unrounded values, as ``results.csv``; provenance prints them already) and
    p-values to 3 significant digits, each with the full text as ``title``; other cells as they are."""
    head = rows[0] if rows else []
    col = {h: i for i, h in enumerate(head)}
    out = [[{"text": h, "title": ""} for h in head]]
    for row in rows[1:]:
        line = []
        for i, cell in enumerate(row):
            x = _number(cell) if cell else None
            name = head[i] if i < len(head) else ""
            if x is not None and raw_values and name == "value" and "metric" in col and len(row) > col["metric"]:
                line.append({"text": printed(row[col["metric"]], x), "title": cell})
            elif x is not None and name.startswith("p") and len(cell) > 6:
                line.append({"text": f"{x:.3g}", "title": cell})
            else:
                line.append({"text": cell, "title": ""})
        out.append(line)
    return out


def _titles(summary: dict[str, Any]) -> Any:
    """Hover text of a run table's cells: the full value from ``metrics.json`` where the cell prints it."""
    systems = summary.get("systems") or {}

    def title(row: str, header: str, cell: str) -> str | None:
        metric = header.rsplit(" ", 1)[-1]
        value = ((systems.get(row) or {}).get("metrics") or {}).get(metric)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        shown = cell.replace("**", "").replace("<u>", "").replace("</u>", "").split(" [", 1)[0].strip().rstrip("†")
        if shown != printed(metric, float(value)):
            return None
        ci = ((systems.get(row) or {}).get("intervals") or {}).get(metric)
        return repr(value) + (f" (95% interval {ci[0]!r} to {ci[1]!r})" if isinstance(ci, list) and len(ci) == 2
                              else "")
    return title


def fidelity_of(metrics: dict[str, Any] | None, config: dict[str, Any] | None) -> str:
    """``paper``, ``ours``, ``paper, except a; b`` or ``unrecorded`` (see the module docstring)."""
    rec = (metrics or {}).get("fidelity")
    if isinstance(rec, dict) and rec.get("name"):
        devs = [str(d) for d in rec.get("deviations") or []]
        return f"{rec['name']}, except {'; '.join(devs)}" if devs else str(rec["name"])
    if isinstance(rec, str) and rec:
        return rec
    cfg = (config or {}).get("fidelity")
    if isinstance(cfg, dict) and cfg.get("name"):
        return str(cfg["name"])
    if isinstance(cfg, str) and cfg:
        return cfg
    return "unrecorded"


class Results:
    """Runs under one ``results/`` folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def run_dir(self, rel: str) -> Path:
        """The folder of run ``<experiment>/<run-id>``, or raise :class:`InputError`/:class:`PathRefused`."""
        parts = str(rel).strip("/").split("/")
        if len(parts) != 2:
            raise InputError(f"{rel!r}: a run is named <experiment>/<run-id>")
        path = resolve_under(self.root, "/".join(parts))
        if not is_run(path):
            raise InputError(f"{rel!r}: not a run (no metrics.json or config.yaml)")
        special = special_files(path)
        if special:  # a FIFO would hold this request (and its thread) until someone writes to it
            raise InputError(f"{rel}: {special[0].relative_to(path).as_posix()} is not a regular file (a FIFO, "
                             f"socket, device or broken link)")
        return path

    def experiments(self) -> list[dict[str, Any]]:
        """Experiments (folders holding runs), each with its runs (newest first) and artefacts."""
        out = []
        if not self.root.is_dir():
            return out
        for exp in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
            runs = [self._listed(exp.name, r) for r in exp.iterdir() if not r.name.startswith((".", "_")) and is_run(r)]
            if not runs:
                continue
            runs.sort(key=lambda r: r["mtime"], reverse=True)
            out.append({"name": exp.name, "runs": runs, "artefacts": self.artefacts(exp.name)})
        return out

    def _listed(self, experiment: str, run_dir: Path) -> dict[str, Any]:
        """:meth:`summary` of one run for the list; a run that cannot be summarised is listed, flagged with why
        (one bad run never hides the others)."""
        rel = f"{experiment}/{run_dir.name}"
        try:
            return self.summary(rel)
        except (InputError, PathRefused, OSError) as exc:
            mtime = run_dir.stat().st_mtime
            return {"id": rel, "experiment": experiment, "run_id": run_dir.name, "mtime": mtime,
                    "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime)), "complete": False,
                    "problems": [str(exc).replace(str(self.root), "results")], "overrides": [],
                    "fidelity": "unrecorded", "dataset": "", "n_examples": None, "n_failed": None, "ours": None,
                    "metric_names": [], "systems": [], "metrics": {}}

    def artefacts(self, experiment: str) -> list[dict[str, Any]]:
        """Experiment-level files: ``figure5.png`` and the like, and ``tables/*``."""
        base = resolve_under(self.root, experiment)
        files = [p for p in base.iterdir() if p.is_file()]
        if (base / "tables").is_dir():
            files += [p for p in (base / "tables").iterdir() if p.is_file()]
        return [self._file(p) for p in sorted(files)
                if p.suffix.lower() in ARTEFACT_EXTS and not p.name.startswith(".") and self._inside(p)]

    def _inside(self, p: Path) -> bool:
        """The file's real path lies under the results folder (a symlink out of it is not listed)."""
        base = self.root.resolve()
        return base in p.resolve().parents

    def _file(self, p: Path) -> dict[str, Any]:
        rel = p.resolve().relative_to(self.root.resolve()).as_posix()
        kind = "image" if p.suffix.lower() in (".png", ".jpg") else "csv" if p.suffix.lower() == ".csv" else "text"
        return {"name": p.name, "path": rel, "url": f"/results/files/{rel}", "kind": kind, "bytes": p.stat().st_size,
                "provenance": "provenance" in p.name}

    def summary(self, rel: str) -> dict[str, Any]:
        """Experiment, run id, date, overrides, fidelity, dataset, metrics per system (no rows), and the files
        that could not be read (``problems``: the run is still listed)."""
        run = open_run(self.run_dir(rel))
        m, config = run.summary, run.config
        names = list(m.get("metric_names") or [])
        systems = m.get("system_order") or sorted((m.get("systems") or {}).keys())
        per = {s: (m.get("systems") or {}).get(s, {}).get("metrics", {}) for s in systems}
        return {
            "id": f"{run.experiment}/{run.dir.name}", "experiment": run.experiment, "run_id": run.dir.name,
            "mtime": run.mtime, "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(run.mtime)),
            "complete": run.complete, "problems": run.problems, "overrides": run.overrides,
            "fidelity": fidelity_of(m or None, config), "dataset": run.dataset,
            "n_examples": m.get("n_examples"), "n_failed": m.get("n_failed_examples"), "ours": m.get("ours"),
            "metric_names": names, "systems": systems, "metrics": per,
        }

    def detail(self, rel: str) -> dict[str, Any]:
        """:meth:`summary` plus the config text, env.json, timings, the run's tables and files."""
        d = self.run_dir(rel)
        out = self.summary(rel)
        out["config_text"] = (d / "config.yaml").read_text(encoding="utf-8") if (d / "config.yaml").is_file() else ""
        run = open_run(d)
        out["env"] = run.json("env.json") or {}
        out["timings"] = run.json("timings.json") or {}
        out["tests"] = run.summary.get("tests", {})
        files = sorted(p for p in d.rglob("*") if p.is_file() and self._inside(p)
                       and not any(x.startswith(".") for x in p.relative_to(d).parts))
        out["files"] = [self._file(p) for p in files]
        out["tables"] = [{**f, "rows": csv_rows(self.root / f["path"])} for f in out["files"]
                         if f["kind"] == "csv" and f["path"].split("/")[2:3] == ["tables"]]
        out["markdown"] = [{**f, "text": (self.root / f["path"]).read_text(encoding="utf-8", errors="replace")}
                           for f in out["files"] if f["name"].endswith(".md")]
        out["plots"] = plots(out["files"])
        shown = {p["path"] for p in out["plots"]}
        out["images"] = [f for f in out["files"] if f["kind"] == "image" and f["path"] not in shown]
        return out

    def page(self, rel: str) -> dict[str, Any]:
        """:meth:`detail` for the run page: Markdown tables rendered (escaped; :mod:`htmlrag.app.markdown`), CSV
        numbers rounded as the tables round them (the full value on hover; the JSON API keeps the raw files)."""
        out = self.detail(rel)
        titles = _titles(open_run(self.run_dir(rel)).summary)
        for t in out["markdown"]:
            t["html"] = render(t["text"], titles if t["name"] == "results.md" else None)
        for t in out["tables"]:
            t["cells"] = csv_cells(t["rows"], raw_values=not t["provenance"])
        return out

    def rows(self, rel: str) -> list[dict[str, Any]]:
        """The run's rows (merged file and shards, one per id); reading never repairs (only a run's writer does)."""
        return open_run(self.run_dir(rel)).rows()

    def questions(self, rel: str, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """One page of questions with each system's scores (no contexts)."""
        rows = self.rows(rel)
        items = [{"id": r["id"], "index": r.get("index"), "question": r.get("question", ""),
                  "answers": r.get("answers", []), "error": r.get("error"),
                  "scores": {s: v.get("scores", {}) for s, v in (r.get("systems") or {}).items()}}
                 for r in rows[offset: offset + limit]]
        return {"run": rel, "total": len(rows), "offset": offset, "limit": limit, "items": items}

    def question(self, rel: str, qid: str) -> dict[str, Any]:
        """One question: gold answers, and per system its context (when the run saved it), answer and scores."""
        row = next((r for r in self.rows(rel) if str(r["id"]) == qid), None)
        if row is None:
            raise InputError(f"{rel}: no question {qid!r}")
        systems = _systems(row)
        order = [s for s in self.summary(rel)["systems"] if s in systems] + [s for s in systems
                                                                           if s not in self.summary(rel)["systems"]]
        return {"run": rel, "id": row["id"], "question": row.get("question", ""), "answers": row.get("answers", []),
                "error": row.get("error"), "systems": {s: systems[s] for s in order}}

    def diff(self, a: str, b: str, metric: str | None = None) -> dict[str, Any]:
        """Question by question: which (system, question) pairs changed score on ``metric`` from run a to b."""
        sa, sb = self.summary(a), self.summary(b)
        names = [n for n in sa["metric_names"] if n in sb["metric_names"]] or sorted(
            set(_all_metrics(self.rows(a))) & set(_all_metrics(self.rows(b))))
        if metric is None:
            metric = names[0] if names else None
        if metric is None:
            raise InputError(f"{a} and {b} share no metric")
        if metric not in names:
            raise InputError(f"metric {metric!r} is not in both runs; choose one of {', '.join(names)}")
        ra, rb = {r["id"]: r for r in self.rows(a)}, {r["id"]: r for r in self.rows(b)}
        systems = [s for s in sa["systems"] if s in sb["systems"]]
        flips, counts = [], {s: {"gained": 0, "lost": 0, "same": 0, "missing": 0} for s in systems}
        for qid in [i for i in ra if i in rb]:
            changed = {}
            for s in systems:
                va, vb = _score(ra[qid], s, metric), _score(rb[qid], s, metric)
                if va is None or vb is None:
                    counts[s]["missing"] += 1
                elif abs(va - vb) <= 1e-9:
                    counts[s]["same"] += 1
                else:
                    counts[s]["gained" if vb > va else "lost"] += 1
                    changed[s] = {"a": va, "b": vb}
            if changed:
                flips.append({"id": qid, "question": ra[qid].get("question", ""), "changed": changed})
        return {"a": sa, "b": sb, "metric": metric, "metrics": names, "systems": systems, "counts": counts,
                "flips": flips, "only_a": [i for i in ra if i not in rb], "only_b": [i for i in rb if i not in ra],
                "shared": sum(1 for i in ra if i in rb)}

    def diff_question(self, a: str, b: str, qid: str, metric: str | None = None) -> dict[str, Any]:
        """One question in two runs, side by side: per system (in run A's order, then B's new ones) its record
        in each run, and whether its ``metric`` score changed."""
        qa, qb = self.question(a, qid), self.question(b, qid)
        order = [*self.summary(a)["systems"], *self.summary(b)["systems"]]
        names = [s for s in dict.fromkeys(order) if s in qa["systems"] or s in qb["systems"]]
        names += [s for s in {**qa["systems"], **qb["systems"]} if s not in names]
        rows = []
        for s in names:
            ra, rb = qa["systems"].get(s), qb["systems"].get(s)
            va = (ra or {}).get("scores", {}).get(metric) if metric else None
            vb = (rb or {}).get("scores", {}).get(metric) if metric else None
            rows.append({"system": s, "a": ra, "b": rb,
                         "changed": va is not None and vb is not None and abs(float(va) - float(vb)) > 1e-9})
        return {"a": qa, "b": qb, "id": qid, "question": qa["question"], "answers": qa["answers"], "metric": metric,
                "systems": rows}


def _systems(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for s, v in (row.get("systems") or {}).items():
        out[s] = {"scores": v.get("scores", {}), "response": v.get("response", ""), "tokens": v.get("tokens"),
                  "context": v.get("context"), "error": v.get("error"), "stage_tokens": v.get("stage_tokens", {}),
                  "seconds": v.get("seconds")}
    return out


def _score(row: dict[str, Any], system: str, metric: str) -> float | None:
    v = ((row.get("systems") or {}).get(system) or {}).get("scores", {}).get(metric)
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _all_metrics(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({m for r in rows for s in (r.get("systems") or {}).values() for m in (s.get("scores") or {})})


#: The run page shows these plots first, in this order (budget frontiers, stage-loss waterfall, quality vs cost).
PLOT_ORDER = ("frontier", "waterfall", "pareto")


def plots(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's ``plots/*.png`` (written by :mod:`htmlrag.evaluation.report`): frontiers, the waterfall and the
    Pareto plot first, then any other, each with a title."""
    found = [f for f in files if f["kind"] == "image" and f["path"].split("/")[2:3] == ["plots"]]

    def rank(f: dict[str, Any]) -> tuple[int, str]:
        stem = f["name"].rsplit(".", 1)[0]
        return next((i for i, p in enumerate(PLOT_ORDER) if stem.startswith(p)), len(PLOT_ORDER)), f["name"]

    titles = {"frontier": "Budget frontier", "waterfall": "Stage-loss waterfall", "pareto": "Quality vs cost"}
    return [{**f, "title": next((t for k, t in titles.items() if f["name"].startswith(k)), f["name"])
             + (f" ({f['name'].rsplit('.', 1)[0].split('_', 1)[1]})" if f["name"].startswith("frontier_") else "")}
            for f in sorted(found, key=rank)]


def csv_rows(path: Path, limit: int = MAX_CSV_ROWS) -> list[list[str]]:
    """The first ``limit`` rows of a CSV file (header first)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    out = []
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        if i >= limit:
            break
        out.append(row)
    return out


__all__ = ["PathRefused", "Results", "csv_rows", "fidelity_of", "plots"]
