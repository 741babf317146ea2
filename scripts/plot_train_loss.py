"""Plot a training run's loss curve (PNG) from its ``trainer_state.json`` / ``train_result.json``.

    python scripts/plot_train_loss.py results/train/gemma3_270m_pruner --out docs/img/gemma3_270m_pruner_loss.png

Reads the logged ``(step, loss)`` pairs of the latest complete checkpoint's ``trainer_state.json`` (or of
``train_result.json`` when the run finished), and draws them with a moving average.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def losses(run_dir: Path) -> list[tuple[int, float]]:
    """``(step, loss)`` pairs of the run (finished result first, else the latest complete checkpoint)."""
    from htmlrag_bench.training.checkpoints import latest_checkpoint

    result = run_dir / "train_result.json"
    if result.is_file():
        return [(int(s), float(v)) for s, v in json.loads(result.read_text())["losses"]]
    ckpt = latest_checkpoint(run_dir)
    if ckpt is None:
        raise SystemExit(f"{run_dir}: no train_result.json and no complete checkpoint")
    state = json.loads((ckpt / "trainer_state.json").read_text())
    return [(int(e["step"]), float(e["loss"])) for e in state["log_history"] if "loss" in e]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--title", default=None)
    ap.add_argument("--window", type=int, default=5, help="moving-average window in logged steps")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = losses(args.run_dir)
    steps, vals = [s for s, _ in pts], [v for _, v in pts]
    w = max(1, min(args.window, len(vals)))
    avg = [sum(vals[max(0, i - w + 1): i + 1]) / len(vals[max(0, i - w + 1): i + 1]) for i in range(len(vals))]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(steps, vals, ".", alpha=0.5, label="training loss (one sample per step)")
    ax.plot(steps, avg, "-", label=f"moving average ({w} steps)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy on answer tokens (nats)")
    ax.set_title(args.title or args.run_dir.name)
    ax.legend()
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"{len(pts)} logged steps, first {vals[0]:.3f}, last {vals[-1]:.3f} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
