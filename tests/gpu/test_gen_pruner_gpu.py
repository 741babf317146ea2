"""The generative pruner walk on CUDA (skipped without it): exactness in float32 and the GPU check script."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

from htmlrag.rankers.token_tree import score_paths  # noqa: E402
from tests.helpers.naive import naive_path_scores  # noqa: E402
from tests.helpers.tiny import ARCHS, tiny_causal_lm, tiny_tokenizer  # noqa: E402

PATHS = ["<html><body><div0><p>", "<html><body><div1><p>", "<html><body><div1><table><tr0>",
         "<html><body><div1><table><tr1>", "<html><title>", "<html><body><div10><ul>"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("batch_size", [1, 32])
def test_cuda_walk_equals_naive_in_float32(arch, batch_size):
    tok = tiny_tokenizer()
    model = tiny_causal_lm(arch, tok, seed=1).to("cuda")
    prompt = tok.encode(tok.apply_chat_template([{"role": "user", "content": "<p>Which row?</p>"}],
                                                tokenize=False, add_generation_prompt=True), add_special_tokens=False)
    paths = [tok.encode(p, add_special_tokens=False) for p in PATHS]
    ours, _ = score_paths(model, prompt, paths, batch_size=batch_size)
    assert np.abs(ours - naive_path_scores(model, prompt, paths)).max() <= 1e-4


def test_gpu_check_script_reports_a_speed_up():
    from scripts.gpu_check_gen_pruner import main

    out = main(["--shape", "smoke", "--lengths", "2048", "--repeats", "1", "--released-samples", "2"])
    row = out["lengths"]["2048"]
    assert row["prompt_tokens"] == 2048 and row["peak_mem_gib"] > 0
    assert row["tokens_ratio"] > 1 and row["time_ratio"] > 1
