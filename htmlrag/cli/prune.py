"""``htmlrag prune``: one question over pages, or a JSONL batch (resumable, input order kept)."""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from htmlrag.cli import batch as pb
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import MAX_PAGE_MB, PageTooLarge, read_page
from htmlrag.core.options import integer, number, workers
from htmlrag.factory import PIPELINE, defaults, make_pipeline, make_ranker
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.base import MAX_PAGE_PRIOR, PagePrior
from htmlrag.rankers.embedding import EmbeddingCache

log = logging.getLogger("htmlrag")

#: Upper bounds of the numeric options (far above any real use; a bigger value is a typo, refused when parsed)
MAX_TOKENS = 10_000_000      # --budget, --budget1, --gen-max-prompt-tokens, --embed-max-seq
MAX_WORDS = 1_000_000        # --max-words, --max-words2
MAX_BLOCKS = 1_000_000       # --embed-candidates, --split-to-fill
MAX_STREAMS = 256            # --embed-cpu-workers
MAX_PAGE_MB_LIMIT = 10_000   # --max-page-mb (10 GB)


def add_prune_parser(sub: Any) -> None:
    """Register the ``prune`` subcommand on ``sub`` (an argparse subparsers object)."""
    pipe, emb, gen = defaults(PIPELINE), defaults("embedding"), defaults("generative")  # one source: the library
    p = sub.add_parser("prune", help="prune pages to a token budget for a question (HtmlRAG Algorithm 2)")
    p.add_argument("paths", nargs="*", help=".html/.html.gz pages retrieved for the question")
    p.add_argument("--question", "-q", help="the question (single mode)")
    p.add_argument("--batch", help="JSONL input: {id, question, pages: [html]} or {id, question, page_paths: [...]}")
    p.add_argument("--out", help="JSONL output of --batch: {id, context, tokens, seconds} (+ error) per input line")
    p.add_argument("--budget", type=integer(1, MAX_TOKENS), default=pipe["budget2"], help=f"final token budget (default {pipe['budget2']})")
    p.add_argument("--ranker", choices=["bm25", "embed", "gen"], default="bm25", help="ranker of step 1")
    p.add_argument("--max-words", type=integer(1, MAX_WORDS), default=pipe["max_words1"],
                   help=f"block size of step 1 in words (default {pipe['max_words1']})")
    p.add_argument("--ranker2", choices=["bm25", "embed", "gen"], help="ranker of step 2 (two-step pipeline)")
    p.add_argument("--budget1", type=integer(1, MAX_TOKENS), default=pipe["budget1"],
                   help=f"step-1 budget when --ranker2 is set (default {pipe['budget1']})")
    p.add_argument("--max-words2", type=integer(1, MAX_WORDS), default=pipe["max_words2"],
                   help=f"block size of step 2 (default {pipe['max_words2']})")
    p.add_argument("--page-prior", type=number(0, MAX_PAGE_PRIOR), default=0.0,
                   help="add W x the page's best block score to every block of it (0: off; see PagePrior)")
    p.add_argument("--tokenizer", default=None, help="HF tokenizer name/path (default: Mistral-7B, offline)")
    p.add_argument("--embed-model", default=emb["model"],
                   help=f"embedding model name/path (default {emb['model']}, bundled; paper: BAAI/bge-large-en)")
    p.add_argument("--embed-cache", default=None, help="SQLite file for block embeddings (default: in memory)")
    p.add_argument("--embed-dtype", choices=["auto", "float32", "bfloat16", "float16"], default=emb["dtype"],
                   help="embedding model dtype (default auto: bfloat16 on CPUs with AVX512-BF16/AMX and on CUDA, "
                        "~1.7x faster with the same block ranking; float32 elsewhere)")
    p.add_argument("--embed-max-seq", type=integer(1, MAX_TOKENS), default=None,
                   help="embedding input length in tokens (default: the length the model was trained at where "
                        "known, MiniLM 128; else the model's own)")
    p.add_argument("--embed-cpu-workers", type=integer(1, MAX_STREAMS), default=None,
                   help="CPU: parallel encoding streams (default: one per torch thread, at most 8; 1: off)")
    p.add_argument("--embed-candidates", type=integer(0, MAX_BLOCKS), default=emb["candidates"],
                   help=f"embed only the N blocks BM25 ranks highest, the rest below them in BM25's order "
                        f"(default {emb['candidates']}: the same answer retention as every block on WTQ-HTML, "
                        "~3-4x faster; 0: every block, the paper's ranker)")
    p.add_argument("--gen-model", default=None, help="generative pruner name/path (for --ranker gen)")
    p.add_argument("--gen-dtype", default=gen["dtype"], help=f"generative pruner dtype (default {gen['dtype']})")
    p.add_argument("--gen-max-prompt-tokens", type=integer(1, MAX_TOKENS), default=None, help="cap on the pruner prompt length")
    p.add_argument("--gen-truncation", choices=["error", "left", "right"], default=gen["truncation"],
                   help="a pruner prompt over the window: reject (default) or drop HTML from the left/right")
    p.add_argument("--no-pack", action="store_true",
                   help="one block per child (the paper's Algorithm 1) instead of packing small siblings")
    p.add_argument("--split-to-fill", type=integer(0, MAX_BLOCKS), default=pipe["split_to_fill"],
                   help="split up to N blocks that do not fit the room left so their best parts fill it "
                        f"(default {pipe['split_to_fill']}; 0: the paper's rule, skip them whole; not for --ranker gen)")
    p.add_argument("--device", default=emb["device"], help="torch device for model rankers")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from the hub (off)")
    p.add_argument("--format", choices=["html", "compact_html", "text", "markdown"], default="html", help="context format")
    p.add_argument("--no-clean", action="store_true", help="pages are already cleaned")
    add_max_page_option(p)
    p.add_argument("--keep-hidden", action="store_true",
                   help="cleaning keeps text hidden by markup (display:none sort keys, hidden attribute)")
    p.add_argument("--no-resume", action="store_true", help="overwrite --out instead of resuming it")
    p.add_argument("--workers", type=workers, default="auto",
                   help="--batch: items pruned in parallel processes (default auto: one per usable CPU core "
                        "for BM25, 1 for model rankers, which use every core already; 1: in this process)")
    p.set_defaults(func=run_prune)


def add_max_page_option(p: argparse.ArgumentParser) -> None:
    """``--max-page-mb``: the largest page read, after decompression (the web app's limit by default)."""
    p.add_argument("--max-page-mb", type=number(0, MAX_PAGE_MB_LIMIT, lo_open=True), default=MAX_PAGE_MB,
                   help=f"largest page, in MB after decompression (default {MAX_PAGE_MB:g}, as the web app; at most "
                        f"{MAX_PAGE_MB_LIMIT:g}); a bigger page or a gzip bomb is an error naming the file")


def max_page_bytes(args: argparse.Namespace) -> int:
    """``--max-page-mb`` in bytes."""
    return int(float(getattr(args, "max_page_mb", MAX_PAGE_MB)) * 1e6)


#: ``--ranker`` names -> the factory's ranker kinds
_KINDS = {"bm25": "bm25", "embed": "embedding", "gen": "generative"}


def _make_ranker(kind: str, args: argparse.Namespace):
    """The ranker ``--ranker``/``--ranker2`` names, built by :func:`htmlrag.factory.make_ranker` from the options
    given on the command line (their defaults are the rankers' own)."""
    if kind == "bm25":
        return make_ranker("bm25")
    if kind == "embed":
        cache = EmbeddingCache(args.embed_cache) if args.embed_cache else None
        return make_ranker("embedding", model=args.embed_model, device=args.device, cache=cache,
                           dtype=args.embed_dtype, max_seq_length=args.embed_max_seq,
                           trust_remote_code=args.trust_remote_code, cpu_workers=args.embed_cpu_workers,
                           candidates=_candidates(args))
    if kind == "gen":
        if not args.gen_model:
            raise InputError("--ranker gen needs --gen-model NAME_OR_PATH (e.g. zstanjj/HTML-Pruner-Llama-1B)")
        return make_ranker("generative", model_name_or_path=args.gen_model, device=args.device,
                           dtype=args.gen_dtype, max_prompt_tokens=args.gen_max_prompt_tokens,
                           truncation=args.gen_truncation, trust_remote_code=args.trust_remote_code)
    raise InputError(f"unknown ranker {kind!r}")


def _candidates(args: argparse.Namespace) -> int | None:
    n = args.embed_candidates
    if n is None or n == 0:
        return None
    if n < 0:
        raise InputError(f"--embed-candidates must be >= 0 (0: every block), got {n}")
    return n


def pipeline_from_args(args: argparse.Namespace):
    """The pipeline ``htmlrag prune`` builds for its parsed arguments (also what the benchmarks measure)."""
    tok = load_tokenizer(args.tokenizer, trust_remote_code=args.trust_remote_code)
    r1 = _make_ranker(args.ranker, args)
    if args.page_prior:
        r1 = PagePrior(r1, args.page_prior)
    r2 = _make_ranker(args.ranker2, args) if args.ranker2 else None
    return make_pipeline(r1, r2, tok, budget1=args.budget1, budget2=args.budget, max_words1=args.max_words,
                           max_words2=args.max_words2, fmt=args.format, clean=not args.no_clean,
                           pack_siblings=not args.no_pack, count_stages=False, keep_stages=False, keep_hidden=args.keep_hidden,
                           split_to_fill=args.split_to_fill)


def _item_pages(item: dict, base: Path, limit: int | None = None) -> list[str | bytes]:
    """The pages of one batch item, each within ``limit`` bytes (``--max-page-mb``): at least one, none empty
    (an empty context with 0 tokens and no error is what a wrong path or a failed export looks like)."""
    if "pages" in item and "page_paths" in item:
        raise InputError("give 'pages' or 'page_paths', not both")
    pages = _given_pages(item, base, limit)
    if not pages:
        raise InputError("no pages: 'pages' / 'page_paths' is empty")
    for i, page in enumerate(pages):
        if not (page.strip() if isinstance(page, str) else page.strip(b" \t\r\n\f")):
            raise InputError(f"page {i} is empty")
    return pages


def _given_pages(item: dict, base: Path, limit: int | None) -> list[str | bytes]:
    if "pages" in item:
        pages = item["pages"]
        if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
            raise InputError("'pages' must be a list of HTML strings")
        for i, p in enumerate(pages):
            if limit is not None and len(p) > limit and len(p.encode("utf-8", "surrogatepass")) > limit:
                raise PageTooLarge(f"pages[{i}]: over the {limit:,}-byte limit for pages")
        return list(pages)
    if "page_paths" in item:
        paths = item["page_paths"]
        if not isinstance(paths, list):
            raise InputError("'page_paths' must be a list of file paths")
        return [read_page(p if os.path.isabs(p) else base / p, limit) for p in paths]
    raise InputError("needs 'pages' (HTML strings) or 'page_paths' (files)")


def run_prune(args: argparse.Namespace) -> int:
    """Entry point of ``htmlrag prune``."""
    if args.batch:
        return _run_batch(args)
    if not args.paths or args.question is None:
        print("htmlrag: error: prune needs PATH... and --question, or --batch IN.jsonl --out OUT.jsonl",
              file=sys.stderr)
        return 2
    if not args.question.strip():
        print("htmlrag: error: --question is empty", file=sys.stderr)
        return 2
    try:
        pages = [read_page(p, max_page_bytes(args)) for p in args.paths]
        for path, page in zip(args.paths, pages, strict=True):
            if not page.strip(b" \t\r\n\f"):
                raise InputError(f"{path}: the page is empty")
        pipe = pipeline_from_args(args)
        res = pipe.run(args.question, pages)
    except HtmlRagError as exc:
        hint = " (raise it with --max-page-mb)" if isinstance(exc, PageTooLarge) else ""
        print(f"htmlrag: error: {exc}{hint}", file=sys.stderr)
        return 1
    for i, msg in res.errors.items():
        print(f"htmlrag: error: {args.paths[i]}: {msg}", file=sys.stderr)
    sys.stdout.write(res.context + "\n")
    print(f"htmlrag: prune: {len(pages)} page(s) -> {res.tokens} tokens (budget {args.budget}, {args.ranker}) "
          f"in {res.seconds:.2f} s{f'; {len(res.errors)} page error(s)' if res.errors else ''}", file=sys.stderr)
    return 1 if res.errors else 0


def _run_batch(args: argparse.Namespace) -> int:
    """``--batch IN --out OUT``: resumable and keyed by settings and input (see :mod:`htmlrag.cli.batch`)."""
    if not args.out:
        print("htmlrag: error: --batch needs --out OUT.jsonl", file=sys.stderr)
        return 2
    src, out = Path(args.batch), Path(args.out)
    try:
        pb.check_paths(src, out)
        lines = pb.read_batch(src)
        with pb.locked(out):
            if args.no_resume and out.exists():
                out.unlink()
            return _batch_locked(args, src, out, lines)
    except HtmlRagError as exc:
        print(f"htmlrag: error: {exc}", file=sys.stderr)
        return 1


def _batch_locked(args: argparse.Namespace, src: Path, out: Path, lines: list) -> int:
    settings = pb.settings_fingerprint(vars(args))
    ids = [pb.item_id(ln) for ln in lines]
    pb.duplicate_ids(lines, ids)
    lines = pb.with_page_digests(lines, src.parent)
    reuse, todo = pb.plan(lines, ids, settings, out)
    workers = batch_workers(args, len(todo))
    pipe = pipeline_from_args(args) if todo else None
    from tqdm import tqdm

    t_start = time.perf_counter()
    failed = new_tokens = 0
    done: dict[int, dict[str, Any]] = {}
    jobs = [(n, lines[n], ids[n]) for n in todo]
    with out.open("a", encoding="utf-8") as fh, tqdm(desc="prune", unit="q", initial=len(lines) - len(todo),
                                                      total=len(lines), disable=None, file=sys.stderr) as bar:
        for n, row in _pruned_rows(pipe, jobs, src.parent, workers, args):
            row.update(settings=settings, input=lines[n].digest)
            if "error" in row:
                failed += 1
                print(f"htmlrag: error: {row['error']}", file=sys.stderr)
            new_tokens += int(row.get("tokens") or 0)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            done[n] = row
            bar.update()
    final = [done[n] if n in done else reuse[(str(ids[n]), settings, ln.digest)] for n, ln in enumerate(lines)]
    pb.write_rows(out, final)  # exactly one row per input line, in input order
    print(batch_summary(len(lines), len(todo), len(lines) - len(todo), failed, failed, new_tokens,
                        time.perf_counter() - t_start, out, workers), file=sys.stderr)
    return 1 if failed else 0


def batch_workers(args: argparse.Namespace, items: int) -> int:
    """Processes for ``items`` batch items: ``--workers`` (a count, or ``auto``: one per usable CPU core when
    every ranker is BM25, 1 for model rankers, whose libraries use every core already).

    Raises:
        InputError: ``--workers`` is neither ``auto`` nor a whole number >= 1.
    """
    value = str(getattr(args, "workers", "auto") or "auto")
    if value == "auto":
        if not _bm25_only(args):
            return 1
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, items))
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(f"--workers must be 'auto' or a whole number >= 1, got {value!r}")
    return max(1, min(n, items))


def _bm25_only(args: argparse.Namespace) -> bool:
    """Every ranker of the pipeline is BM25 (no model library, no threads of its own)."""
    return args.ranker == "bm25" and (args.ranker2 or "bm25") == "bm25"


#: The pipeline a batch worker process uses (inherited through fork, or built by :func:`_worker_start`).
_WORKER_PIPE: Any = None


def _worker_start(args: argparse.Namespace | None) -> None:
    """Start of a batch worker: build the pipeline unless the process inherited one (fork)."""
    global _WORKER_PIPE
    if _WORKER_PIPE is None and args is not None:
        _WORKER_PIPE = pipeline_from_args(args)


def _start_method(args: argparse.Namespace) -> str:
    """``fork`` when every ranker is BM25 (the workers share the pipeline built here at no cost and run no
    threaded library), else ``spawn`` (a model ranker's thread pools do not survive a fork: each worker builds
    its own pipeline)."""
    return "fork" if _bm25_only(args) and "fork" in mp.get_all_start_methods() else "spawn"


def _worker_prune(job: tuple[int, Any, Any, Path, int | None]) -> tuple[int, dict[str, Any]]:
    n, line, item_id, base, limit = job
    return n, _prune_line(_WORKER_PIPE, line, item_id, base, limit)


def _pruned_rows(pipe: Any, jobs: list, base: Path, workers: int, args: argparse.Namespace):
    """``(index, row)`` for every job, in this process (``workers`` 1) or in ``workers`` processes, as they
    finish. Each item is pruned by exactly one process with its own pipeline (the same settings), so its row
    is the one a single process would write; a worker that dies fails the run (rows written so far stay,
    and a rerun computes the rest)."""
    limit = max_page_bytes(args)
    if workers <= 1:
        for n, line, item_id in jobs:
            yield n, _prune_line(pipe, line, item_id, base, limit)
        return

    global _WORKER_PIPE
    forkable = _start_method(args) == "fork"
    ctx = mp.get_context("fork" if forkable else "spawn")
    _WORKER_PIPE = pipe if forkable else None
    try:
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_start,
                                 initargs=(None if forkable else args,)) as pool:
            futures = [pool.submit(_worker_prune, (n, line, item_id, base, limit)) for n, line, item_id in jobs]
            try:
                for fut in as_completed(futures):
                    yield fut.result()
            except BrokenProcessPool as exc:
                raise HtmlRagError(f"a batch worker process died ({exc}); the rows written so far are kept, and "
                                   "a rerun computes the rest") from exc
            finally:
                for fut in futures:
                    fut.cancel()
    finally:
        _WORKER_PIPE = None


def _prune_line(pipe: Any, line: Any, item_id: Any, base: Path, limit: int | None = None) -> dict[str, Any]:
    """The output row of one input line (an ``error`` row when the line or its pages are bad)."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"id": item_id}
    try:
        try:
            item = json.loads(line.text)
        except ValueError as exc:
            raise InputError(f"invalid JSON: {getattr(exc, 'msg', exc)}") from None
        if not isinstance(item, dict):
            raise InputError("each line must be a JSON object")
        question = item.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InputError("'question' must be a non-empty string")
        pages = _item_pages(item, base, limit)
        res = pipe.run(question, pages)
        if res.errors:  # a context from fewer pages than given is an error row, not a result (never reused)
            row["page_errors"] = {str(k): v for k, v in res.errors.items()}
            first = min(res.errors)
            raise InputError(f"page {first} of {len(pages)}: {res.errors[first]}; no context is built from the "
                             "other pages")
        row.update(context=res.context, tokens=res.tokens)
    except Exception as exc:  # one bad item never stops the batch
        msg = str(exc) if isinstance(exc, HtmlRagError) else f"{type(exc).__name__}: {exc}"
        row["error"] = f"line {line.number}: {msg}"
    row["seconds"] = round(time.perf_counter() - t0, 4)
    return row


def batch_summary(items: int, done: int, skipped: int, errors: int, errors_total: int, tokens: int, seconds: float,
                  out: Path, workers: int = 1) -> str:
    """The one line a ``--batch`` run ends with: items, done now / skipped (already in ``out``) / errors,
    tokens and seconds of this run."""
    mean = f" ({tokens / (done - errors):.0f} per item)" if done > errors else ""
    older = f", {errors_total - errors} earlier" if errors_total > errors else ""
    return (f"htmlrag: prune: {items} items: {done} done now, {skipped} skipped (already in {out}), "
            f"{errors} errors{older}; {tokens} tokens{mean}; {seconds:.2f} s"
            f"{f' ({workers} processes)' if workers > 1 else ''}")
