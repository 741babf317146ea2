"""Hybrid (vector + BM25 with reciprocal rank fusion), single-modality, and ToC retrievers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.schema import CONTENT, FLAT, TITLED
from htmlrag.superrag.prompts import chosen_lines, toc_line, toc_prompt
from htmlrag.superrag.retrieve.evidence import (
    Backend,
    Evidence,
    mix_tables,
    rrf,
    soft_mix,
    spread_over,
    take_turns,
    to_evidence,
)
from htmlrag.superrag.retrieve.scope import scoped_question

#: How tables and the other content share a ranked list (:class:`HybridRetriever` ``mix_tables``): ``turns``
#: (default), ``soft`` or ``none``.
MIX_TABLES = ("turns", "soft", "none")


class HybridRetriever:
    """Vector search and BM25 over content nodes, fused with RRF.

    Args:
        corpus: the built corpus.
        candidates: hits taken from each of the two searches before fusion.
        rrf_k: the RRF constant (60, as in Cormack et al. 2009).
        use: ``("vector", "bm25")`` for hybrid, or one of them alone.
        nodes: ``"layout"`` (SectionChunk, TableChunk, Figure) or ``"flat"`` (the non-layout baseline's
            FlatChunks, built with ``CorpusConfig.flat_words``).
        balance: when the question is scoped to several documents, each is searched on its own and the lists
            are interleaved (:func:`~htmlrag.superrag.retrieve.evidence.take_turns`: every document's
            best hit, then every document's second, ...); ``False``: one search over all of them, global order.
            Cost: one search per document (0.12 s against 0.03 s for 8 filings on the benchmark corpus).
        mix_tables: tables and text take turns (layout nodes only): tables (TableChunk) and the other content
            nodes (text chunks, figures) are ranked apart, each as above, and the evidence takes the best of
            each in turns. A filing states its figures in tables and explains them in text; one list ranked
            over both lets the wordier kind win: BM25 puts certifications and MD&A prose that repeat the
            question's words ("reported", "change", "quarters") above the statement that holds the numbers.
            The vector side of a kind is taken from ``candidates * 8`` hits filtered by kind (the vector
            indexes store no kind; one search per document scope, split by kind). See docs/superrag.md for the
            measured effect. ``"turns"`` (or ``True``) is this strict alternation; ``"soft"`` ranks every item
            by RRF of its place in the ranking over all kinds and its place in its own kind's ranking, so the
            best table still rises for a question its text outranks, but a question whose tables all rank far
            below its text is not given half its slots in tables; ``"none"`` (or ``False``): one ranking.
    """

    name = "hybrid"

    def __init__(self, corpus: Backend, *, candidates: int = 50, rrf_k: int = 60,
                 use: Sequence[str] = ("vector", "bm25"), nodes: str = "layout", balance: bool = True,
                 mix_tables: bool | str = True) -> None:
        self.corpus, self.candidates, self.rrf_k, self.use = corpus, candidates, rrf_k, tuple(use)
        self.balance = balance
        if nodes not in ("layout", "flat"):
            raise ValueError(f"nodes must be 'layout' or 'flat', not {nodes!r}")
        self.collection, self.kinds = ("content", CONTENT) if nodes == "layout" else ("flat", FLAT)
        self.mix = {True: "turns", False: "none"}.get(mix_tables, mix_tables)  # type: ignore[call-overload]
        if self.mix not in MIX_TABLES:
            raise ValueError(f"mix_tables must be 'turns', 'soft' or 'none' (or a bool), not {mix_tables!r}")
        tables = tuple(k for k in self.kinds if k == "TableChunk")
        self.groups: list[tuple[str, ...]] = [self.kinds]
        if self.mix != "none" and tables:
            self.groups = [tables, tuple(k for k in self.kinds if k not in tables)]
        if len(self.use) == 1:
            self.name = self.use[0]

    def rank(self, question: str, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Fused (id, score) list, best first, over content nodes (interleaved by document with ``balance``,
        tables and text in turns with ``mix_tables``)."""
        shared: dict[Any, Any] = {}  # vector hits per document scope, shared by the kind groups
        ranked = [self._rank_docs(question, doc_ids, kinds, shared) for kinds in self.groups]
        if len(ranked) == 1:
            return ranked[0]
        if self.mix == "soft":
            whole = self._rank_docs(question, doc_ids, self.kinds, shared)
            return rrf([[i for i, _ in r] for r in (whole, *ranked)], self.rrf_k)
        mixed = take_turns(ranked, sum(map(len, ranked)), score=lambda hit: hit[1])
        seen: set[str] = set()
        return [h for h in mixed if not (h[0] in seen or seen.add(h[0]))]  # each id once, first occurrence

    def _rank_docs(self, question: str, doc_ids: Sequence[str] | None, kinds: tuple[str, ...],
                   shared: dict[Any, Any]) -> list[tuple[str, float]]:
        docs = spread_over(doc_ids) if self.balance else []
        if not docs:
            return self._rank(question, doc_ids, kinds, shared)
        per_doc = [self._rank(question, [d], kinds, shared) for d in docs]
        return take_turns(per_doc, sum(map(len, per_doc)), score=lambda hit: hit[1])

    def _rank(self, question: str, doc_ids: Sequence[str] | None, kinds: tuple[str, ...] | None = None,
              shared: dict[Any, Any] | None = None) -> list[tuple[str, float]]:
        kinds = kinds or self.kinds
        lexical = scoped_question(self.corpus, question, doc_ids)  # BM25: without the name all of them go by
        lists: list[list[str]] = []
        raw: dict[str, float] = {}
        if "vector" in self.use:
            some = kinds != self.kinds
            if some:  # the vector indexes store no kind: keep the hits of these kinds
                hits, known = self._kinded_hits(question, doc_ids, {} if shared is None else shared)
                hits = [(i, v) for i, v in hits if (known.get(i) or {}).get("kind") in kinds][: self.candidates]
            else:
                hits = self.corpus.vectors.search(self.collection, self.corpus.embed_query(question),
                                                  self.candidates, doc_ids)
            lists.append([i for i, _ in hits])
            raw.update(hits)
        if "bm25" in self.use:
            hits = self.corpus.fulltext.search(lexical, self.candidates, doc_ids, kinds)
            lists.append([i for i, _ in hits])
            raw.update(hits)
        if len(lists) == 1:
            return [(i, raw[i]) for i in lists[0]]
        return rrf(lists, self.rrf_k)

    def _kinded_hits(self, question: str, doc_ids: Sequence[str] | None,
                     shared: dict[Any, Any]) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """``candidates * 8`` vector hits and their nodes (for their kinds), searched once per document scope
        in one :meth:`rank` call (``shared``) and split by kind there, not searched again for each kind."""
        key = tuple(doc_ids) if doc_ids is not None else None
        if key not in shared:
            hits = self.corpus.vectors.search(self.collection, self.corpus.embed_query(question),
                                              self.candidates * 8, doc_ids)
            shared[key] = (hits, self.corpus.nodes([i for i, _ in hits]))
        return shared[key]

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        ranked = self.rank(question, doc_ids)[:k]
        rows = self.corpus.nodes([i for i, _ in ranked])
        return [to_evidence(rows[i], s, self.name) for i, s in ranked if i in rows]


class TocRetriever:
    """Question vs the table of contents, then the content of the chosen sections.

    Sections are chosen by similarity (default): the ``sections`` (20) best MainSection/Section titles by vector +
    BM25 search fused with RRF; or by a language model (``selector``, :class:`LLMTocSelector`: the paper's
    few-shot ToC prompt). Their content (chunks, tables and figures up to 4 levels below) is returned.

    ``order="hybrid"`` (default): the chosen sections' content ordered as :class:`HybridRetriever` orders it,
    restricted to those sections: the vector order and the BM25 order fused with RRF (score = the fused score;
    content neither search reached comes last, in section order), then tables and the other content in turns
    (:func:`~htmlrag.superrag.retrieve.evidence.mix_tables`). The sections act as a filter on the same lexical
    and semantic evidence, so the ToC side does not drop what only BM25 finds (figures and line items of a
    statement whose wording the embedding misses).
    ``order="similarity"``: by the content's vector similarity to the question alone (score = the cosine;
    content the vector search did not reach comes last, in section order).
    ``order="section"``: by section rank first, then by cosine (score = the section's score + 0.001 x cosine):
    the first section's content then fills the top k.
    ``balance``: with a question scoped to several documents, ``sections`` are chosen in each document and the
    content lists are interleaved by document (:func:`~htmlrag.superrag.retrieve.evidence.take_turns`).
    """

    name = "toc"

    def __init__(self, corpus: Backend, *, sections: int = 20, candidates: int = 30, rrf_k: int = 60,
                 selector: Any = None, order: str = "hybrid", balance: bool = True,
                 mix_tables: bool | str = True) -> None:
        if order not in ("hybrid", "similarity", "section"):
            raise ValueError(f"order must be 'hybrid', 'similarity' or 'section', not {order!r}")
        self.mix = {True: "turns", False: "none"}.get(mix_tables, mix_tables)  # type: ignore[call-overload]
        self.corpus, self.sections, self.candidates, self.rrf_k = corpus, sections, candidates, rrf_k
        self.selector, self.order, self.balance = selector, order, balance

    def choose(self, question: str, doc_ids: Sequence[str] | None) -> list[tuple[str, float]]:
        """(section id, score) of the chosen sections, best first."""
        if self.selector is not None:
            return self.selector(question, doc_ids)
        q = self.corpus.embed_query(question)
        vec = self.corpus.vectors.search("titles", q, self.candidates, doc_ids)
        bm = self.corpus.fulltext.search(scoped_question(self.corpus, question, doc_ids), self.candidates, doc_ids,
                                         TITLED)
        return rrf([[i for i, _ in vec], [i for i, _ in bm]], self.rrf_k)[: self.sections]

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        docs = spread_over(doc_ids) if self.balance else []
        if not docs:
            return self._content(question, self.choose(question, doc_ids), k, doc_ids)
        lists = [self._content(question, self.choose(question, [d]), k, [d]) for d in docs]
        return take_turns(lists, k, score=lambda e: e.score)

    def _content(self, question: str, top: list[tuple[str, float]], k: int,
                 doc_ids: Sequence[str] | None) -> list[Evidence]:
        if not top:
            return []
        rows = cypher.section_content(self.corpus.store, [i for i, _ in top], CONTENT)
        sims = dict(self.corpus.vectors.search("content", self.corpus.embed_query(question), 200, doc_ids))
        if self.order == "hybrid":
            return self._hybrid_order(question, rows, sims, k, doc_ids)
        sec_rank = {i: r for r, (i, _) in enumerate(top)}
        sec_score = dict(top)
        scored: dict[str, tuple[float, float]] = {}  # id -> (sort key, score)
        for r in rows:
            cos = sims.get(r["id"], -1.0)
            if self.order == "section":
                key = score = sec_score[r["section"]] + 0.001 * cos
            else:  # unreached content after reached, in section order
                key, score = (cos if r["id"] in sims else -2.0 - sec_rank[r["section"]] * 1e-3), cos
            if r["id"] not in scored or key > scored[r["id"]][0]:
                scored[r["id"]] = (key, score)
        best = sorted(scored.items(), key=lambda x: -x[1][0])[:k]
        nodes = self.corpus.nodes([i for i, _ in best])
        return [to_evidence(nodes[i], s, self.name) for i, (_, s) in best if i in nodes]

    def _hybrid_order(self, question: str, rows: list[dict[str, Any]], sims: dict[str, float], k: int,
                      doc_ids: Sequence[str] | None) -> list[Evidence]:
        """``order="hybrid"``: RRF of the vector and BM25 orders over the sections' content, tables and text in
        turns; unreached content last, in section order."""
        inside = list(dict.fromkeys(r["id"] for r in rows))  # section order, each id once
        member = set(inside)
        vec = [i for i, _ in sorted(sims.items(), key=lambda x: -x[1]) if i in member]
        lexical = scoped_question(self.corpus, question, doc_ids)
        lex = [i for i, _ in self.corpus.fulltext.search(lexical, 400, doc_ids, CONTENT) if i in member]
        fused = rrf([vec, lex], self.rrf_k)
        reached = {i for i, _ in fused}
        ranked = fused + [(i, -1.0 - n * 1e-6) for n, i in enumerate(i for i in inside if i not in reached)]
        nodes = self.corpus.nodes([i for i, _ in ranked])
        evidence = [to_evidence(nodes[i], s, self.name) for i, s in ranked if i in nodes]
        if self.mix == "soft":
            return soft_mix(evidence, k, self.rrf_k)
        return mix_tables(evidence, k) if self.mix == "turns" else evidence[:k]


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
