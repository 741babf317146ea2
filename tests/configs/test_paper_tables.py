"""Each paper table's config composes to the paper's settings (and the authors' code where the paper is
silent), so that no later edit can drift silently: reader model and window, context budgets per dataset
(K = 1000 tokens, as the authors' code counts), block sizes, models, datasets, rows, fidelity=paper."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from htmlrag_bench.eval.paper import coarse_budget
from htmlrag_bench.eval.schemas import CONF_DIR, register_configs, validate
from htmlrag_bench.eval.systems import fidelity

register_configs()
DATASETS = ("asqa", "hotpot_qa", "nq", "trivia_qa", "musique", "eli5")
COARSE_4K = {"asqa": 6000, "nq": 6000, "eli5": 6000, "hotpot_qa": 8000, "trivia_qa": 8000, "musique": 8000}
LLAMA_8B, LLAMA_70B = "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"
BGE, E5 = "BAAI/bge-large-en", "intfloat/e5-mistral-7b-instruct"
PHI, LLAMA_1B = "zstanjj/HTML-Pruner-Phi-3.8B", "zstanjj/HTML-Pruner-Llama-1B"
PAPER = sorted(p.stem for p in (CONF_DIR / "experiment" / "paper").glob("*.yaml"))


def _cfg(experiment: str, *overrides: str):
    args = [f"experiment=paper/{experiment}", *overrides]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        full = compose("config", overrides=args, return_hydra_config=True)
    params = full.hydra.sweeper.get("params")
    sweep = OmegaConf.to_container(params, resolve=False) if params else {}
    cfg = OmegaConf.masked_copy(full, [k for k in full if k != "hydra"])
    validate(cfg)
    return cfg, sweep or {}


def _systems(cfg) -> dict:
    """Every system's resolved settings: the system under test under its name, then the baselines."""
    p = cfg.pruner
    out = {cfg.system_name: {"budget": p.budget, "budget1": p.budget1, "max_words1": p.max_words,
                             "max_words2": p.max_words2, "ranker1": cfg.ranker, "ranker2": p.ranker2,
                             "refiner": p.refiner, "clean": cfg.cleaner.enabled}}
    for name, b in cfg.baselines.items():
        out[name] = {"budget": b.budget, "budget1": b.budget1, "max_words1": b.max_words1,
                     "max_words2": b.max_words2, "ranker1": b.ranker1, "ranker2": b.ranker2,
                     "refiner": b.refiner, "clean": b.clean}
    return out


def _model(node) -> str | None:
    return None if node is None else (node.get("model") or node.get("model_name_or_path"))


def _refiner(node) -> str | None:
    return None if node is None else str(node._target_).rsplit(".", 1)[-1]


def test_coarse_budget_per_dataset_scales_with_the_window() -> None:
    assert {ds: coarse_budget(ds, 4000) for ds in DATASETS} == COARSE_4K
    assert [coarse_budget("asqa", 2000), coarse_budget("musique", 2000)] == [3000, 4000]
    assert [coarse_budget("nq", 8000), coarse_budget("hotpot_qa", 8000)] == [12000, 16000]


@pytest.mark.parametrize("experiment", PAPER)
def test_every_paper_experiment_runs_with_fidelity_paper_and_no_deviation(experiment: str) -> None:
    cfg, _ = _cfg(experiment)
    rec = fidelity.describe(cfg)
    assert rec["name"] == "paper" and rec["deviations"] == [], rec["deviations"]
    assert cfg.cleaner.keep_hidden is True and cfg.pruner.fill == "stop"
    for s in _systems(cfg).values():
        for r in (s["ranker1"], s["ranker2"]):
            if r is not None and str(r._target_).endswith("EmbeddingRanker"):
                assert r.contextual is False and r.page_prior == 0 and r.dtype == "float32"
                assert r.max_seq_length == {BGE: 512, E5: 4096}.get(r.model, r.max_seq_length)
    gen = cfg.reader.get("generation")
    if gen is not None:
        assert gen.max_new_tokens == 1024  # the authors' chat_inference.py


@pytest.mark.parametrize("dataset", ["asqa", "hotpot_qa", "eli5"])
def test_table1_main(dataset: str) -> None:
    cfg, sweep = _cfg("table1_main", f"dataset={dataset}")
    assert sweep["reader.model"].split(",") == [LLAMA_8B, LLAMA_70B]  # the paper's two row groups
    assert cfg.reader.model == LLAMA_8B and cfg.reader.window >= 4000 + 1024 + 256
    assert cfg.pruner.tokenizer == LLAMA_8B  # Llama-3.1's tokenizer counts the budgets (8B and 70B share it)
    systems = _systems(cfg)
    assert list(systems) == ["htmlrag", "bm25", "bge", "e5_mistral", "longllmlingua", "jina_reader"]
    ours = systems["htmlrag"]
    assert (ours["budget"], ours["budget1"], ours["max_words1"], ours["max_words2"]) == (4000, COARSE_4K[dataset],
                                                                                         256, 128)
    assert _model(ours["ranker1"]) == BGE and _model(ours["ranker2"]) == PHI
    for name, model in (("bm25", None), ("bge", BGE), ("e5_mistral", E5)):
        assert _refiner(systems[name]["refiner"]) == "ChunkRerankRefiner" and systems[name]["budget"] == 4000
        assert _model(systems[name]["ranker1"]) == model
        assert systems[name]["refiner"].fill == "stop"
    assert _refiner(systems["longllmlingua"]["refiner"]) == "LongLLMLinguaRefiner"
    assert _refiner(systems["jina_reader"]["refiner"]) == "ReaderLMRefiner"
    assert all(s["budget"] == 4000 for s in systems.values())
    names = [str(m) for m in cfg.metric.names]
    assert ({"rouge_l", "bleu"} <= set(names)) if dataset == "eli5" else ({"em", "hit1"} <= set(names))


@pytest.mark.parametrize("experiment,reader", [("table2_long_context", LLAMA_70B), ("table6_long_context_8b", LLAMA_8B)])
def test_table2_and_table6_long_context(experiment: str, reader: str) -> None:
    cfg, _ = _cfg(experiment, "dataset=nq")
    assert cfg.reader.model == reader
    assert cfg.reader.window >= 128000 + 1024 + 256  # the whole 128K context reaches the reader
    systems = _systems(cfg)
    assert list(systems) == ["htmlrag_no_pruning", "vanilla_html", "plain_text", "markdown"]
    assert all(s["budget"] == 128000 and s["ranker1"] is None and s["ranker2"] is None for s in systems.values())
    assert systems["htmlrag_no_pruning"]["clean"] and not systems["vanilla_html"]["clean"]
    assert [systems[s]["refiner"].fmt for s in ("plain_text", "markdown")] == ["text", "markdown"]


def test_table3_ablation() -> None:
    cfg, _ = _cfg("table3_ablation", "dataset=hotpot_qa")
    s = _systems(cfg)
    assert list(s) == ["htmlrag", "wo_block_tree", "wo_prune_embed", "wo_prune_gen"]
    assert (s["htmlrag"]["budget"], s["htmlrag"]["budget1"]) == (4000, 8000)
    assert (s["wo_block_tree"]["max_words1"], s["wo_block_tree"]["max_words2"]) == (1, 1)
    assert s["wo_block_tree"]["refiner"].pack_siblings is False
    assert s["wo_prune_embed"]["ranker1"] is None and _model(s["wo_prune_embed"]["ranker2"]) == PHI
    assert _model(s["wo_prune_gen"]["ranker1"]) == BGE and s["wo_prune_gen"]["ranker2"] is None


def test_table4_cost_on_eli5_with_llm_chat() -> None:
    cfg, _ = _cfg("table4_cost")
    assert cfg.dataset.name == "eli5" and cfg.reader.model == LLAMA_70B  # LLM Chat: the reader itself
    assert [str(m) for m in cfg.metric.names] == ["rouge_l", "bleu"]
    s = _systems(cfg)
    assert list(s) == ["htmlrag", "bge"]
    assert _refiner(s["htmlrag"]["refiner"]) == "CostedPipeline"  # Prune-Embed = step1, Prune-Gen = step2
    assert (s["htmlrag"]["budget"], s["htmlrag"]["budget1"]) == (4000, 6000)
    assert _model(s["htmlrag"]["ranker1"]) == BGE and _model(s["htmlrag"]["ranker2"]) == PHI
    assert _refiner(s["bge"]["refiner"]) == "ChunkRerankRefiner" and _model(s["bge"]["ranker1"]) == BGE


@pytest.mark.parametrize("dataset", ["asqa", "musique"])
def test_table5_info_loss_budgets(dataset: str) -> None:
    cfg, _ = _cfg("table5_info_loss", f"dataset={dataset}")
    assert cfg.reader._target_.endswith("NoneReader") and cfg.reader.window >= 128000
    s = _systems(cfg)
    for name in ("plain_text", "markdown", "htmlrag_wo_prune"):  # lossless conversions at 128K
        assert s[name]["budget"] == 128000 and s[name]["ranker1"] is None
    assert s["htmlrag_wo_prune"]["clean"] and not s["plain_text"]["clean"]
    for name in ("bm25", "bge", "e5_mistral", "longllmlingua", "jina_reader"):  # baselines at 4K
        assert s[name]["budget"] == 4000
    coarse = s["htmlrag_coarse"]  # "HtmlRAG (8k)": the coarse step at the coarse budget
    assert coarse["budget"] == COARSE_4K[dataset] and coarse["max_words1"] == 256
    assert _model(coarse["ranker1"]) == BGE and coarse["ranker2"] is None
    assert s["htmlrag"]["budget"] == 4000 and _model(s["htmlrag"]["ranker2"]) == PHI
    assert "vanilla_html" not in s and "raw_pages" not in s


def test_table7_pruner_size() -> None:
    cfg, _ = _cfg("table7_pruner_size", "dataset=trivia_qa")
    s = _systems(cfg)
    assert _model(s["htmlrag_phi3"]["ranker2"]) == PHI and _model(s["htmlrag_llama1b"]["ranker2"]) == LLAMA_1B
    assert all(x["budget"] == 4000 and x["budget1"] == 8000 and _model(x["ranker1"]) == BGE for x in s.values())


def test_figure5_granularity() -> None:
    cfg, sweep = _cfg("figure5_granularity", "dataset=asqa")
    assert sweep["pruner.max_words2"] == "64,128,256,512"
    assert (cfg.pruner.budget, cfg.pruner.budget1, cfg.pruner.max_words) == (4000, 6000, 256)


def test_formats_4k_is_ours_not_table6() -> None:
    assert "table6_formats_4k" not in PAPER and (CONF_DIR / "experiment" / "formats_4k.yaml").is_file()
