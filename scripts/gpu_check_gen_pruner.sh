#!/usr/bin/env bash
# GPU check of the generative pruner (one H200-class GPU, < 8 minutes): a random ~1B Llama-shaped model in
# bf16 with sdpa, prompts of 8K and 32K tokens; ms per document, peak memory, ratio to the released strategy.
# Exits 0 with a message when there is no CUDA. Extra arguments go to scripts/gpu_check_gen_pruner.py
# (e.g. --out results/gpu_check_gen_pruner.json). PYTHON selects the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check_gen_pruner: no CUDA device (or no torch) for $PYTHON; skipping the GPU check"
  exit 0
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec timeout 480 "$PYTHON" scripts/gpu_check_gen_pruner.py "$@"
