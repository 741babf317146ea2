"""Benchmark: pruning speed and answer retention on ../shared/data/wtq-html-qa, vs the authors' toolkit.

Each question comes with its own Wikipedia page and 4 distractor pages (the retrieved set). For every
budget (default 512/1024/2048/4096 tokens of Mistral-7B's tokenizer) and system we report seconds per
question and *answer retention*: the fraction of questions for which a gold answer, normalised (lower case,
punctuation and articles removed, whitespace collapsed), is contained in the normalised text of the pruned
context (the paper's Table 5 "reference EM").

Systems: ours (clean -> block tree with sibling packing, 128 words -> BM25 (with
the page prior, weight 0.5) or MiniLM (the library's defaults: bfloat16 where the CPU computes it, 128-token
inputs: the length it was trained at) on each
block with its heading/table-header context -> exact greedy pruning, where up to 4 blocks that miss
the room left are split so their best parts fill it; the context as HTML, compact HTML and text), a plain
chunk-and-rerank baseline with the same ranker (section chunks of 128 words filled to the same budget, plain text), and, in
the same run and on the first ``--peer-limit`` questions, htmlrag 0.1.1's BM25HTMLPruner / EmbedHTMLPruner
(``--peer-python``: a separate venv with htmlrag==0.1.1; its MiniLM runs as the toolkit loads it, float32),
at our block size (like for like) and at its default of 256 words (``--peer-max-words``).
Speed is per question on those questions: cold (nothing remembered between questions) and warm (caches
kept), each against the peer's time on the same question, budget and pages; each system is timed in a fresh
process of its own (``--speed-process``; see :func:`speed_ours`). Our text contexts are compared
with the chunks' question by question (exact McNemar test: how many questions only one of them keeps).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import re
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from htmlrag import clean_html
from htmlrag.core.models import minilm_path, mistral_tokenizer_path
from htmlrag.evaluation.stats import mcnemar_exact
from htmlrag.factory import make_pipeline
from htmlrag.html.chunking import chunk_tree, section_chunks
from htmlrag.html.formats import html_to_text
from htmlrag.pruning.prune import prune_to_budget
from htmlrag.pruning.tokens import load_tokenizer

ROOT = Path(__file__).resolve().parents[1]
#: The development copy if there is one, else the download (`htmlrag-data download wtq_html_qa`).
DATA = next((p for p in (ROOT.parent / "shared" / "data" / "wtq-html-qa",
                         Path(os.environ.get("HTMLRAG_DATA", ROOT / ".data")) / "wtq-html-qa") if p.is_dir()),
            Path(os.environ.get("HTMLRAG_DATA", ROOT / ".data")) / "wtq-html-qa")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def norm(s: str) -> str:
    """Lower case, punctuation -> space, articles removed, whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_PUNCT)).split())


def retained(context_text: str, answers: list[str]) -> bool:
    ctx = f" {norm(context_text)} "
    return any(f" {norm(a)} " in ctx for a in answers if norm(a))


def load_items(data: Path, limit: int | None) -> list[dict]:
    if not (data / "questions.jsonl").is_file():
        sys.exit(f"bench_prune: no questions.jsonl in {data}; run `htmlrag-data download wtq_html_qa` (or --data DIR)")
    items = []
    for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()[: limit or None]:
        q = json.loads(line)
        pages = []
        for rel in [q["page"], *q["distractors"]]:
            p = data / rel
            p = p if p.exists() else Path(str(p) + ".gz")
            raw = p.read_bytes()
            pages.append(gzip.decompress(raw) if p.suffix == ".gz" else raw)
        items.append({"id": q["id"], "question": q["question"], "answers": q["answers"], "pages": pages})
    return items


def make_ranker(kind: str, args=None):
    from htmlrag import factory

    if kind == "bm25":
        return factory.make_ranker("bm25", page_prior=getattr(args, "page_prior", 0.0))
    ranker = factory.make_ranker("embedding", model="sentence-transformers/all-MiniLM-L6-v2",
                                 dtype=getattr(args, "embed_dtype", "auto"),
                                 max_seq_length=getattr(args, "embed_max_seq", None),
                                 page_prior=getattr(args, "embed_page_prior", 0.0),
                                 candidates=getattr(args, "embed_candidates", None) or None)
    ranker._load()  # model loading is not per-question work
    return ranker


def _forget(ranker) -> None:
    """Drop everything a ranker remembers between questions (embeddings, question embeddings included; BM25
    tokenisations)."""
    from htmlrag.rankers.bm25 import clear_cache
    from htmlrag.rankers.embedding import EmbeddingCache

    clear_cache()
    if hasattr(ranker, "cache"):
        ranker.cache = EmbeddingCache()
    if hasattr(ranker, "_queries"):
        ranker._queries.clear()


def cli_default_pipeline(kind: str, budget: int):
    """The pipeline ``htmlrag prune --ranker KIND --budget BUDGET`` builds with no other flag (the defaults
    users get: block size, embedding dtype and input length, CPU streams, split-to-fill, format)."""
    from htmlrag.cli.main import build_parser
    from htmlrag.cli.prune import pipeline_from_args

    args = build_parser().parse_args(["prune", "page.html", "-q", "?", "--ranker", kind, "--budget", str(budget)])
    return pipeline_from_args(args), args


def _base_ranker(ranker):
    """The ranker under a :class:`~htmlrag.rankers.base.PagePrior` wrapper (or the ranker itself)."""
    return getattr(ranker, "ranker", ranker)


def run_ours(items, ranker, budget, tok, max_words, fmt="html", pack=True, warm=False, repeats=1, keep=False,
             split_to_fill=4, defaults=False):
    """Our pipeline (one step: clean -> tree -> rank -> prune). Cold (default): every question from scratch,
    nothing remembered from earlier questions (no page cache, no embedding or tokenisation cache). Warm: the
    pipeline's content-keyed page cache and the ranker's caches are kept across questions (pages recur).

    Seconds per question: the median over ``repeats`` passes over ``items`` (a pass of ours lasts ~1 s for
    BM25, where a pause of the shared machine moves it by 30%; the toolkit's pass lasts ~30 s and averages
    such pauses out), each started after a garbage collection (earlier passes leave large heaps).
    ``keep``: a warm pass also keeps what earlier passes left in the ranker's caches (retention rows only).
    ``defaults``: run the pipeline ``htmlrag prune`` builds with no flags (:func:`cli_default_pipeline`;
    ``ranker`` is then that pipeline's ranker, and ``max_words``/``pack``/``split_to_fill`` are the CLI's)."""
    results = []
    for _ in range(max(1, repeats)):
        gc.collect()
        if defaults:
            pipe = cli_default_pipeline(ranker_kind(ranker), budget)[0]
            pipe.ranker1, pipe.fmt, pipe.cache_pages = ranker, fmt, 4096 if warm else 0
        else:
            pipe = make_pipeline(ranker, None, tok, budget2=budget, max_words1=max_words, fmt=fmt,
                                 pack_siblings=pack, cache_pages=4096 if warm else 0, count_stages=False,
                                 keep_stages=False, split_to_fill=split_to_fill)
        if warm and not keep:
            _forget(_base_ranker(ranker))  # warm = warmed by this pass's own earlier questions only
        hits, secs, toks = [], 0.0, 0
        for it in items:
            if not warm:
                _forget(_base_ranker(ranker))
            t0 = time.perf_counter()
            res = pipe.run(it["question"], it["pages"])
            secs += time.perf_counter() - t0
            assert res.tokens <= budget
            toks += res.tokens
            hits.append(retained(html_to_text(res.context) if fmt.endswith("html") else res.context, it["answers"]))
        results.append((sum(hits) / len(items), secs / len(items), toks / len(items), hits))
    first = results[0]
    return first[0], statistics.median(r[1] for r in results), first[2], first[3]


def ranker_kind(ranker) -> str:
    """``bm25`` or ``embed`` (the CLI's ``--ranker`` names)."""
    from htmlrag.rankers.bm25 import BM25Ranker

    return "bm25" if isinstance(_base_ranker(ranker), BM25Ranker) else "embed"


def default_ranker(kind: str):
    """The ranker of the CLI's default pipeline, its model loaded (loading is not per-question work)."""
    pipe = cli_default_pipeline(kind, 4096)[0]
    base = _base_ranker(pipe.ranker1)
    if hasattr(base, "_load"):
        base._load()
    return pipe.ranker1


#: Options a fresh speed process needs from ours (everything that changes what our pipeline does).
_WORKER_OPTIONS = ("data", "max_words", "embed_max_words", "embed_dtype", "embed_max_seq", "embed_candidates", "page_prior",
                   "embed_page_prior", "split_to_fill", "repeats")


def speed_ours(args, kind: str, budget: int, sub: list[dict], ranker, tok, max_words: int):
    """Our speed rows on ``sub``, cold and warm: ``(retention, seconds per question, tokens)`` each.

    ``--speed-process fresh`` (default) times them in a new process that loads the same questions, tokenizer
    and ranker first, as the peer is timed in a process of its own. In this process, after the retention
    rows (thousands of pages parsed) and the McNemar tests' ``scipy`` import, the same passes run 10-25%
    slower: every part that walks lxml trees slows (parsing alone 7.1 -> 9.9 ms per question at 512 tokens),
    consistent with a large, fragmented heap; importing ``scipy`` or ``pandas`` after the retention rows is
    enough, either one alone is not. ``same`` measures here (the earlier behaviour)."""
    if args.speed_process == "same":
        return _speed_here(args, budget, sub, ranker, tok, max_words)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--speed-worker", "--rankers", kind,
           "--budgets", str(budget), "--limit", str(len(sub))]
    for name in _WORKER_OPTIONS:
        if getattr(args, name, None) is not None:  # None: the worker's default (the same)
            cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.no_pack:
        cmd.append("--no-pack")
    if getattr(args, "defaults", False):
        cmd.append("--defaults")
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    return res["cold"], res["warm"]


def _speed_here(args, budget: int, sub: list[dict], ranker, tok, max_words: int):
    """Our cold and warm speed rows, measured in this process."""
    pack = not args.no_pack
    cold, warm = (run_ours(sub, ranker, budget, tok, max_words, "html", pack, warm=w, repeats=args.repeats,
                           split_to_fill=args.split_to_fill, defaults=getattr(args, "defaults", False))[:3]
                   for w in (False, True))
    return list(cold), list(warm)


def _speed_worker(args) -> None:
    """The fresh process of :func:`speed_ours`: prints one JSON line ``{"cold": [...], "warm": [...]}``."""
    kind = args.rankers
    mw = args.max_words if kind == "bm25" else args.embed_max_words
    items = load_items(Path(args.data), args.limit)
    ranker = default_ranker(kind) if args.defaults else make_ranker(kind, args)
    cold, warm = _speed_here(args, int(args.budgets), items, ranker, load_tokenizer(), mw)
    print(json.dumps({"cold": cold, "warm": warm}), flush=True)


def run_chunks(items, ranker, budget, tok, chunk_words=128):
    """Chunk-and-rerank: (retention, seconds per question, tokens per question, per-question hits)."""
    hits, secs, toks = [], 0.0, 0
    for it in items:
        t0 = time.perf_counter()
        trees = [chunk_tree(section_chunks(clean_html(p), chunk_words), page=i) for i, p in enumerate(it["pages"])]
        res = prune_to_budget(trees, ranker.score(it["question"], trees), budget, tok, fmt="text")
        secs += time.perf_counter() - t0
        toks += res.tokens
        hits.append(retained(res.context, it["answers"]))
    return sum(hits) / len(items), secs / len(items), toks / len(items), hits


def vs_chunks(hits: dict[str, list[bool]]) -> dict:
    """Exact McNemar tests of our contexts (each format) against the chunks, paired by question."""
    out = {}
    for key in ("ours", "ours_compact", "ours_text"):
        m = mcnemar_exact(hits[key], hits["chunks"])
        out[key] = {"ours_only": m.a_only, "chunks_only": m.b_only, "p": round(m.p, 4)}
    return out


def run_peer(py, items, kind, budget, max_words, tok):
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "items.jsonl"
        with src.open("w", encoding="utf-8") as fh:
            for it in items:
                pages = [p.decode("utf-8", "replace") for p in it["pages"]]
                fh.write(json.dumps({"id": it["id"], "question": it["question"], "pages": pages}) + "\n")
        out = Path(tmp) / "out.jsonl"
        script = ROOT / "scripts" / "peers" / "htmlrag_toolkit.py"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the peer must not see our package
        subprocess.run([py, "-P", str(script), "prune", str(src), str(out), kind, str(budget), str(max_words),
                        str(mistral_tokenizer_path()), str(minilm_path())], check=True, cwd=tmp, env=env)
        rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    hits = errs = over = 0
    for it, r in zip(items, rows, strict=True):
        if "error" in r:
            errs += 1
            continue
        over += tok.count(r["context"]) > budget
        hits += retained(html_to_text(r["context"]) if r["context"].strip() else "", it["answers"])
    secs = sum(r["seconds"] for r in rows) / len(rows)
    return hits / len(items), secs, errs, over


def speed_batch(kind: str, budget: int, items: list[dict], repeats: int) -> dict:
    """``htmlrag prune --batch IN --out OUT --ranker KIND --budget B`` with no other flag (so the default
    ``--workers``: one process per core for BM25), in a fresh process per pass, on ``items`` (pages as files):
    seconds per question (the median over ``repeats`` passes of the batch's own time, printed in its last
    line: worker start-up included, imports and the tokenizer's loading not), and the same with ``--workers 1``,
    whose contexts must equal the parallel run's."""
    def passes(tmp: Path, extra: list[str]) -> tuple[float, list[dict], str]:
        times, rows, summary = [], [], ""
        for k in range(max(1, repeats)):
            out = tmp / f"out{k}.jsonl"
            cmd = [sys.executable, "-m", "htmlrag.cli.main", "prune", "--batch", str(tmp / "in.jsonl"), "--out", str(out),
                   "--ranker", kind, "--budget", str(budget), *extra]
            err = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "TQDM_DISABLE": "1"}).stderr
            summary = err.strip().splitlines()[-1] if err.strip() else ""
            m = re.search(r"; ([0-9.]+) s(?: \((\d+) processes\))?$", summary)
            if not m:
                sys.exit(f"bench_prune: htmlrag prune --batch failed: {err[-2000:]}")
            times.append(float(m.group(1)) / len(items))
            rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
            out.unlink()
        return statistics.median(times), rows, summary

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with (tmp / "in.jsonl").open("w", encoding="utf-8") as fh:
            for q, it in enumerate(items):
                paths = []
                for k, page in enumerate(it["pages"]):
                    paths.append(str(tmp / f"q{q}p{k}.html"))
                    Path(paths[-1]).write_bytes(page)
                fh.write(json.dumps({"id": it["id"], "question": it["question"], "page_paths": paths}) + "\n")
        par, rows, summary = passes(tmp, [])
        one, rows1, _ = passes(tmp, ["--workers", "1"])
    m = re.search(r"\((\d+) processes\)$", summary)
    same = [(r["id"], r.get("context")) for r in rows] == [(r["id"], r.get("context")) for r in rows1]
    return {"parallel": par, "workers": int(m.group(1)) if m else 1, "one": one, "identical": same}


def peer_sizes(spec: str, ours: int) -> list[int]:
    """Block sizes for the toolkit from ``--peer-max-words`` ('ours' = ``ours``), without repeats, in order."""
    out: list[int] = []
    for part in spec.split(","):
        size = ours if part.strip() == "ours" else int(part)
        if size not in out:
            out.append(size)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--limit", type=int, default=None, help="questions for the retention rows (default: all)")
    ap.add_argument("--budgets", default="512,1024,2048,4096")
    ap.add_argument("--rankers", default="bm25,embed")
    ap.add_argument("--max-words", type=int, default=128, help="our block size with BM25")
    ap.add_argument("--embed-max-words", type=int, default=128,
                    help="our block size with MiniLM (256: ~1.7x fewer tokens to encode, lower retention)")
    ap.add_argument("--embed-dtype", default="auto",
                    help="MiniLM weights: auto (the library's default: bfloat16 where the CPU computes it, "
                         "AVX512-BF16/AMX; float32 elsewhere, where bfloat16 is emulated and ~5x slower) | "
                         "float32 | bfloat16")
    ap.add_argument("--embed-max-seq", type=int, default=None,
                    help="MiniLM input length in tokens (default: the length it was trained at, 128; its "
                         "config says 256)")
    ap.add_argument("--embed-candidates", type=int, default=0,
                    help="MiniLM embeds only BM25's best N blocks (0, this script's default: every block; the "
                         "library's default is 16, which --defaults rows use)")
    ap.add_argument("--page-prior", type=float, default=0.5,
                    help="BM25: add this x the page's best block score to its blocks (0: off; htmlrag.PagePrior)")
    ap.add_argument("--embed-page-prior", type=float, default=0.0, help="the same for MiniLM (default off)")
    ap.add_argument("--no-pack", action="store_true", help="the paper's one-block-per-child trees")
    ap.add_argument("--split-to-fill", type=int, default=4,
                    help="blocks that miss the room left may be split so their best parts fill it (0: the paper's rule)")
    ap.add_argument("--peer-max-words", default="ours,256",
                    help="the toolkit's block sizes, comma-separated: 'ours' = our block size for that ranker (the "
                         "same granularity, like for like), 256 = the toolkit's default; one speed row each")
    ap.add_argument("--peer-python", default=os.environ.get("HTMLRAG_PEER_PYTHON"))
    ap.add_argument("--peer-limit", type=int, default=20,
                    help="questions for the speed rows: the (slow) peer, and ours cold and warm on the same ones")
    ap.add_argument("--keep-caches", action="store_true",
                    help="retention rows reuse the ranker's caches across formats and budgets (MiniLM on 300 "
                         "questions: ~4x faster; bfloat16 vectors may differ in the 3rd decimal with batching)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="passes of ours over the speed questions (the median is reported)")
    ap.add_argument("--speed-process", choices=("fresh", "same"), default="fresh",
                    help="where our speed rows run: 'fresh' (default) = a new process, like the peer's; 'same' = "
                         "this one, after its retention rows (lxml work there runs 10-25%% slower: see speed_ours)")
    ap.add_argument("--defaults", action="store_true",
                    help="the default-settings rows: ours exactly as `htmlrag prune --ranker bm25|embed --budget B` "
                         "runs with no other flag (block size, dtype, input length, streams: the CLI's and the "
                         "library's defaults), the toolkit at the same block size ('ours' in --peer-max-words)")
    ap.add_argument("--speed-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.speed_worker:
        return _speed_worker(args)
    if args.defaults:
        return main_defaults(args)
    tok = load_tokenizer()
    items = load_items(Path(args.data), args.limit)
    budgets = [int(b) for b in args.budgets.split(",")]
    sub = items[: args.peer_limit]
    pack = not args.no_pack
    print(f"{len(items)} questions x 5 pages (speed on the first {len(sub)}); budgets {budgets}; "
          f"tokenizer {tok.name}; MiniLM {args.embed_dtype}, {args.embed_max_seq} tokens", flush=True)
    rows = []
    for kind in args.rankers.split(","):
        ranker = make_ranker(kind, args)
        mw = args.max_words if kind == "bm25" else args.embed_max_words
        for b in budgets:
            # Retention does not depend on caching: these runs keep the caches (fast); speed is measured below.
            runs = {key: run_ours(items, ranker, b, tok, mw, fmt, pack, warm=True, keep=args.keep_caches,
                                       split_to_fill=args.split_to_fill)
                    for key, fmt in (("ours", "html"), ("ours_compact", "compact_html"), ("ours_text", "text"))}
            runs["chunks"] = run_chunks(items, ranker, b, tok)
            # per-question hits feed the tests only (they would fill the log)
            row = {"ranker": kind, "budget": b, "max_words": mw, **{k: r[:3] for k, r in runs.items()},
                   "vs_chunks": vs_chunks({k: r[3] for k, r in runs.items()})}
            if not sub:  # --peer-limit 0: retention rows only
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            row["ours_sub"], row["ours_sub_warm"] = speed_ours(args, kind, b, sub, ranker, tok, mw)
            if args.peer_python:
                row["peer_sub"] = {pmw: run_peer(args.peer_python, sub, kind, b, pmw, tok)
                                   for pmw in peer_sizes(args.peer_max_words, mw)}
            rows.append(row)
            print(json.dumps(row), flush=True)

    print(f"\n{len(items)} questions; ours: block tree at {args.max_words} words (BM25) / {args.embed_max_words} "
          f"(MiniLM){'' if args.no_pack else ' with sibling packing'}, contextual ranking, split-to-fill "
          f"{args.split_to_fill}; chunks: 128-word "
          "section chunks, plain text; retention = a gold answer in the context's text")
    print("| ranker | budget | ours HTML | ours compact HTML | ours text | chunk+rerank (text) "
          "| text vs chunks: ours only / chunks only, McNemar p | ours HTML avg tokens |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        v = r["vs_chunks"]["ours_text"]
        print(f"| {r['ranker']} | {r['budget']} | {r['ours'][0]:.3f} | {r['ours_compact'][0]:.3f} "
              f"| {r['ours_text'][0]:.3f} | {r['chunks'][0]:.3f} | {v['ours_only']} / {v['chunks_only']}, "
              f"p = {v['p']:.2f} | {r['ours'][2]:.0f} |")
    n = len(sub)
    where = "a fresh process for each system" if args.speed_process == "fresh" else "the peer in a fresh process"
    print(f"\nSpeed, same {n} questions and budget, {where}; cold = nothing remembered between questions, "
          f"warm = page and ranker caches kept (pages recur across questions); ours: median of {args.repeats} passes")
    print("| ranker | budget | ours block words | peer block words | ours HTML retention | htmlrag 0.1.1 retention "
          "| peer errors | peer over budget | ours s/q cold | ours s/q warm | peer s/q | speed-up cold | speed-up warm |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "ours_sub" not in r:
            continue
        o, w = r["ours_sub"], r["ours_sub_warm"]
        head = f"| {r['ranker']} | {r['budget']} | {r['max_words']}"
        if not r.get("peer_sub"):
            print(f"{head} | - | {o[0]:.3f} | - | - | - | {o[1]:.3f} | {w[1]:.3f} | - | - | - |")
            continue
        for pmw, p in r["peer_sub"].items():
            print(f"{head} | {pmw} | {o[0]:.3f} | {p[0]:.3f} | {p[2]} | {p[3]} | {o[1]:.3f} "
                  f"| {w[1]:.3f} | {p[1]:.3f} | {p[1] / o[1]:.1f}x | {p[1] / w[1]:.1f}x |")

def main_defaults(args) -> None:
    """Default-settings rows: retention on all questions and speed on the first ``--peer-limit``, ours as the
    CLI runs with no flags, the toolkit in the same run at the CLI's block size (and ``--peer-max-words``)."""
    import platform

    tok = load_tokenizer()
    items = load_items(Path(args.data), args.limit)
    budgets = [int(b) for b in args.budgets.split(",")]
    sub = items[: args.peer_limit]
    rows = []
    for kind in args.rankers.split(","):
        ranker = default_ranker(kind)
        _, cli = cli_default_pipeline(kind, budgets[0])
        base = _base_ranker(ranker)
        setting = (f"{base.model_id}, dtype {base.dtype}, {base.cpu_workers or 'auto'} CPU streams, "
                   f"{base.candidates or 'every block'} candidates"
                   if kind == "embed" else "BM25")
        print(f"defaults: {kind}: {setting}; block size {cli.max_words} words; split-to-fill {cli.split_to_fill}; "
              f"format {cli.format}; CPU {platform.processor() or platform.machine()}", flush=True)
        for b in budgets:
            ret = run_ours(items, ranker, b, tok, cli.max_words, "html", warm=True, defaults=True)
            row = {"ranker": kind, "budget": b, "max_words": cli.max_words, "retention_all": ret[0],
                   "tokens": ret[2]}
            if sub:
                row["ours_sub"], row["ours_sub_warm"] = speed_ours(args, kind, b, sub, ranker, tok, cli.max_words)
                row["batch"] = speed_batch(kind, b, sub, args.repeats)
                if args.peer_python:
                    row["peer_sub"] = {pmw: run_peer(args.peer_python, sub, kind, b, pmw, tok)
                                       for pmw in peer_sizes(args.peer_max_words, cli.max_words)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    n = len(sub)
    print(f"\nDefault settings (`htmlrag prune --ranker R --budget B`, no other flag): retention on {len(items)} "
          f"questions; speed on the first {n}, each system in a fresh process; ours: median of {args.repeats} passes; "
          "batch = `htmlrag prune --batch` with its default --workers (its own time per question, worker start "
          "included), one process = the same with --workers 1")
    print("| ranker | budget | block words (ours / toolkit) | ours retention (all) | ours retention | toolkit retention "
          "| ours s/q cold | ours s/q warm | ours s/q batch (processes) | ours s/q batch, one process | toolkit s/q "
          "| speed-up cold | speed-up batch | batch contexts = one process |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        o, w, bt = r.get("ours_sub"), r.get("ours_sub_warm"), r.get("batch")
        batch = (f"{bt['parallel']:.3f} ({bt['workers']}) | {bt['one']:.3f}" if bt else "- | -")
        same = ("yes" if bt["identical"] else "NO") if bt else "-"
        for pmw, p in (r.get("peer_sub") or {"-": None}).items():
            head = f"| {r['ranker']} | {r['budget']} | {r['max_words']} / {pmw if p else '-'} | {r['retention_all']:.3f}"
            if o is None:
                print(f"{head} | - | - | - | - | - | - | - | - | - | - |")
            elif p is None:
                print(f"{head} | {o[0]:.3f} | - | {o[1]:.3f} | {w[1]:.3f} | {batch} | - | - | - | {same} |")
            else:
                speed_batch_ = f"{p[1] / bt['parallel']:.1f}x" if bt else "-"
                print(f"{head} | {o[0]:.3f} | {p[0]:.3f} | {o[1]:.3f} | {w[1]:.3f} | {batch} | {p[1]:.3f} "
                      f"| {p[1] / o[1]:.1f}x | {speed_batch_} | {same} |")


if __name__ == "__main__":
    sys.exit(main())
