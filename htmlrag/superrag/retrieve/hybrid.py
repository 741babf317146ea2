"""Hybrid (vector + BM25 with reciprocal rank fusion), single-modality, and ToC retrievers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    """Question vs the table of contents, then the content of the chosen sections.

    Sections are chosen by similarity (default): the ``sections`` best MainSection/Section titles by vector +
    BM25 search fused with RRF; or by a language model (``selector``, :class:`LLMTocSelector`: the paper's
    few-shot ToC prompt). Their content (chunks, tables and figures up to 4 levels below) is returned, ordered
    by section rank, then by the content's own vector similarity to the question (content the vector search
    did not reach comes last, in reading order). Score = the section's score + 0.001 x the content's cosine.
    """

    name = "toc"

    def __init__(self, corpus: Backend, *, sections: int = 3, candidates: int = 30, rrf_k: int = 60,
                 selector: Any = None) -> None:
        self.corpus, self.sections, self.candidates, self.rrf_k = corpus, sections, candidates, rrf_k
        self.selector = selector

    def choose(self, question: str, doc_ids: Sequence[str] | None) -> list[tuple[str, float]]:
        """(section id, score) of the chosen sections, best first."""
        if self.selector is not None:
            return self.selector(question, doc_ids)
        q = self.corpus.embed_query(question)
        vec = self.corpus.vectors.search("titles", q, self.candidates, doc_ids)
        bm = self.corpus.fulltext.search(question, self.candidates, doc_ids, TITLED)
        return rrf([[i for i, _ in vec], [i for i, _ in bm]], self.rrf_k)[: self.sections]

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        q = self.corpus.embed_query(question)
        top = self.choose(question, doc_ids)
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


#: Sections of one document in reading order, for the contents listing the ToC prompt shows.
SECTIONS_OF = ("MATCH (s) WHERE s.doc_id = $d AND s.kind IN ['MainSection', 'Section'] AND s.title <> '' "
               "RETURN s.id AS id, s.title AS title, s.level AS level, s.page_start AS page ORDER BY s.ord")


class LLMTocSelector:
    """Sections chosen by a language model from each document's contents (the paper's few-shot ToC prompt,
    :data:`~htmlrag.superrag.prompts.TOC_SELECT_PROMPT`): one prompt per document in scope, listing its
    section titles (indented by level, with pages, at most ``max_lines``); the lines the model returns are
    matched back to sections (:func:`~htmlrag.superrag.prompts.chosen_lines`). Score of the r-th chosen line
    of a document: 1 / r. At most ``sections`` per document.

    Args:
        corpus: the built corpus.
        reader: ``prompt -> reply`` (any reader; the run's reader model in the harness).
    """

    def __init__(self, corpus: Backend, reader: Any, *, sections: int = 3, max_lines: int = 300) -> None:
        self.corpus, self.reader, self.sections, self.max_lines = corpus, reader, sections, max_lines
        self.prompts: list[str] = []

    def __call__(self, question: str, doc_ids: Sequence[str] | None) -> list[tuple[str, float]]:
        from htmlrag.superrag.prompts import chosen_lines, toc_line, toc_prompt

        docs = list(doc_ids) if doc_ids else [d["id"] for d in self.corpus.store.query(cypher.DOCUMENTS)]
        out: list[tuple[str, float]] = []
        for d in docs:
            secs = self.corpus.store.query(SECTIONS_OF, {"d": d})[: self.max_lines]
            if not secs:
                continue
            lines = [toc_line(s["title"], int(s["level"] or 1), int(s["page"] or 0)) for s in secs]
            prompt = toc_prompt("\n".join(lines), question)
            self.prompts.append(prompt)
            picked = chosen_lines(self.reader(prompt), lines)[: self.sections]
            out += [(secs[j]["id"], 1.0 / r) for r, j in enumerate(picked, start=1)]
        return sorted(out, key=lambda x: -x[1])
