"""Shared pieces of the baseline refiners: budgets, cost counters, freeing a model."""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from htmlrag.html.encoding import to_text
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.pruning.tokens import TokenCounter

log = logging.getLogger(__name__)

#: Prefix of the model-cost counters a refiner adds to ``PipelineResult.stage_tokens``.
COST_PREFIX = "cost:"


def fit_to_budget(text: str, budget: int, tokenizer: TokenCounter) -> tuple[str, int]:
    """``text`` cut on token boundaries to at most ``budget`` tokens, and its token count."""
    out = tokenizer.truncate(text, budget) if text else ""
    return out, tokenizer.count(out)


def decode_pages(pages: Sequence[str | bytes]) -> list[str]:
    """Pages as ``str`` (bytes decoded by :func:`htmlrag.html.encoding.to_text`).

    Raises:
        InputError: a page cannot be decoded (naming it): a context is never built from fewer pages than given.
    """
    return [p if isinstance(p, str) else to_text(p, name=f"page {i}") for i, p in enumerate(pages)]


def cost_keys(role: str, costs: dict[str, float]) -> dict[str, float]:
    """``{"cost:<role>.<counter>": value}`` for the counters of one model role (``rank``, ``compress``, ...)."""
    return {f"{COST_PREFIX}{role}.{k}": float(v) for k, v in costs.items()}


def make_result(context: str, tokens: int, t0: float, tokenizer: TokenCounter, stages: dict[str, str] | None = None,
                costs: dict[str, dict[str, float]] | None = None) -> PipelineResult:
    """A :class:`PipelineResult` with stage token counts and the ``cost:<role>.<counter>`` counters of each
    model role in ``costs``."""
    stages = stages or {}
    res = PipelineResult(context, tokens, time.perf_counter() - t0, stages=stages)
    res.stage_tokens = {k: tokenizer.count(v) for k, v in stages.items()}
    for role, counters in (costs or {}).items():
        res.stage_tokens.update(cost_keys(role, counters))
    return res


def model_size(model: Any) -> dict[str, float]:
    """``params`` (number of parameters) and ``storage_bytes`` (bytes of the parameters as loaded) of a
    torch module (0 for anything else)."""
    try:
        params = list(model.parameters())
    except AttributeError:
        return {"params": 0, "storage_bytes": 0}
    return {"params": float(sum(p.numel() for p in params)),
            "storage_bytes": float(sum(p.numel() * p.element_size() for p in params))}


def release_model(*objects: Any) -> None:
    """Drop references held by the caller's attributes first, then collect garbage and empty the CUDA cache
    (when torch is loaded). Call after ``del``/``= None`` of the model attributes."""
    del objects
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
        log.info("released model; CUDA memory allocated now %.0f MiB", torch.cuda.memory_allocated() / 2**20)
