#!/usr/bin/env bash
# The core's lowest allowed dependency versions work: install htmlrag-bench (no extras, no torch) with every
# direct dependency at the floor pyproject.toml states (uv's --resolution lowest-direct), then run the tests of
# what the core does without torch: cleaning, block trees, BM25 pruning, the command line, page reading.
# Usage: scripts/check_floors.sh [VENV]   (default /tmp/htmlrag-floors; needs network access to PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/htmlrag-floors}
UV=${UV:-uv}
command -v "$UV" >/dev/null || { python3 -m venv "$VENV-uv" && "$VENV-uv/bin/pip" install -q uv && UV="$VENV-uv/bin/uv"; }
rm -rf "$VENV"
"$UV" venv -q "$VENV"
"$UV" pip install -q --python "$VENV/bin/python" --resolution lowest-direct -e . \
    "pytest>=8" "pytest-timeout>=2.3" "pytest-xdist>=3.6" "hypothesis>=6.100"
"$VENV/bin/python" -c "import importlib.metadata as m
print('floors:', ', '.join(f'{p} {m.version(p)}' for p in ('lxml', 'webencodings', 'numpy', 'bm25s', 'PyStemmer',
      'markdownify', 'tqdm', 'filelock', 'tokenizers', 'sentencepiece', 'transformers', 'mistral-common')))"
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -q -n auto -p no:cacheprovider \
    tests/unit/test_light_imports.py tests/unit/test_clean.py tests/unit/test_blocktree.py tests/unit/test_nesting.py \
    tests/unit/test_prune.py tests/unit/test_prune_batch.py tests/unit/test_prune_rows.py tests/unit/test_cli.py \
    tests/unit/test_encoding.py tests/unit/test_page_reader.py tests/unit/test_tokens.py tests/unit/test_deep_pages.py \
    tests/unit/test_atomic_files.py tests/unit/test_redact.py
