"""The vLLM reader on a GPU with a tiny random model (skipped without vllm or CUDA)."""

from __future__ import annotations

from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)

from htmlrag.readers import GenerationConfig, ReadRequest  # noqa: E402
from htmlrag.readers.vllm import VLLMReader  # noqa: E402
from tests.helpers.tiny import save_tiny  # noqa: E402


@pytest.mark.gpu
def test_vllm_reader_greedy_and_window(tmp_path: Path) -> None:
    path = save_tiny(tmp_path, "llama", max_position_embeddings=512)
    reader = VLLMReader(str(path), window=512, generation=GenerationConfig(max_new_tokens=8),
                        gpu_memory_utilization=0.2)
    req = ReadRequest("Who?", "<p>" + "word " * 2000 + "</p>", "html", True)
    a, b = reader.read([req, req])
    assert a.text == b.text and a.prompt_tokens + 8 <= 512
