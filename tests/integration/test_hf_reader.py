"""The transformers reader with tiny randomly initialised models (offline): chat template, greedy decoding,
the context cut with the reader's own tokenizer to fit the window, the response cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from htmlrag.readers import GenerationConfig, ReadRequest, ResponseCache
from htmlrag.readers.hf import HFReader
from tests.helpers.tiny import save_tiny

LONG = "<p>" + " ".join(f"Harrow Point lighthouse fact number {i} is here." for i in range(400)) + "</p>"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny(tmp_path_factory.mktemp("m"), "llama", max_position_embeddings=512)


def test_context_cut_to_window_and_greedy_is_deterministic(tiny: Path) -> None:
    reader = HFReader(str(tiny), window=None, generation=GenerationConfig(max_new_tokens=8))
    assert reader.window == 512  # from the model config
    req = ReadRequest("Who designed it?", LONG, "html", True)
    a, b = reader.read([req, req])
    assert a.text == b.text                                  # greedy
    assert len(a.context) < len(LONG) and LONG.startswith(a.context)
    assert a.prompt_tokens + 8 <= 512                         # prompt + answer fit the window
    assert a.context_tokens == reader.tokenizer.count(a.context)
    prompt = reader.render(reader.messages(reader.fit(req)))
    assert prompt.startswith("<s><|system|>") and prompt.endswith("<|assistant|>\n")  # the chat template


def test_no_chat_template_and_cache(tmp_path: Path) -> None:
    path = save_tiny(tmp_path, "qwen2", chat_template=False, max_position_embeddings=256)
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = HFReader(str(path), window=256, generation=GenerationConfig(max_new_tokens=4), cache=cache)
    req = ReadRequest("What?", "<p>short</p>", "text", False)
    first = reader.read([req])[0]
    assert reader.render(reader.messages(req)).endswith("Answer:")
    again = reader.read([req])[0]
    assert again.cached and again.text == first.text
    sampled = HFReader(str(path), window=256, cache=cache,
                       generation=GenerationConfig(max_new_tokens=4, temperature=0.9, seed=1))
    assert not sampled.read([req])[0].cached


def test_app_runs_with_tiny_hf_reader(tiny: Path, tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            "reader=hf", f"reader.model={tiny}", "reader.window=512", "reader.generation.max_new_tokens=4",
            "ranker=bm25", "metric=short", "dataset.limit=2", "pruner.budget=300", f"pruner.tokenizer={tiny}",
            f"paths.results={tmp_path}/r", f"paths.cache={tmp_path}/c", "run.progress=false"])
    run(cfg)
    (run_dir,) = (tmp_path / "r" / "default").iterdir()
    rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["systems"]["htmlrag"]["error"] is None for r in rows)
    assert all(r["systems"]["htmlrag"]["tokens"] <= 300 for r in rows)
