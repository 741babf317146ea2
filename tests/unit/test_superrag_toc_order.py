"""The ToC retriever's order inside the chosen sections: the hybrid order (vector and BM25 fused, tables and
text in turns) by default, so that what only the lexical search finds in a chosen section is not dropped."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from htmlrag.superrag.retrieve.hybrid import TocRetriever

# section s1 holds c1..c4 and the table chunk t1; z9 lies outside it (found by both searches, never returned)
CHILDREN = {"s1": [("c1", "SectionChunk"), ("c2", "SectionChunk"), ("t1", "TableChunk"), ("c3", "SectionChunk"),
                   ("c4", "SectionChunk")]}
VECTOR = [("z9", 0.99), ("c1", 0.9), ("c3", 0.8), ("t1", 0.7)]  # c2 and c4 unreached by the embedding
LEXICAL = [("z9", 9.0), ("c2", 8.0), ("t1", 7.0)]  # c2: the figures' wording only BM25 matches


class _Store:
    def query(self, _q, params):
        return [{"parent": p, "id": i, "kind": k, "ord": n}
                for p in params["ids"] for n, (i, k) in enumerate(CHILDREN.get(p, []))]


class _Index:
    def search(self, *args):
        if isinstance(args[0], str) and args[0] in ("content", "titles"):  # vectors: (collection, q, k, docs)
            return VECTOR[: args[2]]
        return LEXICAL[: args[1]]  # full text: (query, k, docs, kinds)


class _Corpus:
    store = _Store()
    vectors = fulltext = _Index()

    def embed_query(self, _q):
        return np.ones(2, dtype=np.float32)

    def nodes(self, ids):
        kinds = {i: k for i, k in CHILDREN["s1"]}
        return {i: {"id": i, "kind": kinds.get(i, "SectionChunk"), "doc_id": "d1", "page_start": 1, "page_end": 1,
                    "text": i} for i in ids}


def _toc(order: str | None = None) -> TocRetriever:
    kw = {} if order is None else {"order": order}
    return TocRetriever(_Corpus(), selector=lambda q, docs: [("s1", 1.0)], **kw)


def test_default_order_fuses_both_searches_inside_the_sections_with_tables_and_text_in_turns() -> None:
    ev = _toc()("q", k=3)
    ids = [e.node_id for e in ev]
    assert "z9" not in ids  # only the chosen sections' content
    assert "c2" in ids  # found by BM25 alone, kept
    assert {e.kind for e in ev[:2]} == {"TableChunk", "SectionChunk"}  # the table takes a turn at once
    everything = [e.node_id for e in _toc()("q", k=10)]
    assert sorted(everything) == ["c1", "c2", "c3", "c4", "t1"] and everything.index("c4") > everything.index("c3")
    assert all(a.score >= b.score for a, b in itertools.pairwise(ev) if a.kind == b.kind)


def test_similarity_order_ranks_by_the_embedding_alone() -> None:
    ids = [e.node_id for e in _toc("similarity")("q", k=3)]
    assert ids == ["c1", "c3", "t1"]  # c2, which only BM25 reaches, falls to the end


def test_an_unknown_order_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="'hybrid', 'similarity' or 'section'"):
        _toc("random")
