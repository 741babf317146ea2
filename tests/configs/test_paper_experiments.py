"""Every paper experiment (``conf/experiment/paper/``) runs end to end on 3 examples with the fake reader, tiny
random models in place of the hub's LMs and the bundled MiniLM in place of BGE/E5-Mistral, and writes its
paper artefact (table in the paper's layout, cost table, or Figure 5's PNG).

Datasets are swapped for the project's sample pages (hub sets are unreachable here; the WTQ-HTML runs on
``../shared/data`` are the README's measured tables). The generic experiment test (``test_compose.py``)
covers ``conf/experiment/*.yaml``; these experiments need tiny-model overrides it does not know, hence their
own test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("langchain_text_splitters")

from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
from tests.conftest import ROOT
from tests.helpers.tiny import save_tiny

register_configs()
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
PAPER = sorted(p.stem for p in (CONF_DIR / "experiment" / "paper").glob("*.yaml"))
#: Experiments outside paper/ that need the same tiny-model overrides (generative pruners): ``../<name>``.
OURS_WITH_PRUNERS = ["../formats_4k"]
#: Which artefact each experiment writes (the kind of its Hydra callback).
ARTEFACT = {"table4_cost": "cost", "table5_info_loss": "info_loss", "table5_wtq_offline": "info_loss",
            "figure5_granularity": "figure5", "figure5_offline": "figure5"}


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("paper-tiny")
    return {"llama": save_tiny(root, "llama", max_position_embeddings=16384), "qwen2": save_tiny(root, "qwen2")}


#: Experiments whose test keeps a real embedding model (MiniLM) for BGE/E5-Mistral; the others use BM25 in
#: their place (the same ranker protocol) to keep the suite fast.
WITH_MINILM = {"table1_main", "table4_cost"}


def offline_overrides(cfg, tiny: dict[str, Path], embed: str = "minilm") -> list[str]:
    """Overrides that make a paper experiment runnable offline and fast: sample pages, fake reader, the
    offline tokenizer, ``embed`` (``minilm`` or ``bm25``) for embedding rankers, tiny models for generative
    pruners and refiner LMs."""
    out = ["pruner.tokenizer=null"]

    def ranker(path: str, node) -> None:
        if node is None:
            return
        target = node.get("_target_", "")
        if target.endswith("EmbeddingRanker") and (embed != "minilm" or node.model != MINILM):
            # the whole option: identical specs share one loaded model
            out.append(f"ranker={embed}" if path == "ranker" else f"ranker@{path}={embed}")
        elif target.endswith("GenerativeRanker"):
            out.extend([f"{path}.model_name_or_path={tiny['llama']}", f"{path}.dtype=float32"])

    def refiner(path: str, node) -> None:
        if node is None:
            return
        target = node.get("_target_", "")
        if target.endswith("LongLLMLinguaRefiner"):
            out.extend([f"{path}.model={tiny['llama']}", f"{path}.dtype=float32"])
        elif target.endswith("ReaderLMRefiner"):
            out.extend([f"{path}.model={tiny['qwen2']}", f"{path}.dtype=float32", f"{path}.max_new_tokens=8"])

    ranker("ranker", cfg.ranker)
    ranker("pruner.ranker2", cfg.pruner.ranker2)
    refiner("pruner.refiner", cfg.pruner.refiner)
    for name, b in cfg.baselines.items():
        ranker(f"baselines.{name}.ranker1", b.get("ranker1"))
        ranker(f"baselines.{name}.ranker2", b.get("ranker2"))
        refiner(f"baselines.{name}.refiner", b.get("refiner"))
    if cfg.dataset.name != "sample_pages":  # hub sets and ../shared/data: the project's sample pages
        out.append("dataset=sample_pages")
    if not cfg.reader._target_.endswith("NoneReader"):
        out.append("reader=fake")
    return out


def _base(experiment: str, tmp_path: Path) -> list[str]:
    name = experiment[3:] if experiment.startswith("../") else f"paper/{experiment}"
    return [f"experiment={name}", "dataset.limit=3", f"paths.results={tmp_path}/results",
            f"paths.cache={tmp_path}/cache", "run.progress=false"]


@pytest.mark.parametrize("experiment", [e for e in PAPER if e != "figure5_granularity"] + OURS_WITH_PRUNERS)
def test_paper_experiment_runs_on_3_examples_and_writes_its_artefact(experiment: str, tmp_path: Path, tiny) -> None:
    """One run (a figure: two runs, one per granularity) on 3 examples; every system scores all three within
    its budget; the artefact lists every system."""
    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.paper import write_artifacts

    base = _base(experiment, tmp_path)
    # small budgets so that every refiner actually prunes the small sample pages (128K systems stay 128K)
    small = ["pruner.budget=256", "pruner.budget1=512"] if "long_context" not in experiment else []
    kind = ARTEFACT.get(experiment, "table")
    sweep = [["pruner.max_words2=16"], ["pruner.max_words2=64"]] if kind == "figure5" else [[]]
    first = _compose(base)
    embed = "minilm" if experiment in WITH_MINILM else "bm25"
    for point in sweep:
        cfg = _compose(base + small + offline_overrides(first, tiny, embed) + point)
        run(cfg)
    run_dirs = [p for p in (tmp_path / "results" / cfg.name).iterdir() if p.is_dir()]
    assert len(run_dirs) == len(sweep)
    systems = [cfg.system_name, *cfg.baselines]
    for run_dir in run_dirs:
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["n_examples"] == 3 and metrics["n_failed_examples"] == 0
        for s in systems:
            assert metrics["systems"][s]["n"] == 3, (s, metrics["systems"][s])
        rows = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
        for r in rows:
            for s in systems:
                rec = r["systems"][s]
                budget = cfg.baselines[s].budget if s in cfg.baselines else cfg.pruner.budget
                assert rec["tokens"] <= min(budget, cfg.reader.window or budget), (s, rec["tokens"])
                if cfg.reader._target_.endswith("FakeReader"):
                    assert rec["response"], s
    paths = write_artifacts(kind, tmp_path / "results" / cfg.name)
    if kind == "figure5":
        assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        points = json.loads(paths[1].read_text())["datasets"]["sample_pages"]
        assert points["x"] == [16, 64] and cfg.system_name in points["curves"] and points["references"]
        return
    md = paths[0].read_text()
    for s in systems:
        assert f"| {s} " in md, (s, md)
    if kind == "table":
        assert "sample_pages" in md  # the dataset's column group
    if kind == "cost":
        assert "htmlrag / step1" in md and "htmlrag / step2" in md and "bge / rank" in md
        chat = next(x for x in md.splitlines() if x.startswith("| LLM Chat "))
        assert chat.split("|")[4].strip() not in ("", "-")  # mean prompt tokens of the reader


def test_table_in_paper_layout_with_daggers(tmp_path: Path) -> None:
    """Six datasets' runs -> one table: the paper's column order and printed headers per dataset (filled as
    the authors' notebook fills them), the paper's dagger rule from the saved t-tests, the system under test
    last."""
    from htmlrag_bench.eval.paper import find_runs, main_table, write_table

    rng = __import__("random").Random(0)
    for ds in ("eli5", "musique", "asqa", "nq", "trivia_qa", "hotpot_qa"):
        names = {"asqa": ["em", "hit1", "str_em", "rouge_l"], "eli5": ["rouge_l", "bleu"]}.get(ds, ["em", "hit1"])
        d = tmp_path / "results" / "paper_x" / ds
        d.mkdir(parents=True)
        systems = {s: {"n": 10, "metrics": {m: rng.random() for m in names} | {"tokens": 100.0}}
                   for s in ("ours", "bm25", "bge")}
        # ours significantly better than both baselines on ASQA only, after Holm's correction over the table's 20
        # comparisons (0.001 x 20 = 0.02 < 0.05; the bm25 p-values of 0.01 elsewhere are not)
        p_bge = 0.001 if ds == "asqa" else 0.5
        p_bm25 = 0.001 if ds == "asqa" else 0.01
        tests = {m: {"bm25": {"p": p_bm25, "mean_a": 0.6, "mean_b": 0.4}, "bge": {"p": p_bge, "mean_a": 0.6, "mean_b": 0.5}}
                 for m in names}
        (d / "metrics.json").write_text(json.dumps({"dataset": ds, "ours": "ours", "alpha": 0.05, "metric_names": names,
                                                    "systems": systems, "system_order": ["bm25", "bge", "ours"],
                                                    "tests": tests, "fidelity": {"name": "paper", "deviations": []}}))
        (d / "config.yaml").write_text("pruner:\n  budget: 4000\n")
    table = main_table(find_runs([tmp_path / "results" / "paper_x"]), caption="T")
    heads = [(c.dataset, c.label) for c in table.columns]
    assert heads == [("ASQA", "EM [hit1]"), ("ASQA", "Hit@1 [em]"), ("HotpotQA", "EM [hit1]"), ("NQ", "EM [hit1]"),
                     ("NQ", "Hit@1 [em]"), ("Trivia-QA", "EM [hit1]"), ("Trivia-QA", "Hit@1 [em]"),
                     ("MuSiQue", "EM [hit1]"), ("ELI5", "ROUGE-L [rouge_l]"), ("ELI5", "BLEU [bleu]")]
    assert [s for _, s in table.rows] == ["bm25", "bge", "ours"]
    paths = write_table(table, tmp_path / "out")
    md = paths["md"].read_text()
    lines = md.splitlines()
    bm25 = next(x for x in lines if x.startswith("| bm25"))
    bge = next(x for x in lines if x.startswith("| bge"))
    ours = next(x for x in lines if x.startswith("| ours"))
    assert ours.count("†") == 2 and all("†" in c for c in ours.split("|")[2:4])  # the two ASQA cells
    assert "†" not in bm25 and "†" not in bge
    assert "$^\\dagger$" in paths["tex"].read_text() and "T Fidelity: paper." in md
    assert "\"EM\" = our hit1" in md


def test_refiner_typo_fails_at_composition() -> None:
    with pytest.raises(ConfigCompositionException):
        _compose(["experiment=paper/table1_main", "baselines.bm25.refiner.fil=skip"])
    with pytest.raises(ConfigCompositionException):
        _compose(["experiment=paper/table1_main", "baselines.longllmlingua.refiner.modle=x"])


def test_paper_metrics_follow_the_dataset() -> None:
    for ds, first in (("asqa", "str_em"), ("eli5", "bleu"), ("nq", "exact_match")):
        cfg = _compose(["experiment=paper/table1_main", f"dataset={ds}"])
        assert first in [str(m) for m in cfg.metric.names]


@pytest.mark.slow
def test_figure5_sweep_writes_png(tmp_path: Path, tiny) -> None:
    """A tiny Hydra multirun (2 granularities, 1 example) through the CLI: the callback draws the PNG from
    results/, and ``htmlrag-paper figure5`` redraws it from results/ alone."""
    base = _base("figure5_granularity", tmp_path)
    cfg = _compose(base)
    extra = offline_overrides(cfg, tiny, "bm25")
    args = [sys.executable, "-m", "htmlrag_bench.eval.app", "-m", *[a for a in base if not a.startswith("dataset.limit")],
            "dataset.limit=1", *extra, "pruner.budget=256", "pruner.budget1=512", "pruner.max_words2=16,64"]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    folder = tmp_path / "results" / "paper_figure5_granularity"
    png = folder / "figure5.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = json.loads(png.with_suffix(".json").read_text())
    ds = points["datasets"]["sample_pages"]
    assert points["key"] == "pruner.max_words2" and ds["x"] == [16, 64]
    assert set(ds["curves"]) == {"prune_gen", "prune_embed"} and set(ds["references"]) == {"bge_chunks"}
    png.unlink()
    from htmlrag_bench.eval.paper import main

    assert main(["figure5", str(folder)]) == 0 and png.is_file()
    # the sweep's combined table: one column group per job, labelled by the swept value, from its own run
    (sweep,) = (folder / "sweeps").iterdir()
    md = (sweep / "results.md").read_text()
    assert "pruner.max_words2=16" in md and "pruner.max_words2=64" in md
    import csv

    from htmlrag.evaluation.tables import printed

    for row in csv.DictReader((sweep / "provenance.csv").open()):  # runs relative to the results root
        saved = json.loads((tmp_path / "results" / row["runs"] / "metrics.json").read_text())
        assert row["value"] == printed(row["metric"], saved["systems"][row["system"]]["metrics"][row["metric"]])


def test_figure5_points_from_saved_runs(tmp_path: Path) -> None:
    """Curves for systems whose configuration changes with the granularity, a dashed reference otherwise."""
    import yaml

    from htmlrag_bench.eval.paper import figure5_points, find_runs, plot_figure5

    for g, (a, b) in zip((64, 128, 256, 512), ((0.2, 0.3), (0.4, 0.35), (0.5, 0.3), (0.3, 0.25)), strict=True):
        d = tmp_path / f"r{g}"
        d.mkdir()
        systems = {"prune_gen": {"metrics": {"hit1": a}}, "prune_embed": {"metrics": {"hit1": b}},
                   "chunks": {"metrics": {"hit1": 0.33}}}
        (d / "metrics.json").write_text(json.dumps({"dataset": "asqa", "ours": "prune_gen", "metric_names": ["hit1"],
                                                    "systems": systems,
                                                    "system_order": ["prune_embed", "chunks", "prune_gen"]}))
        cfg = {"pruner": {"max_words2": g, "max_words": 256},
               "baselines": {"prune_embed": {"max_words1": g}, "chunks": {"max_words1": 256}}}
        (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    pts = figure5_points(find_runs([tmp_path]))
    asqa = pts["datasets"]["asqa"]
    assert asqa["x"] == [64, 128, 256, 512] and asqa["metric"] == "hit1"
    assert asqa["curves"]["prune_gen"] == pytest.approx([20, 40, 50, 30])
    assert asqa["references"] == {"chunks": pytest.approx(33.0)}
    png = plot_figure5(pts, tmp_path / "f.png")
    assert png.stat().st_size > 5000


def test_paper_configs_compose_and_validate() -> None:
    from htmlrag_bench.eval.schemas import validate

    for e in PAPER:
        cfg = _compose([f"experiment=paper/{e}"])
        validate(cfg)
        assert OmegaConf.select(cfg, "name").startswith("paper_")


def test_heavy_refiner_runs_and_is_released_before_the_reader_is_built(tmp_path: Path, tiny, monkeypatch) -> None:
    """LongLLMLingua builds every context first, frees its model, and only then is the reader built; the
    evaluation loop takes the contexts from the cache (no second compression)."""
    import htmlrag_bench.eval.systems.build as build
    from htmlrag.baselines.longllmlingua import LongLLMLinguaRefiner
    from htmlrag_bench.eval.app import run

    events: list[str] = []
    real_run, real_release, real_reader = LongLLMLinguaRefiner.run, LongLLMLinguaRefiner.release, build.build_reader

    def spy_run(self, question, pages):
        events.append("compress")
        return real_run(self, question, pages)

    def spy_release(self):
        events.append("release" if self._compressor is not None else "release-idle")
        real_release(self)

    def spy_reader(cfg, cache_dir):
        events.append("reader")
        return real_reader(cfg, cache_dir)

    monkeypatch.setattr(LongLLMLinguaRefiner, "run", spy_run)
    monkeypatch.setattr(LongLLMLinguaRefiner, "release", spy_release)
    monkeypatch.setattr(build, "build_reader", spy_reader)
    cfg = _compose(["dataset=sample_pages", "dataset.limit=3", "ranker=bm25", "reader=fake", "metric=short",
                    "pruner.budget=64", "+refiner@baselines.lingua.refiner=longllmlingua",
                    f"baselines.lingua.refiner.model={tiny['llama']}", "baselines.lingua.refiner.dtype=float32",
                    f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", "run.progress=false"])
    run(cfg)
    assert events == ["compress"] * 3 + ["release", "reader"]
    (run_dir,) = [p for p in (tmp_path / "results" / "default").iterdir() if p.is_dir()]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["systems"]["lingua"]["n"] == 3 and metrics["systems"]["lingua"]["metrics"]["tokens"] <= 64
