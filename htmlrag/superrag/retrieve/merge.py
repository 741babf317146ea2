"""Cross-page merging along ``HAS_NEXT``, and reranking from top-20 to top-10.

Merging: a retrieved SectionChunk (or FlatChunk) whose ``HAS_NEXT`` successor starts on a later page and whose text does
not end a sentence (``.``, ``!``, ``?``, ``:`` or a closing quote/bracket after one) gets the successor's
text appended (the paragraph ran over the page break); a Table whose ``HAS_NEXT`` table continues on the
next page gets its rows appended. Pages and ``merged`` record what was joined. Order and scores are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from htmlrag.superrag.graph import cypher
from htmlrag.superrag.retrieve.evidence import (
    Backend,
    Evidence,
    encode_texts,
    interleave_by_doc,
    mix_tables,
    rrf,
    spread_over,
)

Retriever = Callable[..., list[Evidence]]
_ENDS = re.compile(r"[.!?:][\"')\]”’]*\s*$")


class CrossPageMerge:
    """Base retriever, then cross-page merging of its evidence (see the module docstring)."""

    def __init__(self, corpus: Backend, base: Retriever) -> None:
        self.corpus, self.base, self.name = corpus, base, "merge"

    def merge(self, evidence: Sequence[Evidence]) -> list[Evidence]:
        ids = [e.node_id for e in evidence if e.kind in ("SectionChunk", "FlatChunk", "Table")]
        nxt = {r["source"]: r["id"] for r in self.corpus.store.query(cypher.NEXT_OF, {"ids": ids})} if ids else {}
        rows = self.corpus.nodes(list(nxt.values()))
        out: list[Evidence] = []
        for e in evidence:
            n = rows.get(nxt.get(e.node_id, ""))
            if n is None or not e.pages or int(n["page_start"]) <= e.pages[-1]:
                out.append(e)
                continue
            text = e.kind != "Table"
            if text and _ENDS.search(e.text):
                out.append(e)
                continue
            pages = tuple(sorted(set(e.pages) | set(range(int(n["page_start"]), int(n["page_end"]) + 1))))
            out.append(replace(e, text=f"{e.text} {n['text']}" if text else f"{e.text}\n{n['text']}",
                               html=e.html + (n.get("html") or "") if e.kind == "Table" else e.html,
                               pages=pages, merged=(*e.merged, n["id"])))
        return out

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        return self.merge(self.base(question, k, doc_ids))


class Reranker(Protocol):
    def rerank(self, question: str, evidence: Sequence[Evidence], k: int) -> list[Evidence]: ...


class EmbeddingReranker:
    """Re-scores evidence by cosine(question, title + text) with the corpus's embedder; keeps the best ``k``.

    Args:
        corpus: the built corpus.
        fuse: ``False``: order by the cosine alone (the first-stage order is dropped); ``True``: order by
            reciprocal rank fusion of the first-stage order and the cosine order (constant ``rrf_k``), so
            evidence that only the lexical search found is not pushed out by a second pass of the same
            embedding model; the score is then the fused score.
        rrf_k: the fusion constant.
    """

    def __init__(self, corpus: Backend, *, fuse: bool = False, rrf_k: int = 60) -> None:
        self.corpus, self.fuse, self.rrf_k = corpus, fuse, rrf_k

    def rerank(self, question: str, evidence: Sequence[Evidence], k: int) -> list[Evidence]:
        if not evidence:
            return []
        vecs = encode_texts(self.corpus, [f"{e.title}\n{e.text}"[:4000] for e in evidence])
        sims = vecs @ self.corpus.embed_query(question)
        by_cos = sorted(range(len(evidence)), key=lambda i: -float(sims[i]))
        if not self.fuse:
            return [replace(evidence[i], score=float(sims[i]), retriever=f"{evidence[i].retriever}+rerank")
                    for i in by_cos[:k]]
        fused = rrf([[str(i) for i in range(len(evidence))], [str(i) for i in by_cos]], self.rrf_k)[:k]
        return [replace(evidence[int(i)], score=s, retriever=f"{evidence[int(i)].retriever}+rerank") for i, s in fused]


class Rerank:
    """Take ``pool`` (20) from the base retriever, rerank, return ``k`` (10). With ``balance`` and a question
    scoped to several documents, the reranked pool is interleaved by document before the cut (as
    :class:`~htmlrag.superrag.retrieve.hybrid.HybridRetriever` does), so reranking cannot undo the balance;
    with ``mix_tables``, tables and the other evidence take turns after reranking
    (:func:`~htmlrag.superrag.retrieve.evidence.mix_tables`), for the same reason."""

    def __init__(self, base: Retriever, reranker: Reranker, *, pool: int = 20, balance: bool = True,
                 mix_tables: bool = True) -> None:
        self.base, self.reranker, self.pool, self.name, self.balance = base, reranker, pool, "rerank", balance
        self.mix_tables = mix_tables

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        pool = self.base(question, max(self.pool, k), doc_ids)
        if self.mix_tables:
            ranked = self.reranker.rerank(question, pool, len(pool))
            return mix_tables(ranked, k, by_doc=self.balance and bool(spread_over(doc_ids)))
        if self.balance and spread_over(doc_ids):
            return interleave_by_doc(self.reranker.rerank(question, pool, len(pool)), lambda e: e.doc_id, k)
        return self.reranker.rerank(question, pool, k)
