#!/usr/bin/env bash
# The lowest allowed dependency versions work: install htmlrag-bench with every direct dependency at the floor
# pyproject.toml states (uv's --resolution lowest-direct), then run the tests of what that install does.
#
#   scripts/check_floors.sh [VENV]            the core (no extras, no torch): cleaning, block trees, BM25
#                                             pruning, the command line, page reading
#   EXTRAS=eval,embed,graph,app,gen,baselines,mlflow,data,ocr scripts/check_floors.sh [VENV]
#                                             those extras at their floors too, torch held at $TORCH (default
#                                             2.13.0: torch's own lowest builds are multi-GB CUDA builds), and
#                                             the whole suite but training (the train extra needs DeepSpeed)
# Needs network access to PyPI. Default VENV /tmp/htmlrag-floors (or /tmp/htmlrag-floors-extras).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=${EXTRAS:-}
VENV=${1:-/tmp/htmlrag-floors${EXTRAS:+-extras}}
UV=${UV:-uv}
command -v "$UV" >/dev/null || { python3 -m venv "$VENV-uv" && "$VENV-uv/bin/pip" install -q uv && UV="$VENV-uv/bin/uv"; }
rm -rf "$VENV"
"$UV" venv -q "$VENV"
DEV=("pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.6" "hypothesis>=6.100")
if [ -z "$EXTRAS" ]; then
  "$UV" pip install -q --python "$VENV/bin/python" --resolution lowest-direct -e . "${DEV[@]}"
  PKGS="'lxml', 'webencodings', 'numpy', 'bm25s', 'PyStemmer', 'markdownify', 'tqdm', 'filelock', 'tokenizers',
        'sentencepiece', 'transformers', 'mistral-common'"
  TESTS=(tests/unit/test_light_imports.py tests/unit/test_clean.py tests/unit/test_blocktree.py
         tests/unit/test_nesting.py tests/unit/test_prune.py tests/unit/test_prune_batch.py tests/unit/test_prune_rows.py
         tests/unit/test_cli.py tests/unit/test_encoding.py tests/unit/test_page_reader.py tests/unit/test_tokens.py
         tests/unit/test_deep_pages.py tests/unit/test_atomic_files.py tests/unit/test_redact.py)
else
  OVERRIDE=$(mktemp)
  echo "torch==${TORCH:-2.13.0}" > "$OVERRIDE"
  "$UV" pip install -q --python "$VENV/bin/python" --resolution lowest-direct --override "$OVERRIDE" \
      -e ".[$EXTRAS]" "${DEV[@]}" "apted>=1.0.3" "playwright>=1.45"
  PKGS="'torch', 'transformers', 'sentence-transformers', 'hydra-core', 'datasets', 'pandas', 'scipy', 'statsmodels',
        'numpy', 'pymupdf', 'kuzu', 'pymilvus', 'fastapi', 'starlette', 'python-multipart', 'matplotlib', 'accelerate',
        'llmlingua', 'mlflow'"
  TESTS=(tests --deselect tests/integration/test_wheel.py --ignore tests/integration/test_train_tiny.py
         --ignore tests/integration/test_train_flows.py --ignore tests/configs/test_train_configs.py)
fi
"$VENV/bin/python" -c "import importlib.metadata as m
def v(p):
    try:
        return m.version(p)
    except m.PackageNotFoundError:
        return '-'
print('floors:', ', '.join(f'{p} {v(p)}' for p in ($PKGS)))"
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -q -n auto -p no:cacheprovider "${TESTS[@]}"
