"""Cost of a budget frontier: one ``htmlrag-bench`` run with ``pruner.budgets=[...]`` (each question ranked once,
every budget filled from that ranking) against a one-budget run, and against the naive way, one run per budget.

    python scripts/bench_frontier.py --ranker bm25            # 300 WTQ-HTML questions, budgets 512..8192
    python scripts/bench_frontier.py --ranker minilm --limit 100

Each configuration runs as its own ``htmlrag-bench`` process (experiment ``fidelity_wtq``: one-step block-tree
pruning, reader=none, reference-text EM, waterfall and cost ledger on), with every cache off
(``run.use_cache=false``), so each computes everything. The figure is the evaluation loop's time
(``timings.json``: ``rank0_eval_seconds``, what a frontier adds to), with the whole process's time beside it
(model loading included). Prints ours (the five-budget run), the one-budget run, their ratio (the goal: at most
1.5x), the naive five runs (the peer: the sum of one run per budget) and its ratio to ours; and checks that the
frontier's per-question scores equal the separate runs' at every budget.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANKERS = {"bm25": "ranker=bm25", "minilm": "ranker=minilm"}


def run(args: argparse.Namespace, results: Path, *extra: str) -> tuple[dict, Path]:
    """One ``htmlrag-bench`` process; returns its timings and run folder."""
    cmd = [sys.executable, "-m", "htmlrag_bench.eval.app", "experiment=fidelity_wtq", RANKERS[args.ranker],
           f"fidelity={args.fidelity}", f"dataset.loader.root={args.data}", f"dataset.limit={args.limit}",
           f"paths.results={results}", "run.use_cache=false", "run.progress=false", *extra]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode != 0:
        raise SystemExit(f"run failed: {' '.join(cmd)}\n{out.stderr[-3000:]}")
    (folder,) = [p for p in (results / "fidelity_wtq").iterdir() if p.is_dir()]
    return json.loads((folder / "timings.json").read_text()), folder


def scores(folder: Path) -> dict[tuple[str, str], float]:
    """``{(question id, row key): ref_em}`` of a run."""
    out = {}
    for line in (folder / "predictions.jsonl").read_text().splitlines():
        r = json.loads(line)
        for name, rec in r["systems"].items():
            out[(r["id"], name)] = rec["scores"]["ref_em"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranker", choices=sorted(RANKERS), default="bm25")
    ap.add_argument("--fidelity", choices=["ours", "paper"], default="ours")
    ap.add_argument("--budgets", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    ap.add_argument("--single", type=int, default=4096, help="the one-budget run's budget")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "wtq-html-qa"))
    ap.add_argument("--no-naive", action="store_true", help="skip the five separate runs (the peer)")
    args = ap.parse_args()
    if not Path(args.data).is_dir():
        raise SystemExit(f"no WTQ-HTML data at {args.data} (--data; htmlrag-data download wtq_html_qa)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-frontier-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # the runs' folders go with the process
    budgets = "[" + ",".join(map(str, args.budgets)) + "]"
    one, _ = run(args, tmp / "one", f"pruner.budget={args.single}")
    five, five_dir = run(args, tmp / "five", f"pruner.budgets={budgets}")
    naive, same = 0.0, True
    naive_total = 0.0
    frontier = scores(five_dir)
    if not args.no_naive:
        for b in args.budgets:
            t, folder = run(args, tmp / f"naive{b}", f"pruner.budget={b}")
            naive += t["rank0_eval_seconds"]
            naive_total += t["seconds"]
            same &= all(frontier[(qid, f"pruned@{b}")] == v for (qid, _), v in scores(folder).items())
    ratio = five["rank0_eval_seconds"] / one["rank0_eval_seconds"]
    print(f"bench_frontier: ranker {args.ranker}, fidelity {args.fidelity}, {args.limit} WTQ-HTML questions, "
          f"budgets {args.budgets} (one-budget run at {args.single}); caches off; loop seconds (whole process)")
    print("| configuration | seconds | seconds / question | ratio to one budget |\n|---|---:|---:|---:|")
    rows = [("one budget", one), (f"{len(args.budgets)} budgets, one ranking (ours)", five)]
    for name, t in rows:
        s = t["rank0_eval_seconds"]
        print(f"| {name} | {s:.1f} ({t['seconds']:.1f}) | {s / args.limit:.3f} | "
              f"{s / one['rank0_eval_seconds']:.2f}x |")
    if not args.no_naive:
        print(f"| {len(args.budgets)} separate runs (peer) | {naive:.1f} ({naive_total:.1f}) | "
              f"{naive / args.limit:.3f} | {naive / one['rank0_eval_seconds']:.2f}x |")
    print(f"five-budget / one-budget: {ratio:.2f}x (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
    if not args.no_naive:
        print(f"separate runs / frontier: {naive / five['rank0_eval_seconds']:.2f}x; frontier scores equal the "
              f"separate runs' at every budget: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
