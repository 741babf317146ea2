"""``htmlrag-paper verify RUN_DIR [RUN_DIR ...]``: re-score saved runs and check every stored number.

    htmlrag-paper verify results/                     # every run below a results root
    htmlrag-paper verify results/quickstart/093ac65d4f21
    htmlrag-paper verify --write-tables results/real_models/real_small_wtq_17763499bf5a

What is checked, and how: :mod:`htmlrag.evaluation.verify`. Prints one line ``verified: N runs, M rows, K tables``
and exits 0 when every run agrees (notes, such as metrics that could not be re-scored, go to the log);
otherwise prints each difference (run, where, stored and recomputed value, cause) and exits 1. Exit 2: bad
input (no such folder, no runs).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys

from htmlrag.core.errors import InputError
from htmlrag.evaluation.verify import Report, verify

log = logging.getLogger("htmlrag-paper")


#: Differences printed per run, cause and file before "... and N more".
SHOWN = 8


def _file(where: str) -> str:
    return where.split(":", 1)[0]


def render(reports: list[Report]) -> tuple[str, int]:
    """The text printed and the exit status for ``reports``: differences grouped by run, cause and file."""
    bad = [r for r in reports if not r.ok]
    rows, tables = sum(r.rows for r in reports), sum(r.tables for r in reports)
    if not bad:
        return f"verified: {len(reports)} runs, {rows} rows, {tables} tables", 0
    lines = []
    for r in bad:
        lines.append(f"FAILED {r.run}: {len(r.findings)} differences")
        by_cause: dict[str, list] = {}
        for f in r.findings:
            by_cause.setdefault(f.cause, []).append(f)
        for cause, found in by_cause.items():
            lines.append(f"  cause: {cause}")
            per_file: dict[str, int] = {}
            for f in found:
                n = per_file[_file(f.where)] = per_file.get(_file(f.where), 0) + 1
                if n <= SHOWN:
                    lines.append(f"    {f.where}: stored {f.stored}, recomputed {f.recomputed}")
            lines += [f"    {name}: ... and {n - SHOWN} more" for name, n in per_file.items() if n > SHOWN]
    lines.append(f"not verified: {len(bad)} of {len(reports)} runs differ ({rows} rows, {tables} tables read)")
    return "\n".join(lines), 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="htmlrag-paper verify", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run folders, or folders holding runs (a results root)")
    ap.add_argument("--write-tables", action="store_true",
                    help="rewrite each run's tables/ from its rows and metrics.json, and redraw its plots/ with "
                         "plots/plots.json, instead of comparing them (only where metrics.json follows from the rows)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no notes, only the result")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    try:
        reports = verify(args.runs, write_tables=args.write_tables)
    except InputError as exc:
        print(f"htmlrag-paper verify: error: {exc}", file=sys.stderr)
        return 2
    for r in reports:
        for note in r.notes:
            log.info("%s: %s", r.run, note)
    if args.write_tables:
        kept = [r for r in reports if any("not rewritten" in n for n in r.notes) or not r.ok]
        if kept:  # (a run whose files disagree with its records keeps its tables: say why, and fail)
            print(render(kept)[0], flush=True)
        print(f"tables and plots rewritten: {len(reports) - len(kept)} of {len(reports)} runs")
        return 1 if kept else 0
    text, status = render(reports)
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `verify ... | head`: the verdict is the exit status, whoever stopped reading
        with contextlib.suppress(OSError, ValueError):
            sys.stdout = open(os.devnull, "w")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
