"""Document-QA (SuperRAG) parts of the evaluation run: graph systems and the LLM judge step (the tables per
question type/domain with pairwise t-tests are :mod:`htmlrag.evaluation.run_tables`, from the rows). Called from :mod:`htmlrag_bench.eval.systems.build` and :mod:`htmlrag_bench.eval.app`.

Graph systems are baselines with a ``graph`` entry (:class:`htmlrag_bench.eval.docqa_schemas.GraphSystemConfig`); they
share one corpus per distinct ``docqa.corpus`` setting, kept under ``docqa.corpus_root/<key>`` (the key
hashes the corpus settings and the parser/graph/index code, so changed code never reuses an old graph).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.errors import HtmlRagError
from htmlrag.core.fingerprint import PDF_CORPUS, PDF_ROWS, fingerprint
from htmlrag.docqa.judge import (
    JudgeItem,
    LLMJudge,
    ReaderChat,
    judge_report,
    judgment_record,
    judgments_record,
)
from htmlrag.evaluation.grid import write_formats
from htmlrag.evaluation.report import judge_grid
from htmlrag.evaluation.scoring.loop import System
from htmlrag.evaluation.store import atomic_write
from htmlrag.superrag.build.corpus import CorpusConfig
from htmlrag.superrag.build.embed import CachedEmbedder, HashingEmbedder, SentenceTransformerEmbedder
from htmlrag.superrag.settings import GraphSetting
from htmlrag.superrag.system import CorpusHandle, GraphContextPipeline
from htmlrag_bench.eval.systems.common import build_reader, load_examples, plain

log = logging.getLogger(__name__)
_HANDLES: dict[str, Any] = {}
JUDGE_METRICS = ("judge", "judge_invalid")


def check(cfg: DictConfig) -> None:
    """Fail before any work: the judge needs a reader's answers; a flat graph system needs flat chunks."""
    flat = [n for n, b in cfg.baselines.items() if b is not None and (b.get("graph") or {}).get("flat")]
    if flat and not cfg.docqa.corpus.flat_words:
        raise HtmlRagError(f"baselines {flat} search the flat (non-layout) chunks, but docqa.corpus.flat_words=0 "
                           "builds none; set docqa.corpus.flat_words (the paper's setting 1: 150)")
    if cfg.judge.enabled and cfg.reader._target_.endswith("NoneReader"):
        raise HtmlRagError("judge is enabled but reader=none gives no answers to judge; choose a reader or judge=none")
    if cfg.judge.enabled and cfg.judge.reader is None:
        raise HtmlRagError("judge.enabled=true needs judge.reader (e.g. judge=docbench_gpt4)")


def uses_superrag(cfg: DictConfig) -> bool:
    """True when rows depend on :mod:`htmlrag.superrag` code: a PDF dataset (parsed to HTML) or a graph system."""
    target = str(cfg.dataset.get("loader", {}).get("_target_", ""))
    pdf = target.startswith(("htmlrag.data.pdfqa.", "htmlrag.data.docbench.", "htmlrag.data.spiqa."))
    return pdf or any((b or {}).get("graph") is not None for b in cfg.baselines.values())


def run_identity_extra(cfg: DictConfig) -> dict[str, str]:
    """Added to the run id: the fingerprint of :data:`~htmlrag.core.fingerprint.PDF_ROWS` when
    :func:`uses_superrag` (HtmlRAG runs hash :data:`~htmlrag.core.fingerprint.ROWS` only), so changed
    parser/graph code starts a new run."""
    if not uses_superrag(cfg):
        return {}
    return {"_superrag": fingerprint(PDF_ROWS)}


def corpus_handle(cfg: DictConfig) -> Any:
    """The process-wide :class:`~htmlrag.superrag.system.CorpusHandle` for ``cfg.docqa.corpus``."""
    settings = plain(cfg.docqa.corpus)
    folder = Path(cfg.docqa.corpus_root) / content_key("corpus", settings, fingerprint(PDF_CORPUS))[:16]
    key = str(folder.resolve())
    if key not in _HANDLES:
        model = settings["embedding_model"]
        embedder = (HashingEmbedder(int(model.split("-", 1)[1])) if model.startswith("hashing-")
                    else SentenceTransformerEmbedder(model, device=cfg.device))
        if cfg.docqa.get("embedding_cache") and not model.startswith("hashing-"):
            embedder = CachedEmbedder(embedder, cfg.docqa.embedding_cache)
        _HANDLES[key] = CorpusHandle(folder, CorpusConfig(**settings), embedder=embedder,
                                     parse_cache=cfg.docqa.parse_cache)
    return _HANDLES[key]


def close_handles() -> None:
    """Close every open corpus (graph store, vector index, lock)."""
    for h in list(_HANDLES.values()):
        try:
            h.close()
        except Exception as exc:  # closing must not hide the run's result
            log.warning("closing graph corpus %s: %s", h.folder, exc)
    _HANDLES.clear()


atexit.register(close_handles)


def _reflect_reader(cfg: DictConfig, mode: str, cache_dir: Path | None) -> Any:
    if mode == "keyword":
        return None
    if mode != "reader":
        raise HtmlRagError(f"graph.reflect_reader must be 'keyword' or 'reader', not {mode!r}")
    if cfg.reader._target_.endswith(("NoneReader", "FakeReader")):
        raise HtmlRagError("graph.reflect_reader=reader needs a model reader (hf, vllm, openai)")

    chat = ReaderChat(build_reader(cfg, cache_dir))
    return lambda prompt: chat.chat([{"role": "user", "content": prompt}])


def graph_system(cfg: DictConfig, name: str, spec: dict[str, Any], graph: dict[str, Any], tokenizer: Any,
                 cache_dir: Path | None, budgets: tuple[int, ...] = ()) -> System:
    """A SuperRAG graph system from a baseline entry (``budget``/``fmt`` from the entry, stages from ``graph``;
    ``budgets``: a budget frontier from one retrieval)."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise HtmlRagError(f"system {name!r}: graph systems run in one process (the graph corpus is opened "
                           "for writing); run without sharding")
    check(cfg)
    graph = dict(graph)
    mode = graph.pop("reflect_reader", "keyword")
    setting = GraphSetting(**graph)
    handle = corpus_handle(cfg)
    fmt = str(spec["fmt"])
    toc_llm = setting.toc and setting.toc_select == "reader"
    pipe = GraphContextPipeline(handle, setting, tokenizer, budget=int(spec["budget"]), fmt=fmt,
                                reader=_reflect_reader(cfg, mode, cache_dir),
                                toc_reader=_reflect_reader(cfg, "reader", cache_dir) if toc_llm else None)
    reader_id = plain(cfg.reader) if mode == "reader" or toc_llm else mode
    def key(budget: int) -> str:
        return content_key("graph", graph, mode, reader_id, budget, fmt, plain(cfg.docqa.corpus),
                           fingerprint(PDF_ROWS), cfg.pruner.tokenizer)

    return System(name=name, pipeline=pipe, clean=False, fmt=fmt, fingerprint=key(spec["budget"]), budgets=budgets,
                  fingerprints={b: key(b) for b in budgets})


# ------------------------------------------------------------------------------------- after the run
_EXAMPLES: dict[str, Any] = {}


def _examples(cfg: DictConfig) -> dict[str, Any]:
    """Examples by id (loaded again: loaders read only question files, PDFs are parsed lazily)."""

    key = content_key(plain(cfg.dataset))
    if key not in _EXAMPLES:
        _EXAMPLES.clear()
        _EXAMPLES[key] = {ex.id: ex for ex in load_examples(cfg)}
    return _EXAMPLES[key]


def make_judge(cfg: DictConfig, cache_dir: Path | None, reader: Any = None) -> Any:
    """The :class:`~htmlrag.docqa.judge.LLMJudge` of ``cfg.judge`` (``reader``: another judge model's reader
    config, e.g. ``judge.second``; default ``judge.reader``)."""
    from hydra.utils import instantiate

    j = cfg.judge
    spec = plain(reader if reader is not None else j.reader)
    spec["cache"] = None  # the judge keeps its own cache (judge.sqlite)
    chat = ReaderChat(instantiate(spec, _convert_="all"))
    cache = SqliteCache(cache_dir / "judge.sqlite", "judge").open() if cache_dir is not None and j.cache else None
    prompt = j.prompt
    if j.prompt_file:
        try:
            prompt = Path(j.prompt_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise HtmlRagError(f"judge.prompt_file {j.prompt_file}: {exc}") from exc
    if not prompt.strip():
        raise HtmlRagError("judge.prompt is empty")
    return LLMJudge(chat, prompt, system=j.system, cache=cache, concurrency=j.concurrency,
                    max_reference_chars=j.max_reference_chars)


def judge_rows(cfg: DictConfig, store: Any, rows: list[dict[str, Any]], metrics: list[str]
               ) -> tuple[list[dict[str, Any]], list[str]]:
    """With ``judge.enabled``: judge every answer, add ``judge``/``judge_invalid`` to the rows' scores (in
    memory; ``predictions.jsonl`` is not rewritten), write ``judgments.jsonl`` and ``judge.json``."""
    if not cfg.judge.enabled:
        return rows, metrics

    check(cfg)
    exs = _examples(cfg)
    cache_dir = Path(cfg.paths.cache) if cfg.run.use_cache else None
    judge = make_judge(cfg, cache_dir)
    items, slots = [], []
    for r in rows:
        if r.get("error"):
            continue
        ex = exs.get(r["id"])
        gold = (ex.long_answers or ex.answers)[0] if ex is not None and (ex.long_answers or ex.answers) else \
            (r["answers"][0] if r.get("answers") else "")
        ref = str(ex.metadata.get("evidence", "")) if ex is not None and cfg.judge.reference else ""
        for s, e in r["systems"].items():
            if e.get("error") or "scores" not in e:
                continue
            items.append(JudgeItem(r["question"], e.get("response") or "", gold, ref))
            slots.append((r["id"], s, e))
    log.info("judge %s: %d answers x %d draws", cfg.judge.name, len(items), cfg.judge.draws)
    draws = judge.judge_draws(items, int(cfg.judge.draws))
    second = (make_judge(cfg, cache_dir, cfg.judge.second).judge_draws(items, int(cfg.judge.draws))
              if cfg.judge.get("second") is not None else None)
    _judge_scores(slots, draws)
    _write_judgments(cfg, store, slots, draws, second, judge.chat.name)
    return rows, [*metrics, *(m for m in JUDGE_METRICS if m not in metrics)]


def _judge_scores(slots: list[tuple[str, str, dict[str, Any]]], draws: list[list[Any]]) -> None:
    """``judge`` = the mean verdict over the draws (no verdict counts 0), ``judge_invalid`` = the share of draws
    without a verdict, into each answer's scores (in memory; ``predictions.jsonl`` is not rewritten)."""
    for (_, _, e), vs in zip(slots, draws, strict=True):
        e["scores"]["judge"] = sum(v.judge for v in vs) / len(vs)
        e["scores"]["judge_invalid"] = sum(v.invalid for v in vs) / len(vs)


def _write_judgments(cfg: DictConfig, store: Any, slots: list[tuple[str, str, dict[str, Any]]],
                     draws: list[list[Any]], second: list[list[Any]] | None, model: str) -> None:
    """``judgments.jsonl`` (one line per answer, its draws and the second judge's) and ``judge.json``
    (:func:`htmlrag.docqa.judge.judge_report`, from those lines: ``htmlrag-paper verify`` recomputes it)."""
    records = [judgment_record(rid, s, vs, second[i] if second is not None else None)
               for i, ((rid, s, _), vs) in enumerate(zip(slots, draws, strict=True))]
    atomic_write(store.dir / "judgments.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    report = judge_report(records, judge=cfg.judge.name, model=model, draws=int(cfg.judge.draws),
                          second_model=str(plain(cfg.judge.second).get("model", "")) if second is not None else None)
    report["judgments"] = judgments_record(records)
    store.write_json("judge.json", report)
    log.info("judge: %s; agreement of the draws: %s", json.dumps(report["overall"]),
             json.dumps(report["agreement"]["draws"]["all"]))


def write_judge_table(cfg: DictConfig, store: Any, summary: dict[str, Any]) -> None:
    """``tables/judge_agreement.{md,csv,tex}`` (:func:`htmlrag.evaluation.report.judge_grid`)."""
    if not cfg.judge.enabled or not (store.dir / "judge.json").is_file():
        return
    report = json.loads((store.dir / "judge.json").read_text(encoding="utf-8"))
    write_formats(judge_grid(report, summary), store.dir / "tables", "judge_agreement")
