"""Training a tiny randomly initialised Llama-shaped pruner on CPU: the loss falls, the export loads into the
generative ranker and ranks the answer blocks first, LoRA merges, a killed run resumes from its checkpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("hydra")

from hydra import compose, initialize_config_dir

from htmlrag.core.errors import HtmlRagError
from htmlrag.html.blocktree import build_block_tree
from htmlrag.pruning.tokens import HFCounter
from htmlrag.rankers.generative import GenerativeRanker, block_paths, path_string
from htmlrag_bench.training.data import write_jsonl
from htmlrag_bench.training.samples import BuildSettings, build_samples
from htmlrag_bench.training.schemas import CONF_DIR, register_configs
from htmlrag_bench.training.train import train
from tests.conftest import ROOT
from tests.helpers.tiny import save_tiny, tiny_tokenizer
from tests.helpers.train_items import synthetic_items

register_configs()
MAX_WORDS = 16


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A tiny Llama folder and the synthetic items' samples (built with the tiny tokenizer's counts)."""
    root = tmp_path_factory.mktemp("train")
    model = save_tiny(root, "llama")
    samples, stats = build_samples(synthetic_items(), HFCounter(tiny_tokenizer(), "tiny"),
                                   BuildSettings(max_words=MAX_WORDS))
    assert stats.samples == 6
    write_jsonl(samples, root / "data" / "syn-1k.jsonl")
    return root, model, samples


def _cfg(root: Path, model: Path, out: str, *extra: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("train_config", overrides=["train=tiny", f"train.model={model}", f"data.paths=[{root}/data]",
                                                  f"output_dir={root}/{out}", "progress=false", *extra])


def _top1_hits(model_path: str | Path) -> int:
    """How many synthetic items the ranker scores with their answer block first."""
    ranker = GenerativeRanker(str(model_path))
    hits = 0
    for item, sample in zip(synthetic_items(), _samples()):
        trees = [build_block_tree(p, max_words=MAX_WORDS, clean=True) for p in item.pages]
        scores = np.concatenate(ranker.score(item.question, trees))
        assert scores.shape == (sum(len(t.blocks) for t in trees),) and np.all(np.isfinite(scores))
        paths = [path_string(p) for p in block_paths(trees)]
        hits += paths[int(scores.argmax())] == sample["target_path"]
    return hits


def _samples():
    return build_samples(synthetic_items(), HFCounter(tiny_tokenizer(), "tiny"), BuildSettings(max_words=MAX_WORDS))[0]


def test_tiny_pruner_learns_and_loads_as_the_ranker(workdir):
    root, model, _ = workdir
    result = train(_cfg(root, model, "full", "train.max_steps=30"))
    first, last = result.losses[0][1], result.losses[-1][1]
    print(f"tiny Llama pruner, 30 steps: first loss {first:.3f}, last loss {last:.3f} ({last / first:.0%})")
    assert result.global_step == 30 and [s for s, _ in result.losses] == list(range(1, 31))
    assert last < 0.7 * first
    assert result.samples == 6 and result.dropped_over_length == 0
    export = Path(result.export_dir)
    assert (export / "config.json").is_file() and (export / "tokenizer_config.json").is_file()
    before, after = _top1_hits(model), _top1_hits(export)
    print(f"answer block ranked first: {before}/6 before training, {after}/6 after")
    assert after >= 4 and after > before
    saved = json.loads((root / "full" / "train_result.json").read_text())
    assert saved["global_step"] == 30 and saved["config"]["train"]["name"] == "tiny"
    assert saved["export_dir"] == "./final" and saved["config"]["output_dir"] == "."  # no path of this machine
    assert str(root) not in json.dumps({k: saved[k] for k in ("export_dir", "resumed_from")})


def test_lora_is_merged_at_export(workdir):
    pytest.importorskip("peft")
    import torch
    from transformers import AutoModelForCausalLM

    root, model, _ = workdir
    result = train(_cfg(root, model, "lora", "train.max_steps=6", "train.lora.enabled=true", "train.lora.r=8",
                        "train.lora.alpha=16", "train.learning_rate=1e-2"))
    export = Path(result.export_dir)
    assert not (export / "adapter_config.json").exists() and (root / "lora" / "adapter" / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(export)
    base = AutoModelForCausalLM.from_pretrained(model)
    assert set(merged.state_dict()) == set(base.state_dict())  # plain weights, no lora_ modules
    changed = [k for k, v in merged.state_dict().items() if not torch.equal(v, base.state_dict()[k])]
    assert any("q_proj" in k for k in changed)
    GenerativeRanker(str(export)).score("Who built the old mill?", [build_block_tree(
        synthetic_items()[0].pages[0], max_words=MAX_WORDS, clean=True)])


def test_killed_run_resumes_from_its_checkpoint(workdir):
    """SIGKILL a training process once it has written a checkpoint (a second run on its folder meanwhile is
    refused); the next run continues the step count."""
    root, model, _ = workdir
    out = root / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "htmlrag_bench.training.train", "train=tiny", f"train.model={model}", f"data.paths=[{root}/data]",
           f"output_dir={out}", "progress=false", "train.max_steps=10000", "train.save_steps=3"]
    log = open(root / "killed.log", "w+b")  # a file, not a pipe: a full pipe would stall the process
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    from htmlrag_bench.training.checkpoints import latest_checkpoint

    deadline = time.monotonic() + 120
    try:
        while latest_checkpoint(out) is None:
            assert proc.poll() is None, (root / "killed.log").read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.05)
        # the same job resubmitted while the first still runs: stopped before it writes anything
        before = sorted(p.name for p in out.iterdir())
        with pytest.raises(HtmlRagError, match=rf"output_dir={out}: another htmlrag-train run is writing it"):
            train(_cfg(root, model, "killed", "train.max_steps=10000", "train.save_steps=3"))
        assert proc.poll() is None and not (out / "train_result.json").exists()
        # the refused run removed nothing; the live run itself drops checkpoints beyond save_total_limit (2) as it
        # goes on (on a loaded machine the refusal can take long enough for it to write three more)
        after = {p.name for p in out.iterdir()}
        assert {n for n in before if not n.startswith("checkpoint-")} <= after
        steps_before = [int(n.split("-")[1]) for n in before if n.startswith("checkpoint-")]
        assert int(latest_checkpoint(out).name.split("-")[1]) >= max(steps_before)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "final").exists()
    step = int(latest_checkpoint(out).name.split("-")[1])
    result = train(_cfg(root, model, "killed", f"train.max_steps={step + 4}", "train.save_steps=3"))
    assert result.resumed_from and result.resumed_from.endswith(f"checkpoint-{step}")
    assert result.global_step == step + 4
    steps = [s for s, _ in result.losses]
    assert steps == list(range(1, step + 5))  # the killed run's steps, then this run's, each once
    assert (out / "final" / "config.json").is_file()
