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
                        "waterfall": [[stage, 0|1], ...],  # did each stage hold the answer (waterfall rule)
                        "cost": {"seconds": {stage: s}, "gpu_seconds": {stage: s},  # the cost ledger
                                 "tokens": {model: {"input", "output"}}},
                        ["budget"],                       # budget frontiers: the row key is name@budget
                        "seconds", "cached", "error": null | "...", ["page_errors": {page index: "..."}],
                        ["truncated": true],              # the answer was cut at max_new_tokens
                        ["context"]}}}

``truncated`` is written only for an answer the reader knows was cut at ``max_new_tokens`` (HF: no end of
sequence within the limit; vLLM and OpenAI: ``finish_reason`` ``length``; :attr:`ReaderOutput.truncated`); rows
of other answers are as before, so their checksums do not change. The summary counts them
(``n_truncated``, :func:`htmlrag.evaluation.summary.summarize`).

A row holds every input of its scores except the context (kept only with ``save_contexts``), so that
``htmlrag-paper verify`` can re-score it: metrics that read the context (reference-text EM, evidence recall)
are re-scored only from rows that saved it.

**Budget frontiers.** A :class:`System` with ``budgets`` builds its context at every budget from one ranking
(the pipeline's ``run_budgets``; pipelines without it are run once per budget with the budget changed) and
adds one record per budget, ``name@budget`` (:func:`htmlrag.evaluation.frontier.budget_name`), each read and
scored like a system of its own.

**Cost ledger.** ``cost.seconds`` holds the wall seconds of each stage of this record (``clean`` for the page
cleaning, the pipeline's stages, ``read`` for the reader: its call's time shared evenly among the call's
prompts), ``cost.gpu_seconds`` the same where CUDA was used (:class:`htmlrag.core.clock.Clock`), and
``cost.tokens`` the tokens each model read and wrote (rankers' models, the reader). A context or an answer
taken from a cache keeps the ledger of the run that computed it (the system's cost, not the cache's).
"""

from __future__ import annotations

import copy
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.cache import SqliteCache
from htmlrag.core.errors import HtmlRagError, ServiceError
from htmlrag.core.fingerprint import ROWS, fingerprint
from htmlrag.core.redact import error_text
from htmlrag.data.schema import Example
from htmlrag.evaluation.scoring.budgets import budget_name
from htmlrag.evaluation.scoring.contexts import Builder, PageErrors
from htmlrag.evaluation.scoring.metrics import MetricInput, example_stats, score_example
from htmlrag.evaluation.scoring.stages import StageCheck
from htmlrag.evaluation.store import RunStore
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
        budgets: a budget frontier: the context at each of these budgets from one ranking (row keys
            ``name@budget``); empty: one context at the pipeline's own budget (row key ``name``).
        fingerprints: the fingerprint of each budget of a frontier (that budget's one-budget system, so the
            two share cached contexts).
    """

    name: str
    pipeline: Any
    clean: bool = True
    fmt: str = "html"
    fingerprint: str = ""
    keep_hidden: bool = False
    budgets: tuple[int, ...] = ()
    fingerprints: dict[int, str] = field(default_factory=dict)

    def row_names(self) -> list[str]:
        """The row keys this system fills: ``name``, or ``name@budget`` per budget of a frontier."""
        return [budget_name(self.name, b) for b in self.budgets] if self.budgets else [self.name]

    def slots(self) -> list[tuple[str, int | None, str]]:
        """``(row key, budget or None, cache fingerprint)`` of each record."""
        if not self.budgets:
            return [(self.name, None, self.fingerprint)]
        return [(budget_name(self.name, b), b, self.fingerprints.get(b, "")) for b in self.budgets]


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
        waterfall: the containment metric of the stage-loss waterfall (``ref_em``, ``evidence_hit``; ``None``:
            no stage checks; :mod:`htmlrag.evaluation.waterfall`).
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
    waterfall: str | None = None


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


def stage_check(ex: Example, rule: str | None) -> StageCheck | None:
    """The waterfall's stage check of one example (``None`` without a waterfall rule)."""
    if not rule:
        return None
    return StageCheck(rule, ex.answers, ex.long_answers, ex.metadata.get("answer_groups", ()))


def _chunk_rows(chunk: Sequence[tuple[int, Example]], systems: Sequence[System], builder: Builder,
                settings: EvalSettings) -> tuple[list[dict[str, Any]], list[ReadRequest], list[tuple[Any, ...]]]:
    """Rows of a chunk with every system's context built: ``(rows, reader requests, slots)``, a slot
    ``(row, example, row key, format, stage check)`` per request."""
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
        check = stage_check(ex, settings.waterfall)
        for system in systems:
            ts = time.perf_counter()
            try:
                built = builder.contexts(system, ex.question, pages, digests, check)
            except ServiceError:  # a cache (or a service) that does not work stops the run
                raise
            except Exception as exc:
                for name in system.row_names():
                    row["systems"][name] = {"error": _error(exc)}
                    if isinstance(exc, PageErrors):
                        row["systems"][name]["page_errors"] = exc.pages
                continue
            took = round((time.perf_counter() - ts) / len(built), 4)
            for name, budget, entry, cached in built:
                rec = {"stage_tokens": entry["stage_tokens"], "cached": cached, "fmt": system.fmt, "seconds": took,
                       "error": None, "cost": copy.deepcopy(entry.get("cost") or {})}
                if budget is not None:
                    rec["budget"] = budget
                if "waterfall" in entry:
                    rec["waterfall"] = [list(x) for x in entry["waterfall"]]
                row["systems"][name] = rec
                requests.append(ReadRequest(ex.question, entry["context"], system.fmt, settings.short_answer))
                slots.append((row, ex, name, system.fmt, check))
    return rows, requests, slots


def _ledger(rec: dict[str, Any], reader: Reader, out: ReaderOutput) -> None:
    """The reader's part of the record's cost ledger (seconds, GPU seconds, tokens)."""
    cost = rec.setdefault("cost", {})
    cost.setdefault("seconds", {})["read"] = round(float(getattr(out, "seconds", 0.0) or 0.0), 4)
    gpu = getattr(out, "gpu_seconds", None)
    if gpu is not None:
        cost.setdefault("gpu_seconds", {})["read"] = round(float(gpu), 4)
    name = str(getattr(reader, "name", "") or "")
    if name and name != "none":
        tokens = cost.setdefault("tokens", {}).setdefault(name, {"input": 0, "output": 0})
        tokens["input"] += int(out.prompt_tokens or 0)
        tokens["output"] += int(rec["reader_tokens"].get("output") or 0)


def _stages_after(rec: dict[str, Any], check: Any, out: ReaderOutput, fmt: str, reader: Reader) -> None:
    """The waterfall's last stages: the context the reader was shown, and its answer (with a reader)."""
    if check is None or "waterfall" not in rec:
        return
    scored = (rec.get("scores") or {}).get(check.rule)  # the rule is a metric of the run: its score is the check
    rec["waterfall"].append(["context", int(scored >= 1.0 if scored is not None else check.holds(out.context, fmt))])
    if str(getattr(reader, "name", "")) != "none":
        rec["waterfall"].append(["answer", int(check.holds(out.text, "text"))])


def _score(slots: list[tuple[Any, ...]], outputs: list[ReaderOutput | BaseException], settings: EvalSettings,
           reader: Reader) -> dict[str, BaseException]:
    """Put each answer and its scores into its row; returns the reader's error per row id that got only errors."""
    failed: dict[str, BaseException] = {}
    answered: set[str] = set()
    for (row, ex, name, fmt, check), out in zip(slots, outputs, strict=True):
        rec = row["systems"][name]
        if isinstance(out, BaseException):
            rec["error"] = _error(out)
            failed[row["id"]] = out
            continue
        answered.add(row["id"])
        rec["response"] = out.text
        if getattr(out, "truncated", None) is True:  # only then: rows of uncut answers keep their shape
            rec["truncated"] = True
        rec["tokens"] = out.context_tokens
        rec["reader_tokens"] = {"input": out.prompt_tokens, "output": _answer_tokens(reader, out.text)}
        _ledger(rec, reader, out)
        if settings.save_contexts:
            rec["context"] = out.context
        x = MetricInput(response=out.text, context=out.context, answers=ex.answers, long_answers=ex.long_answers,
                        answer_groups=ex.metadata.get("answer_groups", ()),
                        context_text=check.plain(out.context, fmt) if check is not None
                        else context_text(out.context, fmt))
        try:
            rec["scores"] = score_example(settings.metrics, x)
            corpus_stats = example_stats(settings.metrics, x)
            if corpus_stats:
                rec["metric_stats"] = corpus_stats
            _stages_after(rec, check, out, fmt, reader)
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
    builder = Builder(caches or Caches(), settings.waterfall)
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
