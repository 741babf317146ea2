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
    python scripts/bench_superrag.py --db /tmp/secdb --retrievers hybrid,toc,full:off
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
from pathlib import Path
from typing import Any

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
    from htmlrag.superrag.parse.document import parse_pdf
    from htmlrag.superrag.parse.headings import normalise

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
COMPANIES = {"AAPL": "Apple Inc.", "MSFT": "Microsoft Corporation"}


def flat_chunks(pdf: Path, words: int = 150) -> list[str]:
    """The issue's flat baseline: the whole document's PyMuPDF plain text cut into ``words``-word chunks."""
    from htmlrag.superrag.parse.pdfio import open_pdf

    doc, _ = open_pdf(pdf)
    toks = " ".join(p.get_text() for p in doc).split()
    doc.close()
    return [" ".join(toks[i : i + words]) for i in range(0, len(toks), words)]


def company_of(name: str) -> str:
    return next((c for c in COMPANIES if c in name), "?")


def build(pdfs: list[Path], root: Path, config: Any, emb: Any, cache: Path) -> Path:
    """The corpus of ``config`` (built once per config and code version; parses cached under ``cache``)."""
    from dataclasses import asdict

    from htmlrag.core.cache import content_key
    from htmlrag.core.fingerprint import PDF_CORPUS, fingerprint
    from htmlrag.superrag.build.corpus import open_writable
    from htmlrag.superrag.to_html import parse_cached

    folder = root / content_key("bench", asdict(config), fingerprint(PDF_CORPUS))[:16]
    with open_writable(folder, config=config, embedder=emb) as corpus:
        for pdf in pdfs:
            t0 = time.perf_counter()
            doc = parse_cached(pdf, cache_dir=cache)
            if corpus.has_document(doc.doc_id):
                continue
            r = corpus.add_document(pdf, parsed=doc)
            print(f"  built {pdf.name:18s} {r.pages:3d} pages {r.nodes:6d} nodes {time.perf_counter() - t0:6.1f} s "
                  f"{'ok' if r.ok else r.error}", flush=True)
    return folder


#: Rerank modes by the retriever name's suffix: "full" reranks with the cosine order replacing the first stage's
#: (the paper's shape), "full:fuse" fuses both orders (RRF), "full:off" has no rerank stage (the library's
#: default for ``full``/``nonlayout``). The ``rerank`` retriever always reranks (its ":off" is ":fuse").
RERANK_MODES: dict[str, dict[str, bool]] = {"": {"rerank": True, "rerank_fuse": False},
                                            "fuse": {"rerank": True, "rerank_fuse": True},
                                            "off": {"rerank": False, "rerank_fuse": True}}


def evaluate(folder: Path, pdfs: list[Path], retrievers: list[str], emb: Any, k: int = 10) -> list[dict[str, Any]]:
    """Per question: company, type, and the recall of every retriever's top-k evidence (and of flat chunks)."""
    from htmlrag.superrag.build.corpus import open_corpus

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    name_to_id = {Path(d["path"]).name: did for did, d in manifest["documents"].items()}
    flat = {}
    for pdf in pdfs:
        ch = flat_chunks(pdf)
        flat[pdf.name] = (ch, emb.encode(ch))
    with (DATA / "sec-10-q" / "qna_data.csv").open(encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    out: list[dict[str, Any]] = []
    with open_corpus(folder, embedder=emb) as corpus:
        for qi, row in enumerate(rows):
            q, pattern = row["Question"], row["Source Docs"].strip()
            _, items = gold_items(q, row["Answer"])
            names = [p.name for p in pdfs if fnmatch.fnmatch(p.name, pattern)] or [p.name for p in pdfs]
            ids = [name_to_id[n] for n in names if n in name_to_id]
            qv = emb.encode([q])[0]
            cands = [(float(v @ qv), c) for n in names for c, v in zip(*flat[n], strict=True)]
            rec = {"i": qi, "company": company_of(pattern), "type": row["Source Chunk Type"].strip() or "?",
                   "qtype": row["Question Type"].strip(), "recall": {}}
            rec["recall"]["flat"] = recall("", items, " \n ".join(c for _, c in sorted(cands, key=lambda x: -x[0])[:k]))
            for name in retrievers:
                base, _, mode = name.partition(":")
                ev = corpus.retrieve(q, retriever=base, k=k, doc_ids=ids, **RERANK_MODES[mode])
                rec["recall"][name] = recall("", items, " \n ".join(f"{e.title}\n{e.text}" for e in ev))
            out.append(rec)
    return out


def report(recs: list[dict[str, Any]], retrievers: list[str], title: str) -> None:
    """Hit rate (recall >= 0.5) per retriever, all / Table / Text, with the exact McNemar test vs flat; then the
    mean recall over all of them with the paired t-test vs flat (the measure without the 0.5 threshold)."""
    from htmlrag.evaluation.stats import mcnemar_exact, paired_ttest

    print(f"\n  {title}: evidence hit rate @10 (recall >= 0.5); vs flat: +wins/-losses, McNemar exact p; "
          "mean recall, vs flat, paired t-test p")
    print(f"  {'retriever':14s} " + " ".join(f"{s:>30s}" for s in ("all", "Table", "Text", "mean recall")))
    for name in ["flat", *retrievers]:
        cells = []
        for split in (None, "Table", "Text"):
            sub = [r for r in recs if (split is None or r["type"] == split) and not np.isnan(r["recall"]["flat"])]
            hit = [r["recall"][name] >= 0.5 for r in sub]
            base = [r["recall"]["flat"] >= 0.5 for r in sub]
            rate = float(np.mean(hit)) if hit else float("nan")
            if name == "flat":
                cells.append(f"{rate:.2f} (n={len(sub)})")
                continue
            m = mcnemar_exact(hit, base)
            cells.append(f"{rate:.2f} {rate - float(np.mean(base)):+.2f} +{m.a_only}/-{m.b_only} p={m.p:.3f}")
        sub = [r for r in recs if not np.isnan(r["recall"]["flat"])]
        t = paired_ttest([r["recall"][name] for r in sub], [r["recall"]["flat"] for r in sub])
        cells.append(f"{t.mean_a:.3f}" if name == "flat" else f"{t.mean_a:.3f} {t.mean_a - t.mean_b:+.3f} p={t.p:.3f}")
        print(f"  {name:14s} " + " ".join(f"{c:>30s}" for c in cells))


def _with_mode(name: str, mode: str, retrievers: list[str]) -> str:
    """``name`` read in rerank ``mode`` where that was measured; the ``rerank`` retriever always reranks, so
    under ``off`` it is read as the library runs it (``:fuse``)."""
    if name == "rerank" and mode == "off":
        mode = "fuse"
    return f"{name}:{mode}" if mode and f"{name}:{mode}" in retrievers else name


def heldout_report(recs: list[dict[str, Any]], retrievers: list[str]) -> None:
    """The held-out protocol: the rerank mode (replace, ``:fuse`` or ``:off``, those measured) is chosen on one
    company's questions by ``full``'s hit rate (ties: the paper's replace, then fuse, then off), then every
    retriever is read on the OTHER company's questions with that mode; both ways."""
    def rate(rs: list[dict[str, Any]], name: str) -> float:
        return float(np.mean([r["recall"][name] >= 0.5 for r in rs if not np.isnan(r["recall"]["flat"])]))

    modes = [m for m in ("", "fuse", "off") if (f"full:{m}" if m else "full") in retrievers]
    if len(modes) < 2:
        return
    for tune, test in (("AAPL", "MSFT"), ("MSFT", "AAPL")):
        t = [r for r in recs if r["company"] == tune]
        rates = {m: rate(t, f"full:{m}" if m else "full") for m in modes}
        best = max(modes, key=lambda m: rates[m])  # first of the best: the order above breaks ties
        shown = ", ".join(f"{m or 'replace'} {v:.2f}" for m, v in rates.items())
        print(f"\n  held out {test}: rerank mode chosen on {tune}'s questions by full's hit rate ({shown}) "
              f"-> {best or 'replace'}")
        names = [n for n in retrievers if ":" not in n]
        chosen = [_with_mode(n, best, retrievers) for n in names]
        report([r for r in recs if r["company"] == test], chosen, f"{test} questions, held out")


def bench_sec(args: argparse.Namespace) -> None:
    from htmlrag.superrag.build.corpus import CorpusConfig
    from htmlrag.superrag.build.embed import CachedEmbedder, SentenceTransformerEmbedder

    retrievers = args.retrievers.split(",")
    if args.from_json:
        recs = json.loads(args.from_json.read_text(encoding="utf-8"))
        retrievers = [n for n in recs[0]["recall"] if n != "flat"]
        summarise(recs, retrievers)
        return
    pdfs = sorted((DATA / "sec-10-q" / "docs").glob("*.pdf"))
    root = Path(args.db)
    emb = CachedEmbedder(SentenceTransformerEmbedder(), root / "embeddings.sqlite")
    config = CorpusConfig(vector_backend=args.vector_backend, chunk_words=args.chunk_words,
                          min_chunk_words=args.min_chunk_words, flat_words=150,
                          companies={f"*{k}*": v for k, v in COMPANIES.items()})
    t0 = time.perf_counter()
    folder = build(pdfs, root, config, emb, root / "parsed")
    print(f"\n(b) sec-10-q: corpus {folder} ready in {time.perf_counter() - t0:.1f} s")
    recs = evaluate(folder, pdfs, retrievers, emb)
    (args.out or root / "last_run.json").write_text(json.dumps(recs), encoding="utf-8")
    summarise(recs, retrievers)


def summarise(recs: list[dict[str, Any]], retrievers: list[str]) -> None:
    report(recs, retrievers, f"all {len(recs)} questions")
    for company in COMPANIES:
        report([r for r in recs if r["company"] == company], retrievers, f"{company} questions ({company} filings)")
    heldout_report(recs, retrievers)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["all", "docling", "sec"], default="all")
    ap.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "superrag-bench",
                    help="corpora (one per setting and code version), parse and embedding caches")
    ap.add_argument("--retrievers", default="vector,bm25,hybrid,toc,tables,merge,rerank,full,nonlayout,rerank:fuse,"
                    "full:fuse,nonlayout:fuse,full:off,nonlayout:off",
                    help="names; a suffix picks the rerank mode: none = replace, :fuse, :off (no rerank stage)")
    ap.add_argument("--vector-backend", default="numpy", help="numpy (exact, fast to open) or milvus-lite")
    ap.add_argument("--out", type=Path, help="per-question recalls as JSON (default: <db>/last_run.json)")
    ap.add_argument("--from-json", type=Path, help="print the tables of an earlier --out file (nothing is run)")
    ap.add_argument("--chunk-words", type=int, default=150)
    ap.add_argument("--min-chunk-words", type=int, default=75)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(message)s")
    if not DATA.exists():
        print(f"no data at {DATA}", file=sys.stderr)
        return 2
    if args.part in ("all", "docling"):
        bench_docling()
    if args.part in ("all", "sec"):
        bench_sec(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
