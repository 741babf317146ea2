"""Summarise a run of ``htmlrag-bench`` from its ``predictions.jsonl`` (also an unfinished one): the metrics
table with paired t-tests (the same code that writes ``metrics.json``), and the mean context-building seconds
per system.

    python scripts/summarize_run.py results/real_small_wtq/<run-id> [--metrics em hit1]

Only the questions present in ``predictions.jsonl`` count (the row count is printed with the table), so a
partial run gives a paired comparison on the questions it finished.

``--against OTHER_RUN``: also compare the two runs system by system (the systems both ran) on the questions
both answered (matched by question id), each metric's mean in each run and the paired two-sided t-test
between them, e.g. the same experiment under ``fidelity=paper`` and ``fidelity=ours``::

    python scripts/summarize_run.py results/real_small_wtq/<paper run> --against results/real_small_wtq/<ours run>
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--metrics", nargs="*", default=None)
    ap.add_argument("--against", type=Path, default=None, help="another run: system-by-system paired t-tests")
    args = ap.parse_args()
    from htmlrag.evaluation.runs import load_yaml
    from htmlrag.evaluation.summary import summarize, write_tables

    cfg = load_yaml((args.run_dir / "config.yaml").read_text(encoding="utf-8"))
    rows = [json.loads(x) for x in (args.run_dir / "predictions.jsonl").read_text().splitlines() if x.strip()]
    systems = [cfg["system_name"], *cfg.get("baselines", {})]
    metrics = args.metrics or [m if isinstance(m, str) else m["name"] for m in cfg["metric"]["names"]]
    summary = summarize(rows, systems, metrics, ours=cfg["system_name"], experiment=cfg["name"],
                        run_id=args.run_dir.name, dataset=cfg["dataset"]["name"], alpha=cfg["metric"]["alpha"])
    out = args.run_dir / "tables-partial"
    out.mkdir(exist_ok=True)
    paths = write_tables([summary], out, metrics, caption=f"{cfg['name']} ({len(rows)} questions)")
    print(f"{len(rows)} questions in {args.run_dir}")
    print(paths["md"].read_text())
    print("| system | context seconds / question |\n|---|---:|")
    for s in systems:
        secs = [r["systems"][s]["seconds"] for r in rows if s in r["systems"] and "seconds" in r["systems"][s]]
        print(f"| {s} | {sum(secs) / max(len(secs), 1):.2f} |")
    (out / "metrics-partial.json").write_text(json.dumps(summary, indent=2) + "\n")
    if args.against is not None:
        print(compare_runs(args.run_dir, rows, args.against, systems, metrics))
    return 0


def compare_runs(run_dir: Path, rows: list[dict], other_dir: Path, systems: list[str], metrics: list[str]) -> str:
    """Markdown: per system both runs ran and metric, the two means over the questions both answered (by id)
    and the paired two-sided t-test p-value."""
    from htmlrag.evaluation.stats import paired_ttest

    lines_b = (other_dir / "predictions.jsonl").read_text().splitlines()
    other = {r["id"]: r for r in (json.loads(x) for x in lines_b if x.strip())}  # as this run's rows are read
    mine = {r["id"]: r for r in rows}
    lines = [f"{run_dir.name} (A) vs {other_dir.name} (B), paired by question id",
             "| system | metric | questions | A | B | A - B | t-test p |", "|---|---|---:|---:|---:|---:|---:|"]
    for s in systems:
        ids = [i for i in mine if i in other and s in mine[i]["systems"] and s in other[i]["systems"]
               and not mine[i]["systems"][s].get("error") and not other[i]["systems"][s].get("error")]
        if not ids:
            continue
        for m in metrics:
            a = [float(mine[i]["systems"][s]["scores"][m]) for i in ids]
            b = [float(other[i]["systems"][s]["scores"][m]) for i in ids]
            t = paired_ttest(a, b)
            ma, mb = 100 * sum(a) / len(a), 100 * sum(b) / len(b)
            p = "-" if t.p is None else f"{t.p:.3f}"
            lines.append(f"| {s} | {m} | {len(ids)} | {ma:.2f} | {mb:.2f} | {ma - mb:+.2f} | {p} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
