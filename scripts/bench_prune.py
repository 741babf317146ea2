"""Benchmark: pruning speed and answer retention on ../shared/data/wtq-html-qa, vs the authors' toolkit.

Each question comes with its own Wikipedia page and 4 distractor pages (the retrieved set). For every
budget (default 512/1024/2048/4096 tokens of Mistral-7B's tokenizer) and system we report seconds per
question and *answer retention*: the fraction of questions for which a gold answer, normalised (lower case,
punctuation and articles removed, whitespace collapsed), is contained in the normalised text of the pruned
context (the paper's Table 5 "reference EM").

Systems: ours (clean -> block tree at 128 words with sibling packing -> BM25 or MiniLM on each block with
its heading/table-header context -> exact greedy pruning; the context as HTML and as text), a plain
chunk-and-rerank baseline with the same ranker (section chunks of 128 words filled to the same budget,
plain text), and, in the same run and on the first ``--peer-limit`` questions, htmlrag 0.1.1's
BM25HTMLPruner / EmbedHTMLPruner (``--peer-python``: a separate venv with htmlrag==0.1.1).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from htmlrag import clean_html
from htmlrag.chunking import chunk_tree, section_chunks
from htmlrag.formats import html_to_text
from htmlrag.models import minilm_path, mistral_tokenizer_path
from htmlrag.pipeline import HtmlRagPipeline
from htmlrag.prune import prune_to_budget
from htmlrag.tokens import load_tokenizer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "wtq-html-qa"
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def norm(s: str) -> str:
    """Lower case, punctuation -> space, articles removed, whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_PUNCT)).split())


def retained(context_text: str, answers: list[str]) -> bool:
    ctx = f" {norm(context_text)} "
    return any(f" {norm(a)} " in ctx for a in answers if norm(a))


def load_items(data: Path, limit: int | None) -> list[dict]:
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


def make_ranker(kind: str):
    if kind == "bm25":
        from htmlrag.rankers.bm25 import BM25Ranker

        return BM25Ranker()
    from htmlrag.rankers.embedding import EmbeddingRanker

    return EmbeddingRanker("sentence-transformers/all-MiniLM-L6-v2")


def run_ours(items, kind, budget, tok, max_words, fmt="html", pack=True, warm=False):
    """Our pipeline (one step: clean -> tree -> rank -> prune). ``warm``: pages shared between questions are
    cleaned and split once (the pipeline's content-keyed page cache); cold: every question from scratch."""
    ranker = make_ranker(kind)  # fresh embedding cache per call
    if kind != "bm25":
        ranker._load()  # model loading is not per-question work
    pipe = HtmlRagPipeline(ranker, None, tok, budget2=budget, max_words1=max_words, fmt=fmt, pack_siblings=pack,
                           cache_pages=4096 if warm else 0, count_stages=False)
    hits, secs, toks = 0, 0.0, 0
    for it in items:
        t0 = time.perf_counter()
        res = pipe.run(it["question"], it["pages"])
        secs += time.perf_counter() - t0
        assert res.tokens <= budget
        toks += res.tokens
        hits += retained(html_to_text(res.context) if fmt.endswith("html") else res.context, it["answers"])
    return hits / len(items), secs / len(items), toks / len(items)


def run_chunks(items, kind, budget, tok, chunk_words=128):
    ranker = make_ranker(kind)
    if kind != "bm25":
        ranker._load()
    hits, secs, toks = 0, 0.0, 0
    for it in items:
        t0 = time.perf_counter()
        trees = [chunk_tree(section_chunks(clean_html(p), chunk_words), page=i) for i, p in enumerate(it["pages"])]
        res = prune_to_budget(trees, ranker.score(it["question"], trees), budget, tok, fmt="text")
        secs += time.perf_counter() - t0
        toks += res.tokens
        hits += retained(res.context, it["answers"])
    return hits / len(items), secs / len(items), toks / len(items)


def run_peer(py, items, kind, budget, max_words, tok):
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "items.jsonl"
        with src.open("w", encoding="utf-8") as fh:
            for it in items:
                pages = [p.decode("utf-8", "replace") for p in it["pages"]]
                fh.write(json.dumps({"id": it["id"], "question": it["question"], "pages": pages}) + "\n")
        out = Path(tmp) / "out.jsonl"
        script = ROOT / "scripts" / "peers" / "htmlrag_toolkit.py"
        subprocess.run([py, "-P", str(script), "prune", str(src), str(out), kind, str(budget), str(max_words),
                        str(mistral_tokenizer_path()), str(minilm_path())], check=True, cwd=tmp)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--limit", type=int, default=None, help="questions for our systems (default: all)")
    ap.add_argument("--budgets", default="512,1024,2048,4096")
    ap.add_argument("--rankers", default="bm25,embed")
    ap.add_argument("--max-words", type=int, default=128)
    ap.add_argument("--no-pack", action="store_true", help="the paper's one-block-per-child trees")
    ap.add_argument("--peer-max-words", type=int, default=256, help="the toolkit's block size (its default)")
    ap.add_argument("--peer-python", default=os.environ.get("HTMLRAG_PEER_PYTHON"))
    ap.add_argument("--peer-limit", type=int, default=20, help="questions for the (slow) peer and the paired rows")
    args = ap.parse_args()
    tok = load_tokenizer()
    items = load_items(Path(args.data), args.limit)
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"{len(items)} questions x 5 pages; budgets {budgets}; tokenizer {tok.name}", flush=True)
    rows = []
    for kind in args.rankers.split(","):
        for b in budgets:
            pack = not args.no_pack
            r_ours = run_ours(items, kind, b, tok, args.max_words, "html", pack)
            r_text = run_ours(items, kind, b, tok, args.max_words, "text", pack)
            r_compact = run_ours(items, kind, b, tok, args.max_words, "compact_html", pack)
            r_chunk = run_chunks(items, kind, b, tok)
            r_warm = run_ours(items, kind, b, tok, args.max_words, "html", pack, warm=True)
            row = {"ranker": kind, "budget": b, "ours": r_ours, "ours_compact": r_compact, "ours_text": r_text,
                   "chunks": r_chunk, "ours_warm": r_warm}
            if args.peer_python:
                sub = items[: args.peer_limit]
                row["ours_sub"] = run_ours(sub, kind, b, tok, args.max_words, "html", pack)
                row["ours_sub_warm"] = run_ours(sub, kind, b, tok, args.max_words, "html", pack, warm=True)
                row["peer_sub"] = run_peer(args.peer_python, sub, kind, b, args.peer_max_words, tok)
            rows.append(row)
            print(json.dumps(row), flush=True)

    print(f"\n{len(items)} questions; ours: block tree at {args.max_words} words"
          f"{'' if args.no_pack else ' with sibling packing'}, contextual ranking; context in HTML or text")
    print("| ranker | budget | ours HTML | ours compact HTML | ours text | chunk+rerank (text) | ours HTML s/q cold "
          "| warm | chunks s/q | ours HTML avg tokens |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['ranker']} | {r['budget']} | {r['ours'][0]:.3f} | {r['ours_compact'][0]:.3f} "
              f"| {r['ours_text'][0]:.3f} | {r['chunks'][0]:.3f} | {r['ours'][1]:.3f} | {r['ours_warm'][1]:.3f} "
              f"| {r['chunks'][1]:.3f} | {r['ours'][2]:.0f} |")
    if args.peer_python:
        n = min(args.peer_limit, len(items))
        print(f"\nSame {n} questions, same budget, one process each:")
        print("| ranker | budget | ours HTML retention | htmlrag 0.1.1 retention | peer errors | peer over budget "
              "| ours s/q cold | ours s/q warm | peer s/q | speed-up cold | speed-up warm |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            o, w, p = r["ours_sub"], r["ours_sub_warm"], r["peer_sub"]
            print(f"| {r['ranker']} | {r['budget']} | {o[0]:.3f} | {p[0]:.3f} | {p[2]} | {p[3]} | {o[1]:.3f} "
                  f"| {w[1]:.3f} | {p[1]:.3f} | {p[1] / o[1]:.1f}x | {p[1] / w[1]:.1f}x |")


if __name__ == "__main__":
    sys.exit(main())
