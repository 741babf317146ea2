"""`htmlrag prune --ranker2 gen`: the two-step pipeline with a generative pruner (tiny random model)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from htmlrag.cli.main import main
from htmlrag.pruning.pipeline import HtmlRagPipeline
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.bm25 import BM25Ranker
from htmlrag.rankers.generative import GenerativeRanker
from tests.helpers.tiny import save_tiny

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "pages"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("gen"), "llama")


def test_cli_two_step_with_generative_pruner(tiny_dir, capsys):
    code = main(["prune", str(SAMPLES / "lighthouse.html"), str(SAMPLES / "river-festival.html"),
                 "-q", "Who designed the lighthouse?", "--ranker", "bm25", "--budget1", "400",
                 "--ranker2", "gen", "--gen-model", str(tiny_dir), "--gen-dtype", "float32",
                 "--gen-truncation", "left", "--budget", "120", "--max-words2", "32"])
    out = capsys.readouterr().out
    assert code == 0
    tok = load_tokenizer()
    assert 0 < tok.count(out.strip()) <= 120
    assert out.startswith("<html>")


def test_pipeline_reports_generative_accounting(tiny_dir):
    gen = GenerativeRanker(str(tiny_dir), dtype="float32", truncation="left")
    pipe = HtmlRagPipeline(BM25Ranker(), gen, load_tokenizer(), budget1=400, budget2=150, max_words2=32)
    res = pipe.run("How many steps?", [(SAMPLES / "lighthouse.html").read_bytes()])
    assert res.tokens <= 150 and "step2" in res.stages
    assert res.ranker_stats, "the generative ranker's accounting is passed through"


def test_gen_ranker_needs_a_model(capsys):
    assert main(["prune", str(SAMPLES / "lighthouse.html"), "-q", "q", "--ranker", "gen"]) == 1
    assert "--gen-model" in capsys.readouterr().err
