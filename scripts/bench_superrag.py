"""Benchmark the SuperRAG layout parser and retrievers on the real PDFs in ../shared/data/pdf.

(a) docling (5 PDFs with a reference structure in ``groundtruth/*.json``): per file, section-header recall
    and precision, and table and picture counts vs the reference. Reference headers are the docling items
    labelled ``section_header`` or ``title``. Texts are normalised (NFKC, lower case, letters and digits
    only); a detected heading matches an unmatched reference header when the normalised strings are equal,
    hold the same characters in another order (docling puts "1 Introduction"'s number last on some
    layouts), or have a difflib ratio >= 0.9. Matching is greedy and one-to-one.
    recall = matched / reference headers; precision = matched / detected headings.

(b) sec-10-q (8 10-Q filings, 80 questions): build time per document (parse + graph + embeddings + indexes,
    all-MiniLM-L6-v2 on CPU), and **evidence hit rate at 10** for each retriever vs a flat baseline.
    Gold items of a question (:func:`htmlrag.docqa.items.gold_items`, the same definition the harness's
    ``evidence_*`` metrics use): the numbers in its gold answer (``$``, ``,`` and ``%`` removed; years
    1990-2035, integers below 10 and numbers that also occur in the question are left out); when the answer
    has none, its key phrases instead: adjacent pairs of lower-cased content words (3+ letters, not stop
    words) that are not in the question. An item is found when it occurs in the text of the evidence
    (numbers compared as normalised numbers, phrases as word pairs). The evidence is the retriever's top 10;
    ``tables`` and ``full`` append up to 3 related tables/figures to them (so up to 13 items). Per question, recall = found / items;
    the question is a **hit** when recall >= 0.5. We report hit rate (share of hits) and mean recall, over
    all questions and split by the dataset's Source Chunk Type (Table / Text). Retrieval is restricted to
    the filings the question's ``Source Docs`` pattern names (e.g. ``*AAPL*``).
    The flat baseline: each page's plain text (PyMuPDF ``get_text``) joined per document, cut into
    fixed 150-word chunks (no overlap, no layout), embedded with the same model, exact cosine top-10.

Usage::

    python scripts/bench_superrag.py                 # both parts
    python scripts/bench_superrag.py --part docling  # (a) only, a few seconds
    python scripts/bench_superrag.py --db /tmp/secdb --retrievers hybrid,toc,full
"""

from __future__ import annotations

import argparse
import csv
import difflib
import fnmatch
import json
import logging
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from htmlrag.docqa.items import gold_items, item_recall

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "pdf"


def recall(kind: str, items: set[str] | list[str], evidence_text: str) -> float:
    """Share of gold items in the evidence text (NaN without items); see :mod:`htmlrag.docqa.items`."""
    if not items:
        return float("nan")
    return item_recall(list(items), evidence_text)


# ---------------------------------------------------------------------------------------------- (a)
def header_match(a: str, b: str) -> bool:
    return a == b or sorted(a) == sorted(b) or difflib.SequenceMatcher(None, a, b).ratio() >= 0.9


def bench_docling() -> None:
    from htmlrag.superrag.headings import normalise
    from htmlrag.superrag.parse import parse_pdf

    folder = DATA / "docling"
    print("\n(a) docling: section headers, tables, pictures vs groundtruth")
    print(f"{'file':28s} {'recall':>12s} {'precision':>12s} {'tables':>9s} {'pictures':>9s} {'sec':>6s}")
    for pdf in sorted(folder.glob("*.pdf")):
        gt = json.loads((folder / "groundtruth" / f"{pdf.stem}.json").read_text(encoding="utf-8"))
        ref = [normalise(t["text"]) for t in gt["texts"] if t["label"] in ("section_header", "title")]
        t0 = time.perf_counter()
        doc = parse_pdf(pdf)
        dt = time.perf_counter() - t0
        got = [normalise(h.text) for h in doc.headings]
        used: set[int] = set()
        for g in got:
            j = next((i for i, r in enumerate(ref) if i not in used and header_match(g, r)), None)
            if j is not None:
                used.add(j)
        tp = len(used)
        r = f"{tp}/{len(ref)}={tp / max(len(ref), 1):.2f}"
        p = f"{tp}/{len(got)}={tp / max(len(got), 1):.2f}"
        print(f"{pdf.stem:28s} {r:>12s} {p:>12s} {len(doc.tables):>4d}/{len(gt['tables']):<4d} "
              f"{len(doc.figures):>4d}/{len(gt['pictures']):<4d} {dt:6.2f}")


# ---------------------------------------------------------------------------------------------- (b)
def flat_chunks(pdf: Path, words: int = 150) -> list[str]:
    from htmlrag.superrag.pdfio import open_pdf

    doc, _ = open_pdf(pdf)
    toks = " ".join(p.get_text() for p in doc).split()
    doc.close()
    return [" ".join(toks[i : i + words]) for i in range(0, len(toks), words)]


def bench_sec(db: Path | None, retrievers: list[str]) -> None:
    from htmlrag.superrag.corpus import build_corpus, open_corpus
    from htmlrag.superrag.embed import SentenceTransformerEmbedder

    folder = DATA / "sec-10-q"
    pdfs = sorted((folder / "docs").glob("*.pdf"))
    emb = SentenceTransformerEmbedder()
    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory()
        db = Path(tmp.name)
    print("\n(b) sec-10-q: build time per document (parse + graph + MiniLM embeddings + Kuzu/Milvus Lite/BM25)")
    built = {}
    if not (db / "manifest.json").exists():
        for r in build_corpus(pdfs, db, embedder=emb):
            built[Path(r.path).name] = r
            status = "ok" if r.ok else r.error
            print(f"  {Path(r.path).name:18s} {r.pages:3d} pages {r.nodes:6d} nodes {r.edges:6d} edges "
                  f"{r.seconds:6.1f} s  {status}")
    name_to_id = {}
    manifest = json.loads((db / "manifest.json").read_text(encoding="utf-8"))
    for did, d in manifest["documents"].items():
        name_to_id[Path(d["path"]).name] = did

    # flat baseline
    t0 = time.perf_counter()
    flat: dict[str, tuple[list[str], np.ndarray]] = {}
    for pdf in pdfs:
        ch = flat_chunks(pdf)
        flat[pdf.name] = (ch, emb.encode(ch))
    print(f"  flat baseline: {sum(len(c) for c, _ in flat.values())} chunks embedded in "
          f"{time.perf_counter() - t0:.1f} s")

    with (folder / "qna_data.csv").open(encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    scores: dict[str, list[tuple[str, float]]] = defaultdict(list)
    with open_corpus(db, embedder=emb) as corpus:
        for row in rows:
            q, kind_type = row["Question"], row["Source Chunk Type"].strip() or "?"
            kind, items = gold_items(q, row["Answer"])
            names = [p.name for p in pdfs if fnmatch.fnmatch(p.name, row["Source Docs"].strip())] or [p.name for p in pdfs]
            ids = [name_to_id[n] for n in names if n in name_to_id]
            qv = emb.encode([q])[0]
            cands = [(float(v @ qv), c) for n in names for c, v in zip(*flat[n], strict=True)]
            top = " \n ".join(c for _, c in sorted(cands, key=lambda x: -x[0])[:10])
            scores["flat"].append((kind_type, recall(kind, items, top)))
            for name in retrievers:
                ev = corpus.retrieve(q, retriever=name, k=10, doc_ids=ids)
                scores[name].append((kind_type, recall(kind, items, " \n ".join(f"{e.title}\n{e.text}" for e in ev))))
    print(f"\n  evidence hit rate @10 (recall >= 0.5) / mean item recall, {len(rows)} questions")
    print(f"  {'retriever':10s} {'all':>14s} {'Table':>14s} {'Text':>14s}")
    for name in ["flat", *retrievers]:
        cells = []
        for split in (None, "Table", "Text"):
            vals = [r for t, r in scores[name] if (split is None or t == split) and not np.isnan(r)]
            hit = np.mean([v >= 0.5 for v in vals]) if vals else float("nan")
            cells.append(f"{hit:.2f}/{np.mean(vals) if vals else float('nan'):.2f} n={len(vals)}")
        print(f"  {name:10s} " + " ".join(f"{c:>14s}" for c in cells))
    if tmp is not None:
        tmp.cleanup()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["all", "docling", "sec"], default="all")
    ap.add_argument("--db", type=Path, help="reuse/keep the sec-10-q corpus here (default: a temp folder)")
    ap.add_argument("--retrievers", default="vector,bm25,hybrid,toc,tables,merge,rerank,full")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    if not DATA.exists():
        print(f"no data at {DATA}", file=sys.stderr)
        return 2
    if args.part in ("all", "docling"):
        bench_docling()
    if args.part in ("all", "sec"):
        bench_sec(args.db, args.retrievers.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
