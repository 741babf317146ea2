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
import logging
import math
import os
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from htmlrag.app.files import BOMS, PathRefused, served
from htmlrag.app.markdown import render
from htmlrag.app.secrets import body_text
from htmlrag.core.errors import InputError
from htmlrag.evaluation.runs import is_run, open_run, special_files, walk
from htmlrag.evaluation.shapes import system_order
from htmlrag.evaluation.tables import printed

log = logging.getLogger(__name__)

ARTEFACT_EXTS = (".png", ".jpg", ".md", ".csv", ".tex", ".json")
MAX_CSV_ROWS = 500
#: At most this much of a CSV or Markdown file is read for the run page (the file itself is served whole).
MAX_SHOWN_BYTES = 1_000_000


def file_url(rel: str) -> str:
    """The link of a file under the results folder: every character of every name quoted once (``%`` as
    ``%25``, ``#``, ``?``, spaces, non-ASCII), as the route decodes it once; ``/`` separates folders."""
    return "/results/files/" + urllib.parse.quote(rel, safe="/")


def run_url(run_id: str) -> str:
    """The link of a run's page (``<experiment>/<run-id>``: neither name holds ``/``)."""
    return "/results/run/" + urllib.parse.quote(run_id, safe="/")


def question_url(run_id: str, qid: Any) -> str:
    """The link of one question of a run: the id quoted whole (``/``, ``%``, ``#``, ``?`` included), as the last
    part of the path; an id a path cannot carry (empty, ``.``, ``..``: clients resolve dot segments) goes in
    the query (``q?id=``)."""
    qid = str(qid)
    if qid in ("", ".", ".."):
        return f"{run_url(run_id)}/q?id={urllib.parse.quote(qid, safe='')}"
    return f"{run_url(run_id)}/q/{urllib.parse.quote(qid, safe='')}"


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


def _mapping(node: Any, *keys: str) -> Mapping[str, Any]:
    """``node[k1][k2]...`` when every step is a mapping, else ``{}``: a run's files may hold any shape, and a
    field of the wrong shape is not shown rather than failing the page."""
    for k in keys:
        node = node.get(k) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _titles(summary: Mapping[str, Any]) -> Any:
    """Hover text of a run table's cells: the full value from ``metrics.json`` where the cell prints it."""
    systems = _mapping(summary, "systems")

    def title(row: str, header: str, cell: str) -> str | None:
        metric = header.rsplit(" ", 1)[-1]
        value = _mapping(systems, row, "metrics").get(metric)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        shown = cell.replace("**", "").replace("<u>", "").replace("</u>", "").split(" [", 1)[0].strip().rstrip("†")
        if shown != printed(metric, float(value)):
            return None
        ci = _mapping(systems, row, "intervals").get(metric)
        return repr(value) + (f" (95% interval {ci[0]!r} to {ci[1]!r})" if isinstance(ci, list) and len(ci) == 2
                              else "")
    return title


def _name(x: Any) -> str:
    """A name read from a run file: text and numbers as they are, anything else (a list, an object) ``""``."""
    return "" if x is None or isinstance(x, Mapping | list | bool) else str(x)


def fidelity_of(metrics: Mapping[str, Any] | None, config: Mapping[str, Any] | None) -> str:
    """``paper``, ``ours``, ``paper, except a; b`` or ``unrecorded`` (see the module docstring). A record of
    another shape counts as none; deviations that are not a list are shown as one deviation."""
    rec = (metrics or {}).get("fidelity")
    if isinstance(rec, Mapping) and _name(rec.get("name")):
        devs = rec.get("deviations")
        devs = [str(d) for d in devs] if isinstance(devs, list) else [str(devs)] if devs not in (None, "") else []
        return f"{_name(rec['name'])}, except {'; '.join(devs)}" if devs else _name(rec["name"])
    if _name(rec):
        return _name(rec)
    cfg = (config or {}).get("fidelity")
    name = _name(cfg.get("name")) if isinstance(cfg, Mapping) else _name(cfg)
    return name or "unrecorded"


class Results:
    """Runs under one ``results/`` folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def run_dir(self, rel: str) -> Path:
        """The folder of run ``<experiment>/<run-id>``, or raise :class:`InputError`/:class:`PathRefused`.

        Both names are matched literally against the folders under the results folder (what the list shows,
        whatever characters they hold: ``~tmp``, ``a%41b``, ``x\\y``), never decoded or joined as a path;
        hidden folders and links out of the results folder are refused."""
        parts = str(rel).strip("/").split("/")
        if len(parts) != 2:
            raise InputError(f"{rel!r}: a run is named <experiment>/<run-id>")
        path = self._child(self._child(self.root, parts[0], rel), parts[1], rel)
        if not is_run(path):
            raise InputError(f"{rel!r}: not a run (no metrics.json or config.yaml)")
        special = special_files(path)
        if special:  # a FIFO would hold this request (and its thread) until someone writes to it
            raise InputError(f"{rel}: {special[0].relative_to(path).as_posix()} is not a regular file (a FIFO, "
                             f"socket, device or broken link)")
        return path

    def _child(self, folder: Path, name: str, rel: str) -> Path:
        """The folder ``name`` directly under ``folder`` (matched literally), or raise :class:`PathRefused`."""
        if name in ("", ".", "..") or name.startswith(".") or "\x00" in name:
            raise PathRefused(f"{rel!r}: not a run folder")
        try:
            names = {e.name for e in os.scandir(folder) if e.is_dir()}
        except OSError:
            names = set()
        if name not in names or not self._inside(folder / name):
            raise PathRefused(f"{rel!r}: no such run")
        return Path(os.path.realpath(folder / name))

    def experiments(self) -> list[dict[str, Any]]:
        """Experiments (folders holding runs), each with its runs (newest first) and artefacts. Nothing one
        folder holds -- an odd name, a file of any shape -- hides another: such a run is listed flagged."""
        out: list[dict[str, Any]] = []
        if not self.root.is_dir():
            return out
        for exp in sorted(p for p in self.root.iterdir() if _is_dir(p) and not p.name.startswith(("_", "."))):
            try:
                found = [r for r in exp.iterdir() if not r.name.startswith((".", "_")) and is_run(r)]
            except OSError:
                continue
            runs = [self._listed(exp.name, r) for r in found]
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
        except (InputError, OSError, ValueError) as exc:
            problem = str(exc).replace(str(self.root.resolve()), "results").replace(str(self.root), "results")
        except Exception as exc:  # a shape no check foresaw: still only this run is flagged
            log.warning("results: run %s cannot be summarised", rel, exc_info=True)
            problem = f"cannot be read ({type(exc).__name__})"
        try:
            mtime = run_dir.stat().st_mtime
        except OSError:
            mtime = 0.0
        return {"id": rel, "experiment": experiment, "run_id": run_dir.name, "mtime": mtime,
                "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime)), "complete": False,
                "problems": [problem], "overrides": [],
                "fidelity": "unrecorded", "dataset": "", "n_examples": None, "n_failed": None, "ours": None,
                "metric_names": [], "systems": [], "metrics": {}}

    def artefacts(self, experiment: str) -> list[dict[str, Any]]:
        """Experiment-level files: ``figure5.png`` and the like, and ``tables/*`` (``[]`` when the experiment
        folder cannot be listed)."""
        try:
            base = self._child(self.root, experiment, experiment)
            files = [p for p in base.iterdir() if p.is_file()]
            if (base / "tables").is_dir():
                files += [p for p in (base / "tables").iterdir() if p.is_file()]
            return [self._file(p) for p in sorted(files)
                    if p.suffix.lower() in ARTEFACT_EXTS and not p.name.startswith(".") and self._inside(p)]
        except (OSError, PathRefused):
            return []

    def _inside(self, p: Path) -> bool:
        """The file's real path lies under the results folder (a symlink out of it is not listed)."""
        base = self.root.resolve()
        return base in Path(os.path.realpath(p)).parents

    def _file(self, p: Path) -> dict[str, Any]:
        """A file for the pages: ``url`` is its link (:func:`file_url`), None for a file the results browser
        does not serve (its type, or a name it refuses: :func:`htmlrag.app.files.served`)."""
        rel = p.resolve().relative_to(self.root.resolve()).as_posix()
        kind = "image" if p.suffix.lower() in (".png", ".jpg") else "csv" if p.suffix.lower() == ".csv" else "text"
        return {"name": p.name, "path": rel, "url": file_url(rel) if served(rel) else None, "kind": kind,
                "bytes": p.stat().st_size, "provenance": "provenance" in p.name}

    def summary(self, rel: str) -> dict[str, Any]:
        """Experiment, run id, date, overrides, fidelity, dataset, metrics per system (no rows), and the files
        that could not be read (``problems``: the run is still listed)."""
        run = open_run(self.run_dir(rel))
        m, config = run.summary, run.config
        names = [str(n) for n in m.get("metric_names") or []]
        systems = system_order(m) if isinstance(m, Mapping) else []  # the order of the run's tables
        per = {s: dict(_mapping(m, "systems", s, "metrics")) for s in systems}
        return {
            "id": f"{run.experiment}/{run.dir.name}", "experiment": run.experiment, "run_id": run.dir.name,
            "mtime": run.mtime, "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(run.mtime)),
            "complete": run.complete, "problems": run.problems, "overrides": run.overrides,
            "fidelity": fidelity_of(m or None, config), "dataset": _name(run.dataset),
            "n_examples": m.get("n_examples"), "n_failed": m.get("n_failed_examples"), "ours": m.get("ours"),
            "metric_names": names, "systems": systems, "metrics": per,
        }

    def detail(self, rel: str) -> dict[str, Any]:
        """:meth:`summary` plus the config text, env.json, timings, the run's tables and files."""
        d = self.run_dir(rel)
        out = self.summary(rel)
        out["problems"] = list(out["problems"])
        out["config_text"] = _text(d / "config.yaml") if (d / "config.yaml").is_file() else ""
        run = open_run(d)
        for key, name in (("env", "env.json"), ("timings", "timings.json")):
            value = run.json(name)
            if value is not None and not isinstance(value, dict):  # not shown; the run page says why
                out["problems"].append(f"{name}: must be a JSON object, got {type(value).__name__}")
            out[key] = value if isinstance(value, dict) else {}
        commit = out["env"].get("git_commit")
        out["commit"] = commit[:12] if isinstance(commit, str) else ""
        out["dirty"] = out["env"].get("git_dirty") is True
        out["tests"] = _mapping(run.summary, "tests")
        files = [p for p in walk(d) if p.is_file() and self._inside(p)
                 and not any(x.startswith(".") for x in p.relative_to(d).parts)]
        out["files"] = [self._file(p) for p in files]
        out["tables"] = [{**f, **csv_table(self.root / f["path"])} for f in out["files"]
                         if f["kind"] == "csv" and f["path"].split("/")[2:3] == ["tables"]]
        out["markdown"] = [{**f, "text": _text(self.root / f["path"], MAX_SHOWN_BYTES)}
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
        items = [{"id": r["id"], "index": r.get("index"), "question": r.get("question") or "",
                  "answers": r.get("answers") or [], "error": r.get("error"),
                  "scores": {s: v.get("scores") or {} for s, v in (r.get("systems") or {}).items()}}
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
            va = _mapping(ra, "scores").get(metric) if metric else None
            vb = _mapping(rb, "scores").get(metric) if metric else None
            rows.append({"system": s, "a": ra, "b": rb,
                         "changed": va is not None and vb is not None and abs(float(va) - float(vb)) > 1e-9})
        return {"a": qa, "b": qb, "id": qid, "question": qa["question"], "answers": qa["answers"], "metric": metric,
                "systems": rows}


def _systems(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for s, v in (row.get("systems") or {}).items():
        out[s] = {"scores": v.get("scores") or {}, "response": v.get("response") or "", "tokens": v.get("tokens"),
                  "context": v.get("context"), "error": v.get("error"), "stage_tokens": v.get("stage_tokens") or {},
                  "seconds": v.get("seconds")}
    return out


def _score(row: dict[str, Any], system: str, metric: str) -> float | None:
    v = _mapping(row, "systems", system, "scores").get(metric)
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


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _text(path: Path, limit: int | None = None) -> str:
    """A run file as text for display, at most ``limit`` bytes: UTF-16 or UTF-32 with a byte order mark decoded
    as such; else UTF-8, bytes that are not UTF-8 read as Latin-1 and NULs dropped
    (:func:`htmlrag.app.secrets.body_text`), so that a secret in UTF-16 without a mark reads as itself (and
    is redacted) even in JSON, which would write each NUL as ``\\u0000`` between its characters."""
    with open(path, "rb") as f:
        data = f.read() if limit is None else f.read(limit)
    codec = next((c for bom, c in BOMS if data.startswith(bom)), None)
    if codec is not None:
        return data.decode(codec, errors="replace").replace("\x00", "")
    return body_text(data)


def csv_table(path: Path, limit: int = MAX_CSV_ROWS) -> dict[str, Any]:
    """``{"rows": ..., "error": ...}``: the first ``limit`` rows of a CSV file (header first, read from its first
    :data:`MAX_SHOWN_BYTES`), and why the rest is not shown (``""``: nothing is left out but rows past
    ``limit``). A file the CSV reader refuses -- a field over its size limit, a broken quote -- shows the rows
    before the fault and says where it is."""
    text = _text(path, MAX_SHOWN_BYTES)
    out: list[list[str]] = []
    error = "" if len(text.encode("utf-8", errors="replace")) < MAX_SHOWN_BYTES else (
        f"{path.name}: only its first {MAX_SHOWN_BYTES:,} bytes are shown")
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if len(out) >= limit:
                break
            out.append(row)
    except csv.Error as exc:
        error = f"{path.name}: line {reader.line_num}: {exc}; the rest is not shown"
    return {"rows": out, "error": error}


def csv_rows(path: Path, limit: int = MAX_CSV_ROWS) -> list[list[str]]:
    """The first ``limit`` rows of a CSV file (header first; :func:`csv_table`)."""
    return csv_table(path, limit)["rows"]


__all__ = ["PathRefused", "Results", "csv_rows", "csv_table", "fidelity_of", "file_url", "plots", "question_url",
           "run_url"]
