"""Answer retention of the default MiniLM pruning (`htmlrag prune --ranker embed`, no flags) with the
embedding ranker's ``candidates`` = each of ``--candidates`` (``all``: every block embedded, the paper's
ranker) on the WTQ-HTML questions, at 512/1024/2048/4096 tokens; exact McNemar tests of each count against
``--ref`` (default ``all``; a count given in ``--candidates`` or found in ``--out``'s earlier hits).
Embeddings are cached across the passes, so this measures retention, not speed (speed:
``bench_prune.py --defaults``). ``--out`` keeps the hits already in that file for counts not run again.

    python scripts/eval_embed_candidates.py --limit 300 --candidates all,16 --out results/embed_candidates.json
    python scripts/eval_embed_candidates.py --limit 300 --candidates 16,12,8 --ref 16 --out results/embed_candidates.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_prune as bp

from htmlrag.evaluation.stats import mcnemar_exact
from htmlrag.pruning.tokens import load_tokenizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(bp.DATA))
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--candidates", default="all,16")
    ap.add_argument("--budgets", default="512,1024,2048,4096")
    ap.add_argument("--out", default=None, help="JSON of per-question hits, keyed 'COUNT/BUDGET'")
    ap.add_argument("--ref", default="all", help="the count the others are tested against (default: all)")
    args = ap.parse_args()
    items = bp.load_items(Path(args.data), args.limit)
    ranker = bp._base_ranker(bp.default_ranker("embed"))
    tok = load_tokenizer()
    _, cli = bp.cli_default_pipeline("embed", 512)
    counts = [None if x == "all" else int(x) for x in args.candidates.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    hits: dict[str, list[bool]] = {}
    if args.out and Path(args.out).is_file():
        hits = {k: v for k, v in json.loads(Path(args.out).read_text()).items() if len(v) == len(items)}
    for c in counts:
        ranker.candidates = c
        for b in budgets:
            key = f"{c or 'all'}/{b}"
            hits[key] = bp.run_ours(items, ranker, b, tok, cli.max_words, "html", warm=True, keep=True, defaults=True)[3]
            print(f"candidates {c or 'all'}, budget {b}: retention {sum(hits[key]) / len(items):.3f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(hits))
    print(f"\n{len(items)} questions; block size {cli.max_words} words (the CLI's)")
    ref_name = "every block" if args.ref == "all" else f"{args.ref} candidates"
    print(f"| candidates | budget | retention | only this / only {ref_name} | exact McNemar p |")
    print("|---|---:|---:|---:|---:|")
    for c in counts:
        for b in budgets:
            h = hits[f"{c or 'all'}/{b}"]
            if str(c or "all") == args.ref:
                print(f"| {c or 'every block'} | {b} | {sum(h) / len(h):.3f} | - | - |")
                continue
            ref = hits.get(f"{args.ref}/{b}")
            m = mcnemar_exact(h, ref) if ref else None
            cmp_ = f"{m.a_only} / {m.b_only} | {m.p:.2g}" if m else "- | -"
            print(f"| {c} | {b} | {sum(h) / len(h):.3f} | {cmp_} |")


if __name__ == "__main__":
    main()
