"""The evaluation loop: examples -> each system's context -> reader -> per-example scores -> saved rows.

Plain arguments only (usable from a notebook); the Hydra entry point ``eval/app.py`` builds the arguments.
Every example yields exactly one row, appended as soon as its chunk is done; an example or a system that
fails is recorded with an ``error`` field (secrets redacted) and the run goes on. Already-saved ids are
skipped (failed rows too unless ``retry_failed``), so a killed run resumes where it stopped; the saved ids are
read while holding the row file's lock.

**An error row is never a scored row.** A system whose context could not be built -- including when *one* of
the example's pages cannot be read, decoded or cleaned -- gets an ``error`` (``"page 2 of 5: ..."``) and the
failed pages in ``page_errors``, and no response and no scores: a context built from fewer pages than the
example retrieved is not the experiment, so it is neither scored nor cached. Only contexts built without an
error are stored in the context cache, and only cleaned pages in the page cache.

**Failing fast.** A :class:`~htmlrag.core.errors.ServiceError` from the reader (endpoint down, key refused), and a
:class:`~htmlrag.core.errors.CacheError` from any cache (a file that cannot be opened or written), stops the loop
at once: the chunk in progress is not saved, earlier rows are kept, and the error propagates. A failed
reader batch is retried request by request only for other errors. ``max_consecutive_failures`` examples in a
row whose reader calls all failed stop the loop the same way (their rows are saved, as failures).

Row format (one JSON line per example)::

    {"id", "index", "question", "answers",
     "long_answers": [...], "answer_groups": [[...]],   # the other gold inputs of the metrics
     ["metadata": {key: "value"}],                # the example's metadata keys of EvalSettings.row_metadata
     "error": null | "...",                      # the example itself failed (e.g. a page file is missing)
     "systems": {name: {"tokens", "stage_tokens", "response", "scores": {metric: float},
                        "metric_stats": {metric: [float]},  # corpus-level metrics only (BLEU)
                        "reader_tokens": {"input", "output"},  # prompt and answer tokens of the reader
                        "fmt",                                 # the context's format (html, text, markdown)
                        "seconds", "cached", "error": null | "...", ["page_errors": {page index: "..."}],
                        ["context"]}}}

A row holds every input of its scores except the context (kept only with ``save_contexts``), so that
``htmlrag-paper verify`` can re-score it: metrics that read the context (reference-text EM, evidence recall)
are re-scored only from rows that saved it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.errors import HtmlRagError, InputError, ServiceError
from htmlrag.core.fingerprint import ROWS, fingerprint
from htmlrag.core.redact import error_text
from htmlrag.data.schema import Example
from htmlrag.evaluation.scoring.metrics import MetricInput, example_stats, score_example
from htmlrag.evaluation.store import RunStore
from htmlrag.html.clean import clean_html
from htmlrag.html.encoding import to_text
from htmlrag.html.formats import convert
from htmlrag.readers.base import Reader, ReaderOutput, ReadRequest

log = logging.getLogger(__name__)


def code_fingerprint() -> str:
    """The fingerprint of the code that shapes a row (:data:`htmlrag.core.fingerprint.ROWS`): part of every
    cache key and of the run id, so that changed code never reuses contexts, answers or rows of older code."""
    return fingerprint(ROWS)


@dataclass
class System:
    """A named way of building the context.

    Attributes:
        name: the row key and table row label.
        pipeline: an object with ``run(question, pages) -> PipelineResult`` built with ``clean=False``
            (:class:`htmlrag.pruning.pipeline.HtmlRagPipeline`); cleaning happens here, through the page cache.
        clean: clean pages first (``False``: the raw pages, decoded — the "vanilla HTML" baseline).
        keep_hidden: cleaning keeps text hidden by markup (:func:`htmlrag.html.clean.is_hidden`; dropped by default).
        fmt: the context format the pipeline produces (selects the reader prompt).
        fingerprint: a string identifying the system's configuration (part of the context cache key).
    """

    name: str
    pipeline: Any
    clean: bool = True
    fmt: str = "html"
    fingerprint: str = ""
    keep_hidden: bool = False


@dataclass
class Caches:
    """Content-keyed caches (any may be ``None``): cleaned pages and built contexts."""

    pages: SqliteCache | None = None
    contexts: SqliteCache | None = None


@dataclass
class EvalSettings:
    """Loop settings.

    Attributes:
        metrics: registered metric names scored for every system.
        short_answer: ask the reader for short answers (all but long-form sets).
        chunk_size: examples per reader call (rows are written per chunk).
        progress: show a progress bar.
        save_contexts: also save each context in the rows (large).
        rank / world: this process's shard: examples ``i`` with ``i % world == rank``.
        retry_failed: examples saved with an error are evaluated again (the new row replaces the old).
        row_metadata: keys of each example's metadata saved in its row (``metadata``, values as text): what
            subset tables group by (``docqa.subsets``), so they can be recomputed from the rows alone.
        max_consecutive_failures: stop (ServiceError) after this many examples in a row whose reader calls all
            failed (0: never).
    """

    metrics: list[str]
    short_answer: bool = True
    chunk_size: int = 8
    progress: bool = True
    save_contexts: bool = False
    rank: int = 0
    world: int = 1
    retry_failed: bool = True
    max_consecutive_failures: int = 8
    row_metadata: tuple[str, ...] = ()


@dataclass
class EvalStats:
    """What one call of :func:`evaluate` did."""

    done_before: int = 0
    evaluated: int = 0
    failed_examples: int = 0
    failed_systems: int = 0
    seconds: float = 0.0
    cache_hits: dict[str, int] = field(default_factory=dict)


def _error(exc: BaseException) -> str:
    return error_text(exc)


def context_text(context: str, fmt: str) -> str:
    """The plain text of a context in format ``fmt`` (HTML converted to text): what context metrics read."""
    if fmt != "html" or not context.strip():
        return context

    return convert(context, "text")


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


class ContextBuilder:
    """Builds one system's context for one example through the caches (cleaned pages, contexts; errors are never
    stored); also used to precompute the contexts of systems with a large model before the reader is loaded
    (:func:`htmlrag_bench.eval.systems.refiners.precompute_heavy`)."""

    def __init__(self, caches: Caches) -> None:
        self.caches = caches

    def clean(self, page: str | bytes, digest: str, keep_hidden: bool = False) -> str:
        key = content_key("clean", code_fingerprint(), digest, *(("keep_hidden",) if keep_hidden else ()))
        hit = self.caches.pages.get(key) if self.caches.pages is not None else None
        if isinstance(hit, str):
            return hit
        cleaned = clean_html(page, name=f"page {digest[:12]}", keep_hidden=keep_hidden)  # raises: nothing stored
        if self.caches.pages is not None:
            self.caches.pages.put(key, cleaned)
        return cleaned

    def _inputs(self, system: System, pages: Sequence[str | bytes], digests: Sequence[str]) -> list[str]:
        """The pages as the pipeline takes them (cleaned, or decoded); raises :class:`PageErrors`."""

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
        return inputs

    def context(self, system: System, question: str, pages: Sequence[str | bytes], digests: Sequence[str]
                ) -> tuple[dict[str, Any], bool]:
        """``(entry, cached)``: the context, its stage tokens and build seconds.

        Raises:
            PageErrors: a page could not be read or cleaned.
            CacheError: a cache does not work.
        """
        use_cache = self.caches.contexts is not None and bool(system.fingerprint)
        key = content_key("context", code_fingerprint(), system.fingerprint, question, list(digests))
        hit = self.caches.contexts.get(key) if use_cache else None  # type: ignore[union-attr]
        if isinstance(hit, dict) and not hit.get("page_errors") and "context" in hit:  # older caches held errors
            return hit, True
        res = system.pipeline.run(question, self._inputs(system, pages, digests))
        if getattr(res, "errors", None):  # a pipeline that reads pages itself and left some out
            raise PageErrors({str(k): str(v) for k, v in res.errors.items()}, len(pages))
        stages = dict(res.stage_tokens)
        if not system.clean and "cleaned" in stages:
            stages["raw"] = stages.pop("cleaned")
        entry = {"context": res.context, "stage_tokens": stages, "seconds": round(float(res.seconds), 4)}
        if use_cache:
            self.caches.contexts.put(key, entry)  # type: ignore[union-attr]
        return entry, False


def _answer_tokens(reader: Reader, text: str) -> int | None:
    """Tokens of an answer in the reader's tokenizer (``None`` when the reader has no token counter)."""
    if not text:
        return 0
    tok = getattr(reader, "tokenizer", None)
    return int(tok.count(text)) if tok is not None and hasattr(tok, "count") else None


def _read(reader: Reader, requests: list[ReadRequest]) -> list[ReaderOutput | BaseException]:
    """Read a batch; when the batch fails, read one by one so one bad request fails alone."""
    if not requests:
        return []
    try:
        return list(reader.read(requests))
    except ServiceError:
        raise
    except Exception as exc:
        if len(requests) == 1:
            return [exc]
        log.warning("reader batch of %d failed (%s); retrying one by one", len(requests), _error(exc))
    out: list[ReaderOutput | BaseException] = []
    for r in requests:
        try:
            out.append(reader.read([r])[0])
        except ServiceError:
            raise
        except Exception as exc:
            out.append(exc)
    return out


def _new_row(index: int, ex: Example, settings: EvalSettings) -> dict[str, Any]:
    """A row before any system ran: the example's identity and every gold input of the metrics."""
    row: dict[str, Any] = {"id": ex.id, "index": index, "question": ex.question, "answers": list(ex.answers),
                           "long_answers": list(ex.long_answers),
                           "answer_groups": [list(g) for g in ex.metadata.get("answer_groups", ())],
                           "error": None, "systems": {}}
    if settings.row_metadata:
        row["metadata"] = {k: str(ex.metadata.get(k, "?")) for k in settings.row_metadata}
    return row


def _chunk_rows(chunk: Sequence[tuple[int, Example]], systems: Sequence[System], builder: ContextBuilder,
                settings: EvalSettings) -> tuple[list[dict[str, Any]], list[ReadRequest], list[tuple[Any, ...]]]:
    """Rows of a chunk with every system's context built: ``(rows, reader requests, (row, example, system))``."""
    rows, requests, slots = [], [], []
    for index, ex in chunk:
        row = _new_row(index, ex, settings)
        rows.append(row)
        try:
            pages = ex.load_pages()
        except HtmlRagError as exc:
            row["error"] = _error(exc)
            continue
        digests = [hashlib.sha256(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p).hexdigest()
                   for p in pages]
        for system in systems:
            ts = time.perf_counter()
            try:
                entry, cached = builder.context(system, ex.question, pages, digests)
            except ServiceError:  # a cache (or a service) that does not work stops the run
                raise
            except Exception as exc:
                row["systems"][system.name] = {"error": _error(exc)}
                if isinstance(exc, PageErrors):
                    row["systems"][system.name]["page_errors"] = exc.pages
                continue
            row["systems"][system.name] = {"stage_tokens": entry["stage_tokens"], "cached": cached, "fmt": system.fmt,
                                           "seconds": round(time.perf_counter() - ts, 4), "error": None}
            requests.append(ReadRequest(ex.question, entry["context"], system.fmt, settings.short_answer))
            slots.append((row, ex, system))
    return rows, requests, slots


def _score(slots: list[tuple[Any, ...]], outputs: list[ReaderOutput | BaseException], settings: EvalSettings,
           reader: Reader) -> dict[str, BaseException]:
    """Put each answer and its scores into its row; returns the reader's error per row id that got only errors."""
    failed: dict[str, BaseException] = {}
    answered: set[str] = set()
    for (row, ex, system), out in zip(slots, outputs, strict=True):
        rec = row["systems"][system.name]
        if isinstance(out, BaseException):
            rec["error"] = _error(out)
            failed[row["id"]] = out
            continue
        answered.add(row["id"])
        rec["response"] = out.text
        rec["tokens"] = out.context_tokens
        rec["reader_tokens"] = {"input": out.prompt_tokens, "output": _answer_tokens(reader, out.text)}
        if settings.save_contexts:
            rec["context"] = out.context
        x = MetricInput(response=out.text, context=out.context, answers=ex.answers, long_answers=ex.long_answers,
                        answer_groups=ex.metadata.get("answer_groups", ()),
                        context_text=context_text(out.context, system.fmt))
        try:
            rec["scores"] = score_example(settings.metrics, x)
            corpus_stats = example_stats(settings.metrics, x)
            if corpus_stats:
                rec["metric_stats"] = corpus_stats
        except Exception as exc:
            rec["error"] = _error(exc)
    return {k: v for k, v in failed.items() if k not in answered}


def evaluate(
    examples: Sequence[Example],
    systems: Sequence[System],
    reader: Reader,
    store: RunStore,
    settings: EvalSettings,
    caches: Caches | None = None,
) -> EvalStats:
    """Evaluate this process's shard of ``examples`` and append one row per example to ``store``.

    Returns:
        counts of what was done (examples already saved are skipped).

    Raises:
        ServiceError: the reader's service is down (see the module docstring); saved rows stay saved.
    """
    t0 = time.perf_counter()
    stats = EvalStats()
    builder = ContextBuilder(caches or Caches())
    mine = [(i, ex) for i, ex in enumerate(examples) if i % settings.world == settings.rank]
    from tqdm.auto import tqdm

    with store.writer(settings.rank, settings.world) as writer:  # the lock first: saved ids are read under it
        done = store.done_ids(include_failed=not settings.retry_failed)
        todo = [(i, ex) for i, ex in mine if ex.id not in done]
        stats.done_before = len(mine) - len(todo)
        if stats.done_before:
            log.info("resuming: %d of %d examples of this shard already saved", stats.done_before, len(mine))
        bar = tqdm(total=len(todo), desc=f"eval[{settings.rank}/{settings.world}]", disable=not settings.progress,
                   unit="q", dynamic_ncols=True)
        in_a_row = 0
        for start in range(0, len(todo), settings.chunk_size):
            chunk = todo[start : start + settings.chunk_size]
            rows, requests, slots = _chunk_rows(chunk, systems, builder, settings)
            failed = _score(slots, _read(reader, requests), settings, reader)
            stop = None
            for row in rows:
                writer.append(row)
                stats.evaluated += 1
                stats.failed_examples += bool(row["error"])
                stats.failed_systems += sum(bool(s.get("error")) for s in row["systems"].values())
                in_a_row = in_a_row + 1 if row["id"] in failed else 0
                if settings.max_consecutive_failures and in_a_row >= settings.max_consecutive_failures:
                    stop = failed[row["id"]]
            bar.update(len(chunk))
            if stop is not None:
                bar.close()
                raise ServiceError(f"stopping: the reader failed on {in_a_row} examples in a row (last error: "
                                   f"{_error(stop)}); fix the reader, then rerun to resume")
    bar.close()
    stats.seconds = time.perf_counter() - t0
    for name, cache in (("pages", builder.caches.pages), ("contexts", builder.caches.contexts)):
        if cache is not None:
            stats.cache_hits[name] = cache.hits
    return stats
