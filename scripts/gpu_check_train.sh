#!/usr/bin/env bash
# GPU check of pruner training (one H200-class GPU, < 8 minutes): DeepSpeed ZeRO-3 on one GPU, a random
# ~0.5B Llama-shaped model, samples of ~8K tokens, 20 steps; prints tokens/s and peak GPU memory.
# Exits 0 with a message when there is no CUDA. Extra arguments go to scripts/gpu_check_train.py
# (e.g. --out results/gpu_check_train.json). PYTHON selects the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check_train: no CUDA device (or no torch) for $PYTHON; skipping the GPU check"
  exit 0
fi
if ! "$PYTHON" -c "import deepspeed" 2>/dev/null; then
  echo "gpu_check_train: DeepSpeed is not installed for $PYTHON (pip install 'htmlrag-bench[train]')" >&2
  exit 1
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# The real multi-GPU launch path with one process: accelerate + conf/accelerate/zero3.yaml.
exec timeout 480 "$PYTHON" -m accelerate.commands.launch --config_file conf/accelerate/zero3.yaml \
  --num_processes 1 scripts/gpu_check_train.py "$@"
