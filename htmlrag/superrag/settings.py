"""The SuperRAG paper's ablation settings as one composable retriever.

A :class:`GraphSetting` switches the stages on and off; :func:`setting_retriever` chains them:

1. candidates: hybrid search (vector + BM25, RRF) over content nodes (with ``flat``: over the non-layout
   FlatChunks instead, fixed windows of each page's plain text); with ``toc`` also the ToC retriever (sections
   chosen by title similarity, or with ``toc_select="reader"`` by a language model from the contents listing,
   the paper's few-shot ToC prompt)
   (question vs section titles -> those sections' content), the two lists fused with RRF;
2. ``merge``: cross-page merging along ``HAS_NEXT`` (a paragraph or table cut by a page break is joined);
3. ``rerank`` (off by default): ``pool`` (20) candidates re-scored by embedding cosine, the best ``k`` (10)
   kept (with ``rerank_fuse``, the default: ordered by RRF of the candidates' order and the cosine order;
   ``False``: the cosine order alone). The reranker is a second pass of the corpus's own bi-encoder, and on the
   held-out benchmark the pipelines without it beat both modes on each company (docs/superrag.md, seventh
   round); switch it on with a distinct reranking model in mind or to reproduce the earlier settings;
4. ``expand``: the ``expand_top`` (3) tables/figures most similar to the question among those related to the
   evidence (same section or page, the whole table of a table chunk) are appended;
5. ``reflect``: step 4 is kept only when a reader, shown the candidate tables/figures' captions, answers
   "yes" (the paper's self-reflection); the default reader is the deterministic keyword heuristic
   :class:`~htmlrag.superrag.retrieve.expand.KeywordReader`, a real model is passed as ``reader``.

The paper's settings: (1) non-layout: hybrid over flat chunks of the plain text + cross-page merge (+ rerank),
``GraphSetting(flat=True)``; (2) layout-aware: hybrid over the layout graph's chunks + merge + ToC +
table/figure expansion; (3) (2) + self-reflection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.retrieve.evidence import Evidence, rrf
from htmlrag.superrag.retrieve.expand import SelfReflection, TableFigureExpansion
from htmlrag.superrag.retrieve.hybrid import HybridRetriever, LLMTocSelector, TocRetriever
from htmlrag.superrag.retrieve.merge import CrossPageMerge, EmbeddingReranker, Rerank

Retriever = Callable[..., list[Evidence]]


@dataclass(frozen=True)
class GraphSetting:
    """Which retrieval stages run (see the module docstring); ``k`` evidence items before expansion."""

    flat: bool = False
    toc: bool = False
    toc_select: str = "similarity"
    expand: bool = False
    reflect: bool = False
    merge: bool = True
    rerank: bool = False
    rerank_fuse: bool = True
    pool: int = 20
    k: int = 10
    expand_top: int = 3
    candidates: int = 50


class FusedRetriever:
    """Several retrievers' evidence lists fused with RRF (each asked for ``depth`` items); an id's evidence
    is taken from the first retriever that returned it, scored by the fused score."""

    def __init__(self, retrievers: Sequence[Retriever], *, depth: int = 20, rrf_k: int = 60) -> None:
        self.retrievers, self.depth, self.rrf_k = list(retrievers), depth, rrf_k
        self.name = "+".join(getattr(r, "name", "?") for r in self.retrievers)

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        lists = [r(question, max(k, self.depth), doc_ids) for r in self.retrievers]
        first: dict[str, Evidence] = {}
        for ev in lists:
            for e in ev:
                first.setdefault(e.node_id, e)
        fused = rrf([[e.node_id for e in ev] for ev in lists], self.rrf_k)[:k]
        return [replace(first[i], score=s, retriever=self.name) for i, s in fused]


class TracedRetriever:
    """A retriever that also keeps its last answer in ``trace[key]`` (the stage-loss waterfall's ``retrieved``)."""

    def __init__(self, base: Retriever, trace: dict[str, Any], key: str = "retrieved") -> None:
        self.base, self.trace, self.key = base, trace, key
        self.name = getattr(base, "name", "?")

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        out = self.base(question, k, doc_ids)
        self.trace[self.key] = list(out)
        return out


def setting_retriever(corpus: Any, setting: GraphSetting, *, reader: Any = None, toc_reader: Any = None,
                      trace: dict[str, Any] | None = None) -> Retriever:
    """The retriever of ``setting`` over ``corpus``: a callable ``(question, k, doc_ids) -> evidence``.

    ``reader``: the self-reflection model (None: the keyword heuristic); ``toc_reader``: the model that picks
    sections from the contents with ``toc_select="reader"`` (``prompt -> reply``); ``trace``: a dict that gets
    the first stage's evidence (hybrid/ToC search, before merging, reranking and expansion) under
    ``"retrieved"`` on every call.
    """
    if setting.toc_select not in ("similarity", "reader"):
        raise HtmlRagError(f"toc_select must be 'similarity' or 'reader', not {setting.toc_select!r}")
    if setting.toc and setting.toc_select == "reader" and toc_reader is None:
        raise HtmlRagError("toc_select='reader' needs a reader model (none configured)")
    if setting.flat and (setting.toc or setting.expand):
        raise HtmlRagError("flat=true is the non-layout setting: it has no ToC and no tables to expand "
                           "(set toc=false, expand=false)")
    base: Retriever = HybridRetriever(corpus, candidates=setting.candidates, nodes="flat" if setting.flat else "layout")
    if setting.toc:
        selector = LLMTocSelector(corpus, toc_reader) if setting.toc_select == "reader" else None
        base = FusedRetriever([base, TocRetriever(corpus, selector=selector)], depth=max(setting.pool, setting.k))
    if trace is not None:
        base = TracedRetriever(base, trace)
    if setting.merge:
        base = CrossPageMerge(corpus, base)
    if setting.rerank:
        base = Rerank(base, EmbeddingReranker(corpus, fuse=setting.rerank_fuse), pool=setting.pool)
    if setting.expand:
        exp = TableFigureExpansion(corpus, base, top=setting.expand_top)
        return SelfReflection(exp, reader) if setting.reflect else exp
    if setting.reflect:
        raise HtmlRagError("self-reflection decides about the table/figure expansion: set expand=true too")
    return base
