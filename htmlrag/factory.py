"""The one place rankers, pruning pipelines and readers are built: the command line, the harness, the web app and
the scripts all build through here.

A specification is a *kind* (rankers ``bm25``, ``embedding``, ``generative``; readers ``none``, ``fake``, ``hf``,
``vllm``, ``openai``) or a mapping whose ``_target_`` names one of those classes (what a Hydra config holds),
plus options. Options are the class's own constructor arguments: their defaults live in the class's signature
and nowhere else (:func:`defaults` reads them; the harness's config schemas are checked against them by
``tests/configs/test_schema_drift.py``). An option the class does not take is an error that names it. Classes are
imported on first use, so BM25 needs no torch.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.pruning.tokens import load_tokenizer

#: kind -> class path
RANKERS: dict[str, str] = {
    "bm25": "htmlrag.rankers.bm25.BM25Ranker",
    "embedding": "htmlrag.rankers.embedding.EmbeddingRanker",
    "generative": "htmlrag.rankers.generative.GenerativeRanker",
}
READERS: dict[str, str] = {
    "none": "htmlrag.readers.base.NoneReader",
    "fake": "htmlrag.readers.base.FakeReader",
    "hf": "htmlrag.readers.hf.HFReader",
    "vllm": "htmlrag.readers.vllm.VLLMReader",
    "openai": "htmlrag.readers.openai.OpenAIReader",
}
PIPELINE = "htmlrag.pruning.pipeline.HtmlRagPipeline"


def load_class(path: str) -> type:
    """The class at ``module.Class``."""
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot import {path!r}: {exc}") from exc


def _resolve(spec: str | Mapping[str, Any], registry: Mapping[str, str], what: str) -> tuple[type, dict[str, Any]]:
    """(class, options) of a kind or a ``_target_`` mapping; the class must be one of ``registry``'s."""
    if isinstance(spec, str):
        if spec not in registry:
            raise InputError(f"unknown {what} {spec!r}; choose one of {', '.join(registry)}")
        return load_class(registry[spec]), {}
    options = dict(spec)
    target = options.pop("_target_", None)
    kind = options.pop("kind", None)
    if target is None and kind is None:
        raise InputError(f"a {what} specification needs a kind or a _target_, got keys {sorted(spec)}")
    if target is None:
        return _resolve(str(kind), registry, what)[0], options
    cls = load_class(str(target))
    allowed = {load_class(p) for p in registry.values() if _importable(p)}
    if cls not in allowed:
        raise InputError(f"{target!r} is not a {what} ({', '.join(registry.values())})")
    return cls, options


def _importable(path: str) -> bool:
    try:
        load_class(path)
    except InputError:
        return False
    return True


def _construct(cls: type, options: Mapping[str, Any]) -> Any:
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = sorted(k for k in options if k not in params or k == "self")
    if unknown and not takes_any:
        raise InputError(f"{cls.__name__} takes no option {', '.join(map(repr, unknown))}; it takes "
                         f"{', '.join(k for k in params if k != 'self')}")
    return cls(**options)


def make_ranker(spec: str | Mapping[str, Any], **options: Any) -> Any:
    """A block ranker: ``make_ranker("bm25")``, ``make_ranker("embedding", model=..., dtype="float32")``,
    ``make_ranker({"_target_": "htmlrag.rankers.bm25.BM25Ranker", "k1": 1.2})``.

    Raises:
        InputError: unknown kind, a class that is not a ranker, or an option the ranker does not take.
    """
    cls, opts = _resolve(spec, RANKERS, "ranker")
    return _construct(cls, {**opts, **options})


def make_reader(spec: str | Mapping[str, Any], **options: Any) -> Any:
    """A reader, as :func:`make_ranker` (``make_reader("openai", model=..., base_url_env=...)``)."""
    cls, opts = _resolve(spec, READERS, "reader")
    return _construct(cls, {**opts, **options})


def make_pipeline(ranker1: Any, ranker2: Any = None, tokenizer: Any = None, **options: Any) -> Any:
    """The two-step pruning pipeline (:class:`htmlrag.pruning.pipeline.HtmlRagPipeline`); rankers may be
    built objects or specifications for :func:`make_ranker`; ``tokenizer`` a counter or a tokenizer name
    (``None``: the offline default)."""
    r1 = make_ranker(ranker1) if isinstance(ranker1, str | Mapping) else ranker1
    r2 = make_ranker(ranker2) if isinstance(ranker2, str | Mapping) else ranker2
    tok = tokenizer if tokenizer is not None and not isinstance(tokenizer, str) else load_tokenizer(tokenizer)
    return _construct(load_class(PIPELINE), {"ranker1": r1, "ranker2": r2, "tokenizer": tok, **options})


def defaults(path_or_kind: str) -> dict[str, Any]:
    """The constructor defaults of a ranker/reader kind, or of a class path (parameters without a default are
    left out): the one source the config schemas and the command line are checked against."""
    path = RANKERS.get(path_or_kind) or READERS.get(path_or_kind) or path_or_kind
    params = inspect.signature(load_class(path).__init__).parameters
    return {k: p.default for k, p in params.items()
            if k != "self" and p.default is not inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}

