#!/usr/bin/env bash
# All GPU checks in one go (one H200-class GPU, < 9 minutes), e.g. on a lent machine with no internet:
#   bash scripts/gpu_check_all.sh        (logs and JSON figures go to $OUT, default results/gpu_check)
# If a folder .whl/ exists (wheels of packages missing on that machine: hydra-core, omegaconf, deepspeed, ...),
# they are installed into /tmp/site first. Then, each with its own timeout and going on after a failure:
#   (a) pytest tests/gpu   (b) scripts/gpu_check_gen_pruner.sh   (c) scripts/gpu_check_train.sh (accelerate + ZeRO-3)
# A global deadline (DEVICE_CHECK_BUDGET_S, default 525 s from the start) caps every part, so the whole script
# ends within 9 minutes. The last line is a one-line summary of each part's exit code (124/137 = timed out).
set -u -o pipefail
START=$(date +%s)
DEADLINE=$((START + ${DEVICE_CHECK_BUDGET_S:-525}))
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/results/gpu_check}"
mkdir -p "$OUT"

RC_PIP=none
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    2>&1 | tee "$OUT/pip.log"
  RC_PIP=${PIPESTATUS[0]}
fi
export PYTHONPATH="/tmp/site:$PWD" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled \
  PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false TORCH_EXTENSIONS_DIR=/tmp/torch_extensions

{
  echo "== device"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  echo "== versions"
  timeout 120 python3 - <<'EOF'
import importlib, platform
print("python", platform.python_version())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          "bf16", torch.cuda.is_available() and torch.cuda.is_bf16_supported())
except Exception as e:
    print("torch import FAILED:", type(e).__name__, e)
for name in ("transformers", "accelerate", "peft", "tokenizers", "hydra", "omegaconf", "pydantic", "google.protobuf",
             "deepspeed"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as e:  # reported; the parts below still run
        print(name, "import FAILED:", type(e).__name__, e)
try:
    from htmlrag.core.models import mistral_tokenizer_path
    print("mistral tokenizer file", mistral_tokenizer_path())
except Exception as e:
    print("mistral tokenizer file missing:", e)
EOF
} 2>&1 | tee "$OUT/versions.log"

# run_part NAME LOG NOMINAL_TIMEOUT_S CMD...: the timeout is capped by what is left of the global deadline.
declare -A RC
PARTS=()
run_part() {
  local name=$1 log=$2 nominal=$3; shift 3
  local left=$((DEADLINE - $(date +%s) - 15)) t
  t=$(( nominal < left ? nominal : left ))
  PARTS+=("$name")
  if (( t < 20 )); then
    echo "== $name: skipped, only ${left}s left of the budget" | tee "$OUT/$log"
    RC[$name]=skipped
    return
  fi
  echo "== $name (timeout ${t}s): $*"
  local t0=$(date +%s)
  timeout -k 10 "$t" "$@" 2>&1 | tee "$OUT/$log"
  RC[$name]=${PIPESTATUS[0]}
  echo "== $name: exit ${RC[$name]} after $(( $(date +%s) - t0 ))s"
}

run_part pytest_gpu pytest_gpu.log 150 \
  python3 -m pytest -q -p no:cacheprovider tests/gpu -x --timeout 140 -rs
run_part gen_pruner gen_pruner.log 180 \
  bash scripts/gpu_check_gen_pruner.sh --lengths 8192 32768 --out "$OUT/gpu_check_gen_pruner.json"
run_part train train.log 200 \
  bash scripts/gpu_check_train.sh --out "$OUT/gpu_check_train.json"

for f in "$OUT"/gpu_check_gen_pruner.json "$OUT"/gpu_check_train.json; do
  [ -f "$f" ] && { echo "== $(basename "$f")"; python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$f"; }
done
SUMMARY="SUMMARY pip=$RC_PIP"
for p in "${PARTS[@]}"; do SUMMARY+=" $p=${RC[$p]}"; done
SUMMARY+=" total=$(( $(date +%s) - START ))s"
echo "$SUMMARY" | tee "$OUT/summary.txt"
