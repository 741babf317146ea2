"""``scripts/bench_prune.py`` times our pipeline in a fresh process (as it times the peer): that process must run
exactly the pipeline the in-process rows run, with every option passed on."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from tests.conftest import shared_path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_prune", ROOT / "scripts" / "bench_prune.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("split_to_fill, budget, prior", [(4, 512, 0.5), (0, 256, 3.0)])
def test_fresh_speed_process_runs_the_same_pipeline(split_to_fill, budget, prior):
    bench = _bench()
    data = shared_path() / "wtq-html-qa"
    items = bench.load_items(data, 3)
    args = argparse.Namespace(
        data=str(data), max_words=64, embed_max_words=128, embed_dtype="float32", embed_max_seq=128,
        page_prior=prior, embed_page_prior=0.0, split_to_fill=split_to_fill, repeats=1, no_pack=False,
        speed_process="same")
    tok = bench.load_tokenizer()
    ranker = bench.make_ranker("bm25", args)
    same = bench.speed_ours(args, "bm25", budget, items, ranker, tok, 64)
    args.speed_process = "fresh"
    fresh = bench.speed_ours(args, "bm25", budget, items, ranker, tok, 64)
    for (r_same, s_same, t_same), (r_fresh, s_fresh, t_fresh) in zip(same, fresh, strict=True):
        assert (r_fresh, t_fresh) == (r_same, t_same)  # same retention and tokens: same pipeline
        assert s_fresh > 0 and s_same > 0
        assert t_same <= budget


def test_default_settings_rows_run_the_clis_pipeline():
    """``--defaults`` times exactly what ``htmlrag prune --ranker bm25 --budget B`` runs, in both processes."""
    bench = _bench()
    data = shared_path() / "wtq-html-qa"
    items = bench.load_items(data, 2)
    args = argparse.Namespace(data=str(data), max_words=128, embed_max_words=128, embed_dtype="auto",
                              embed_max_seq=None, page_prior=0.0, embed_page_prior=0.0, split_to_fill=4, repeats=1,
                              no_pack=False, speed_process="same", defaults=True)
    tok = bench.load_tokenizer()
    ranker = bench.default_ranker("bm25")
    pipe, cli = bench.cli_default_pipeline("bm25", 512)
    assert cli.max_words == 256 and pipe.max_words1 == 256 and pipe.split_to_fill == cli.split_to_fill
    same = bench.speed_ours(args, "bm25", 512, items, ranker, tok, cli.max_words)
    args.speed_process = "fresh"
    fresh = bench.speed_ours(args, "bm25", 512, items, ranker, tok, cli.max_words)
    expected = []
    for it in items:
        res = pipe.run(it["question"], it["pages"])
        expected.append(res.tokens)
    for (r_same, _, t_same), (r_fresh, _, t_fresh) in zip(same, fresh, strict=True):
        assert (r_fresh, t_fresh) == (r_same, t_same) and t_same == sum(expected) / len(expected)
