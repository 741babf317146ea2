"""``htmlrag-bench-table``: paper-style tables from saved runs, without rerunning anything.

    htmlrag-bench-table results/paper_4k --out results/paper_4k/tables     # every run under the folder
    htmlrag-bench-table results/a/<id> results/b/<id> --metrics em hit1 --caption "Table 1"

Each run's ``metrics.json`` becomes one column group (its dataset), in the order given (folders: sorted).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import htmlrag.docqa.metrics  # noqa: F401 - registers the document-QA metrics (SuperRAG runs)
from htmlrag.summary import write_tables

log = logging.getLogger("htmlrag-bench-table")


def find_runs(paths: list[str]) -> list[Path]:
    """``metrics.json`` files: the given run folders, or every run below a given folder."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "metrics.json").is_file():
            found.append(p / "metrics.json")
        else:
            found.extend(sorted(p.rglob("metrics.json")))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="htmlrag-bench-table", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run folders or folders holding runs")
    ap.add_argument("--out", required=True, help="folder for results.md/.csv/.tex")
    ap.add_argument("--metrics", nargs="*", help="metric columns (default: the first run's metrics)")
    ap.add_argument("--caption", default="")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    files = find_runs(args.runs)
    if not files:
        log.error("no metrics.json under %s", " ".join(args.runs))
        return 2
    summaries = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    paths = write_tables(summaries, Path(args.out), args.metrics, caption=args.caption)
    log.info("%s", paths["md"].read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
