"""Typed schemas of every config group, registered in Hydra's ConfigStore.

Groups with one shape (cleaner, pruner, metric, paths, run, wandb) are typed in the top-level
:class:`Config`; groups with several shapes (dataset, ranker, reader) register one schema per shape and each
YAML option names its schema in its defaults list (``- htmlrag_test_schema``). Every node is a structured
config, so a misspelt key or a wrong type fails when the config composes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from omegaconf import II, MISSING, OmegaConf

from eval.docqa_schemas import DATASET_SCHEMAS, DocQAConfig, GraphSystemConfig, JudgeConfig

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "conf"


def _metric_enum() -> type[Enum]:
    import htmlrag.docqa.metrics  # noqa: F401 - registers the document-QA metrics
    from htmlrag.metrics import METRICS

    return Enum("MetricName", {name: name for name in METRICS})  # type: ignore[return-value]


MetricName = _metric_enum()


class Fmt(StrEnum):
    """Context formats."""

    html = "html"
    text = "text"
    markdown = "markdown"


# ---------------------------------------------------------------- datasets
@dataclass
class HtmlRagTestLoader:
    _target_: str = "htmlrag.data.load_htmlrag_test"
    dataset: str = MISSING
    path: str | None = None
    split: str = "test"
    hub: str = "zstanjj/HtmlRAG-test"
    revision: str | None = None
    data_files: str | None = None
    sample_size: int | None = 400
    seed: int = II("seed")


@dataclass
class WtqLoader:
    _target_: str = "htmlrag.data.load_wtq_html"
    root: str = MISSING
    order: str = "shuffled"
    sample_size: int | None = None
    seed: int = II("seed")


@dataclass
class PagesLoader:
    _target_: str = "htmlrag.data.load_page_questions"
    path: str = MISSING
    sample_size: int | None = None
    seed: int = II("seed")


@dataclass
class CragLoader:
    _target_: str = "htmlrag.data.load_crag"
    path: str = MISSING
    sample_size: int | None = None
    seed: int = II("seed")


@dataclass
class DatasetConfig:
    """A dataset: its loader plus how to evaluate it.

    ``short_answer`` appends the short-answer instruction to prompts; ``require_pages`` fails early when
    examples have no pages (set false for closed-book runs); ``limit`` keeps the first N examples.
    """

    name: str = MISSING
    short_answer: bool = True
    require_pages: bool = True
    limit: int | None = None
    loader: Any = MISSING


@dataclass
class HtmlRagTestDataset(DatasetConfig):
    loader: HtmlRagTestLoader = field(default_factory=HtmlRagTestLoader)


@dataclass
class WtqDataset(DatasetConfig):
    loader: WtqLoader = field(default_factory=WtqLoader)


@dataclass
class PagesDataset(DatasetConfig):
    loader: PagesLoader = field(default_factory=PagesLoader)


@dataclass
class CragDataset(DatasetConfig):
    loader: CragLoader = field(default_factory=CragLoader)


# ---------------------------------------------------------------- rankers
@dataclass
class BM25RankerConfig:
    _target_: str = "htmlrag.rankers.bm25.BM25Ranker"
    stemmer: str | None = "english"
    k1: float = 1.5
    b: float = 0.75
    page_prior: float = 0.0  # > 0: add this x the page's best block score to its blocks (see PagePrior)


@dataclass
class EmbeddingRankerConfig:
    _target_: str = "htmlrag.rankers.embedding.EmbeddingRanker"
    model: str = MISSING
    query_instruction: str | None = None
    device: str = II("device")
    batch_size: int = 32
    max_seq_length: int | None = None
    trust_remote_code: bool = False
    dtype: str = "float32"  # float32 | bfloat16 | float16
    page_prior: float = 0.0  # > 0: add this x the page's best block score to its blocks (see PagePrior)
    cpu_workers: int | None = None  # CPU: parallel encoding streams (None: one per torch thread, at most 8)
    cpu_batch_size: int = 8  # batch size of each CPU stream


# ---------------------------------------------------------------- readers
@dataclass
class GenerationSchema:
    max_new_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = II("seed")


@dataclass
class NoneReaderConfig:
    _target_: str = "htmlrag.readers.NoneReader"
    window: int = 4096
    tokenizer: str | None = II("pruner.tokenizer")
    cache: bool = False


@dataclass
class FakeReaderConfig:
    _target_: str = "htmlrag.readers.FakeReader"
    window: int = 4096
    tokenizer: str | None = II("pruner.tokenizer")
    max_words: int = 30
    fail_on: str | None = None
    delay: float = 0.0
    cache: bool = True


@dataclass
class HFReaderConfig:
    _target_: str = "htmlrag.readers.hf.HFReader"
    model: str = MISSING
    revision: str | None = None
    window: int | None = 4096
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    device: str = II("device")
    dtype: str = "auto"
    batch_size: int = 4
    trust_remote_code: bool = False
    system: str | None = "You are a helpful assistant."
    prompt: str = "auto"  # chat | completion (few-shot, stops at the end of the answer line) | auto (see HFReader)
    cache: bool = True


@dataclass
class VLLMReaderConfig:
    _target_: str = "htmlrag.readers.vllm.VLLMReader"
    model: str = MISSING
    revision: str | None = None
    window: int = 4096
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    dtype: str = "auto"
    trust_remote_code: bool = False
    system: str | None = "You are a helpful assistant."
    cache: bool = True


@dataclass
class OpenAIReaderConfig:
    _target_: str = "htmlrag.readers.openai.OpenAIReader"
    model: str = MISSING
    window: int = 4096
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    base_url_env: str = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    default_base_url: str = "https://api.openai.com/v1"
    timeout: float = 60.0
    max_retries: int = 5
    backoff: float = 1.0
    concurrency: int = 8
    tokenizer: str | None = II("pruner.tokenizer")
    system: str | None = "You are a helpful assistant."
    cache: bool = True


# ---------------------------------------------------------------- single-shape groups
@dataclass
class CleanerConfig:
    """``enabled``: lossless cleaning (htmlrag.clean_html) before anything else; false = raw pages.
    ``keep_hidden``: keep text hidden by markup (display:none, visibility:hidden, the hidden attribute:
    Wikipedia's sort keys and coordinates), which cleaning drops by default; true = the paper's cleaning."""

    enabled: bool = True
    keep_hidden: bool = False


@dataclass
class PrunerConfig:
    """Block-tree pruning of the system under test (and the default for baselines).

    ``max_words``/``max_words2``: block sizes (words) of steps 1/2; ``budget1``: step-1 budget (tokens, only
    used when there is a step-2 ranker); ``budget``: the final context budget (tokens); ``tokenizer``: the
    token counter (``null``: offline Mistral-7B); ``ranker2``: step-2 ranker (``null``: one step).
    """

    max_words: int = 256
    max_words2: int = 128
    budget1: int = 6144
    budget: int = 4096
    fmt: Fmt = Fmt.html
    tokenizer: str | None = None
    fill: str = "skip"
    ranker2: Any = None
    refiner: Any = None  # a `refiner` group option replacing the block-tree pipeline (eval/refiners.py)


@dataclass
class SystemConfig:
    """A baseline system; unset fields follow the pruner of the system under test."""

    clean: bool = True
    ranker1: Any = None
    ranker2: Any = None
    max_words1: int = II("pruner.max_words")
    max_words2: int = II("pruner.max_words2")
    budget1: int = II("pruner.budget1")
    budget: int = II("pruner.budget")
    fmt: Fmt = II("pruner.fmt")  # noqa: RUF009 - an interpolation string
    graph: GraphSystemConfig | None = None  # a SuperRAG graph system instead of block-tree pruning (eval/docqa.py)
    refiner: Any = None  # a `refiner` group option (baselines of eval/refiners.py)


@dataclass
class MetricConfig:
    """Metrics scored per example (``names``) and the significance level of the t-test daggers."""

    names: list[MetricName] = field(default_factory=lambda: [MetricName["ref_em"]])  # type: ignore[valid-type]
    alpha: float = 0.05


@dataclass
class PathsConfig:
    root: str = "${project_root:}"
    data: str = "${paths.root}/data"
    shared_data: str = "${paths.root}/../shared/data"
    results: str = "${paths.root}/results"
    cache: str = "${paths.root}/.cache/htmlrag-bench"


@dataclass
class RunConfig:
    """How to run (not part of the run id): chunk size, progress bars, caches, shard merge timeout, and failure
    handling: ``retry_failed`` recomputes failed rows on a rerun, ``allow_failures`` exits 0 although examples
    failed, ``max_consecutive_failures`` failed attempts/examples in a row stop the run (0: no bound)."""

    chunk_size: int = 8
    progress: bool = True
    save_contexts: bool = False
    use_cache: bool = True
    retry_failed: bool = True
    allow_failures: bool = False
    max_consecutive_failures: int = 8
    shard_timeout_s: float = 24 * 3600.0


@dataclass
class WandbConfig:
    enabled: bool = False
    project: str = "htmlrag-bench"
    entity: str | None = None
    mode: str = "offline"


@dataclass
class Config:
    """The whole configuration of one ``htmlrag-bench`` run.

    ``name`` is the experiment (``results/<name>/<run-id>/``); ``system_name`` names the system under
    test, built from ``cleaner``, ``ranker`` (step 1) and ``pruner``; ``baselines`` adds other systems,
    compared with it by paired t-tests.
    """

    name: str = "default"
    seed: int = 0
    device: str = "cpu"
    system_name: str = "htmlrag"
    dataset: Any = MISSING
    cleaner: CleanerConfig = field(default_factory=CleanerConfig)
    ranker: Any = None
    pruner: PrunerConfig = field(default_factory=PrunerConfig)
    reader: Any = MISSING
    metric: MetricConfig = field(default_factory=MetricConfig)
    # Entries are checked against SystemConfig by validate() before any work; typed as Any so that a baseline
    # can be added from the command line (+baselines.name={clean:false}), which a typed dict refuses.
    baselines: dict[str, Any] = field(default_factory=dict)
    paths: PathsConfig = field(default_factory=PathsConfig)
    run: RunConfig = field(default_factory=RunConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    caption: str = ""
    docqa: DocQAConfig = field(default_factory=DocQAConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)


#: Config keys that do not change results: left out of the run id.
NOT_HASHED = ("paths", "run", "wandb", "hydra", "caption")

_SCHEMAS: dict[str, dict[str, Any]] = {
    "dataset": {"htmlrag_test_schema": HtmlRagTestDataset, "wtq_schema": WtqDataset, "pages_schema": PagesDataset,
                "crag_schema": CragDataset, **DATASET_SCHEMAS},
    "ranker": {"bm25_schema": BM25RankerConfig, "embedding_schema": EmbeddingRankerConfig},
    "reader": {"none_schema": NoneReaderConfig, "fake_schema": FakeReaderConfig, "hf_schema": HFReaderConfig,
               "vllm_schema": VLLMReaderConfig, "openai_schema": OpenAIReaderConfig},
}


def validate(cfg: Any) -> None:
    """Check what composition cannot: every baseline against :class:`SystemConfig` (misspelt or mistyped
    keys raise here, before anything is loaded). The entries are replaced by typed nodes."""
    from omegaconf import open_dict

    from htmlrag.errors import HtmlRagError

    with open_dict(cfg):
        for name in list(cfg.baselines):
            entry = cfg.baselines[name]
            try:
                typed = OmegaConf.merge(OmegaConf.structured(SystemConfig), entry if entry is not None else {})
            except Exception as exc:  # omegaconf raises several types; report the baseline by name
                raise HtmlRagError(f"baseline {name!r}: {exc}") from exc
            cfg.baselines[name] = typed


def project_root() -> str:
    """``$HTMLRAG_ROOT`` or the folder holding ``conf/``."""
    return os.environ.get("HTMLRAG_ROOT", str(ROOT))


def register_configs() -> None:
    """Register the schemas in the ConfigStore and the ``project_root`` resolver (idempotent)."""
    from hydra.core.config_store import ConfigStore

    if not OmegaConf.has_resolver("project_root"):
        OmegaConf.register_new_resolver("project_root", project_root)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    for group, schemas in _SCHEMAS.items():
        for name, node in schemas.items():
            cs.store(group=group, name=name, node=node)
    from eval.refiners import register as register_refiners

    register_refiners(cs)  # refiner group and generative ranker schemas
