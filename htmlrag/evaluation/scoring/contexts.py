"""Building each system's context for one example, through the caches: cleaned pages, budgets of a frontier,
the stage checks of the waterfall and the cost ledger of the stages (see :mod:`htmlrag.evaluation.scoring.loop`).

A cache entry holds everything a record needs from the context step::

    {"context", "stage_tokens", "seconds",
     "waterfall": [[stage, 0|1], ...],            # with a waterfall rule: the stages before the reader
     "cost": {"seconds": {...}, "gpu_seconds": {...}, "tokens": {model: {"input", "output"}}}}

Its key holds the code fingerprint, the system's fingerprint (of that budget), the question, the pages'
digests and, with a waterfall rule, the rule and the gold answers. Errors are never stored: a page that cannot be
read or cleaned raises :class:`PageErrors` (the system's record becomes an error row, retried on a rerun), and a
cache that does not work (:class:`~htmlrag.core.errors.CacheError`) stops the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from htmlrag.core.cache import content_key
from htmlrag.core.clock import Clock, usage_delta, usage_of
from htmlrag.core.errors import HtmlRagError, InputError, ServiceError
from htmlrag.core.fingerprint import ROWS, fingerprint
from htmlrag.evaluation.scoring.budgets import run_at_budgets
from htmlrag.evaluation.scoring.stages import StageCheck, example_stages
from htmlrag.html.clean import clean_html
from htmlrag.html.encoding import to_text

#: Attributes of a pipeline whose objects may run a model (their ``token_usage`` enters the ledger).
MODEL_ATTRS = ("ranker1", "ranker2", "ranker", "model_ranker")


def _fingerprint() -> str:
    """The code fingerprint of rows (as :func:`htmlrag.evaluation.scoring.loop.code_fingerprint`)."""
    return fingerprint(ROWS)


class PageErrors(InputError):
    """Some of an example's pages could not be read or cleaned, so the system's context is not built.

    Attributes:
        pages: page index (as a string) -> the error message.
    """

    def __init__(self, pages: dict[str, str], total: int) -> None:
        self.pages = pages
        first = next(iter(pages))
        more = f" (and {len(pages) - 1} more)" if len(pages) > 1 else ""
        super().__init__(f"page {first} of {total}: {pages[first]}{more}; no context is built from the other "
                         "pages (an error row, retried on a rerun)")


def _models(pipeline: Any) -> list[Any]:
    return [m for a in MODEL_ATTRS if (m := getattr(pipeline, a, None)) is not None]


class Builder:
    """Builds one system's records of one example, through the caches (``caches``: pages, contexts)."""

    def __init__(self, caches: Any, waterfall: str | None = None) -> None:
        self.caches = caches
        self.waterfall = waterfall
        self.clean_seconds: dict[tuple[str, bool], float] = {}
        self._shared: tuple[Any, list[list[Any]]] | None = None

    def clean(self, page: str | bytes, digest: str, keep_hidden: bool = False) -> str:
        """The cleaned page (through the page cache); the seconds cleaning took are remembered per page. Raises
        on a page that cannot be cleaned (nothing is stored)."""
        key = content_key("clean", _fingerprint(), digest, *(("keep_hidden",) if keep_hidden else ()))
        t0 = time.perf_counter()
        hit = self.caches.pages.get(key) if self.caches.pages is not None else None
        if isinstance(hit, str):
            self.clean_seconds.setdefault((digest, keep_hidden), time.perf_counter() - t0)
            return hit
        cleaned = clean_html(page, name=f"page {digest[:12]}", keep_hidden=keep_hidden)
        self.clean_seconds[(digest, keep_hidden)] = time.perf_counter() - t0
        if self.caches.pages is not None:
            self.caches.pages.put(key, cleaned)
        return cleaned

    def _inputs(self, system: Any, pages: Sequence[str | bytes], digests: Sequence[str]
                ) -> tuple[list[str], float]:
        """The pages as the pipeline takes them (cleaned, or decoded) and the seconds cleaning took; raises
        :class:`PageErrors`."""
        inputs, page_errors = [], {}
        for i, (page, digest) in enumerate(zip(pages, digests, strict=True)):
            try:
                inputs.append(self.clean(page, digest, system.keep_hidden) if system.clean
                              else to_text(page, name=f"page {i}"))
            except ServiceError:  # a cache that does not work (CacheError): stop the run, not this page
                raise
            except HtmlRagError as exc:
                page_errors[str(i)] = str(exc)
        if page_errors:
            raise PageErrors(page_errors, len(pages))
        seconds = sum(self.clean_seconds.get((d, system.keep_hidden), 0.0) for d in digests) if system.clean else 0.0
        return inputs, seconds

    def _example_hits(self, pages: Sequence[str | bytes], digests: Sequence[str], check: StageCheck
                      ) -> list[list[Any]]:
        """The checks of the stages every system shares (:func:`~htmlrag.evaluation.waterfall.example_stages`),
        computed once per example."""
        key = (tuple(digests), repr(check.identity()))
        if self._shared is not None and self._shared[0] == key:
            return self._shared[1]
        texts = [p if isinstance(p, str) else to_text(p, name="page") for p in pages]
        hits = [[name, int(check.holds(text, fmt))] for name, text, fmt in example_stages(texts)]
        self._shared = (key, hits)
        return hits

    def contexts(self, system: Any, question: str, pages: Sequence[str | bytes], digests: Sequence[str],
                 check: StageCheck | None = None) -> list[tuple[str, int | None, dict[str, Any], bool]]:
        """``(row key, budget, entry, cached)`` per record of ``system`` (one, or one per frontier budget)."""
        slots = system.slots()
        ident = check.identity() if check is not None and self.waterfall else None
        keys = [content_key("context", _fingerprint(), fp, question, list(digests), *([ident] if ident else []))
                for _, _, fp in slots]
        use = self.caches.contexts is not None
        hits = [self.caches.contexts.get(k) if use and fp else None for k, (_, _, fp) in zip(keys, slots, strict=True)]
        # (entries with page errors, which older caches held, and entries of another shape are built again)
        if all(_usable(h, waterfall=ident is not None) for h in hits):
            return [(name, b, h, True) for (name, b, _), h in zip(slots, hits, strict=True)]
        entries = self._build(system, question, pages, digests, [b for _, b, _ in slots], check)
        out = []
        for (name, b, fp), key, entry in zip(slots, keys, entries, strict=True):
            if use and fp:
                self.caches.contexts.put(key, entry)
            out.append((name, b, entry, False))
        return out

    def _build(self, system: Any, question: str, pages: Sequence[str | bytes], digests: Sequence[str],
               budgets: list[int | None], check: StageCheck | None) -> list[dict[str, Any]]:
        """Run the pipeline (once per budget list) and turn each result into a cache entry."""
        inputs, clean_s = self._inputs(system, pages, digests)
        before = usage_of(_models(system.pipeline))
        with Clock() as clock:
            if budgets == [None]:
                results = [system.pipeline.run(question, inputs)]
            else:
                by_budget = run_at_budgets(system.pipeline, question, inputs, [b for b in budgets if b is not None])
                results = [by_budget[b] for b in budgets]
        for res in results:
            if getattr(res, "errors", None):  # a pipeline that reads pages itself and left some out
                raise PageErrors({str(k): str(v) for k, v in res.errors.items()}, len(pages))
        spent = usage_delta(before, usage_of(_models(system.pipeline)))
        if len(results) > 1:  # measured around every budget: each budget's share (pipelines without a ledger)
            spent = {m: {k: round(v / len(results)) for k, v in rec.items()} for m, rec in spent.items()}
            clock.seconds /= len(results)
            clock.gpu_seconds = None if clock.gpu_seconds is None else clock.gpu_seconds / len(results)
        shared = self._example_hits(pages, digests, check) if check is not None and self.waterfall else None
        keep = getattr(system.pipeline, "waterfall_inputs", None)
        if shared is not None and keep is not None:
            shared = [h for h in shared if h[0] in keep]
        return [self._entry(system, res, clean_s, clock, spent, shared, check) for res in results]

    def _entry(self, system: Any, res: Any, clean_s: float, clock: Clock,
               spent: dict[str, dict[str, int]], shared: list[list[Any]] | None,
               check: StageCheck | None) -> dict[str, Any]:
        stages = dict(res.stage_tokens)
        if not system.clean and "cleaned" in stages:
            stages["raw"] = stages.pop("cleaned")
        seconds = {k: round(float(v), 4) for k, v in (res.stage_seconds or {}).items()}
        seconds["clean"] = round(seconds.get("clean", 0.0) + clean_s, 4)
        if len(seconds) == 1:  # a pipeline without stage timings: its whole run
            seconds["build"] = round(float(res.seconds) or clock.seconds, 4)
        cost: dict[str, Any] = {"seconds": seconds,
                                "tokens": dict(getattr(res, "model_tokens", None) or {}) or spent}
        gpu = dict(getattr(res, "stage_gpu_seconds", None) or {})
        if not gpu and clock.gpu_seconds is not None:
            gpu = {"build": clock.gpu_seconds}
        if gpu:
            cost["gpu_seconds"] = {k: round(float(v), 4) for k, v in gpu.items()}
        entry = {"context": res.context, "stage_tokens": stages,
                 "seconds": round(float(res.seconds), 4), "cost": cost}
        if shared is not None and check is not None:
            entry["waterfall"] = shared + self._stage_hits(system, res, check)
        return entry

    @staticmethod
    def _stage_hits(system: Any, res: Any, check: StageCheck) -> list[list[Any]]:
        """Checks of the pipeline's own stages, in its order (a system without cleaning has no ``cleaned``
        stage: its pages are the retrieved ones)."""
        formats = getattr(res, "stage_formats", None) or {}
        return [[name, int(check.holds(text, formats.get(name, "html")))] for name, text in res.stages.items()
                if system.clean or name != "cleaned"]


def _usable(entry: Any, *, waterfall: bool) -> bool:
    """A cached context entry of the shape :meth:`Builder._entry` writes (a damaged or foreign entry --
    ``{"context": 5}`` -- is a miss, never a row built from it)."""
    if not isinstance(entry, dict) or entry.get("page_errors") or not isinstance(entry.get("context"), str):
        return False
    stages = entry.get("stage_tokens")
    if not isinstance(stages, dict) or not all(isinstance(k, str) and isinstance(v, int | float)
                                               and not isinstance(v, bool) for k, v in stages.items()):
        return False  # (counts, and the cost ledger's "cost:..." figures, which may be floats)
    if not isinstance(entry.get("cost", {}), dict) or isinstance(entry.get("seconds", 0), bool) \
            or not isinstance(entry.get("seconds", 0), int | float):
        return False
    marks = entry.get("waterfall")
    if marks is None:
        return not waterfall
    return isinstance(marks, list) and all(isinstance(m, list) and len(m) == 2 and isinstance(m[0], str)
                                           and m[1] in (0, 1) for m in marks)
