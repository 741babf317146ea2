"""One source per setting: every Hydra schema agrees with the library constructor it configures.

A setting's home is the library (a class's signature or a dataclass); the harness's schemas (eval/schemas.py,
eval/docqa_schemas.py, eval/systems/refiners.py) describe the same constructors for the config system. For
every schema registered in Hydra's ConfigStore, and every schema nested in one, this test finds its library
target (``_target_``, or :data:`MIRRORS` for schemas the harness turns into a library object itself) and checks
each field:

- **name**: the field is a parameter (or dataclass field) of the target, under the name the harness passes it
  (:data:`MIRRORS` holds the renames of eval/systems/build.py: ``pruner.budget`` -> ``budget2``);
- **type**: the annotations agree after normalisation (:func:`members`: ``Optional[X]`` = ``X | None``; a
  library ``str | Path`` is ``str`` in a config; an enum of a string's values is ``str``; a derived schema is
  its library dataclass; a library ``Any`` takes anything);
- **default**: the defaults agree; a default that is an interpolation (``II("fidelity.page_prior")``,
  ``II("device")``) is compared as it resolves in the primary config composed with ``fidelity=ours`` (the
  measured-best defaults); ``MISSING`` (``???``) agrees with a required parameter.

Each deliberate difference is in :data:`ALLOWED` with its reason; an entry that no longer differs fails the
test, so the list only shrinks. Differences of ``fidelity=paper`` live in conf/fidelity/paper.yaml and are
not drift. The group options the primary config picks by default (``pruner: default``, ``ranker: bm25``, ...)
are checked the same way, so a YAML file cannot drift either.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import re
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import II, DictConfig, OmegaConf

from htmlrag.core.errors import HtmlRagError
from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
from htmlrag_bench.eval.systems import docqa
from htmlrag_bench.training.schemas import register_configs as register_train_configs

register_configs()
register_train_configs()  # the walk sees the same store whether or not other tests registered it first


@dataclass(frozen=True)
class Target:
    """A library constructor and the names the harness passes the schema's fields under."""

    path: str
    rename: Mapping[str, str] = field(default_factory=dict)


#: Schemas without ``_target_`` that the harness turns into a library object itself (eval/systems/build.py,
#: eval/systems/docqa.py, eval/schemas.py).
MIRRORS: dict[str, Target] = {
    "GenerationSchema": Target("htmlrag.readers.base.GenerationConfig"),
    # build_systems: HtmlRagPipeline(max_words1=pruner.max_words, budget2=pruner.budget, ...)
    "PrunerConfig": Target("htmlrag.pruning.pipeline.HtmlRagPipeline", {"max_words": "max_words1", "budget": "budget2"}),
    "SystemConfig": Target("htmlrag.pruning.pipeline.HtmlRagPipeline", {"budget": "budget2"}),
    # the evaluation loop cleans every page with clean_html(keep_hidden=cleaner.keep_hidden)
    "CleanerConfig": Target("htmlrag.html.clean.clean_html"),
    "CorpusSchema": Target("htmlrag.superrag.build.corpus.CorpusConfig"),
    "GraphSystemConfig": Target("htmlrag.superrag.settings.GraphSetting"),
    "JudgeConfig": Target("htmlrag.docqa.judge.LLMJudge"),
    # the cost group is the price table of the ledger: PriceTable.from_dict(cfg.cost)
    "CostConfig": Target("htmlrag.evaluation.costs.PriceTable"),
}

#: Schemas of the harness's own settings, with no library constructor behind them.
HARNESS_ONLY: dict[str, str] = {
    "Config": "the whole run; its groups are checked one by one",
    "DatasetConfig": "how a dataset is evaluated (name, limit, short answers); its loader is checked",
    "_PdfDataset": "as DatasetConfig, for PDF datasets",
    "MetricConfig": "metric names are the registry's (htmlrag.evaluation.scoring.metrics.METRICS)",
    "PathsConfig": "locations on this machine",
    "RunConfig": "how to run (chunks, caches, failures)",
    "WandbConfig": "logging",
    "LoggerConfig": "which experiment tracker a finished run is logged to (htmlrag_bench.eval.loggers)",
    "DocQAConfig": "corpus folders and tables; its corpus is checked",
    "FidelityConfig": "the fidelity knobs; checked where they land (the interpolations of the other schemas)",
    "TrainConfig": "htmlrag-train's own settings (transformers' Trainer arguments, data files, DeepSpeed)",
    "TrainRecipe": "as TrainConfig", "TrainData": "as TrainConfig", "LoraSettings": "as TrainConfig",
}

#: Deliberate differences: ``(schema.field, name | type | default)`` -> why. Stale entries fail the test.
ALLOWED: dict[tuple[str, str], str] = {
    # rankers
    ("EmbeddingRankerConfig.model", "default"):
        "MISSING: the harness requires an explicit model (ranker=minilm | bge | e5_mistral); the library's "
        "default, the bundled MiniLM, is for notebooks",
    ("BM25RankerConfig.page_prior", "default"):
        "fidelity=ours adds 0.5 x the page's best block score (measured on multi-page questions, "
        "docs/fidelity.md); the library's rankers score blocks on their own unless asked (CLI --page-prior)",
    ("EmbeddingRankerConfig.page_prior", "default"): "as BM25RankerConfig.page_prior",
    # readers
    ("NoneReaderConfig.model", "name"): "unused: lets an experiment that names its reader model run with reader=none",
    ("FakeReaderConfig.model", "name"): "unused: lets an experiment that names its reader model run with reader=fake",
    ("NoneReaderConfig.cache", "name"): "a switch for every reader: build_reader passes a ResponseCache or none",
    ("FakeReaderConfig.cache", "type"): "a switch: build_reader passes a ResponseCache (<cache>/responses.sqlite) or None",
    ("FakeReaderConfig.cache", "default"): "as its type",
    ("HFReaderConfig.cache", "type"): "as FakeReaderConfig.cache",
    ("HFReaderConfig.cache", "default"): "as FakeReaderConfig.cache",
    ("VLLMReaderConfig.cache", "type"): "as FakeReaderConfig.cache",
    ("VLLMReaderConfig.cache", "default"): "as FakeReaderConfig.cache",
    ("OpenAIReaderConfig.cache", "type"): "as FakeReaderConfig.cache",
    ("OpenAIReaderConfig.cache", "default"): "as FakeReaderConfig.cache",
    ("HFReaderConfig.generation", "type"):
        "always a GenerationSchema node (checked field by field against GenerationConfig); the library's None "
        "means GenerationConfig()",
    ("HFReaderConfig.generation", "default"): "as its type: GenerationSchema() = GenerationConfig()",
    ("VLLMReaderConfig.generation", "type"): "as HFReaderConfig.generation",
    ("VLLMReaderConfig.generation", "default"): "as HFReaderConfig.generation",
    ("OpenAIReaderConfig.generation", "type"): "as HFReaderConfig.generation",
    ("OpenAIReaderConfig.generation", "default"): "as HFReaderConfig.generation",
    # dataset loaders
    ("Sec10qLoader.parse_cache", "default"):
        "the harness caches parsed PDFs under paths.cache (docqa.parse_cache); the library caches only when asked",
    ("DocbenchLoader.parse_cache", "default"): "as Sec10qLoader.parse_cache",
    ("SpiqaLoader.parse_cache", "default"): "as Sec10qLoader.parse_cache",
    # the pruner group and baseline systems -> HtmlRagPipeline (eval/systems/build.py)
    ("PrunerConfig.tokenizer", "type"):
        "a tokenizer name: build_systems loads it (load_tokenizer; None: the offline Mistral-7B SentencePiece)",
    ("PrunerConfig.tokenizer", "default"): "as its type",
    ("PrunerConfig.ranker2", "type"): "a ranker config node, built by htmlrag.factory.make_ranker",
    ("PrunerConfig.ranker2", "default"): "None: one-step pruning (the library requires the choice to be explicit)",
    ("PrunerConfig.refiner", "name"): "harness wiring: a refiner replaces the block-tree pipeline (eval/systems/refiners.py)",
    ("SystemConfig.ranker1", "type"): "as PrunerConfig.ranker2",
    ("SystemConfig.ranker1", "default"): "None: the system under test's ranker",
    ("SystemConfig.ranker2", "type"): "as PrunerConfig.ranker2",
    ("SystemConfig.ranker2", "default"): "as PrunerConfig.ranker2",
    ("SystemConfig.graph", "name"): "harness wiring: a SuperRAG graph system instead of block-tree pruning",
    ("SystemConfig.refiner", "name"): "as PrunerConfig.refiner",
    ("CleanerConfig.enabled", "name"): "harness switch: false feeds raw pages (the vanilla-HTML baseline)",
    # SuperRAG
    ("GraphSystemConfig.reflect_reader", "name"):
        "harness wiring: which model answers self-reflection (setting_retriever's reader argument)",
    ("JudgeConfig.enabled", "name"): "harness switch: run the judge step after the evaluation",
    ("JudgeConfig.name", "name"): "the judge option's label in tables",
    ("JudgeConfig.reader", "name"): "a reader option; the harness wraps it as the judge's chat model (ReaderChat)",
    ("JudgeConfig.prompt_file", "name"): "the harness reads the prompt from this file instead of judge.prompt",
    ("JudgeConfig.reference", "name"): "whether the harness gives the judge the gold evidence text",
    ("JudgeConfig.prompt", "default"): "set by the judge option (judge=docbench_gpt4); judge=none needs none",
    ("JudgeConfig.cache", "type"): "a switch: the harness passes a SqliteCache (<cache>/judge.sqlite) or None",
    ("JudgeConfig.cache", "default"): "as its type",
    # budget frontiers and judge draws: settings of the evaluation loop around the constructor
    ("PrunerConfig.budgets", "name"): "a frontier's budgets: the loop fills each from one ranking "
        "(htmlrag.evaluation.scoring.budgets.run_at_budgets), the pipeline is built at one budget",
    ("SystemConfig.budgets", "name"): "as PrunerConfig.budgets",
    ("JudgeConfig.draws", "name"): "the harness judges each answer this many times (LLMJudge.judge_draws(items, k))",
    ("JudgeConfig.second", "name"): "a second judge model's reader config, built as another LLMJudge",
    ("CostConfig.models", "type"): "OmegaConf cannot type nested dicts; PriceTable.from_dict reads each price as float",
}

#: Schema annotations that stand for a library type.
SCHEMA_TYPES = {"Fmt": "str", "GenerationSchema": "GenerationConfig"}


class Required:
    """A parameter without default (``MISSING`` in a schema)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Required)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<required>"


REQUIRED = Required()


@dataclass(frozen=True)
class Difference:
    key: str  # Schema.field
    kind: str  # name | type | default
    detail: str


# --------------------------------------------------------------------------------------------- the walk
#: The harness's schema modules: their dataclasses are schemas even when only validate() uses them (SystemConfig).
SCHEMA_MODULES = ("htmlrag_bench.eval.schemas", "htmlrag_bench.eval.docqa_schemas", "htmlrag_bench.eval.systems.refiners",
                  "htmlrag_bench.eval.systems.fidelity", "htmlrag_bench.training.schemas")


def schemas(store: ConfigStore | None = None) -> dict[str, type]:
    """Every schema class registered in the ConfigStore by the harness or defined in :data:`SCHEMA_MODULES`,
    and every schema nested in one."""
    found: dict[str, type] = {}

    def nodes(repo: Mapping[str, Any]) -> Iterator[Any]:
        for value in repo.values():
            if isinstance(value, dict):
                yield from nodes(value)
            else:
                yield value.node

    def add(cls: type) -> None:
        if cls.__name__ in found or not cls.__module__.startswith("htmlrag_bench."):
            return
        found[cls.__name__] = cls
        for hint in typing.get_type_hints(cls).values():
            for member in typing.get_args(hint) or (hint,):
                if dataclasses.is_dataclass(member):
                    add(member)
        for base in cls.__mro__[1:]:
            if dataclasses.is_dataclass(base):
                add(base)

    for node in nodes((store or ConfigStore.instance()).repo):
        cls = OmegaConf.get_type(node) if isinstance(node, DictConfig) else None
        if cls is not None and dataclasses.is_dataclass(cls):
            add(cls)
    for module in SCHEMA_MODULES:
        for obj in vars(importlib.import_module(module)).values():
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module:
                add(obj)
    return found


def target_of(schema: type) -> Target | None:
    """The library target of ``schema`` (None for the harness's own settings); unclassified is an error."""
    default = {f.name: f.default for f in dataclasses.fields(schema)}.get("_target_")
    if isinstance(default, str):
        return Target(default)
    if schema.__name__ in MIRRORS:
        return MIRRORS[schema.__name__]
    if schema.__name__ in HARNESS_ONLY or any(b.__name__ in HARNESS_ONLY for b in schema.__mro__[1:]):
        return None
    if "loader" in {f.name for f in dataclasses.fields(schema)}:  # a dataset: its loader carries the target
        return None
    raise AssertionError(f"schema {schema.__name__} has no _target_ and is in neither MIRRORS nor HARNESS_ONLY: "
                         "say which library constructor it configures")


def load(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def library_params(path: str) -> dict[str, tuple[str, Any]]:
    """name -> (annotation text, default) of the constructor ``path`` (a class, a function or a dataclass)."""
    obj = load(path)
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                       else REQUIRED if f.default is dataclasses.MISSING else f.default)
            out[f.name] = (_text(f.type), default)
        return out
    params = inspect.signature(obj).parameters
    return {k: (_text(p.annotation), REQUIRED if p.default is inspect.Parameter.empty else p.default)
            for k, p in params.items()
            if k != "self" and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}


def _text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def members(annotation: str, *, library: bool) -> frozenset[str]:
    """The members of a union annotation, normalised (see the module docstring)."""
    text = annotation.replace("typing.", "").replace(" ", "")
    optional = re.fullmatch(r"Optional\[(.*)\]", text)
    if optional:
        text = f"{optional[1]}|None"
    out = {{"NoneType": "None", "Dict": "dict", "List": "list"}.get(m, m) for m in _split_top(text)}
    out = {re.sub(r"^Dict\[", "dict[", re.sub(r"^List\[", "list[", m)) for m in out}
    if library and "str" in out:
        out.discard("Path")  # configs hold paths as strings; the library takes str or Path
    if not library:
        out = {SCHEMA_TYPES.get(m, m) for m in out}
    return frozenset(out)


def schema_value(value: Any, root: DictConfig) -> Any:
    """A schema default (or a composed value) as the library would receive it: interpolations resolved in
    ``root``, enums as their values, ``???`` as required, a nested schema as its class."""
    if isinstance(value, str) and value == "???":
        return REQUIRED
    if isinstance(value, str) and re.fullmatch(r"\$\{[\w.]+\}", value):
        return schema_value(OmegaConf.select(root, value[2:-1]), root)
    if isinstance(value, str) and "${" in value:
        return OmegaConf.create({"v": value, **{k: root[k] for k in root if k != "hydra"}}).v
    if isinstance(value, enum.Enum):
        return value.value
    if OmegaConf.is_config(value):
        return OmegaConf.to_container(value, resolve=True, enum_to_str=True)
    if dataclasses.is_dataclass(value):
        return type(value)
    return value


def schema_defaults(schema: type) -> dict[str, tuple[str, Any]]:
    """field -> (annotation text, default) of a schema (``_target_`` left out)."""
    out = {}
    for f in dataclasses.fields(schema):
        if f.name == "_target_":
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out[f.name] = (_text(f.type), default)
    return out


def differences(schema: type, target: Target, root: DictConfig,
                values: Mapping[str, Any] | None = None) -> list[Difference]:
    """Name, type and default differences of ``schema`` against ``target`` (``values``: composed values to
    compare instead of the schema's defaults; then only defaults are compared)."""
    lib = library_params(target.path)
    out = []
    for name, (annotation, default) in schema_defaults(schema).items():
        key = f"{schema.__name__}.{name}"
        param = target.rename.get(name, name)
        if param not in lib:
            if values is None:
                out.append(Difference(key, "name", f"{target.path} takes no {param!r}"))
            continue
        lib_annotation, lib_default = lib[param]
        want, have = members(lib_annotation, library=True), members(annotation, library=False)
        if values is None and "Any" not in want and want != have:
            out.append(Difference(key, "type", f"{annotation} vs the library's {lib_annotation}"))
        value = schema_value(values[name] if values is not None else default, root)
        if not _same(value, lib_default):
            source = "composed" if values is not None else "schema"
            out.append(Difference(key, "default", f"{source} {value!r} vs the library's {lib_default!r}"))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, type) and dataclasses.is_dataclass(a):
        return False  # a nested schema vs the library's value: compared field by field on its own
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


@pytest.fixture(scope="module")
def root() -> DictConfig:
    """The primary config with the measured-best defaults (``fidelity=ours``)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=["fidelity=ours"])


def all_differences(root: DictConfig, found: Mapping[str, type] | None = None) -> list[Difference]:
    out = []
    for schema in (found or schemas()).values():
        target = target_of(schema)
        if target is not None:
            out += differences(schema, target, root)
    return out


# ------------------------------------------------------------------------------------------------ tests
def test_the_walk_finds_every_kind_of_schema():
    found = schemas()
    for name in ("BM25RankerConfig", "EmbeddingRankerConfig", "GenerativeRankerConfig", "HFReaderConfig",
                 "OpenAIReaderConfig", "GenerationSchema", "HtmlRagTestLoader", "SpiqaLoader", "ChunkRerankConfig",
                 "ReaderLMConfig", "PrunerConfig", "SystemConfig", "CorpusSchema", "GraphSystemConfig", "JudgeConfig",
                 "TrainConfig"):
        assert name in found, name
    for schema in found.values():
        target_of(schema)  # every schema is classified


def test_no_drift_of_name_type_or_default(root):
    drift = [d for d in all_differences(root) if (d.key, d.kind) not in ALLOWED]
    assert not drift, "schemas that drifted from the library (fix one side, or allow with a reason):\n" + \
        "\n".join(f"{d.key} ({d.kind}): {d.detail}" for d in drift)


def test_every_allowed_difference_still_exists(root):
    seen = {(d.key, d.kind) for d in all_differences(root)}
    stale = sorted(set(ALLOWED) - seen)
    assert not stale, f"remove these from ALLOWED (they no longer differ): {stale}"


@pytest.mark.parametrize(("path", "schema", "group"), [
    ("pruner", "PrunerConfig", "pruner: default"),
    ("cleaner", "CleanerConfig", "cleaner: html"),
    ("ranker", "BM25RankerConfig", "ranker: bm25"),
    ("docqa.corpus", "CorpusSchema", "the corpus"),
    ("reader", "NoneReaderConfig", "reader: none"),
])
def test_the_default_options_agree_with_the_library(root, path, schema, group):
    """The YAML option the primary config picks gives the library's defaults too (or an allowed difference)."""
    cls = schemas()[schema]
    node = OmegaConf.select(root, path)
    values = {f.name: node[f.name] for f in dataclasses.fields(cls) if f.name != "_target_"}
    target = target_of(cls)
    drift = [d for d in differences(cls, target, root, values) if (d.key, d.kind) not in ALLOWED]
    assert not drift, f"{group} drifted from {target.path}: {drift}"


def test_the_flat_baseline_can_be_switched_off_and_the_experiment_that_needs_it_says_so(root):
    assert root.docqa.corpus.flat_words == 0  # off, as the library's CorpusConfig
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=superrag_settings"])
    assert cfg.docqa.corpus.flat_words == 150 and cfg.baselines.s1_nonlayout.graph.flat
    cfg.docqa.corpus.flat_words = 0  # a flat system over a corpus without flat chunks fails before any work
    with pytest.raises(HtmlRagError, match=r"s1_nonlayout.*flat_words=0"):
        docqa.check(cfg)


# ------------------------------------------------------------------------- the test catches new drift
def _copy(schema: type, *changes: tuple[str, Any, Any]) -> type:
    """A copy of ``schema`` (same name) with fields changed or added: ``(name, type, dataclasses.field)``."""
    return dataclasses.make_dataclass(schema.__name__, list(changes), bases=(schema,))


def _drift(root: DictConfig, schema: type) -> set[tuple[str, str]]:
    return {(d.key, d.kind) for d in differences(schema, target_of(schema), root)} - set(ALLOWED)


def test_a_drifted_default_is_caught(root):
    found = schemas()
    # the example: a corpus schema whose flat baseline cannot be switched off
    corpus = _copy(found["CorpusSchema"], ("flat_words", int, field(default=150)))
    assert _drift(root, corpus) == {("CorpusSchema.flat_words", "default")}
    bm25 = _copy(found["BM25RankerConfig"], ("k1", float, field(default=1.2)))
    assert _drift(root, bm25) == {("BM25RankerConfig.k1", "default")}


def test_an_interpolation_resolving_to_another_value_is_caught(root):
    found = schemas()
    embedding = _copy(found["EmbeddingRankerConfig"], ("candidates", "int | None", field(default=II("pruner.max_words"))))
    assert _drift(root, embedding) == {("EmbeddingRankerConfig.candidates", "default")}
    assert _drift(root, found["EmbeddingRankerConfig"]) == set()


def test_a_renamed_field_and_a_changed_type_are_caught(root):
    found = schemas()
    renamed = _copy(found["GraphSystemConfig"], ("top_k", int, field(default=10)))
    assert _drift(root, renamed) == {("GraphSystemConfig.top_k", "name")}
    retyped = _copy(found["GenerationSchema"], ("max_new_tokens", "int | None", field(default=128)))
    assert _drift(root, retyped) == {("GenerationSchema.max_new_tokens", "type")}
    narrowed = _copy(found["EmbeddingRankerConfig"], ("max_seq_length", "int", field(default=None)))
    assert _drift(root, narrowed) == {("EmbeddingRankerConfig.max_seq_length", "type")}


def test_a_schema_without_a_target_must_say_what_it_configures():
    @dataclass
    class NewThing:
        size: int = 3

    NewThing.__module__ = "htmlrag_bench.eval.schemas"
    with pytest.raises(AssertionError, match="NewThing has no _target_"):
        target_of(NewThing)


def test_normalisation_rules():
    assert members("Optional[int]", library=True) == members("int | None", library=False)
    assert members("str | Path | None", library=True) == frozenset({"str", "None"})
    assert members("Fmt", library=False) == frozenset({"str"})
    assert members("dict[str, Any] | None", library=True) == members("typing.Optional[dict[str, typing.Any]]",
                                                                        library=False)
    assert not _same(0, False) and _same(0, 0.0) and _same(REQUIRED, REQUIRED)

