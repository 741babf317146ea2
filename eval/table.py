"""``htmlrag-bench-table``: result tables from saved runs, without rerunning anything.

    htmlrag-bench-table results/quickstart                      # every run below; tables in results/quickstart/tables
    htmlrag-bench-table results/a/<id> results/b/<id> --metrics em hit1 --caption "Table 1" --out tables/

One column group per run: its dataset, and where several runs share a dataset, the settings that tell them
apart (``sample_pages (budget=128, window=128)``); with several reader models, one row group per reader. Runs
with identical settings (the same configuration run by different code) are one column group, filled by the
run written last (see :mod:`htmlrag.evaluation.runs`). Beside ``results.md/.csv/.tex`` goes ``provenance.csv``: the run
folder each cell was read from.

After a Hydra multirun (``htmlrag-bench -m ...``), :class:`SweepTable` (a callback in ``conf/hydra``) writes
one combined table over the sweep's runs, each column group labelled by the swept values, to
``<paths.results>/<name>/sweeps/<multirun folder>/``.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.options import run_writing
from htmlrag.evaluation.runs import (
    Run,
    find_runs,
    is_run,
    label_apart,
    place,
    reader_label,
    resolve_run,
    run_name,
    select,
)
from htmlrag.evaluation.summary import write_tables
from htmlrag_bench.eval import portable

log = logging.getLogger("htmlrag-bench-table")


def layout(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """The runs that fill the table (see :func:`htmlrag.evaluation.runs.select`) and their column-group labels: the
    dataset, the settings that differ among runs of one dataset, and the reader when several are present."""
    runs = select(runs)
    readers = {reader_label(r) for r in runs}
    cols = label_apart(runs, lambda r: r.dataset, exclude=(lambda k: k.startswith("reader."))
                       if len(readers) > 1 else (lambda k: False))
    at = place(runs, lambda r: cols[r], lambda r: reader_label(r) if len(readers) > 1 else "")
    labels = [f"{c} [{g}]" if g else c for c, g in (at[r] for r in runs)]
    return runs, labels


def write(runs: Sequence[Run], out: Path, metrics: Sequence[str] | None = None, caption: str = "",
          labels: Sequence[str] | None = None) -> dict[str, Path]:
    """Write the tables of ``runs`` to ``out`` (labels: given, else :func:`layout`'s)."""
    if labels is None:
        runs, labels = layout(runs)
    notes = [f"Column group {lb}: run {r.name}" + (f" (superseded: {', '.join(run_name(d) for d in r.superseded)})"
                                                    if r.superseded else "") for r, lb in zip(runs, labels, strict=True)]
    return write_tables([r.summary for r in runs], out, metrics, caption=caption, labels=labels,
                        run_dirs=[r.dir for r in runs], notes=notes)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: :func:`_main`, an output that cannot be written reported in one line
    (:func:`htmlrag.core.options.run_writing`)."""
    return run_writing("htmlrag-bench-table", lambda: _main(argv))


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="htmlrag-bench-table", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run folders or folders holding runs")
    ap.add_argument("--out", help="folder for results.md/.csv/.tex and provenance.csv (default: <first folder>/tables)")
    ap.add_argument("--metrics", nargs="*", help="metric columns (default: the first run's metrics)")
    ap.add_argument("--caption", default="")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        runs = [r.check() for r in find_runs(args.runs)]
        if not runs:
            log.error("no metrics.json under %s", " ".join(args.runs))
            return 2
        if not args.out and is_run(Path(args.runs[0])):  # its tables/ are the run's own (verify checks them)
            log.error("htmlrag-bench-table: error: %s is a run folder: its tables/ are the run's own; give --out "
                      "(or name the experiment folder above it)", args.runs[0])
            return 2
        out = Path(args.out) if args.out else Path(args.runs[0]) / "tables"
        paths = write(runs, out, args.metrics, caption=args.caption)
    except HtmlRagError as exc:  # a run that cannot be read, an unknown metric: the message, no traceback
        log.error("htmlrag-bench-table: error: %s", exc)
        return 2
    log.info("%s", paths["md"].read_text(encoding="utf-8"))
    log.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    return 0


# ---------------------------------------------------------------- after a sweep
def sweep_runs(sweep_dir: Path, results_root: str | Path | None = None) -> tuple[list[Run], list[str]]:
    """The runs of one Hydra multirun (each job's ``htmlrag_run.json``: the run relative to the results root)
    and their labels: the overrides whose values differ between the jobs (``pruner.budget=1024``). Jobs
    without a finished run are skipped. ``results_root``: where the runs are (default: the sweep folder's
    ancestors, ``results/_hydra/<name>/multirun-*`` lying under the results root)."""
    roots = [results_root] if results_root is not None else list(sweep_dir.resolve().parents)
    jobs = []
    for pointer in sorted(sweep_dir.glob("*/htmlrag_run.json"), key=lambda p: _job_number(p.parent.name)):
        rec = json.loads(pointer.read_text(encoding="utf-8"))
        name = str(rec.get("run") or rec.get("run_dir", ""))  # run_dir: an absolute folder, older pointers
        folder = resolve_run(name, *roots)
        found = [r.check() for r in find_runs([folder])] if folder is not None else []
        if not found:
            log.warning("sweep job %s: no metrics.json for run %s (failed or unfinished); left out",
                        pointer.parent.name, name)
            continue
        jobs.append((found[0], dict(_split(o) for o in rec.get("overrides", []))))
    swept = [k for k in dict.fromkeys(k for _, ov in jobs for k in ov)
             if len({ov.get(k) for _, ov in jobs}) > 1]
    labels = [", ".join(f"{k}={ov.get(k, 'unset')}" for k in swept) or f"run {r.run_id}" for r, ov in jobs]
    return [r for r, _ in jobs], labels


def _job_number(name: str) -> tuple[int, str]:
    return (int(name), name) if name.isdigit() else (1 << 30, name)


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~"), value


def write_sweep(sweep_dir: Path, out: Path, caption: str = "", results_root: str | Path | None = None
                ) -> dict[str, Path] | None:
    """The combined table of the multirun in ``sweep_dir`` (``None`` when no job has a finished run)."""
    runs, labels = sweep_runs(sweep_dir, results_root)
    if not runs:
        return None
    if len(set(labels)) != len(labels):  # e.g. a swept key outside the config: fall back to the settings
        runs, labels = layout(runs)
    return write(runs, out, caption=caption, labels=labels)


try:
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover - hydra is part of the [eval] extra
    _Callback = object  # type: ignore[assignment, misc]


class SweepTable(_Callback):  # type: ignore[misc, valid-type]
    """Hydra callback: after a multirun, one table over its runs, labelled by the swept values, in
    ``<paths.results>/<name>/sweeps/<multirun folder>/``. A failure is logged (the runs are saved)."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        try:
            sweep_dir = Path(config.hydra.sweep.dir)
            portable.rewrite_file(sweep_dir / "multirun.yaml", portable.config_locations(config))
            out = Path(config.paths.results) / str(config.name) / "sweeps" / sweep_dir.name
            paths = write_sweep(sweep_dir, out, caption=str(config.get("caption", "") or ""),
                                results_root=config.paths.results)
            if paths is not None:
                log.info("sweep table: %s\n%s", out, paths["md"].read_text(encoding="utf-8"))
        except Exception:
            log.exception("could not write the sweep table; tabulate with htmlrag-bench-table")


if __name__ == "__main__":
    raise SystemExit(main())
