"""Hybrid (vector + BM25 with reciprocal rank fusion), single-modality, and ToC retrievers."""

from __future__ import annotations

from collections.abc import Sequence

from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.schema import CONTENT, FLAT, TITLED
from htmlrag.superrag.retrieve.evidence import Backend, Evidence, rrf, to_evidence


class HybridRetriever:
    """Vector search and BM25 over content nodes, fused with RRF.

    Args:
        corpus: the built corpus.
        candidates: hits taken from each of the two searches before fusion.
        rrf_k: the RRF constant (60, as in Cormack et al. 2009).
        use: ``("vector", "bm25")`` for hybrid, or one of them alone.
        nodes: ``"layout"`` (SectionChunk, TableChunk, Figure) or ``"flat"`` (the non-layout baseline's
            FlatChunks, built with ``CorpusConfig.flat_words``).
    """

    name = "hybrid"

    def __init__(self, corpus: Backend, *, candidates: int = 50, rrf_k: int = 60,
                 use: Sequence[str] = ("vector", "bm25"), nodes: str = "layout") -> None:
        self.corpus, self.candidates, self.rrf_k, self.use = corpus, candidates, rrf_k, tuple(use)
        if nodes not in ("layout", "flat"):
            raise ValueError(f"nodes must be 'layout' or 'flat', not {nodes!r}")
        self.collection, self.kinds = ("content", CONTENT) if nodes == "layout" else ("flat", FLAT)
        if len(self.use) == 1:
            self.name = self.use[0]

    def rank(self, question: str, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Fused (id, score) list, best first, over content nodes."""
        lists: list[list[str]] = []
        raw: dict[str, float] = {}
        if "vector" in self.use:
            hits = self.corpus.vectors.search(self.collection, self.corpus.embed_query(question), self.candidates,
                                              doc_ids)
            lists.append([i for i, _ in hits])
            raw.update(hits)
        if "bm25" in self.use:
            hits = self.corpus.fulltext.search(question, self.candidates, doc_ids, self.kinds)
            lists.append([i for i, _ in hits])
            raw.update(hits)
        if len(lists) == 1:
            return [(i, raw[i]) for i in lists[0]]
        return rrf(lists, self.rrf_k)

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        ranked = self.rank(question, doc_ids)[:k]
        rows = self.corpus.nodes([i for i, _ in ranked])
        return [to_evidence(rows[i], s, self.name) for i, s in ranked if i in rows]


class TocRetriever:
    """Question vs section titles (vector + BM25, RRF), then the content of the best sections.

    The ``sections`` best-matching MainSection/Section titles are taken; their content (chunks, tables and
    figures up to 4 levels below) is returned, ordered by section rank, then by the content's own vector
    similarity to the question (content the vector search did not reach comes last, in reading order).
    Score = the section's fused score + 0.001 x the content's cosine.
    """

    name = "toc"

    def __init__(self, corpus: Backend, *, sections: int = 3, candidates: int = 30, rrf_k: int = 60) -> None:
        self.corpus, self.sections, self.candidates, self.rrf_k = corpus, sections, candidates, rrf_k

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        q = self.corpus.embed_query(question)
        vec = self.corpus.vectors.search("titles", q, self.candidates, doc_ids)
        bm = self.corpus.fulltext.search(question, self.candidates, doc_ids, TITLED)
        top = rrf([[i for i, _ in vec], [i for i, _ in bm]], self.rrf_k)[: self.sections]
        if not top:
            return []
        rows = self.corpus.store.query(cypher.SECTION_CONTENT, {"ids": [i for i, _ in top]})
        sims = dict(self.corpus.vectors.search("content", q, 200, doc_ids))
        sec_score = dict(top)
        scored: dict[str, float] = {}
        for r in rows:
            s = sec_score[r["section"]] + 0.001 * sims.get(r["id"], -1.0)
            scored[r["id"]] = max(scored.get(r["id"], -1e9), s)
        best = sorted(scored.items(), key=lambda x: -x[1])[:k]
        nodes = self.corpus.nodes([i for i, _ in best])
        return [to_evidence(nodes[i], s, self.name) for i, s in best if i in nodes]
