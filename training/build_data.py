"""Build pruner training samples from questions with gold answers and HTML pages.

    python -m training.build_data --wtq ../shared/data/wtq-html-qa --out results/train/data/wtq-demo
    python -m training.build_data --pages data/pages/questions.jsonl --out /tmp/samples --max-words 32
    htmlrag-train-data --wtq ../shared/data/wtq-html-qa --out results/train/data/wtq-demo --variants every_bucket

Writes ``<out>/<name>-<bucket>.jsonl`` (the released layout, one file per length bucket) and
``<out>/stats.json`` (counts per bucket, label coverage, dropped items by reason), and logs the report.
Token counts use ``--tokenizer`` (a Hugging Face name or folder; default: the offline Mistral-7B tokenizer of
:mod:`htmlrag.tokens`): use the target model's tokenizer when it is at hand, since training measures again
with it and drops samples over ``max_length``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from htmlrag.errors import HtmlRagError
from training.data import write_buckets, write_jsonl
from training.samples import ANSWER_FORMATS, BUCKETS, OVERLENGTH, VARIANTS, BuildSettings, build_samples

log = logging.getLogger("htmlrag-train-data")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="htmlrag-train-data", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--wtq", type=Path, help="a WTQ-HTML folder (questions.jsonl + page/)")
    src.add_argument("--pages", type=Path, help="questions.jsonl rows {id, question, answers, pages} (file names)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--name", default=None, help="file name prefix (default: the source folder's name)")
    p.add_argument("--tokenizer", default=None, help="tokenizer for lengths (default: offline Mistral-7B)")
    p.add_argument("--max-words", type=int, default=128, help="block size in words (default 128)")
    p.add_argument("--buckets", type=int, nargs="+", default=list(BUCKETS), help="bucket sizes in tokens")
    p.add_argument("--variants", choices=VARIANTS, default="largest")
    p.add_argument("--overlength", choices=OVERLENGTH, default="truncate")
    p.add_argument("--answer", choices=ANSWER_FORMATS, default="path_html")
    p.add_argument("--limit", type=int, default=None, help="use the first N questions")
    p.add_argument("--single-file", action="store_true", help="write one <name>.jsonl instead of one per bucket")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build and write the samples; returns the stats report (also written to ``stats.json``)."""
    from htmlrag.data import load_page_questions, load_wtq_html
    from htmlrag.tokens import load_tokenizer

    if args.wtq is not None:
        items, source = load_wtq_html(args.wtq, order="shuffled"), "wtq-html-qa"
        default_name = args.wtq.resolve().name
    else:
        items, source = load_page_questions(args.pages), args.pages.resolve().parent.name
        default_name = args.pages.resolve().parent.name
    if args.limit is not None:
        items = items[: args.limit]
    settings = BuildSettings(max_words=args.max_words, buckets=tuple(args.buckets), variants=args.variants,
                             overlength=args.overlength, answer=args.answer)
    counter = load_tokenizer(args.tokenizer)
    samples, stats = build_samples(items, counter, settings, source=source, progress=not args.no_progress)
    name = args.name or default_name
    if args.single_file:
        files = {"all": args.out / f"{name}.jsonl"}
        write_jsonl(samples, files["all"])
    else:
        files = write_buckets(samples, args.out, name)
    report = {"source": source, "tokenizer": counter.name, "settings": vars(settings) | {"buckets": list(settings.buckets)},
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
