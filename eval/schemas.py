"""Typed schemas of every config group, registered in Hydra's ConfigStore.

Groups with one shape (cleaner, pruner, metric, paths, run, wandb) are typed in the top-level
:class:`Config`; groups with several shapes (dataset, ranker, reader) register one schema per shape and each
YAML option names its schema in its defaults list (``- htmlrag_test_schema``). Every node is a structured
config, so a misspelt key or a wrong type fails when the config composes.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import typing
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

from omegaconf import II, MISSING, DictConfig, ListConfig, OmegaConf, open_dict

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.intervals import IntervalSettings
from htmlrag.evaluation.scoring.metrics import METRICS
from htmlrag.readers.base import GenerationConfig
from htmlrag_bench.eval.docqa_schemas import DATASET_SCHEMAS, DocQAConfig, GraphSystemConfig, JudgeConfig
from htmlrag_bench.eval.locations import conf_dir, register_resolvers
from htmlrag_bench.eval.systems import fidelity
from htmlrag_bench.eval.systems.fidelity import FidelityConfig
from htmlrag_bench.eval.systems.refiners import register as register_refiners

log = logging.getLogger(__name__)
CONF_DIR = conf_dir()


#: The largest context budget in tokens (the command line's cap too).
MAX_BUDGET = 10_000_000


def rng(default: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None) -> Any:
    """A dataclass field with a range that :func:`check_ranges` enforces (``None`` stays allowed where the
    field's type allows it): ``ge`` >=, ``gt`` >, ``le`` <=."""
    return field(default=default, metadata={"range": (ge, gt, le)})


def derive(name: str, source: type, *, ranges: dict[str, dict[str, float]] | None = None,
           defaults: dict[str, Any] | None = None) -> type:
    """A schema derived from the library dataclass ``source``: its fields, types and defaults, so they have one
    home; ``ranges`` adds :func:`check_ranges` bounds (``{"top_p": {"gt": 0, "le": 1}}``) and ``defaults``
    replaces a default by a harness value (an interpolation such as ``II("seed")``)."""
    ranges, defaults = ranges or {}, defaults or {}
    unknown = (set(ranges) | set(defaults)) - {f.name for f in dataclasses.fields(source)}
    if unknown:
        raise TypeError(f"{source.__name__} has no field {sorted(unknown)}")
    hints = typing.get_type_hints(source)
    specs = []
    for f in dataclasses.fields(source):
        bounds = ranges.get(f.name, {})
        meta = {"range": (bounds.get("ge"), bounds.get("gt"), bounds.get("le"))} if bounds else {}
        if f.name in defaults:
            spec = field(default=defaults[f.name], metadata=meta)
        elif f.default_factory is not dataclasses.MISSING:
            spec = field(default_factory=f.default_factory, metadata=meta)
        else:
            spec = field(default=f.default if f.default is not dataclasses.MISSING else MISSING, metadata=meta)
        specs.append((f.name, hints[f.name], spec))
    schema = dataclasses.make_dataclass(name, specs)
    schema.__module__ = __name__  # found (and pickled) as this module's attribute
    schema.__doc__ = f"Derived from :class:`{source.__module__}.{source.__qualname__}` (fields, types, defaults)."
    return schema


def _metric_enum() -> type[Enum]:
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
    sample_size: int | None = rng(400, ge=1)
    seed: int = II("seed")


@dataclass
class WtqLoader:
    _target_: str = "htmlrag.data.load_wtq_html"
    root: str = MISSING
    order: str = "shuffled"
    sample_size: int | None = rng(None, ge=1)
    seed: int = II("seed")


@dataclass
class PagesLoader:
    _target_: str = "htmlrag.data.load_page_questions"
    path: str = MISSING
    sample_size: int | None = rng(None, ge=1)
    seed: int = II("seed")


@dataclass
class CragLoader:
    _target_: str = "htmlrag.data.load_crag"
    path: str = MISSING
    sample_size: int | None = rng(None, ge=1)
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
    limit: int | None = rng(None, ge=1)
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
    k1: float = rng(1.5, ge=0)
    b: float = rng(0.75, ge=0, le=1)
    page_prior: float = rng(II("fidelity.page_prior"), ge=0)  # > 0: add this x the page's best block score (PagePrior)
    contextual: bool = II("fidelity.ranking_context")  # rank block text with its heading / table-header context


@dataclass
class EmbeddingRankerConfig:
    _target_: str = "htmlrag.rankers.embedding.EmbeddingRanker"
    model: str = MISSING
    query_instruction: str | None = None
    device: str = II("device")
    batch_size: int = rng(32, ge=1)
    max_seq_length: int | None = rng(None, ge=1)
    trust_remote_code: bool = False
    dtype: str = "auto"  # auto (bfloat16 where the CPU/GPU computes it, else float32) | float32 | bfloat16 | float16
    page_prior: float = rng(II("fidelity.page_prior"), ge=0)  # > 0: add this x the page's best block score (PagePrior)
    contextual: bool = II("fidelity.ranking_context")  # embed block text with its heading / table-header context
    cpu_workers: int | None = rng(None, ge=1)  # CPU: parallel encoding streams (None: one per torch thread, at most 8)
    cpu_batch_size: int = rng(8, ge=1)  # batch size of each CPU stream
    # embed only BM25's best N blocks of a question, the rest below them in BM25's order (None: every block)
    candidates: int | None = rng(II("fidelity.embedding_candidates"), ge=1)


# ---------------------------------------------------------------- readers
#: The readers' decoding settings: the fields, types and defaults of the library's GenerationConfig, with ranges
#: added and the sampling seed following the run's ``seed``.
GenerationSchema = derive(
    "GenerationSchema", GenerationConfig, defaults={"seed": II("seed")},
    ranges={"max_new_tokens": {"ge": 1}, "temperature": {"ge": 0}, "top_p": {"gt": 0, "le": 1}},
)


@dataclass
class NoneReaderConfig:
    _target_: str = "htmlrag.readers.NoneReader"
    model: str | None = None  # unused: lets an experiment that names its reader model run with reader=none
    window: int | None = rng(None, ge=1)  # None: derived from the budgets (htmlrag_bench.eval.systems.build.fit_reader_window)
    tokenizer: str | None = II("pruner.tokenizer")
    cache: bool = False


@dataclass
class FakeReaderConfig:
    _target_: str = "htmlrag.readers.FakeReader"
    model: str | None = None  # unused: lets an experiment that names its reader model run with reader=fake
    window: int | None = rng(None, ge=1)
    tokenizer: str | None = II("pruner.tokenizer")
    max_words: int = rng(30, ge=1)
    fail_on: str | None = None
    delay: float = rng(0.0, ge=0)
    cache: bool = True


@dataclass
class HFReaderConfig:
    _target_: str = "htmlrag.readers.hf.HFReader"
    model: str = MISSING
    revision: str | None = None
    window: int | None = rng(None, ge=1)
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    device: str = II("device")
    dtype: str = "auto"
    batch_size: int = rng(4, ge=1)
    trust_remote_code: bool = False
    system: str | None = "You are a helpful assistant."
    prompt: str = "auto"  # chat | completion (few-shot, stops at the end of the answer line) | auto (see HFReader)
    cache: bool = True


@dataclass
class VLLMReaderConfig:
    _target_: str = "htmlrag.readers.vllm.VLLMReader"
    model: str = MISSING
    revision: str | None = None
    window: int | None = rng(None, ge=1)
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    tensor_parallel_size: int = rng(1, ge=1)
    gpu_memory_utilization: float = rng(0.9, gt=0, le=1)
    dtype: str = "auto"
    trust_remote_code: bool = False
    system: str | None = "You are a helpful assistant."
    cache: bool = True


@dataclass
class OpenAIReaderConfig:
    _target_: str = "htmlrag.readers.openai.OpenAIReader"
    model: str = MISSING
    window: int | None = rng(None, ge=1)
    generation: GenerationSchema = field(default_factory=GenerationSchema)
    base_url_env: str = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    default_base_url: str = "https://api.openai.com/v1"
    timeout: float = rng(60.0, gt=0)
    max_retries: int = rng(5, ge=0)
    backoff: float = rng(1.0, ge=0)
    concurrency: int = rng(8, ge=1)
    max_response_bytes: int = rng(8_000_000, ge=1)
    tokenizer: str | None = II("pruner.tokenizer")
    system: str | None = "You are a helpful assistant."
    cache: bool = True


# ---------------------------------------------------------------- single-shape groups
@dataclass
class CleanerConfig:
    """``enabled``: lossless cleaning (htmlrag.clean_html) before anything else; false = raw pages.
    ``keep_hidden``: keep text hidden by markup (display:none, visibility:hidden, the hidden attribute:
    Wikipedia's sort keys and coordinates); follows ``fidelity.keep_hidden`` (true = the paper's cleaning)."""

    enabled: bool = True
    keep_hidden: bool = II("fidelity.keep_hidden")


@dataclass
class PrunerConfig:
    """Block-tree pruning of the system under test (and the default for baselines).

    ``max_words``/``max_words2``: block sizes (words) of steps 1/2; ``budget1``: step-1 budget (tokens, only
    used when there is a step-2 ranker); ``budget``: the final context budget (tokens); ``tokenizer``: the
    token counter (``null``: offline Mistral-7B); ``ranker2``: step-2 ranker (``null``: one step);
    ``fill``, ``pack_siblings``, ``split_to_fill``, ``split_oversize``: follow the ``fidelity`` group.
    """

    max_words: int = rng(256, ge=1)
    max_words2: int = rng(128, ge=1)
    budget1: int = rng(6144, ge=1, le=MAX_BUDGET)
    budget: int = rng(4096, ge=1, le=MAX_BUDGET)
    fmt: Fmt = Fmt.html
    tokenizer: str | None = None
    fill: str = II("fidelity.fill")
    pack_siblings: bool = II("fidelity.pack_siblings")
    split_to_fill: int = II("fidelity.split_to_fill")
    split_oversize: bool = II("fidelity.split_oversize")
    ranker2: Any = None
    refiner: Any = None  # a `refiner` group option replacing the block-tree pipeline (eval/systems/refiners.py)
    # a budget frontier: every system's context at each of these final budgets from one ranking per question
    # (rows name@budget; htmlrag.evaluation.frontier); null: the one budget above
    budgets: list[int] | None = None


@dataclass
class SystemConfig:
    """A baseline system; unset fields follow the pruner of the system under test."""

    clean: bool = True
    ranker1: Any = None
    ranker2: Any = None
    max_words1: int = rng(II("pruner.max_words"), ge=1)
    max_words2: int = rng(II("pruner.max_words2"), ge=1)
    budget1: int = rng(II("pruner.budget1"), ge=1)
    budget: int = rng(II("pruner.budget"), ge=1)
    fmt: Fmt = II("pruner.fmt")  # noqa: RUF009 - an interpolation string
    pack_siblings: bool = II("pruner.pack_siblings")
    split_to_fill: int = II("pruner.split_to_fill")
    split_oversize: bool = II("pruner.split_oversize")
    graph: GraphSystemConfig | None = None  # a SuperRAG graph system instead of block-tree pruning (eval/systems/docqa.py)
    refiner: Any = None  # a `refiner` group option (baselines of eval/systems/refiners.py)
    budgets: Any = II("pruner.budgets")  # noqa: RUF009 - a budget frontier (list of budgets) or null


_IV = IntervalSettings()


@dataclass
class MetricConfig:
    """Metrics scored per example (``names``), the significance level of the t-test daggers (``alpha``), the
    stage-loss waterfall's containment rule (``waterfall``: auto | none | ref_em | evidence_hit;
    :mod:`htmlrag.evaluation.waterfall`), and how tables compute intervals and marks
    (:class:`htmlrag.evaluation.intervals.IntervalSettings`: ``correction`` holm | bonferroni | fdr_bh | none,
    ``confidence``, ``n_resamples``, ``ci_method`` percentile | basic | bca, ``bootstrap_seed``, ``power`` of the
    smallest detectable difference). The interval settings do not enter the run id (:data:`VIEW_KEYS`): changing
    one and rerunning rewrites ``metrics.json`` and the tables from the saved rows."""

    names: list[MetricName] = field(default_factory=lambda: [MetricName["ref_em"]])  # type: ignore[valid-type]
    alpha: float = rng(0.05, gt=0, le=1)
    waterfall: str = "auto"
    correction: str = _IV.correction
    confidence: float = rng(_IV.confidence, gt=0, le=0.9999)
    n_resamples: int = rng(_IV.n_resamples, ge=1)
    ci_method: str = _IV.method
    bootstrap_seed: int = II("seed")
    power: float = rng(_IV.power, gt=0, le=0.9999)


#: Keys of ``metric`` that only change how saved rows are summarised (not the rows): left out of the run id.
VIEW_KEYS = ("correction", "confidence", "n_resamples", "ci_method", "bootstrap_seed", "power")


def interval_settings(metric: Any) -> IntervalSettings:
    """The :class:`~htmlrag.evaluation.intervals.IntervalSettings` of a ``metric`` config node."""
    return IntervalSettings(confidence=float(metric.confidence), n_resamples=int(metric.n_resamples),
                            method=str(metric.ci_method), seed=int(metric.bootstrap_seed),
                            correction=str(metric.correction), power=float(metric.power))


@dataclass
class CostConfig:
    """The price table of the cost ledger (``conf/cost/*.yaml``, user-editable; not part of the run id):
    ``models``: per model (as named in the rows' ``cost.tokens``) ``{input, output}`` prices per million tokens;
    ``gpu_hour``: price of one GPU-hour (GPU-seconds measured with CUDA events); ``cpu_hour``: price of one hour
    of a stage's wall time where no GPU time was measured; ``currency``: the unit printed."""

    name: str = "default"
    currency: str = "USD"
    models: dict[str, Any] = field(default_factory=dict)
    gpu_hour: float = rng(0.0, ge=0)
    cpu_hour: float = rng(0.0, ge=0)


@dataclass
class LoggerConfig:
    """Experiment trackers fed after a run (``logger=none|mlflow|wandb``; not part of the run id). ``mlflow``
    logs params, metrics, tables and plots to ``tracking_uri`` (a local ``mlruns/`` file store by default: no
    server; view with ``mlflow ui --backend-store-uri results/mlruns``); ``wandb`` is the W&B logger (the
    ``wandb`` settings; ``wandb.enabled=true`` still turns it on beside any logger)."""

    name: str = "none"
    tracking_uri: str = "${paths.results}/mlruns"
    experiment: str | None = None


@dataclass
class PathsConfig:
    """Locations on this machine (never part of the run id, never stored in a run folder as typed).

    ``root``: where the user works (``$HTMLRAG_ROOT``, else the current folder; never the installed code's
    folder); ``samples``: the project's own sample data (shipped with the package); ``data``: downloaded datasets
    (``htmlrag-data download``; ``$HTMLRAG_DATA`` or ``conf/local`` move it); ``shared_data``: a development
    machine's real data; ``results``: run folders (``$HTMLRAG_RESULTS``); ``cache``: content-keyed caches
    (``$HTMLRAG_CACHE``)."""

    root: str = "${project_root:}"
    samples: str = "${samples_dir:}"
    data: str = "${oc.env:HTMLRAG_DATA,${paths.root}/.data}"
    shared_data: str = "${oc.env:HTMLRAG_SHARED_DATA,${paths.root}/../shared/data}"
    results: str = "${oc.env:HTMLRAG_RESULTS,${paths.root}/results}"
    cache: str = "${oc.env:HTMLRAG_CACHE,${paths.root}/.cache/htmlrag-bench}"


@dataclass
class RunConfig:
    """How to run (not part of the run id): chunk size, progress bars, caches, shard merge timeout, and error
    handling: ``retry_failed`` recomputes error rows on a rerun, ``allow_errors`` exits 0 although some rows are
    error rows (the tables' caption then says how many), ``max_consecutive_failures`` failed attempts/examples in
    a row stop the run (0: no bound). ``allow_failures`` is the former name of ``allow_errors`` (still accepted,
    with a warning; giving both with different values is an error)."""

    chunk_size: int = rng(8, ge=1)
    progress: bool = True
    save_contexts: bool = False
    use_cache: bool = True
    retry_failed: bool = True
    allow_errors: bool = False
    allow_failures: bool | None = None
    max_consecutive_failures: int = rng(8, ge=0)
    shard_timeout_s: float = rng(24 * 3600.0, gt=0)


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
    seed: int = rng(0, ge=0, le=2**32 - 1)  # numpy's and torch's seeds are 32-bit
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
    fidelity: FidelityConfig = field(default_factory=FidelityConfig)  # the fidelity group: paper | ours
    cost: CostConfig = field(default_factory=CostConfig)  # the cost group: price tables
    logger: LoggerConfig = field(default_factory=LoggerConfig)  # the logger group: none | mlflow | wandb


#: Config keys that do not change results: left out of the run id.
NOT_HASHED = ("paths", "run", "wandb", "hydra", "caption", "cost", "logger")

_SCHEMAS: dict[str, dict[str, Any]] = {
    "dataset": {"htmlrag_test_schema": HtmlRagTestDataset, "wtq_schema": WtqDataset, "pages_schema": PagesDataset,
                "crag_schema": CragDataset, **DATASET_SCHEMAS},
    "ranker": {"bm25_schema": BM25RankerConfig, "embedding_schema": EmbeddingRankerConfig},
    "fidelity": {"fidelity_schema": FidelityConfig},
    "reader": {"none_schema": NoneReaderConfig, "fake_schema": FakeReaderConfig, "hf_schema": HFReaderConfig,
               "vllm_schema": VLLMReaderConfig, "openai_schema": OpenAIReaderConfig},
}


def validate(cfg: Any) -> None:
    """Check what composition cannot, before anything is loaded: every baseline against
    :class:`SystemConfig` (misspelt or mistyped keys raise here; the entries are replaced by typed nodes), the
    applied fidelity knobs (:func:`htmlrag_bench.eval.systems.fidelity.apply`; deviations from the fidelity are logged), then every
    value against its field's range (:func:`check_ranges`).

    Raises:
        HtmlRagError: naming the baseline or the field (``pruner.budget: must be >= 1, got 0``).
    """
    with open_dict(cfg):
        for name in list(cfg.baselines):
            entry = cfg.baselines[name]
            try:
                typed = OmegaConf.merge(OmegaConf.structured(SystemConfig), entry if entry is not None else {})
            except Exception as exc:  # omegaconf raises several types; report the baseline by name
                raise HtmlRagError(f"baseline {name!r}: {exc}") from exc
            cfg.baselines[name] = typed
    if cfg.get("fidelity") is not None:
        fidelity.apply(cfg)  # embedding input length / dtype, reader answer length (logged)
        for dev in fidelity.deviations(cfg):
            log.warning("fidelity=%s deviation: %s", cfg.fidelity.name, dev)
    check_ranges(cfg)
    allow_errors(cfg)


def allow_errors(cfg: Any) -> bool:
    """``run.allow_errors``, reconciled with its former name ``run.allow_failures`` (a warning when that is set).

    Raises:
        HtmlRagError: both are set, to different values.
    """
    new, old = bool(cfg.run.get("allow_errors", False)), cfg.run.get("allow_failures")
    if old is None:
        return new
    if new and not old:
        raise HtmlRagError("run.allow_errors=true and run.allow_failures=false disagree; run.allow_failures is "
                           "the former name of run.allow_errors: give only run.allow_errors")
    log.warning("run.allow_failures is the former name of run.allow_errors; use run.allow_errors=%s",
                str(bool(old)).lower())
    return bool(old)


def _range_problem(value: Any, bounds: tuple[float | None, float | None, float | None]) -> str | None:
    ge, gt, le = bounds
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes no comparison, inf every "> x"
        return f"must be a finite number, got {value!r}"
    if ge is not None and not value >= ge:
        return f"must be >= {_bound(ge)}, got {value!r}"
    if gt is not None and not value > gt:
        return f"must be > {_bound(gt)}, got {value!r}"
    if le is not None and not value <= le:
        return f"must be <= {_bound(le)}, got {value!r}"
    return None


def _bound(x: float) -> str:
    """A range bound as written (``4294967295``, not ``4.29497e+09``)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _walk_ranges(node: Any, path: str, problems: list[str]) -> None:
    if isinstance(node, ListConfig):
        for i in range(len(node)):
            try:
                _walk_ranges(node[i], f"{path}[{i}]", problems)
            except Exception:  # an interpolation that cannot resolve here is not a range problem
                continue
        return
    if not isinstance(node, DictConfig):
        return
    typ = OmegaConf.get_type(node)
    ranges = ({f.name: f.metadata["range"] for f in dataclasses.fields(typ) if "range" in f.metadata}
              if dataclasses.is_dataclass(typ) else {})
    for raw_key in node:
        key = str(raw_key)
        if key == "hydra" or OmegaConf.is_missing(node, key):
            continue
        where = f"{path}.{key}" if path else key
        try:
            value = node[key]
        except Exception:  # unresolvable here (e.g. ${hydra:...} outside a Hydra run): not ours to judge
            continue
        if key in ranges:
            problem = _range_problem(value, ranges[key])
            if problem:
                problems.append(f"{where}: {problem}")
        _walk_ranges(value, where, problems)


def _budgets_problems(cfg: Any) -> list[str]:
    """``budgets`` lists (``pruner.budgets``, a baseline's own): whole numbers in [1, MAX_BUDGET], each once --
    checked before any work, where a bad entry made every system of the run an error row."""
    out = []
    nodes = [("pruner", cfg.get("pruner")), *((f"baselines.{k}", v) for k, v in (cfg.get("baselines") or {}).items())]
    for where, node in nodes:
        try:
            if where != "pruner" and OmegaConf.is_interpolation(node, "budgets"):
                continue  # (pruner.budgets, named once)
            budgets = node.get("budgets") if node is not None and hasattr(node, "get") else None
        except Exception:  # an interpolation that does not resolve here, or not a config node
            continue
        if budgets is None:
            continue
        if isinstance(budgets, str | int) or not hasattr(budgets, "__iter__"):
            out.append(f"{where}.budgets: must be a list of budgets, got {budgets!r}")
            continue
        seen = set()
        for i, b in enumerate(budgets):
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_BUDGET:
                out.append(f"{where}.budgets[{i}]: must be a whole number in [1, {MAX_BUDGET}], got {b!r}")
            elif b in seen:
                out.append(f"{where}.budgets[{i}]: {b} is given twice")
            seen.add(b)
    return out


def _two_step_problems(cfg: Any) -> list[str]:
    """``budget1 >= budget`` wherever a second ranker makes the step-1 budget count."""
    out = []
    p = cfg.get("pruner")
    if p is not None and p.get("ranker2") is not None and p.budget1 < p.budget:
        out.append(f"pruner.budget1: the step-1 budget must be >= pruner.budget ({p.budget}) with a step-2 "
                   f"ranker, got {p.budget1}")
    if p is not None and p.get("ranker2") is not None and p.get("budgets") and p.budget1 < max(p.budgets):
        out.append(f"pruner.budget1: the step-1 budget must be >= the largest of pruner.budgets ({max(p.budgets)}) "
                   f"with a step-2 ranker, got {p.budget1}")
    for name, b in (cfg.get("baselines") or {}).items():
        if b is not None and b.get("ranker2") is not None and b.get("refiner") is None and b.budget1 < b.budget:
            out.append(f"baselines.{name}.budget1: the step-1 budget must be >= its budget ({b.budget}) with a "
                       f"step-2 ranker, got {b.budget1}")
    return out


def check_ranges(cfg: Any) -> None:
    """Every field declared with :func:`rng` holds a value in its range, and two-step budgets are ordered.

    Raises:
        HtmlRagError: one message naming every field out of range (``pruner.budget: must be >= 1, got 0``).
    """
    problems: list[str] = []
    _walk_ranges(cfg, "", problems)
    problems += _two_step_problems(cfg) + _budgets_problems(cfg)
    if problems:
        raise HtmlRagError("invalid configuration: " + "; ".join(problems))


#: Short names of well-known embedding models in system labels.
_MODEL_LABELS = {"all-MiniLM-L6-v2": "minilm", "bge-large-en": "bge", "bge-large-en-v1.5": "bge",
                 "e5-mistral-7b-instruct": "e5_mistral", "HTML-Pruner-Phi-3.8B": "pruner_phi3",
                 "HTML-Pruner-Llama-1B": "pruner_llama1b"}


def ranker_label(node: Any) -> str:
    """A short label for a ranker config, for system names and captions (``${ranker_label:${ranker}}``):
    ``bm25``, a known model's short name (``minilm``, ``bge``, ...), else the model's last path part; ``none``
    without a ranker. Labels follow the config, so ``ranker=bm25`` never runs under a MiniLM label."""
    if node is None:
        return "none"
    target = str(node.get("_target_", "")) if hasattr(node, "get") else ""
    if target.endswith("BM25Ranker"):
        return "bm25"
    model = node.get("model") or node.get("model_name_or_path") if hasattr(node, "get") else None
    if model:
        base = str(model).rstrip("/").split("/")[-1]
        return _MODEL_LABELS.get(base, base)
    return target.rsplit(".", 1)[-1].lower() or "ranker"


def register_configs() -> None:
    """Register the schemas in the ConfigStore and the resolvers (idempotent)."""
    from hydra.core.config_store import ConfigStore

    register_resolvers()
    if not OmegaConf.has_resolver("ranker_label"):
        OmegaConf.register_new_resolver("ranker_label", ranker_label)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    for group, schemas in _SCHEMAS.items():
        for name, node in schemas.items():
            cs.store(group=group, name=name, node=node)

    register_refiners(cs)  # refiner group and generative ranker schemas
