"""Cleaning, the block tree, BM25 pruning and the command line's start load no model, plotting, statistics,
graph or web library: those are imported inside the functions that need them (docs/architecture.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("torch", "transformers", "sentence_transformers", "pymilvus", "kuzu", "fitz", "pymupdf", "matplotlib",
         "mlflow", "scipy", "statsmodels", "fastapi", "starlette", "uvicorn", "jinja2", "hydra")

_CODE = """
import contextlib, io, json, sys
import htmlrag, htmlrag.cli, htmlrag.html, htmlrag.pruning
from htmlrag import clean_html, build_block_tree
from htmlrag.cli.main import main
from htmlrag.factory import make_pipeline, make_ranker
from htmlrag.pruning.tokens import load_tokenizer
html = open("data/pages/lighthouse.html", encoding="utf-8").read()
tree = build_block_tree(clean_html(html), max_words=64)
pipeline = make_pipeline(make_ranker("bm25"), tokenizer=load_tokenizer(), budget1=400, budget2=200)
assert pipeline.run("Who built the lighthouse?", [html]).context
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["--help"])
    except SystemExit:
        pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_cleaning_bm25_and_the_cli_start_import_no_heavy_library() -> None:
    out = subprocess.run([sys.executable, "-c", _CODE], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "lxml" in loaded  # the walk saw the imports
    assert sorted(loaded & set(HEAVY)) == []
