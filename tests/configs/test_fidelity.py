"""The ``fidelity`` group: ``paper`` turns every extension of ours off in the systems actually built, ``ours``
turns them on, a field set against its fidelity is recorded as a deviation, and every run records its
fidelity (config, env.json, metrics.json, table caption)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from htmlrag_bench.eval.schemas import CONF_DIR, register_configs, validate
from htmlrag_bench.eval.systems import fidelity
from tests.conftest import ROOT

register_configs()


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    validate(cfg)
    return cfg


def _paths(tmp_path: Path) -> list[str]:
    return [f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", "run.progress=false"]


@pytest.mark.parametrize("name", ["paper", "ours"])
def test_fidelity_reaches_every_built_system(name: str) -> None:
    """Cleaning, block trees, pruning and ranking text of the system under test, of a baseline and of a
    block-pipeline refiner all follow the chosen fidelity."""
    pytest.importorskip("torch")
    from htmlrag_bench.eval.systems.build import build_systems

    cfg = _compose("experiment=quickstart", f"fidelity={name}", "+refiner@baselines.costed.refiner=block_pipeline",
                   "+ranker@baselines.costed.ranker1=bm25")
    paper = name == "paper"
    systems = {s.name: s for s in build_systems(cfg, None)}
    for sys_name in (cfg.system_name, "bm25", "costed"):
        pipe = systems[sys_name].pipeline
        assert pipe.pack_siblings is not paper and pipe.split_to_fill == (0 if paper else 4), sys_name
        assert pipe.split_oversize is not paper and pipe.fill == ("stop" if paper else "skip"), sys_name
        assert pipe.ranker1.contextual is not paper and pipe.ranker1.page_prior == (0 if paper else 0.5), sys_name
        assert systems[sys_name].keep_hidden is paper
    minilm = systems[cfg.system_name].pipeline.ranker1
    from htmlrag.rankers.embedding import auto_dtype

    own = auto_dtype(minilm.device) if cfg.ranker.dtype == "auto" else cfg.ranker.dtype
    assert (minilm.max_seq_length, minilm.dtype) == ((256, "float32") if paper else (cfg.ranker.max_seq_length, own))


def test_every_context_knob_keys_the_context_cache() -> None:
    """Two systems whose contexts differ never share a cached context: each knob that shapes the context
    changes the system's fingerprint (keep_hidden once did not, and a run reused the other's contexts)."""
    from htmlrag_bench.eval.systems.build import build_systems

    def fingerprint(*extra: str) -> str:
        cfg = _compose("ranker=bm25", "fidelity=paper", *extra)
        return build_systems(cfg, None)[0].fingerprint

    paper = fingerprint()
    knobs = ["fidelity.keep_hidden=false", "fidelity.pack_siblings=true", "fidelity.split_to_fill=4",
             "fidelity.split_oversize=true", "fidelity.fill=skip", "fidelity.ranking_context=true",
             "fidelity.page_prior=0.5"]
    prints = [fingerprint(k) for k in knobs]
    assert paper not in prints and len(set(prints)) == len(knobs)


def test_paper_sets_the_embedding_input_length_and_the_answer_length_explicitly() -> None:
    """Speed settings of a ranker or reader option (MiniLM at 128 tokens in bfloat16, 128-token answers) are
    replaced by the paper's under fidelity=paper, and kept under fidelity=ours."""
    args = ["ranker=minilm", "ranker.max_seq_length=128", "ranker.dtype=bfloat16", "reader=hf"]
    paper, ours = _compose(*args, "fidelity=paper"), _compose(*args, "fidelity=ours")
    assert (paper.ranker.max_seq_length, paper.ranker.dtype) == (256, "float32")
    assert (ours.ranker.max_seq_length, ours.ranker.dtype) == (128, "bfloat16")
    assert (paper.reader.generation.max_new_tokens, ours.reader.generation.max_new_tokens) == (1024, 128)
    bge = _compose("ranker=bge", "fidelity=paper")
    assert bge.ranker.max_seq_length == 512  # BGE-large-en's own input length, as the paper ran it


def test_deviations_from_the_fidelity_are_listed() -> None:
    assert fidelity.describe(_compose("fidelity=paper"))["deviations"] == []
    cfg = _compose("fidelity=paper", "cleaner.keep_hidden=false", "fidelity.split_to_fill=4",
                   "ranker=bm25", "ranker.page_prior=0.5")
    devs = fidelity.describe(cfg)["deviations"]
    assert "cleaner.keep_hidden=false (fidelity: true)" in devs
    assert "fidelity.split_to_fill=4 (paper: 0)" in devs
    assert "ranker.page_prior=0.5 (fidelity: 0.0)" in devs
    assert "pruner.split_to_fill=4 (fidelity: 4)" not in devs  # it follows the (changed) knob: listed once
    assert fidelity.label(fidelity.describe(cfg)).startswith("paper, except ")


def test_short_answer_instruction_only_with_ours(monkeypatch, tmp_path: Path) -> None:
    """The reader prompt gets our short-answer sentence only under fidelity=ours (and only on short-answer
    datasets): checked on the settings the harness hands to the evaluation loop."""
    import htmlrag_bench.eval.app as harness
    from htmlrag_bench.eval.app import run

    seen = []

    def spy(examples, systems, reader, store, settings, caches=None):
        seen.append(settings.short_answer)
        raise RuntimeError("stop")

    monkeypatch.setattr(harness, "evaluate", spy)  # where the harness looks it up
    for name in ("paper", "ours"):
        cfg = _compose("ranker=bm25", "reader=fake", "metric=short", "dataset.limit=1", f"fidelity={name}",
                       f"paths.results={tmp_path}", "run.use_cache=false", "run.progress=false")
        with pytest.raises(RuntimeError, match="stop"):
            run(cfg)
    assert seen == [False, True]
    from htmlrag.readers.prompts import SHORT_ANSWER, user_prompt

    assert SHORT_ANSWER not in user_prompt("q", "c", "html", short_answer=False)


def test_a_run_records_its_fidelity(tmp_path: Path) -> None:
    """config.yaml, env.json and metrics.json hold the fidelity and its deviations; the table caption says it."""
    pytest.importorskip("torch")
    from htmlrag_bench.eval.app import run

    cfg = _compose("ranker=bm25", "dataset.limit=2", "fidelity=paper", "cleaner.keep_hidden=false",
                   "pruner.budget=128", *_paths(tmp_path))
    run(cfg)
    (run_dir,) = [p for p in (tmp_path / "results" / "default").iterdir() if p.is_dir()]
    want = {"name": "paper", "deviations": ["cleaner.keep_hidden=false (fidelity: true)"]}
    for name in ("env.json", "metrics.json"):
        rec = json.loads((run_dir / name).read_text())["fidelity"]
        assert {k: rec[k] for k in want} == want and rec["knobs"]["fill"] == "stop"
    assert "name: paper" in (run_dir / "config.yaml").read_text()
    md = (run_dir / "tables" / "results.md").read_text()
    assert "Fidelity: paper, except cleaner.keep_hidden=false (fidelity: true)." in md


def test_docs_list_every_knob() -> None:
    doc = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    for knob in fidelity.KNOBS:
        assert f"`{knob}`" in doc, knob
