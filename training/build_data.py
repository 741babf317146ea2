"""Build pruner training samples from questions with gold answers and HTML pages.

    python -m htmlrag_bench.training.build_data --wtq ../shared/data/wtq-html-qa --out results/train/data/wtq-demo
    htmlrag-train-data --pages data/pages/questions.jsonl --out results/train/data/demo --max-words 32
    htmlrag-train-data --wtq ../shared/data/wtq-html-qa --out results/train/data/wtq-demo --variants every_bucket
    htmlrag-train-data --wtq ../shared/data/wtq-html-qa --split train --tokenizer gemma3-270m \
        --step1 bm25 --step1-budget 1800 --buckets 2048 --out results/train/data/wtq-gemma-2k

Sources: ``--wtq DIR`` (a WTQ-HTML folder: ``questions.jsonl`` + ``page/``) or ``--pages FILE`` (the project's
sample format, as ``data/pages/questions.jsonl``: one JSON object per line ``{"id", "question", "answers":
[...], "pages": ["a.html", ...]}``, page files named relative to that file, plain or ``.gz``).

``--split train|heldout`` keeps only the questions of that side of the fixed id-hash split
(:mod:`htmlrag_bench.training.split`), so that a trained pruner can be measured on questions it never saw.
``--step1 bm25 --step1-budget N`` first prunes each question's cleaned pages with BM25 (256-word blocks) to
``N`` tokens, as step 1 of the two-step pipeline does before the generative pruner sees them: samples then
look like what the pruner ranks at inference, and fit small buckets (CPU training). A question whose answer
does not survive step 1 gives no sample (counted as ``no_answer_block``).

Writes ``<out>/<name>-<bucket>.jsonl`` (the released layout, one file per length bucket) and
``<out>/stats.json`` (counts per bucket, label coverage, dropped items by reason), and logs the report.
Token counts use ``--tokenizer`` (a Hugging Face name or folder; default: the offline Mistral-7B tokenizer of
:mod:`htmlrag.pruning.tokens`): use the target model's tokenizer when it is at hand, since training measures again
with it and drops samples over ``max_length``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.options import check_output_dir, check_output_file, integer, number, run_writing
from htmlrag.data import load_page_questions, load_wtq_html
from htmlrag.factory import make_ranker
from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.pruning.prune import prune_to_budget
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag_bench.training.data import write_buckets, write_jsonl
from htmlrag_bench.training.samples import (
    ANSWER_FORMATS,
    BUCKETS,
    OVERLENGTH,
    VARIANTS,
    BuildSettings,
    build_samples,
)
from htmlrag_bench.training.split import HELDOUT_FRACTION, SPLITS, in_split

log = logging.getLogger("htmlrag-train-data")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="htmlrag-train-data", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--wtq", type=Path, help="a WTQ-HTML folder (questions.jsonl + page/)")
    src.add_argument("--pages", type=Path, help="a questions.jsonl of rows {id, question, answers: [...], pages: "
                     "[file names relative to it]}, as data/pages/questions.jsonl")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--name", default=None, help="file name prefix (default: the source folder's name)")
    p.add_argument("--tokenizer", default=None, help="tokenizer for lengths (default: offline Mistral-7B)")
    p.add_argument("--max-words", type=integer(1, 1_000_000), default=128, help="block size in words (default 128)")
    p.add_argument("--buckets", type=integer(1, 10_000_000), nargs="+", default=list(BUCKETS), help="bucket sizes in tokens")
    p.add_argument("--variants", choices=VARIANTS, default="largest")
    p.add_argument("--overlength", choices=OVERLENGTH, default="truncate")
    p.add_argument("--answer", choices=ANSWER_FORMATS, default="path_html")
    p.add_argument("--limit", type=integer(1, 1_000_000_000), default=None, help="use the first N questions")
    p.add_argument("--single-file", action="store_true", help="write one <name>.jsonl instead of one per bucket")
    p.add_argument("--split", choices=SPLITS, default="all", help="questions of one side of the id split")
    p.add_argument("--heldout-fraction", type=number(0, 1), default=HELDOUT_FRACTION, help="held-out share (1/3)")
    p.add_argument("--step1", choices=["bm25"], default=None, help="prune pages with this ranker first")
    p.add_argument("--step1-budget", type=integer(1, 10_000_000), default=None, help="tokens kept by --step1 (all pages together)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if (args.step1 is None) != (args.step1_budget is None):
        p.error("--step1 and --step1-budget go together")
    return args


def step1_items(items: list[Any], budget: int, counter: Any, max_words: int = 256) -> list[Any]:
    """The items with their pages replaced by BM25-pruned HTML (all pages together within ``budget`` tokens,
    one string per page, ``""`` where nothing was kept; page order and ``gold_page`` unchanged)."""
    ranker, out = make_ranker("bm25"), []
    for ex in items:
        trees = []
        for i, page in enumerate(ex.load_pages()):
            try:
                trees.append(build_block_tree(clean_html(page, name=f"{ex.id} page {i}"), max_words, page=i))
            except HtmlRagError:
                trees.append(build_block_tree("", max_words, page=i))
        pr = prune_to_budget(trees, ranker.score(ex.question, trees), budget, counter, fmt="html")
        out.append(replace(ex, pages=list(pr.pages)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build and write the samples; returns the stats report (also written to ``stats.json``)."""
    check_output_dir(args.out, "--out")  # before the work: a file or FIFO where the folder goes is named at once
    if args.single_file:
        check_output_file(args.out / f"{args.name or 'x'}.jsonl", "--out")
    check_output_file(args.out / "stats.json", "--out")
    if args.wtq is not None:
        items, source = load_wtq_html(args.wtq, order="shuffled"), "wtq-html-qa"
        default_name = args.wtq.resolve().name
    else:
        items, source = load_page_questions(args.pages), args.pages.resolve().parent.name
        default_name = args.pages.resolve().parent.name
    items = [ex for ex in items if in_split(ex.id, args.split, args.heldout_fraction)]
    if args.limit is not None:
        items = items[: args.limit]
    counter = load_tokenizer(args.tokenizer)
    if args.step1:
        items = step1_items(items, args.step1_budget, counter)
    settings = BuildSettings(max_words=args.max_words, buckets=tuple(args.buckets), variants=args.variants,
                             overlength=args.overlength, answer=args.answer)
    samples, stats = build_samples(items, counter, settings, source=source, progress=not args.no_progress)
    name = args.name or default_name
    if args.single_file:
        files = {"all": args.out / f"{name}.jsonl"}
        write_jsonl(samples, files["all"])
    else:
        files = write_buckets(samples, args.out, name)
    report = {"source": source, "tokenizer": counter.name, "settings": vars(settings) | {"buckets": list(settings.buckets)},
              "split": args.split, "heldout_fraction": args.heldout_fraction,
              "step1": {"ranker": args.step1, "budget": args.step1_budget} if args.step1 else None,
              "ids": [ex.id for ex in items],
              **stats.to_dict(settings.buckets), "files": {k: str(v) for k, v in sorted(files.items())}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stats.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log.info("%d samples from %d items -> %s\n%s", stats.samples, stats.items, args.out, format_report(report))
    return report


def format_report(report: dict[str, Any]) -> str:
    """A short human-readable report."""
    lines = [
        f"items {report['items']}, labelled {report['items_labelled']} (coverage {report['label_coverage']:.1%}), "
        f"with a sample {report['items_with_sample']} ({report['sample_coverage']:.1%}), samples {report['samples']}",
        "per bucket: " + ", ".join(f"{k} {v}" for k, v in report["per_bucket"].items()),
        "dropped: " + ", ".join(f"{k} {v}" for k, v in report["dropped"].items()),
        f"truncated samples {report['truncated_samples']} ({report['pages_removed']} distractor pages removed); "
        f"pages failed {report['pages_failed']}, empty {report['pages_empty']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: :func:`_main`, an output that cannot be written reported in one line
    (:func:`htmlrag.core.options.run_writing`)."""
    return run_writing("htmlrag-train-data", lambda: _main(argv))


def _main(argv: list[str] | None = None) -> int:
    """Console entry point; returns the exit status (1 on a user error, with its message)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        run(args)
    except HtmlRagError as exc:
        log.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
