"""The ``htmlrag`` command line: ``clean``, ``tree``, ``prune``, ``graph`` and ``serve`` (the web app).

Every subcommand processes all its inputs: a page that fails gets one line on stderr naming it, the others
are still processed, and the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from htmlrag.app.cli import add_serve_parser
from htmlrag.cli.graph import add_graph_parser
from htmlrag.cli.prune import MAX_WORDS, add_max_page_option, add_prune_parser, max_page_bytes
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import PageTooLarge, page_stem, read_capped, read_page
from htmlrag.core.logs import quiet_third_party
from htmlrag.core.options import check_output_dir, check_output_file, integer, run_writing
from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html

log = logging.getLogger("htmlrag")

#: Most characters ``tree --preview`` and ``graph query --preview`` show per item
MAX_PREVIEW = 1_000_000


def _fail(what: str, exc: BaseException) -> None:
    msg = str(exc) if isinstance(exc, HtmlRagError) else f"{what}: {type(exc).__name__}: {exc}"
    if isinstance(exc, PageTooLarge):
        msg += " (raise it with --max-page-mb)"
    print(f"htmlrag: error: {msg}", file=sys.stderr)


def _cmd_clean(args: argparse.Namespace) -> int:
    if not args.paths:
        try:
            data = read_capped(sys.stdin.buffer, max_page_bytes(args), "<stdin>")
            sys.stdout.write(clean_html(data, keep_href=args.keep_href, name="<stdin>", keep_hidden=args.keep_hidden))
            sys.stdout.write("\n")
        except HtmlRagError as exc:
            _fail("<stdin>", exc)
            return 1
        return 0
    if len(args.paths) > 1 and not args.out_dir:
        print("htmlrag: error: several paths need --out-dir DIR (one output file per input)", file=sys.stderr)
        return 2
    targets: list[Path | None] = [None] * len(args.paths)
    if args.out_dir:
        try:
            targets = _clean_targets(args.paths, args.out_dir)
        except HtmlRagError as exc:
            print(f"htmlrag: error: {exc}", file=sys.stderr)
            return 1
    failed = 0
    for path, target in _progress(list(zip(args.paths, targets, strict=True)), "clean"):
        try:
            cleaned = clean_html(read_page(path, max_page_bytes(args)), keep_href=args.keep_href, name=str(path), keep_hidden=args.keep_hidden)
        except Exception as exc:  # one bad page never stops the batch
            _fail(str(path), exc)
            failed += 1
            continue
        if target is None:
            sys.stdout.write(cleaned + "\n")
            continue
        try:
            target.write_text(cleaned, encoding="utf-8")
        except OSError as exc:  # a full disk, a folder made meanwhile: this output fails, the others go on
            print(f"htmlrag: error: {target}: cannot write: {exc.strerror or exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def _clean_targets(paths: Sequence[str], out_dir: str) -> list[Path]:
    """The output file of every input in ``out_dir`` (made if missing): ``<stem>.html``, ``<stem>-2.html``... for
    inputs of one name. Every target is checked before any page is cleaned.

    Raises:
        InputError: ``out_dir`` cannot be made, a target is a folder, device, FIFO or socket, or a target is one
            of the inputs (by name, symlink or hard link: writing it would destroy that input).
    """
    folder = check_output_dir(out_dir, "--out-dir")
    used: set[str] = set()
    targets = []
    for path in paths:
        stem = page_stem(path)
        name, k = stem, 1
        while name in used:  # a/index.html and b/index.html both need a file
            k += 1
            name = f"{stem}-{k}"
        used.add(name)
        target = folder / f"{name}.html"
        check_output_file(target, "--out-dir: output")
        targets.append(target)
    inputs = [Path(p) for p in paths if os.path.exists(p)]
    for target in targets:
        if not target.exists():
            continue
        for src in inputs:
            if os.path.samefile(src, target):
                raise InputError(f"--out-dir: output {target} is the input {src}: writing it would destroy the "
                                 "input; choose another --out-dir")
    return targets


def _cmd_tree(args: argparse.Namespace) -> int:
    try:
        tree = build_block_tree(read_page(args.path, max_page_bytes(args)), max_words=args.max_words, clean=not args.no_clean,
                                name=str(args.path))
    except Exception as exc:
        _fail(str(args.path), exc)
        return 1
    rows = [
        {"index": b.index, "path": b.path_str, "is_leaf": b.is_leaf, "words": b.words,
         "text": b.text if args.json else " ".join(b.text.split())[: args.preview]}
        for b in tree
    ]
    if args.json:
        json.dump({"max_words": args.max_words, "blocks": rows}, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rows:
            kind = "leaf" if r["is_leaf"] else "text"
            print(f"{r['index']:>5} {r['words']:>5}w {kind:4} {r['path']}  {r['text']}")
    return 0


def _progress(items: Sequence, desc: str):
    if len(items) < 20 or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="page")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(prog="htmlrag", description="Lossless HTML cleaning, block trees and pruning.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("clean", help="clean pages losslessly (stdin to stdout without paths)")
    c.add_argument("paths", nargs="*", help=".html or .html.gz files")
    c.add_argument("--out-dir", help="write one cleaned file per input here (needed with several paths)")
    c.add_argument("--keep-href", action="store_true", help="keep link targets")
    c.add_argument("--keep-hidden", action="store_true",
                   help="keep text hidden by markup (display:none, visibility:hidden, hidden attribute)")
    add_max_page_option(c)
    c.set_defaults(func=_cmd_clean)

    t = sub.add_parser("tree", help="print the block tree of a page")
    t.add_argument("path", help=".html or .html.gz file")
    t.add_argument("--max-words", type=integer(1, MAX_WORDS), default=256, help="largest block, in words (default 256)")
    t.add_argument("--json", action="store_true", help="print JSON with the blocks' full text")
    t.add_argument("--no-clean", action="store_true", help="the page is already cleaned")
    t.add_argument("--preview", type=integer(0, MAX_PREVIEW), default=80, help="characters of text shown per block")
    add_max_page_option(t)
    t.set_defaults(func=_cmd_tree)

    add_prune_parser(sub)
    add_graph_parser(sub)

    add_serve_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``htmlrag`` console script.

    An output that cannot be written (a full disk, a read-only folder, a folder where a file goes; stdout
    included) ends the command with ``htmlrag: error: <file>: <reason>`` and exit status 1, never a traceback.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")

    quiet_third_party(verbose=args.verbose)
    return run_writing("htmlrag", lambda: args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
