"""The training flows a newcomer runs (issue 21): build samples, make the tiny model, train on the folder, rerun
a finished run (nothing happens), ask for more steps (continues), with the documented commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("hydra")

from hydra import compose, initialize_config_dir

from htmlrag_bench.training import build_data, tiny_model
from htmlrag_bench.training.schemas import CONF_DIR, register_configs
from htmlrag_bench.training.train import train
from tests.conftest import ROOT

register_configs()


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    root = tmp_path_factory.mktemp("flow")
    data, model = root / "data", root / "tiny-model"
    # htmlrag-train-data --pages data/pages/questions.jsonl --out D --max-words 32   (the README's commands)
    assert build_data.main(["--pages", str(ROOT / "data/pages/questions.jsonl"), "--out", str(data),
                            "--max-words", "32", "--no-progress"]) == 0
    # htmlrag-train-tiny-model --out M
    assert tiny_model.main(["--out", str(model)]) == 0
    return root, data, model


def _cfg(root: Path, data: Path, model: Path, *extra: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("train_config", overrides=["train=tiny", f"train.model={model}", f"data.paths=[{data}]",
                                                  f"output_dir={root}/run", "progress=false", "train.max_steps=2",
                                                  "train.save_steps=1", *extra])


def _state(out: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(out.rglob("*")) if p.is_file() and "_hydra" not in p.parts}


def test_readme_flow_then_finished_rerun_then_more_steps(flow):
    root, data, model = flow
    assert (data / "stats.json").is_file() and any(data.glob("*.jsonl"))
    first = train(_cfg(root, data, model))  # stats.json in the folder is not read as samples
    stats = json.loads((data / "stats.json").read_text())
    assert first.global_step == 2 and first.samples == stats["samples"] and not first.already_finished
    before = _state(root / "run")

    again = train(_cfg(root, data, model))  # finished: nothing trained, nothing rewritten, nothing rotated
    assert again.already_finished and again.global_step == 2 and again.export_dir == first.export_dir
    assert _state(root / "run") == before

    moved = root / "moved"  # a finished run folder moved elsewhere is still finished there (issue 40)
    (root / "run").rename(moved)
    try:
        there = train(_cfg(root, data, model, f"output_dir={moved}"))
        assert there.already_finished and Path(there.export_dir) == moved / "final"
        saved = json.loads((moved / "train_result.json").read_text())
        assert saved["export_dir"] == "./final" and str(root) not in json.dumps(saved["export_dir"])
    finally:
        moved.rename(root / "run")

    more = train(_cfg(root, data, model, "train.max_steps=3"))  # a changed setting continues the run
    assert not more.already_finished and more.global_step == 3 and more.resumed_from.endswith("checkpoint-2")


def test_folder_of_samples_skips_reports(tmp_path):
    from htmlrag_bench.training.data import expand_paths, is_sample_file

    (tmp_path / "a-2k.jsonl").write_text('{"messages": []}\n')
    (tmp_path / "b.json").write_text('[{"messages": []}]')
    (tmp_path / "stats.json").write_text('{"samples": 3}')
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in expand_paths([tmp_path])] == ["a-2k.jsonl", "b.json"]
    assert not is_sample_file(tmp_path / "stats.json")
    assert [p.name for p in expand_paths([tmp_path / "stats.json"])] == ["stats.json"]  # named: read as given


def test_heldout_split_is_fixed_by_id():
    from htmlrag_bench.training.split import in_split, is_heldout

    ids = [f"nt-{i}" for i in range(3000)]
    held = [i for i in ids if is_heldout(i)]
    assert 900 < len(held) < 1100  # about a third
    assert held == [i for i in reversed(ids) if is_heldout(i)][::-1]  # order does not matter
    assert all(in_split(i, "train") != in_split(i, "heldout") for i in ids[:200])
    assert is_heldout("nt-1537") == is_heldout("nt-1537")
