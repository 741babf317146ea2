"""Summarise a run of ``htmlrag-bench`` from its ``predictions.jsonl`` (also an unfinished one): the metrics
table with paired t-tests (the same code that writes ``metrics.json``), and the mean context-building seconds
per system.

    python scripts/summarize_run.py results/real_small_wtq/<run-id> [--metrics em hit1]

Only the questions present in ``predictions.jsonl`` count (the row count is printed with the table), so a
partial run gives a paired comparison on the questions it finished.
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
    args = ap.parse_args()
    import yaml

    from htmlrag.summary import summarize, write_tables

    cfg = yaml.safe_load((args.run_dir / "config.yaml").read_text())
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
