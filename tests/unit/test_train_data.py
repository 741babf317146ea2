"""Training data plumbing: tokenization equals what the ranker feeds, prompt masking, file loading and mixing,
DeepSpeed ``auto`` filling, checkpoint discovery."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("transformers")

from htmlrag.html.blocktree import build_block_tree
from htmlrag.pruning.tokens import HFCounter
from htmlrag.rankers.generative import pruner_prompt_ids
from htmlrag_bench.training.checkpoints import latest_checkpoint
from htmlrag_bench.training.data import (
    IGNORE_INDEX,
    Collator,
    TrainDataError,
    encode_chat,
    end_of_turn,
    load_records,
    mix,
    split_answer,
    tokenize_records,
    write_jsonl,
)
from htmlrag_bench.training.hardware import fill_auto, load_deepspeed, resolve_deepspeed
from htmlrag_bench.training.samples import BuildSettings, build_samples
from tests.helpers.tiny import tiny_tokenizer
from tests.helpers.train_items import synthetic_items


@pytest.fixture(scope="module")
def samples():
    tok = tiny_tokenizer()
    return build_samples(synthetic_items(), HFCounter(tok, "tiny"), BuildSettings(max_words=16))[0]


@pytest.mark.parametrize("chat_template", [True, False])
def test_encoding_is_the_rankers_prompt_then_the_path_tokens(samples, chat_template):
    tok = tiny_tokenizer(chat_template=chat_template)
    items = synthetic_items()
    for item, sample in zip(items, samples):
        enc = encode_chat(tok, sample["messages"], sample["target_path"])
        pages = [build_block_tree(p, max_words=16, clean=True).html() for p in item.pages]
        prompt = pruner_prompt_ids(tok, item.question, pages).ids
        path = tok(sample["target_path"], add_special_tokens=False)["input_ids"]
        # what the ranker scores: its prompt ids followed by the path tokenized on its own
        assert enc.input_ids[: len(prompt) + len(path)] == prompt + path
        # loss only on the answer: every prompt position masked, every answer position a label
        assert enc.labels[: len(prompt)] == [IGNORE_INDEX] * len(prompt)
        assert enc.labels[len(prompt):] == enc.input_ids[len(prompt):]
        end = tok(end_of_turn(tok), add_special_tokens=False)["input_ids"]
        assert enc.input_ids[-len(end):] == end


def test_end_of_turn_comes_from_the_chat_template():
    assert end_of_turn(tiny_tokenizer()) == "<|end|>\n"
    assert end_of_turn(tiny_tokenizer(chat_template=False)) == "</s>"


def test_split_answer():
    assert split_answer("<html><body><p>text</p>", "<html><body><p>") == ("<html><body><p>", "text</p>")
    # released rows have no target_path: the leading run of tags is the path
    assert split_answer("<html1><body><div2><p>Some text") == ("<html1><body><div2><p>", "Some text")
    assert split_answer("no path") == ("", "no path")


def test_over_length_samples_are_dropped_or_raise(samples):
    tok = tiny_tokenizer()
    lengths = sorted(len(encode_chat(tok, s["messages"], s["target_path"])) for s in samples)
    limit = lengths[2]
    kept, rep = tokenize_records(samples, tok, limit)
    assert rep.kept == len(kept) == sum(n <= limit for n in lengths) and rep.over_length == len(samples) - rep.kept
    assert all(len(k["input_ids"]) <= limit for k in kept)
    with pytest.raises(TrainDataError, match="over max_length"):
        tokenize_records(samples, tok, limit, overlength="error")


def test_collator_pads_labels_with_ignore_index():
    batch = Collator(pad_token_id=3)([{"input_ids": [5, 6, 7], "labels": [-100, 6, 7]},
                                      {"input_ids": [8], "labels": [8]}])
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 3, 3]]
    assert batch["labels"].tolist() == [[-100, 6, 7], [8, -100, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]


def test_load_records_mixes_files_by_rate(tmp_path, samples):
    row = {"messages": samples[0]["messages"]}
    write_jsonl([dict(row, id=f"a{i}") for i in range(10)], tmp_path / "asqa-2k.jsonl")
    write_jsonl([dict(row, id=f"b{i}") for i in range(10)], tmp_path / "nq-32k.jsonl")
    rows = load_records([tmp_path], sample_rates={"asqa-2k": 0.3, "nq-*": 2}, seed=1)
    ids = [r["id"] for r in rows]
    assert sum(i.startswith("a") for i in ids) == 3 and sum(i.startswith("b") for i in ids) == 20
    assert len(load_records([tmp_path / "*.jsonl"])) == 20
    assert len(load_records([tmp_path], max_samples=5)) == 5
    assert mix([{"x": 1}], 0.0, random.Random(0)) == []


def test_load_records_errors_name_the_problem(tmp_path):
    with pytest.raises(TrainDataError, match="matches no file"):
        load_records([tmp_path / "missing.jsonl"])
    write_jsonl([{"messages": [{"role": "user", "content": "q"}]}], tmp_path / "bad.jsonl")
    with pytest.raises(TrainDataError, match="assistant"):
        load_records([tmp_path / "bad.jsonl"])
    (tmp_path / "empty.jsonl").write_text("")
    assert load_records([tmp_path / "empty.jsonl"]) == []


def test_hub_unreachable_is_a_clear_error(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(TrainDataError, match=r"zstanjj/HtmlRAG-train.*data.paths"):
        load_records(hub="zstanjj/HtmlRAG-train", data_files=["asqa-2k.jsonl"])


def test_fill_auto_matches_transformers():
    pytest.importorskip("deepspeed")
    from types import SimpleNamespace

    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    hp = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 8, "max_grad_norm": 1.0,
          "learning_rate": 2e-5, "adam_beta1": 0.9, "adam_beta2": 0.98, "adam_epsilon": 1e-8, "weight_decay": 1e-4,
          "bf16": True, "fp16": False}
    for name in ("zero3", "zero3_offload"):
        ds = load_deepspeed(resolve_deepspeed(name))
        ours = fill_auto(ds, hp, world_size=16)
        hf = HfTrainerDeepSpeedConfig(json.loads(json.dumps(ds)))
        hf.trainer_config_process(SimpleNamespace(world_size=16, save_on_each_node=False, fp16_full_eval=False,
                                                  bf16_full_eval=False, **hp))
        assert ours == hf.config
        assert ours["train_batch_size"] == 128 and ours["zero_optimization"]["stage"] == 3


def test_latest_checkpoint_skips_incomplete_ones(tmp_path):
    assert latest_checkpoint(tmp_path / "none") is None
    for step in (2, 4, 6):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    (tmp_path / "checkpoint-6" / "trainer_state.json").write_text('{"global_st')  # killed while writing
    assert latest_checkpoint(tmp_path).name == "checkpoint-4"
