"""Trial (no library change): which stages of `full` help? Variants of the full pipeline on a stored
bench_superrag sec corpus. Usage: python scripts/trials/full_variants.py <corpus folder> <out.json>
(corpus folder: the one bench_superrag.py --part sec prints; its embeddings.sqlite beside it). The 2026-12-02
run's log and JSON are results/benchmarks/trials/full_variants_9b8eb39.{log,json}."""
import csv
import fnmatch
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_superrag as B

from htmlrag.docqa.items import gold_items
from htmlrag.superrag.build.corpus import open_corpus
from htmlrag.superrag.build.embed import CachedEmbedder, SentenceTransformerEmbedder
from htmlrag.superrag.retrieve.expand import TableFigureExpansion
from htmlrag.superrag.retrieve.hybrid import HybridRetriever, TocRetriever
from htmlrag.superrag.retrieve.merge import CrossPageMerge, EmbeddingReranker, Rerank
from htmlrag.superrag.settings import FusedRetriever

folder = Path(sys.argv[1])
emb = CachedEmbedder(SentenceTransformerEmbedder(), folder.parent / "embeddings.sqlite")
pdfs = sorted((B.DATA / "sec-10-q" / "docs").glob("*.pdf"))

def variants(c):
    def hy():
        return HybridRetriever(c)

    def fused():
        return FusedRetriever([hy(), TocRetriever(c)], depth=20)

    return {
        "tables": TableFigureExpansion(c, hy()),
        "full": TableFigureExpansion(c, Rerank(CrossPageMerge(c, fused()), EmbeddingReranker(c), pool=20)),
        "full:fuse": TableFigureExpansion(c, Rerank(CrossPageMerge(c, fused()), EmbeddingReranker(c, fuse=True), pool=20)),
        "full:off": TableFigureExpansion(c, CrossPageMerge(c, fused())),
        "notoc": TableFigureExpansion(c, Rerank(CrossPageMerge(c, hy()), EmbeddingReranker(c), pool=20)),
        "notoc:fuse": TableFigureExpansion(c, Rerank(CrossPageMerge(c, hy()), EmbeddingReranker(c, fuse=True), pool=20)),
        "notoc:off": TableFigureExpansion(c, CrossPageMerge(c, hy())),
    }

manifest = json.loads((folder / "manifest.json").read_text())
name_to_id = {Path(d["path"]).name: did for did, d in manifest["documents"].items()}
flat = {p.name: (ch := B.flat_chunks(p), emb.encode(ch)) for p in pdfs}
rows = list(csv.DictReader((B.DATA / "sec-10-q" / "qna_data.csv").open(encoding="utf-8-sig")))
out = []
t0 = time.time()
with open_corpus(folder, embedder=emb) as corpus:
    V = variants(corpus)
    for qi, row in enumerate(rows):
        q, pattern = row["Question"], row["Source Docs"].strip()
        _, items = gold_items(q, row["Answer"])
        names = [p.name for p in pdfs if fnmatch.fnmatch(p.name, pattern)] or [p.name for p in pdfs]
        ids = [name_to_id[n] for n in names if n in name_to_id]
        qv = emb.encode([q])[0]
        cands = [(float(v @ qv), ch) for n in names for ch, v in zip(*flat[n], strict=True)]
        rec = {"i": qi, "company": B.company_of(pattern), "type": row["Source Chunk Type"].strip() or "?", "recall": {}}
        rec["recall"]["flat"] = B.recall("", items, " \n ".join(ch for _, ch in sorted(cands, key=lambda x: -x[0])[:10]))
        for name, r in V.items():
            ev = r(q, 10, ids)
            rec["recall"][name] = B.recall("", items, " \n ".join(f"{e.title}\n{e.text}" for e in ev))
        out.append(rec)
print(f"eval {time.time()-t0:.0f}s")
Path(sys.argv[2]).write_text(json.dumps(out))
B.summarise(out, list(V))
