"""Measure what each fidelity knob does: answer retention on WTQ-HTML, ``fidelity=paper`` vs ``fidelity=ours``.

Every figure comes from a real ``htmlrag-bench`` run (``experiment=fidelity_wtq``: reader=none, reference-text
EM of the pruned context) saved under ``results/fidelity_wtq/<run-id>/``; this script composes the grid,
runs what is not saved yet (runs resume), reads each run's ``predictions.jsonl`` and compares runs question
by question with the exact McNemar test (:func:`htmlrag.evaluation.stats.mcnemar_exact`)::

    python scripts/fidelity_retention.py                          # BM25, 1K/2K/4K, HTML and text, every knob
    python scripts/fidelity_retention.py --ranker minilm --no-knobs   # MiniLM: paper vs ours only
    python scripts/fidelity_retention.py --limit 30               # a quick look

It prints two Markdown tables (paper vs ours; paper with one knob of ours switched on) with the runs'
folders, the command, the date and the commit, for docs/fidelity.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

log = logging.getLogger("fidelity_retention")

#: One knob of ``ours`` switched on in ``paper`` (override, short name).
KNOBS = [("fidelity.keep_hidden=false", "drop hidden text"), ("fidelity.pack_siblings=true", "sibling packing"),
         ("fidelity.split_to_fill=4", "split to fill"), ("fidelity.split_oversize=true", "split oversize blocks"),
         ("fidelity.fill=skip", "fill: skip"), ("fidelity.ranking_context=true", "heading context"),
         ("fidelity.page_prior=0.5", "page prior 0.5")]


def compose(overrides: list[str]):
    from hydra import compose as hcompose
    from hydra import initialize_config_dir

    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hcompose("config", overrides=overrides)


def run_one(overrides: list[str]) -> Path:
    """Run (or resume, or find) the configuration; returns its run folder."""
    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import validate
    from htmlrag_bench.eval.systems import build

    cfg = compose(overrides)
    validate(cfg)
    store = build.make_store(cfg)
    if not (store.dir / "metrics.json").is_file():
        log.info("running %s", " ".join(overrides))
        run(compose(overrides))
    return store.dir


def retained(run_dir: Path) -> dict[str, bool]:
    rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines() if x.strip()]
    out = {}
    for r in rows:
        rec = next(iter(r["systems"].values()))
        if r.get("error") or rec.get("error"):
            raise SystemExit(f"{run_dir}: question {r['id']} failed: {r.get('error') or rec.get('error')}")
        out[r["id"]] = bool(rec["scores"]["ref_em"])
    return out


def compare(a: dict[str, bool], b: dict[str, bool]) -> str:
    from htmlrag.evaluation.stats import mcnemar_exact

    ids = sorted(set(a) & set(b))
    t = mcnemar_exact([b[i] for i in ids], [a[i] for i in ids])
    return f"{t.a_only} / {t.b_only}, p = {t.p:.2g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranker", default="bm25", help="ranker option (bm25, minilm)")
    ap.add_argument("--budgets", default="1024,2048,4096")
    ap.add_argument("--fmts", default="html,text")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--no-knobs", action="store_true", help="only paper vs ours")
    ap.add_argument("--knob-budgets", default="2048", help="budgets of the one-knob runs (every format)")
    ap.add_argument("--results", default=str(ROOT / "results"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    base = ["experiment=fidelity_wtq", f"ranker={args.ranker}", f"paths.results={args.results}", "run.progress=false"]
    if args.limit:
        base.append(f"dataset.limit={args.limit}")
    grid = [(b, f) for f in args.fmts.split(",") for b in map(int, args.budgets.split(","))]
    runs: dict[tuple, Path] = {}
    for b, f in grid:
        point = [f"pruner.budget={b}", f"pruner.fmt={f}"]
        for fid in ("paper", "ours"):
            runs[(b, f, fid)] = run_one([*base, *point, f"fidelity={fid}"])
    knob_grid = [] if args.no_knobs else [(b, f) for b, f in grid if str(b) in args.knob_budgets.split(",")]
    for b, f in knob_grid:
        for ov, _ in KNOBS:
            runs[(b, f, ov)] = run_one([*base, f"pruner.budget={b}", f"pruner.fmt={f}", "fidelity=paper", ov])
    ret = {k: retained(v) for k, v in runs.items()}
    envs = [json.loads((v / "env.json").read_text()) for v in runs.values()]
    commits = sorted({f"{e.get('git_commit', '?')[:7]}{' (dirty)' if e.get('git_dirty') else ''}" for e in envs})
    n = len(next(iter(ret.values())))
    print(f"\n{args.ranker}, {n} questions, `{' '.join(sys.argv)}`, {dt.date.today()}, runs started at commit "
          f"{', '.join(commits)}\n")
    print("| format | budget | paper | ours | only ours / only paper, McNemar p |")
    print("|---|---:|---:|---:|---:|")
    for b, f in grid:
        p, o = ret[(b, f, "paper")], ret[(b, f, "ours")]
        print(f"| {f} | {b} | {sum(p.values()) / len(p):.3f} | {sum(o.values()) / len(o):.3f} | {compare(p, o)} |")
    if knob_grid:
        print("\nPaper with one knob of ours (retention; vs paper: only knob / only paper, McNemar p):\n")
        head = [f"{f} {b}" for b, f in knob_grid]
        print("| knob | " + " | ".join(head) + " |")
        print("|---|" + "---:|" * len(head))
        for ov, name in KNOBS:
            cells = []
            for b, f in knob_grid:
                p, k = ret[(b, f, "paper")], ret[(b, f, ov)]
                cells.append(f"{sum(k.values()) / len(k):.3f} ({compare(p, k)})")
            print(f"| {name} (`{ov}`) | " + " | ".join(cells) + " |")
    print("\nRuns:")
    for k, v in runs.items():
        print(f"- {k}: {v.relative_to(ROOT) if v.is_relative_to(ROOT) else v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
