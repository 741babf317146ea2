"""Budget frontiers in rows: the row key of a system at a budget, and building contexts at several budgets from
one ranking (:mod:`htmlrag.evaluation.frontier` summarises them)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from htmlrag.core.errors import HtmlRagError

_NAME = re.compile(r"^(?P<base>.+)@(?P<budget>\d+)$")


def budget_name(system: str, budget: int) -> str:
    """The row key of ``system`` at ``budget`` tokens: ``bm25@1024``."""
    return f"{system}@{int(budget)}"


def split_name(name: str) -> tuple[str, int | None]:
    """``("bm25", 1024)`` for ``bm25@1024``; ``(name, None)`` for a system without a budget."""
    m = _NAME.match(name)
    return (m.group("base"), int(m.group("budget"))) if m else (name, None)


def run_at_budgets(pipeline: Any, question: str, pages: Sequence[str], budgets: Sequence[int]) -> dict[int, Any]:
    """``{budget: PipelineResult}``: the pipeline's ``run_budgets`` (one ranking), else its ``run`` once per
    budget on a shallow copy with ``budget`` (refiners) or ``budget2`` (pipelines) set to it.

    Raises:
        HtmlRagError: the pipeline has no budget to set.
    """
    if hasattr(pipeline, "run_budgets"):
        return pipeline.run_budgets(question, pages, list(budgets))
    attr = next((a for a in ("budget2", "budget") if hasattr(pipeline, a)), None)
    if attr is None:
        raise HtmlRagError(f"{type(pipeline).__name__} takes no budget: it cannot run a budget frontier")
    out = {}
    for b in budgets:
        clone = copy.copy(pipeline)
        setattr(clone, attr, int(b))
        out[int(b)] = clone.run(question, pages)
    return out
