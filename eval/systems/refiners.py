"""Refiner systems (the paper's baselines and instrumented HtmlRAG pipelines) for ``htmlrag-bench``.

A system gets a refiner with ``baselines.<name>.refiner`` (or ``pruner.refiner`` for the system under test),
chosen from the ``refiner`` config group (``conf/refiner/``): the refiner replaces the block-tree pipeline
of that system. The harness passes each refiner the system's token counter and ``budget``, and, where the
refiner's constructor takes them, its rankers (``ranker1`` as ``ranker``/``ranker1``, ``ranker2``), ``budget1``,
block sizes, ``fmt`` and ``fill``. A chunk-and-rerank baseline is therefore
``{refiner: chunk_rerank, ranker1: bge}``: the same ranker options as HtmlRAG's own steps.

Refiners holding a large model (LongLLMLingua, Reader-LM) are run over all of this process's examples
*before* the reader is built (:func:`precompute_heavy`), their contexts go to the context cache, and the
model is released, so that the compressor and the reader never share the accelerator.

This module also registers the typed schemas of the ``refiner`` group, the generative-ranker schema of
the ``ranker`` group (``generative_schema``) and the ``paper_metrics`` resolver (:mod:`htmlrag_bench.eval.paper`).
"""

from __future__ import annotations

import atexit
import hashlib
import inspect
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import II, MISSING

from htmlrag.core.cache import SqliteCache
from htmlrag.core.errors import HtmlRagError, ServiceError
from htmlrag.evaluation.scoring.contexts import Builder
from htmlrag.evaluation.scoring.loop import stage_check
from htmlrag_bench.eval.paper import register_resolvers

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- schemas
@dataclass
class ChunkRerankConfig:
    """LangChain HTML section chunks (h1-h4), reranked by the system's ``ranker1``, filled to the budget."""

    _target_: str = "htmlrag.baselines.chunk_rerank.ChunkRerankRefiner"
    max_words: int | None = None
    fill: str = "stop"
    separator: str = "\n"


@dataclass
class FormatRefinerConfig:
    """Whole pages as ``html`` / ``text`` (BeautifulSoup) / ``markdown`` (markdownify), cut to the budget."""

    _target_: str = "htmlrag.baselines.page_formats.FormatRefiner"
    fmt: str = MISSING
    separator: str = "\n"


@dataclass
class LongLLMLinguaConfig:
    """LongLLMLingua as in the authors' code (see :mod:`htmlrag.baselines.longllmlingua`)."""

    _target_: str = "htmlrag.baselines.longllmlingua.LongLLMLinguaRefiner"
    model: str = "meta-llama/Llama-2-7b-chat-hf"
    device: str = II("device")
    dtype: str = "auto"
    trust_remote_code: bool = False
    revision: str | None = None
    max_words: int | None = None
    compress_config: dict[str, Any] | None = None


@dataclass
class ReaderLMConfig:
    """JinaAI Reader-LM over packed pages (see :mod:`htmlrag.baselines.reader_lm`)."""

    _target_: str = "htmlrag.baselines.reader_lm.ReaderLMRefiner"
    model: str = "jinaai/reader-lm-1.5b"
    num_packs: int | None = None
    max_pack_tokens: int = 64000
    max_new_tokens: int = 1000
    repetition_penalty: float = 1.08
    presence_penalty: float = 0.25
    backend: str = "hf"
    device: str = II("device")
    dtype: str = "auto"
    batch_size: int = 4
    trust_remote_code: bool = False
    revision: str | None = None
    vllm_kwargs: dict[str, Any] | None = None


@dataclass
class BlockPipelineConfig:
    """HtmlRAG's pipeline with per-step model-cost counters; ``pack_siblings=false`` with block sizes of 1
    word is the DOM-tree ablation."""

    _target_: str = "htmlrag.baselines.costed.CostedPipeline"
    pack_siblings: bool = II("fidelity.pack_siblings")
    split_to_fill: int = II("fidelity.split_to_fill")


@dataclass
class GenerativeRankerConfig:
    """A generative pruner (HtmlRAG step 2): ``htmlrag.rankers.generative.GenerativeRanker``."""

    _target_: str = "htmlrag.rankers.generative.GenerativeRanker"
    model_name_or_path: str = MISSING
    device: str = II("device")
    dtype: str = "float32"  # the released pruners' options say auto (the checkpoint's own bf16)
    max_prompt_tokens: int | None = None
    truncation: str = "error"
    batch_size: int = 32
    attn_implementation: str | None = None
    length_normalize: bool = False
    trust_remote_code: bool = False
    revision: str | None = None


SCHEMAS: dict[str, dict[str, Any]] = {
    "refiner": {"chunk_rerank_schema": ChunkRerankConfig, "format_schema": FormatRefinerConfig,
                "longllmlingua_schema": LongLLMLinguaConfig, "reader_lm_schema": ReaderLMConfig,
                "block_pipeline_schema": BlockPipelineConfig},
    "ranker": {"generative_schema": GenerativeRankerConfig},
}


def register(cs: Any) -> None:
    """Store the schemas above in Hydra's ConfigStore ``cs`` and register the ``paper_metrics`` resolver
    (called by :func:`htmlrag_bench.eval.schemas.register_configs`)."""
    for group, schemas in SCHEMAS.items():
        for name, node in schemas.items():
            cs.store(group=group, name=name, node=node)
    register_resolvers()


# ---------------------------------------------------------------- building
def make_refiner(spec: dict[str, Any], *, ranker1: Any, ranker2: Any, tokenizer: Any, system: dict[str, Any],
                 fill: str = "skip") -> Any:
    """Build a refiner from its plain (resolved) config ``spec`` (with ``_target_``).

    The refiner always gets ``tokenizer`` and ``budget``; it also gets ``ranker``/``ranker1`` (the system's
    ``ranker1``), ``ranker2``, ``budget1``, ``max_words1``, ``max_words2``, ``fmt`` and ``fill`` when its
    constructor takes them and its own config does not set them.
    """
    from hydra.utils import get_class

    cls = get_class(spec["_target_"])
    params = inspect.signature(cls).parameters
    offer = {"tokenizer": tokenizer, "budget": system["budget"], "ranker": ranker1, "ranker1": ranker1,
             "ranker2": ranker2, "budget1": system.get("budget1"), "max_words1": system.get("max_words1"),
             "max_words2": system.get("max_words2"), "fmt": system.get("fmt"), "fill": fill,
             **({"split_oversize": system["split_oversize"]} if "split_oversize" in system else {})}
    kwargs = {k: v for k, v in offer.items() if k in params and k not in spec}
    if "ranker" in params and ranker1 is None:
        raise HtmlRagError(f"refiner {spec['_target_']} ranks chunks: give the system a ranker1 "
                           "(e.g. /ranker@baselines.<name>.ranker1: bm25)")
    # objects are passed directly: hydra's instantiate would turn dataclass objects (the token counter) into configs
    return cls(**{k: v for k, v in spec.items() if k != "_target_"}, **kwargs)


def precompute_heavy(examples: Sequence[Any], systems: Sequence[Any], caches: Any, store: Any, *, rank: int = 0,
                     world: int = 1, retry_failed: bool = False, progress: bool = False,
                     waterfall: str | None = None) -> int:
    """Build the contexts of every system whose pipeline has ``release()`` (a refiner with a large model) for
    this process's pending examples (every budget of a frontier; with the run's ``waterfall`` rule, so the cache
    entries carry the stage checks the loop looks for), store them in the context cache, then release the model.

    Runs before the reader is built, so the refiner's model and the reader never sit on the device together.
    ``caches.contexts`` is created in a temporary folder when caching is off. A context that fails here is
    logged and left to the evaluation loop (which records the error). Returns the contexts built.
    """
    heavy = [s for s in systems if callable(getattr(s.pipeline, "release", None))]
    if not heavy:
        return 0
    if caches.contexts is None:
        folder = Path(tempfile.mkdtemp(prefix="htmlrag-contexts-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a run's own contexts, gone with the process
        caches.contexts = SqliteCache(folder / "contexts.sqlite", "contexts")
    done = store.done_ids(include_failed=not retry_failed)
    todo = [ex for i, ex in enumerate(examples) if i % world == rank and ex.id not in done]
    builder = Builder(caches, waterfall)
    built = 0
    from tqdm.auto import tqdm

    for system in heavy:
        for ex in tqdm(todo, desc=f"precompute {system.name}", disable=not progress, unit="q"):
            try:
                pages = ex.load_pages()
            except HtmlRagError:
                continue  # the loop records the example's error
            digests = [hashlib.sha256(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p).hexdigest()
                       for p in pages]
            try:
                records = builder.contexts(system, ex.question, pages, digests, stage_check(ex, waterfall))
                cached = all(c for *_, c in records)
            except ServiceError:  # a cache that does not work: stop now (the loop would stop too)
                raise
            except Exception as exc:
                log.warning("%s: context for %s failed before reading (%s: %s); the evaluation loop will retry",
                            system.name, ex.id, type(exc).__name__, exc)
                continue
            built += not cached
        system.pipeline.release()
        log.info("%s: contexts ready for %d examples; model released", system.name, len(todo))
    return built
