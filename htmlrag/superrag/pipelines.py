"""Named retrievers, as the CLI and the benchmark use them.

* ``vector``, ``bm25``: one search alone over content nodes.
* ``hybrid``: vector + BM25 fused with RRF.
* ``toc``: question vs section titles, then those sections' content (with ``toc_reader``: a model picks the
  sections from the contents, the paper's few-shot ToC prompt).
* ``tables``: hybrid, plus the top-3 related tables/figures.
* ``reflect``: hybrid; a reader decides whether the top-3 related tables/figures are added.
* ``merge``: hybrid with cross-page merging along ``HAS_NEXT``.
* ``rerank``: hybrid top-20 reranked (embedding cosine) to top-k.
* ``full``: hybrid and ``toc`` fused with RRF (the paper's layout-aware candidates) -> cross-page merge ->
  (with ``rerank=True``: rerank top-20 to top-k) -> self-reflection on tables/figures.
* ``nonlayout``: the paper's setting 1 over the non-layout FlatChunks (fixed windows of each page's plain text,
  built with ``CorpusConfig.flat_words``): hybrid top-20 -> cross-page merge (-> rerank to top-k with
  ``rerank=True``).
* ``cypher``: a model writes a read-only Cypher query from the schema (needs ``cypher_writer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.retrieve.cypher_qa import CypherRetriever
from htmlrag.superrag.retrieve.evidence import Evidence
from htmlrag.superrag.retrieve.expand import SelfReflection, TableFigureExpansion
from htmlrag.superrag.retrieve.hybrid import MIX_TABLES, HybridRetriever, LLMTocSelector, TocRetriever
from htmlrag.superrag.retrieve.merge import CrossPageMerge, EmbeddingReranker, Rerank
from htmlrag.superrag.settings import FusedRetriever

RETRIEVERS = ("vector", "bm25", "hybrid", "toc", "tables", "reflect", "merge", "rerank", "full", "nonlayout",
              "cypher")


class _Full:
    name = "full"

    def __init__(self, corpus: Any, reader: Any, rerank: bool = False, rerank_fuse: bool = True,
                 mix_tables: str = "turns") -> None:
        candidates = FusedRetriever([HybridRetriever(corpus, mix_tables=mix_tables),
                                     TocRetriever(corpus, mix_tables=mix_tables)], depth=20)
        self.ranked = _maybe_rerank(corpus, CrossPageMerge(corpus, candidates), rerank, rerank_fuse, mix_tables)
        self.reflect = SelfReflection(TableFigureExpansion(corpus, self.ranked), reader)

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        return self.reflect(question, k, doc_ids)


def _maybe_rerank(corpus: Any, base: Any, rerank: bool, fuse: bool, mix_tables: str = "turns") -> Any:
    return Rerank(base, EmbeddingReranker(corpus, fuse=fuse), pool=20, mix_tables=mix_tables != "none") \
        if rerank else base



def make_retriever(corpus: Any, name: str, *, reader: Any = None, cypher_writer: Any = None,
                   toc_reader: Any = None, rerank: bool = False, rerank_fuse: bool = True,
                   mix_tables: str = "turns") -> Any:
    """The retriever called ``name`` over ``corpus``; a callable ``(question, k=10, doc_ids=None)``.

    ``rerank`` (default ``False``): whether ``full`` and ``nonlayout`` run the paper's rerank stage (top-20 ->
    top-k). Our reranker is a second pass of the corpus's own bi-encoder (no cross-encoder installs offline):
    it brings no model the first stage lacked, and on the held-out benchmark (docs/superrag.md, seventh round)
    ``full`` without it beat both reranking modes on each company. The ``rerank`` retriever always reranks.
    ``rerank_fuse`` (default ``True``): a reranking stage fuses the first-stage order with the embedding order
    (:class:`~htmlrag.superrag.retrieve.merge.EmbeddingReranker`); ``False``: the cosine order replaces it (the
    paper's shape, with a cross-encoder there; replacing lost to fusing on both companies).
    ``mix_tables`` (default ``"turns"``): how tables and the other layout content share the ranked lists of the
    layout retrievers (:class:`~htmlrag.superrag.retrieve.hybrid.HybridRetriever`): ``turns``, ``soft`` or
    ``none``; the flat baseline (``nonlayout``) has one kind and ignores it; a rerank stage keeps tables and text
    in turns under ``soft`` as under ``turns``. ``turns`` beat ``soft`` with each
    company left out (docs/superrag.md, issue 35 sixth round)."""
    if mix_tables not in MIX_TABLES:
        raise HtmlRagError(f"mix_tables={mix_tables!r}: expected one of {', '.join(MIX_TABLES)}")

    def hybrid(**kw: Any) -> HybridRetriever:
        return HybridRetriever(corpus, mix_tables=mix_tables, **kw)

    if name in ("vector", "bm25"):
        return hybrid(use=(name,))
    if name == "hybrid":
        return hybrid()
    if name == "toc":
        return TocRetriever(corpus, selector=LLMTocSelector(corpus, toc_reader) if toc_reader is not None else None,
                            mix_tables=mix_tables)
    if name == "tables":
        return TableFigureExpansion(corpus, hybrid())
    if name == "reflect":
        return SelfReflection(TableFigureExpansion(corpus, hybrid()), reader)
    if name == "merge":
        return CrossPageMerge(corpus, hybrid())
    if name == "rerank":
        return _maybe_rerank(corpus, hybrid(), True, rerank_fuse, mix_tables)
    if name == "full":
        return _Full(corpus, reader, rerank, rerank_fuse, mix_tables)
    if name == "nonlayout":
        return _maybe_rerank(corpus, CrossPageMerge(corpus, HybridRetriever(corpus, nodes="flat")), rerank,
                             rerank_fuse)
    if name == "cypher":
        if cypher_writer is None:
            raise HtmlRagError("the cypher retriever needs a cypher_writer (a model, or a fixed query)")

        return CypherRetriever(corpus, cypher_writer)
    raise HtmlRagError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
