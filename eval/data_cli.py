"""``htmlrag-data``: list, download and verify the datasets the configs name (:mod:`htmlrag.data.download`).

    htmlrag-data list                      # every dataset: source, size, experiments that need it, state here
    htmlrag-data download wtq_html_qa      # into paths.data (checksummed, resumable, atomic)
    htmlrag-data download sec10q asqa      # several
    htmlrag-data verify wtq_html_qa        # re-hash against the recorded checksums
    htmlrag-data where                     # the data folder in use

The data folder is ``paths.data`` as ``htmlrag-bench`` resolves it (``$HTMLRAG_DATA``, ``conf/local/``, else
``<project>/.data``); ``--data-dir`` overrides it. Exit status: 0 done, 1 a download or check failed,
2 usage or an unreachable source (the message says where to put the files by hand).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.logs import quiet_third_party
from htmlrag.core.options import run_writing
from htmlrag.data.download import DATASETS, SourceUnreachable, download, get, state, verify

log = logging.getLogger("htmlrag-data")


def data_dir(override: str | None) -> Path:
    """``override``, else ``paths.data`` of the composed ``htmlrag-bench`` config (local settings included)."""
    if override:
        return Path(override).expanduser().resolve()
    # heavy: Hydra, and the config schemas (the whole harness), only when no --data-dir is given
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config")
    return Path(cfg.paths.data).expanduser().resolve()


def _list(root: Path) -> int:
    print(f"data folder: {root}  (paths.data; set HTMLRAG_DATA or paths.data in conf/local/default.yaml)")
    print("| dataset | here | size | needed by | source | licence |")
    print("|---|---|---|---|---|---|")
    for ds in DATASETS.values():
        needed = ", ".join(n for n in ds.needed_by if n) or "(dataset=" + ds.name + ")"
        print(f"| {ds.name} | {state(ds, root)} | {ds.size} | {needed} | {ds.source} | {ds.license} |")
    print("\nThe project's own samples (no download): data/pages (experiment=quickstart), data/pdfs "
          "(experiment=superrag_quickstart).")
    return 0


def _download(names: Sequence[str], root: Path, force: bool, keep: bool) -> int:
    status = 0
    for name in names:
        try:
            target = download(name, root, force=force, keep_downloads=keep)
        except SourceUnreachable as exc:
            print(f"htmlrag-data: {exc}", file=sys.stderr)
            status = max(status, 2)
            continue
        except HtmlRagError as exc:
            print(f"htmlrag-data: error: {exc}", file=sys.stderr)
            status = max(status, 1)
            continue
        print(f"htmlrag-data: {name}: ready in {target}", file=sys.stderr)
    return status


def _verify(names: Sequence[str], root: Path) -> int:
    status = 0
    for name in names:
        try:
            bad = verify(get(name), root)
        except HtmlRagError as exc:
            print(f"htmlrag-data: error: {exc}", file=sys.stderr)
            status = 1
            continue
        for line in bad:
            print(f"htmlrag-data: {name}: {line}", file=sys.stderr)
        print(f"htmlrag-data: {name}: {'OK' if not bad else f'{len(bad)} file(s) differ'}", file=sys.stderr)
        status = max(status, 1 if bad else 0)
    return status


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="htmlrag-data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", help="the data folder (default: paths.data of the config)")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every dataset, its source, size, the experiments that need it, and its state here")
    sub.add_parser("where", help="print the data folder")
    d = sub.add_parser("download", help="download datasets (checksummed, resumable)")
    d.add_argument("names", nargs="+", help="dataset names (htmlrag-data list)")
    d.add_argument("--force", action="store_true", help="download and build again even if installed")
    d.add_argument("--keep-downloads", action="store_true", help="keep the fetched files in .downloads/")
    v = sub.add_parser("verify", help="re-hash installed datasets against their recorded checksums")
    v.add_argument("names", nargs="+")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: :func:`_main`, an output that cannot be written reported in one line
    (:func:`htmlrag.core.options.run_writing`)."""
    return run_writing("htmlrag-data", lambda: _main(argv))


def _main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``htmlrag-data``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")

    quiet_third_party(verbose=args.verbose)
    root = data_dir(args.data_dir)
    if args.command == "list":
        return _list(root)
    if args.command == "where":
        print(root)
        return 0
    if args.command == "download":
        return _download(args.names, root, args.force, args.keep_downloads)
    return _verify(args.names, root)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
