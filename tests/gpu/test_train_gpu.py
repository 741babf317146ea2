"""Pruner training on CUDA with DeepSpeed ZeRO-3 (skipped without CUDA or DeepSpeed): a small version of
scripts/gpu_check_train.py, which the GPU check runs at full size (~0.5B model, 8K tokens, 20 steps). 6K tokens: each
synthetic answer page alone is ~4.8K tokens of the tiny test tokenizer, so shorter samples cannot be built."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def test_zero3_trains_on_one_gpu_and_reports_speed(tmp_path):
    from scripts.gpu_check_train import main

    out = main(["--steps", "4", "--seq-len", "6144", "--layers", "2", "--hidden", "256", "--vocab", "1000",
                "--workdir", str(tmp_path), "--out", str(tmp_path / "figures.json")])
    assert out["steps"] == 4 and out["tokens_per_s_overall"] > 0 and out["peak_memory_gib"] > 0
    assert (tmp_path / "out" / "final" / "config.json").is_file()  # ZeRO-3 gathered the weights for the export
