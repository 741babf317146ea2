"""Every config group option composes and instantiates; typos fail at composition; every experiment runs on
3 examples with the fake reader (hub-only parts swapped for offline ones)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from htmlrag.core.errors import HtmlRagError
from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
from tests.conftest import ROOT, SHARED

register_configs()
OFFLINE_EMBEDDING = "sentence-transformers/all-MiniLM-L6-v2"


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def _tmp_paths(tmp_path: Path) -> list[str]:
    return [f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", "run.progress=false"]


def test_groups_have_options() -> None:
    for group in ("dataset", "cleaner", "ranker", "pruner", "reader", "metric", "experiment", "paths", "run",
                  "launcher", "hydra", "cost", "logger"):
        assert options(group), group


@pytest.mark.parametrize("option", options("dataset"))
def test_dataset_options_compose(option: str) -> None:
    cfg = _compose([f"dataset={option}"])
    assert cfg.dataset.name and cfg.dataset.loader._target_.startswith("htmlrag.data.")
    if option == "sample_pages":
        examples = instantiate(cfg.dataset.loader)
        assert len(examples) == 6


@pytest.mark.parametrize("option", options("ranker"))
def test_ranker_options_instantiate(option: str) -> None:
    cfg = _compose([f"ranker={option}"])
    if option == "none":
        assert cfg.ranker is None
        return
    ranker = instantiate(cfg.ranker)  # models load lazily: constructing needs no hub
    assert callable(ranker.score)


@pytest.mark.parametrize("option", options("reader"))
def test_reader_options_instantiate(option: str) -> None:
    cfg = _compose([f"reader={option}"])
    spec = OmegaConf.to_container(cfg.reader, resolve=True)
    spec["cache"] = None
    reader = instantiate(spec)
    assert reader.name
    if option in ("hf", "gemma3_270m"):
        assert reader._model is None  # nothing loaded (the window is the model's own, or set, read on first use)
    else:
        assert reader.window == 0  # derived at run start (htmlrag_bench.eval.systems.build.fit_reader_window)


@pytest.mark.parametrize("group", ["cleaner", "pruner", "metric", "paths", "run", "cost", "logger"])
def test_single_shape_groups_compose(group: str) -> None:
    for option in options(group):
        cfg = _compose([f"{group}={option}"])
        assert cfg[group] is not None


def test_launcher_options_compose() -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        basic = compose("config", overrides=["launcher=basic"], return_hydra_config=True)
        assert "BasicLauncher" in basic.hydra.launcher._target_
        try:
            have_submitit = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None
        except ModuleNotFoundError:  # no hydra_plugins namespace at all
            have_submitit = False
        if not have_submitit:
            pytest.skip("hydra-submitit-launcher not installed (pip install 'htmlrag-bench[slurm]')")
        slurm = compose("config", overrides=["launcher=slurm"], return_hydra_config=True)
        assert "SlurmLauncher" in slurm.hydra.launcher._target_ and slurm.hydra.launcher.gpus_per_node == 1


@pytest.mark.parametrize("override", ["pruner.max_wrods=64", "reader.windw=10", "metric.names=[emm]",
                                      "pruner.budget=lots", "dataset.loader.sampel_size=3", "pruner.fmt=pdf"])
def test_typos_fail_at_composition(override: str) -> None:
    with pytest.raises(ConfigCompositionException):
        _compose([override])


def test_baseline_typo_in_experiment_fails_at_composition() -> None:
    with pytest.raises(ConfigCompositionException):
        _compose(["experiment=quickstart", "baselines.bm25.max_word=3"])


@pytest.mark.parametrize("override", ["+baselines.x={clen:false}", "+baselines.x={budget:lots}"])
def test_baseline_typos_fail_before_any_work(override: str) -> None:
    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import validate

    cfg = _compose(override.split())
    with pytest.raises(HtmlRagError, match=r"baseline .x."):
        validate(cfg)
    with pytest.raises(HtmlRagError, match="baseline"):
        run(cfg)


def test_baseline_added_from_command_line(tmp_path: Path) -> None:
    cfg = _compose(["+baselines.raw={clean:false}", "pruner.budget=512"])
    from htmlrag_bench.eval.schemas import validate

    validate(cfg)
    assert cfg.baselines.raw.clean is False and cfg.baselines.raw.budget == 512 and cfg.baselines.raw.fmt == "html"


def test_cleaner_keep_hidden_reaches_the_systems(tmp_path: Path) -> None:
    """``cleaner.keep_hidden=true`` (the paper's cleaning, sort keys kept) is passed to every system."""
    from htmlrag_bench.eval.systems.build import build_systems

    for value in (False, True):
        cfg = _compose(["ranker=bm25", f"cleaner.keep_hidden={str(value).lower()}", *_tmp_paths(tmp_path)])
        systems = build_systems(cfg, None)
        assert systems and all(s.keep_hidden is value for s in systems)


def _offline(cfg_overrides: list[str]) -> list[str]:
    """Overrides that make an experiment runnable here: hub-only embedding models -> bundled MiniLM, hub
    datasets -> the sample pages."""
    cfg = _compose(cfg_overrides)
    extra = []
    if cfg.ranker is not None and "model" in cfg.ranker and cfg.ranker.model != OFFLINE_EMBEDDING:
        extra.append(f"ranker.model={OFFLINE_EMBEDDING}")
    for name, b in cfg.baselines.items():
        r1 = b.get("ranker1")
        if r1 is not None and "model" in r1 and r1.model != OFFLINE_EMBEDDING:
            extra.append(f"baselines.{name}.ranker1.model={OFFLINE_EMBEDDING}")
    if cfg.dataset.loader._target_.endswith("load_htmlrag_test") and not Path(cfg.dataset.loader.path or "/-").exists():
        extra.append("dataset=sample_pages")  # a hub set that is not downloaded here
    if cfg.dataset.loader._target_.startswith(("htmlrag.data.pdfqa.", "htmlrag.data.docbench.", "htmlrag.data.spiqa.")):
        from tests.helpers.docqa_data import offline_pdf_overrides

        extra += offline_pdf_overrides()  # PDF datasets -> a tiny generated DOCBENCH set (SuperRAG experiments)
    from htmlrag.core.models.aliases import is_alias

    if is_alias(cfg.pruner.tokenizer):  # a real model's tokenizer (real_small_wtq): the offline default here
        extra.append("pruner.tokenizer=null")
    if cfg.dataset.name == "wtq_html_qa":
        if not (SHARED / "wtq-html-qa").exists():
            pytest.skip("../shared/data/wtq-html-qa absent")
        extra += ["ranker=bm25", f"dataset.loader.root={SHARED / 'wtq-html-qa'}"]  # MiniLM: ~5 s a question here
        renamed = _compose(cfg_overrides + extra).system_name  # labels follow the ranker: a BM25 baseline may now clash
        if renamed in cfg.baselines:
            extra.append(f"~baselines.{renamed}")
    return extra


#: Experiments with a generative pruner: run with tiny models by tests/configs/test_paper_experiments.py.
WITH_GENERATIVE_PRUNER = {"formats_4k"}


@pytest.mark.parametrize("experiment", [e for e in options("experiment") if e not in WITH_GENERATIVE_PRUNER])
def test_every_experiment_runs_on_3_examples_with_fake_reader(experiment: str, tmp_path: Path) -> None:
    from htmlrag_bench.eval.app import run

    base = [f"experiment={experiment}", "reader=fake", "reader.window=null", "dataset.limit=3", *_tmp_paths(tmp_path)]
    cfg = _compose(base + _offline(base))
    run(cfg)
    (run_dir,) = (tmp_path / "results" / cfg.name).iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_examples"] == 3 and metrics["n_failed_examples"] == 0
    systems = [cfg.system_name, *cfg.baselines]
    if cfg.pruner.budgets:  # a budget frontier: one record per system and budget
        systems = [f"{s}@{b}" for s in systems for b in cfg.pruner.budgets]
    assert set(metrics["systems"]) == set(systems)
    for s in systems:
        assert metrics["systems"][s]["n"] == 3, (s, metrics["systems"][s])
    rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert all(r["systems"][s]["response"] for r in rows for s in systems)  # the fake reader answered
    for name in ("config.yaml", "overrides.yaml", "env.json", "tables/results.md", "tables/results.csv", "tables/results.tex"):
        assert (run_dir / name).is_file(), name
    env = json.loads((run_dir / "env.json").read_text())
    assert env["dataset"]["sha256"] and "hydra-core" in env["packages"]


def test_response_metric_with_reader_none_is_refused(tmp_path: Path) -> None:
    from htmlrag_bench.eval.app import run

    cfg = _compose(["metric=short", "reader=none", "ranker=bm25", *_tmp_paths(tmp_path)])
    with pytest.raises(HtmlRagError, match="need a reader's answer"):
        run(cfg)


def test_question_only_dataset_fails_early_unless_closed_book(tmp_path: Path) -> None:
    from htmlrag_bench.eval.app import run

    q = tmp_path / "nq-test.jsonl"
    q.write_text('{"id": "1", "question": "q?", "answer": ["a"]}\n{"id": "2", "question": "r?", "answer": ["b"]}\n')
    common = ["dataset=nq", f"dataset.loader.path={q}", "ranker=bm25", "reader=fake", "metric=short", *_tmp_paths(tmp_path)]
    with pytest.raises(HtmlRagError, match="have no retrieved pages"):
        run(_compose(common))
    run(_compose([*common, "dataset.require_pages=false"]))  # closed-book: empty contexts, still scored
    (run_dir,) = (tmp_path / "results" / "default").iterdir()
    assert json.loads((run_dir / "metrics.json").read_text())["systems"]["htmlrag"]["n"] == 2


def _cli(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_help_lists_groups() -> None:
    out = _cli("--help")
    assert out.returncode == 0, out.stderr
    for group in ("dataset:", "cleaner:", "ranker:", "pruner:", "reader:", "metric:", "experiment:", "launcher:"):
        assert group in out.stdout, group


@pytest.mark.slow
def test_multirun_sweep_over_block_size(tmp_path: Path) -> None:
    out = _cli("-m", "experiment=quickstart", "ranker=bm25", "pruner.max_words=64,128,256,512", *_tmp_paths(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted((tmp_path / "results" / "quickstart").glob("*/metrics.json"))
    assert len(runs) == 4
    sizes = {json.loads((r.parent / "config.yaml").read_text().split("max_words: ")[1].split("\n")[0]) for r in runs}
    assert sizes == {64, 128, 256, 512}
