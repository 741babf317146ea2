"""Answer retention of step-2 rankers (a trained generative pruner against BM25, MiniLM, the untrained model) on
held-out WTQ-HTML questions, two-step pruning, several final budgets, McNemar tests.

For each question (``--split heldout`` of :mod:`htmlrag_bench.training.split`: never used for training):

1. the pages are cleaned and pruned by step 1 (``--step1``, BM25 by default, 256-word blocks) to
   ``--budget1`` tokens (deterministic: every run sees the same step-1 pages);
2. each step-2 ranker scores the 128-word blocks of the step-1 pages once (block trees without sibling packing
   for all rankers, so every ranker ranks the same blocks), and the pages are pruned to each ``--budgets``
   value by :func:`htmlrag.pruning.prune.prune_to_budget` (HTML);
3. *retention* = reference-text EM of that context (:func:`htmlrag.evaluation.scoring.metrics.ref_em`: a normalised gold answer is
   in the context's text).

Budgets count tokens of ``--tokenizer`` (default the pruner's own, ``gemma3-270m``). Rows go to ``--out``
(JSONL, one per question, appended as soon as a question is done, so a killed run resumes where it stopped; a
rerun with another ranker added scores only that ranker on the questions already done, and the last row of
a question wins);
the summary (retention per ranker and budget, exact McNemar tests of ``--ours`` against every other ranker)
is printed and written next to it as ``<out>.summary.json``.

    python scripts/eval_pruner_retention.py --gen untrained=gemma3-270m \\
        --gen trained=results/train/gemma3_270m_pruner/final --ours trained \\
        --out results/pruner_retention/heldout.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

log = logging.getLogger("eval_pruner_retention")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wtq", type=Path, default=ROOT.parent / "shared" / "data" / "wtq-html-qa")
    ap.add_argument("--split", default="heldout", choices=["heldout", "train", "all"])
    ap.add_argument("--limit", type=int, default=None, help="first N questions of the split")
    ap.add_argument("--tokenizer", default="gemma3-270m", help="budget tokenizer (alias, name or folder)")
    ap.add_argument("--step1", choices=["minilm", "bm25"], default="bm25")
    ap.add_argument("--budget1", type=int, default=3072)
    ap.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--gen", action="append", default=[], metavar="NAME=MODEL",
                    help="a generative step-2 ranker (alias or folder); repeatable")
    ap.add_argument("--ours", default=None, help="the ranker the McNemar tests compare with (default: last --gen)")
    ap.add_argument("--batch-size", type=int, default=32, help="token-tree segments per forward call")
    ap.add_argument("--out", type=Path, required=True)
    return ap.parse_args(argv)


def make_rankers(args: argparse.Namespace) -> dict[str, Any]:
    """Step-2 rankers by name: bm25, minilm, then every ``--gen NAME=MODEL``."""
    from htmlrag.core.models import MINILM, resolve_embedding_model
    from htmlrag.factory import make_ranker

    rankers: dict[str, Any] = {"bm25": make_ranker("bm25"),
                               "minilm": make_ranker("embedding", model=resolve_embedding_model(MINILM))}
    for spec in args.gen:
        name, _, model = spec.partition("=")
        if not model:
            raise SystemExit(f"--gen takes NAME=MODEL, got {spec!r}")
        rankers[name] = make_ranker("generative", model_name_or_path=model, dtype="float32",
                                    batch_size=args.batch_size)
    return rankers


def step1_pages(ex: Any, ranker: Any, budget: int, counter: Any) -> list[str]:
    """Step 1: cleaned pages pruned together to ``budget`` tokens (256-word blocks), one HTML string per page."""
    from htmlrag.core.errors import HtmlRagError
    from htmlrag.html.blocktree import build_block_tree
    from htmlrag.html.clean import clean_html
    from htmlrag.pruning.prune import prune_to_budget

    trees = []
    for i, page in enumerate(ex.load_pages()):
        try:
            trees.append(build_block_tree(clean_html(page, name=f"{ex.id} page {i}"), 256, page=i))
        except HtmlRagError:
            trees.append(build_block_tree("", 256, page=i))
    return list(prune_to_budget(trees, ranker.score(ex.question, trees), budget, counter, fmt="html").pages)


def html_to_text(html: str) -> str:
    """The text of an HTML context, as the harness gives it to reference-text EM."""
    from htmlrag.html.formats import convert

    return convert(html, "text") if html.strip() else ""


def question_row(ex: Any, rankers: dict[str, Any], step1: Any, args: argparse.Namespace, counter: Any,
                 row: dict | None = None) -> dict:
    """Retention of every ranker at every budget for one question (plus step-1 retention and timings);
    rankers already in ``row`` (an earlier run's) are not scored again."""
    from htmlrag.evaluation.scoring.metrics import MetricInput, ref_em
    from htmlrag.html.blocktree import build_block_tree
    from htmlrag.pruning.prune import prune_to_budget

    pages = step1_pages(ex, step1, args.budget1, counter)
    text1 = html_to_text("\n".join(p for p in pages if p))
    row = row or {"id": ex.id, "question": ex.question, "answers": ex.answers, "retained": {}, "seconds": {},
                  "gen_stats": {}}
    row["step1_retained"] = ref_em(MetricInput(answers=ex.answers, context_text=text1))
    trees = [build_block_tree(p, 128, page=i) for i, p in enumerate(pages) if p]
    for name, ranker in rankers.items():
        if name in row["seconds"] and all(f"{name}@{b}" in row["retained"] for b in args.budgets):
            continue
        start = time.perf_counter()
        scores = ranker.score(ex.question, trees) if trees else []
        row["seconds"][name] = round(time.perf_counter() - start, 3)
        if getattr(ranker, "last_stats", None) is not None:
            row["gen_stats"][name] = ranker.last_stats.as_dict()
        for budget in args.budgets:
            if trees:
                ctx = prune_to_budget(trees, scores, budget, counter, fmt="html", split_to_fill=0).context
            else:
                ctx = ""
            kept = ref_em(MetricInput(answers=ex.answers, context_text=html_to_text(ctx)))
            row["retained"][f"{name}@{budget}"] = kept
    return row


def summarize(rows: list[dict], names: list[str], budgets: list[int], ours: str) -> dict:
    """Retention (%) per ranker and budget; McNemar of ``ours`` against each other ranker per budget."""
    from htmlrag.evaluation.stats import mcnemar_exact

    out: dict[str, Any] = {"questions": len(rows), "step1_retention": 100 * sum(r["step1_retained"] for r in rows)
                           / max(len(rows), 1), "retention": {}, "mcnemar": {}, "seconds_per_question": {}}
    for name in names:
        out["seconds_per_question"][name] = sum(r["seconds"][name] for r in rows) / max(len(rows), 1)
        for b in budgets:
            key = f"{name}@{b}"
            out["retention"][key] = 100 * sum(r["retained"][key] for r in rows) / max(len(rows), 1)
            if name != ours:
                test = mcnemar_exact([bool(r["retained"][f"{ours}@{b}"]) for r in rows],
                                     [bool(r["retained"][key]) for r in rows])
                out["mcnemar"][key] = test.to_dict()
    return out


def print_table(summary: dict, names: list[str], budgets: list[int], ours: str) -> None:
    print(f"\nAnswer retention (%), {summary['questions']} held-out questions; step 1 keeps the answer in "
          f"{summary['step1_retention']:.1f}%; McNemar of {ours} vs each ranker (only-{ours} / only-other, p)")
    print("| step-2 ranker | " + " | ".join(f"{b} tokens | McNemar {b}" for b in budgets) + " | s/question |")
    print("|---|" + "---:|---:|" * len(budgets) + "---:|")
    for name in names:
        cells = []
        for b in budgets:
            key = f"{name}@{b}"
            m = summary["mcnemar"].get(key)
            cells += [f"{summary['retention'][key]:.1f}",
                      "-" if m is None else f"{m['a_only']}/{m['b_only']}, p={m['p']:.3f}"]
        print(f"| {name} | " + " | ".join(cells) + f" | {summary['seconds_per_question'][name]:.2f} |")


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    from tqdm import tqdm

    from htmlrag.data import load_wtq_html
    from htmlrag.pruning.tokens import load_tokenizer
    from htmlrag_bench.training.split import in_split

    items = [ex for ex in load_wtq_html(args.wtq, order="shuffled") if in_split(ex.id, args.split)]
    items = items[: args.limit] if args.limit else items
    counter = load_tokenizer(args.tokenizer)
    rankers = make_rankers(args)
    step1 = rankers["minilm"] if args.step1 == "minilm" else rankers["bm25"]
    ours = args.ours or (args.gen[-1].partition("=")[0] if args.gen else "minilm")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row
    log.info("%d %s questions, %d already done; rankers %s", len(items), args.split, len(done), list(rankers))
    with open(args.out, "a", encoding="utf-8") as fh:
        for ex in tqdm(items, desc="questions", unit="q"):
            old = done.get(ex.id)
            if old is not None and all(n in old["seconds"] for n in rankers):
                continue
            row = question_row(ex, rankers, step1, args, counter, old)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            done[ex.id] = row
    rows = [done[ex.id] for ex in items if ex.id in done]
    names = list(rankers)
    summary = summarize(rows, names, args.budgets, ours)
    summary.update({"split": args.split, "step1": args.step1, "budget1": args.budget1, "tokenizer": args.tokenizer,
                    "gen": args.gen})
    Path(str(args.out) + ".summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print_table(summary, names, args.budgets, ours)
    return 0


if __name__ == "__main__":
    sys.exit(main())
