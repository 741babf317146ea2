"""htmlrag-train configs: the paper recipes compose and dry-run without any model; typos fail at composition;
launch configs point at files that exist; an empty dataset stops before any model work."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hydra")

from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from htmlrag.core.errors import HtmlRagError
from htmlrag_bench.training.data import TrainDataError, write_jsonl
from htmlrag_bench.training.schemas import CONF_DIR, register_configs
from htmlrag_bench.training.train import train
from tests.conftest import ROOT

register_configs()
PAPER = {"max_length": 35000, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 8,
         "num_train_epochs": 3.0, "learning_rate": 2e-5, "lr_scheduler_type": "constant_with_warmup",
         "warmup_ratio": 0.01, "adam_beta1": 0.9, "adam_beta2": 0.98, "adam_epsilon": 1e-8, "weight_decay": 1e-4,
         "max_grad_norm": 1.0, "bf16": True, "gradient_checkpointing": True}


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("train_config", overrides=overrides)


@pytest.mark.parametrize(("recipe", "model"), [("phi35_pruner", "microsoft/Phi-3.5-mini-instruct"),
                                               ("llama32_1b_pruner", "meta-llama/Llama-3.2-1B-Instruct")])
def test_paper_recipes_dry_run(recipe, model, tmp_path, caplog, monkeypatch):
    import transformers

    def no_loading(*args, **kwargs):
        raise AssertionError("a dry run loads no model or tokenizer")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_loading)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_loading)
    monkeypatch.setenv("WORLD_SIZE", "8")
    cfg = _compose([f"train={recipe}", "deepspeed=zero3", "dry_run=true", f"output_dir={tmp_path}"])
    for key, value in PAPER.items():
        assert cfg.train[key] == value, key
    with caplog.at_level(logging.INFO, logger="htmlrag-train"):
        report = train(cfg)
    assert report["model"] == model and report["max_length"] == 35000
    args = report["training_arguments"]
    assert args["learning_rate"] == 2e-5 and args["warmup_steps"] == 0.01 and args["adam_beta2"] == 0.98
    assert report["effective_batch_size"] == 64  # 8 GPUs x 1 x 8
    ds = report["deepspeed"]
    assert ds["zero_optimization"]["stage"] == 3 and ds["bf16"]["enabled"] is True
    assert ds["train_micro_batch_size_per_gpu"] == 1 and ds["gradient_accumulation_steps"] == 8
    assert ds["train_batch_size"] == 64 and ds["gradient_clipping"] == 1.0
    logged = caplog.text
    assert f'"model": "{model}"' in logged and '"stage": 3' in logged and '"gradient_accumulation_steps": 8' in logged


def test_dry_run_without_deepspeed_and_with_lora(tmp_path):
    cfg = _compose(["train=llama32_1b_pruner", "dry_run=true", "train.lora.enabled=true", f"output_dir={tmp_path}"])
    report = train(cfg)
    assert report["deepspeed"] is None and report["lora"]["enabled"] is True


def test_typos_and_bad_types_fail_at_composition():
    with pytest.raises(ConfigCompositionException):
        _compose(["train=phi35_pruner", "train.lerning_rate=1e-5"])
    with pytest.raises(ConfigCompositionException):
        _compose(["train=phi35_pruner", "train.max_length=long"])
    with pytest.raises(ConfigCompositionException):
        _compose(["train=no_such_recipe"])


def test_unknown_deepspeed_config_and_sequence_parallel_without_deepspeed(tmp_path):
    with pytest.raises(HtmlRagError, match="deepspeed='zero9'"):
        train(_compose(["train=phi35_pruner", "deepspeed=zero9", "dry_run=true"]))
    write_jsonl([{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<html>"}]}],
                tmp_path / "one.jsonl")
    cfg = _compose(["train=tiny", "train.model=unused", "train.sequence_parallel_size=2",
                    f"data.paths=[{tmp_path / 'one.jsonl'}]", f"output_dir={tmp_path}/out"])
    with pytest.raises(HtmlRagError, match="needs DeepSpeed"):
        train(cfg)


def test_empty_dataset_fails_before_any_model_work(tmp_path, monkeypatch):
    import transformers

    def no_loading(*args, **kwargs):
        raise AssertionError("nothing may be loaded for an empty dataset")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_loading)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_loading)
    monkeypatch.setattr(transformers, "TrainingArguments", no_loading)
    (tmp_path / "empty.jsonl").write_text("")
    cfg = _compose(["train=phi35_pruner", f"data.paths=[{tmp_path / 'empty.jsonl'}]", f"output_dir={tmp_path}/o"])
    with pytest.raises(TrainDataError, match="no training samples"):
        train(cfg)
    cfg = _compose(["train=phi35_pruner", f"data.paths=[{tmp_path / 'missing'}]", f"output_dir={tmp_path}/o"])
    with pytest.raises(TrainDataError, match="matches no file"):
        train(cfg)


def test_accelerate_configs_point_at_the_shipped_deepspeed_files():
    from accelerate.commands.config.config_args import ClusterConfig

    names = {p.stem for p in (CONF_DIR / "accelerate").glob("*.yaml")}
    assert {"single", "ddp", "zero3"} <= names
    for p in (CONF_DIR / "accelerate").glob("*.yaml"):
        ClusterConfig.from_yaml_file(str(p))  # accelerate's own loader accepts every key
    zero3 = yaml.safe_load((CONF_DIR / "accelerate" / "zero3.yaml").read_text())
    ds_file = ROOT / zero3["deepspeed_config"]["deepspeed_config_file"]
    assert json.loads(ds_file.read_text())["zero_optimization"]["stage"] == 3


def test_slurm_launcher_composes():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train_config", overrides=["train=phi35_pruner", "train_launcher=slurm", "deepspeed=zero3"],
                      return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.nodes, launcher.tasks_per_node, launcher.gpus_per_node) == (4, 8, 8)


def test_training_docs_commands_use_existing_configs():
    section = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    for ref in ("conf/accelerate/zero3.yaml", "train_launcher=slurm", "train=phi35_pruner", "deepspeed=zero3"):
        assert ref in section
        if ref.startswith("conf/"):
            assert Path(ROOT / ref).is_file()
