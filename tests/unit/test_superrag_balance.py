"""Questions scoped to several filings: every retrieval stage interleaves its hits by document."""

from __future__ import annotations

import numpy as np

from htmlrag.superrag.retrieve.evidence import Evidence, interleave_by_doc, spread_over
from htmlrag.superrag.retrieve.hybrid import HybridRetriever
from htmlrag.superrag.retrieve.merge import EmbeddingReranker, Rerank


def test_interleave_takes_turns_in_the_order_of_each_documents_best() -> None:
    ranked = [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C"), ("b2", "B")]
    out = interleave_by_doc(ranked, lambda x: x[1], 5)
    assert [i for i, _ in out] == ["a1", "b1", "c1", "a2", "b2"]
    assert interleave_by_doc(ranked, lambda x: x[1], 100) == [ranked[i] for i in (0, 2, 4, 1, 5, 3)]
    one = [(f"a{i}", "A") for i in range(5)]
    assert interleave_by_doc(one, lambda x: x[1], 3) == one[:3]
    assert interleave_by_doc([], lambda x: x, 3) == []


def test_only_a_scope_of_several_documents_is_spread() -> None:
    assert spread_over(None) == [] and spread_over(["d1"]) == [] and spread_over(["d1", "d1"]) == []
    assert spread_over(["d2", "d1", "d2"]) == ["d2", "d1"]


class _Index:
    """Six chunks; d1's all outscore d2's for every query. search() honours doc_ids (and the full-text index
    kinds) like the real indexes; the vector index knows no kinds, as the real ones."""

    hits = [("x1", "d1", 0.9), ("x2", "d1", 0.8), ("x3", "d1", 0.7), ("x4", "d1", 0.6),
            ("y1", "d2", 0.5), ("y2", "d2", 0.4)]
    kinds: dict[str, str] = {}

    def search(self, *args):
        kinds = None
        if isinstance(args[0], str) and args[0] in ("content", "flat", "titles"):  # vectors: (coll, q, k, docs)
            k, doc_ids = args[2], args[3]
        else:  # fulltext: (query, k, docs, kinds)
            k, doc_ids, kinds = args[1], args[2], args[3]
        return [(i, s) for i, d, s in self.hits if (not doc_ids or d in doc_ids)
                and (not kinds or self.kinds.get(i, "SectionChunk") in kinds)][:k]


class _Corpus:
    def __init__(self, kinds: dict[str, str] | None = None) -> None:
        self.vectors = self.fulltext = _Index()
        self.vectors.kinds = kinds or {}

    def embed_query(self, q):
        return np.ones(2, dtype=np.float32)

    def nodes(self, ids):
        doc = {i: d for i, d, _ in _Index.hits}
        return {i: {"id": i, "kind": self.vectors.kinds.get(i, "SectionChunk"), "doc_id": doc[i], "page_start": 1,
                    "page_end": 1, "text": i} for i in ids}


def test_hybrid_gives_every_scoped_document_a_turn() -> None:
    ids = [e.node_id for e in HybridRetriever(_Corpus())("q", k=4, doc_ids=["d1", "d2"])]
    assert ids == ["x1", "y1", "x2", "y2"]
    global_order = [e.node_id for e in HybridRetriever(_Corpus(), balance=False)("q", k=4, doc_ids=["d1", "d2"])]
    assert global_order == ["x1", "x2", "x3", "x4"]
    assert [e.node_id for e in HybridRetriever(_Corpus())("q", k=2, doc_ids=["d2"])] == ["y1", "y2"]


def test_tables_and_text_take_turns_in_the_evidence() -> None:
    """A filing's figures sit in tables, its explanations in text: the evidence takes the best of each in
    turns (with one document, with several, for each search alone), every id once; ``mix_tables=False`` keeps
    one ranking over both, where the higher-scored text fills every slot."""
    kinds = {"x3": "TableChunk", "x4": "TableChunk", "y2": "TableChunk"}
    for use in (("vector", "bm25"), ("vector",), ("bm25",)):
        one = [e for e in HybridRetriever(_Corpus(kinds), use=use)("q", k=4, doc_ids=["d1"])]
        ids = [e.node_id for e in one]
        assert sorted(ids[:2]) == ["x1", "x3"] and sorted(ids[2:]) == ["x2", "x4"], use  # best of each, then next
        assert {e.kind for e in one[:2]} == {e.kind for e in one[2:]} == {"SectionChunk", "TableChunk"}
        both = [e.node_id for e in HybridRetriever(_Corpus(kinds), use=use)("q", k=6, doc_ids=["d1", "d2"])]
        assert sorted(both) == sorted(set(both)) and set(both) == {"x1", "y1", "x2", "x3", "y2", "x4"}, use
        assert sorted(both[:2]) == ["x1", "x3"] and both[:4].count("y1") + both[:4].count("y2") == 2
    deaf = _Corpus(kinds)  # a full-text index that ignores kinds: still every id once
    deaf.fulltext = type("Deaf", (), {"search": lambda self, q, k, docs, kinds: _Index().search(q, k, docs, None)})()
    ids = [e.node_id for e in HybridRetriever(deaf, use=("bm25",))("q", k=6, doc_ids=["d1"])]
    assert sorted(ids) == ["x1", "x2", "x3", "x4"]
    plain = [e.node_id for e in HybridRetriever(_Corpus(kinds), mix_tables=False)("q", k=2, doc_ids=["d1"])]
    assert plain == ["x1", "x2"]
    flat = [e.node_id for e in HybridRetriever(_Corpus(kinds), nodes="flat")("q", k=2, doc_ids=["d1"])]
    assert flat == ["x1", "x2"]  # flat chunks have one kind: nothing to mix


def test_kind_groups_share_one_vector_search_per_document() -> None:
    """With tables and text ranked apart, the vector side searches each scoped document once (and fetches
    its hits' nodes once) and splits the hits by kind, instead of searching again for every kind; the
    evidence is the same as with a search per kind."""
    kinds = {"x3": "TableChunk", "x4": "TableChunk", "y2": "TableChunk"}
    calls: list[tuple] = []

    class Counting(_Corpus):
        def __init__(self) -> None:
            super().__init__(kinds)
            index = self.vectors
            self.vectors = type("V", (), {"kinds": kinds,
                                          "search": lambda _, *a: calls.append(("search", a[3])) or index.search(*a)})()

        def nodes(self, ids):
            calls.append(("nodes", tuple(ids)))
            return super().nodes(ids)

    for docs in (["d1"], ["d1", "d2"], None):
        calls.clear()
        ranked = HybridRetriever(Counting(), use=("vector",)).rank("q", docs)
        searches = [c[1] for c in calls if c[0] == "search"]
        assert len(searches) == len(set(map(str, searches))) == max(1, len(spread_over(docs))), (docs, calls)
        assert sum(c[0] == "nodes" for c in calls) == len(searches)
        assert [i for i, _ in ranked] == [i for i, _ in HybridRetriever(_Corpus(kinds), use=("vector",)).rank("q", docs)]
    two = HybridRetriever(Counting(), use=("vector",))
    calls.clear()
    two.rank("q", ["d1"])
    two.rank("q", ["d1"])
    assert sum(c[0] == "search" for c in calls) == 2  # nothing kept from one question to the next


class _Cosine:
    """Cosine order: every d1 text above every d2 text."""

    def encode_texts(self, texts):
        return np.array([[1.0 if t.endswith("d1") else 0.5, 0.0] for t in texts], dtype=np.float32)

    def embed_query(self, q):
        return np.array([1.0, 0.0], dtype=np.float32)


def _pool(question, k, doc_ids):
    return [Evidence(f"n{i}", "SectionChunk", "d1" if i % 2 else "d2", (1,), 1.0, f"t{i} d{1 if i % 2 else 2}")
            for i in range(6)][:k]


def test_reranking_cannot_undo_the_balance() -> None:
    balanced = Rerank(_pool, EmbeddingReranker(_Cosine()), pool=6)("q", 4, ["d1", "d2"])
    assert [e.doc_id for e in balanced] == ["d1", "d2", "d1", "d2"]
    plain = Rerank(_pool, EmbeddingReranker(_Cosine()), pool=6, balance=False)("q", 4, ["d1", "d2"])
    assert [e.doc_id for e in plain] == ["d1", "d1", "d1", "d2"]


def test_reranking_cannot_undo_the_table_text_mix() -> None:
    """The reranker sorts text above tables here (its cosine prefers d1 texts); the evidence still takes a
    table and a text in turns, each kind in the reranker's order, interleaved by document when scoped to
    several; with no table in the pool it is the reranked order; ``mix_tables=False`` gives the old order."""
    def pool(question, k, doc_ids):
        return [Evidence(f"n{i}", "TableChunk" if i >= 3 else "SectionChunk", "d1" if i < 3 else "d2", (1,), 1.0,
                         f"t{i} d{1 if i < 3 else 2}") for i in range(6)][:k]

    mixed = Rerank(pool, EmbeddingReranker(_Cosine()), pool=6)("q", 4, ["d1"])
    assert [e.kind for e in mixed] == ["SectionChunk", "TableChunk"] * 2
    assert [e.node_id for e in mixed] == ["n0", "n3", "n1", "n4"]
    plain = Rerank(pool, EmbeddingReranker(_Cosine()), pool=6, mix_tables=False)("q", 4, ["d1"])
    assert [e.node_id for e in plain] == ["n0", "n1", "n2", "n3"]
    text_only = Rerank(_pool, EmbeddingReranker(_Cosine()), pool=6)("q", 4, ["d1", "d2"])
    assert [e.doc_id for e in text_only] == ["d1", "d2", "d1", "d2"]


def test_soft_mix_lets_the_best_table_rise_without_halving_the_text() -> None:
    """``mix_tables="soft"`` (measured and not adopted, docs/superrag.md issue 35): each item is ranked by RRF
    of its place in the ranking over both kinds and its place within its own kind, so the best table moves up
    but text that outranks every table keeps most slots (strict turns give tables every second slot)."""
    from htmlrag.superrag.retrieve.evidence import soft_mix

    kinds = {"x3": "TableChunk", "x4": "TableChunk"}
    soft = [e.node_id for e in HybridRetriever(_Corpus(kinds), mix_tables="soft")("q", k=4, doc_ids=["d1"])]
    turns = [e.node_id for e in HybridRetriever(_Corpus(kinds))("q", k=4, doc_ids=["d1"])]
    assert sorted(turns[:2]) == ["x1", "x3"] and soft[0] == "x1" and sorted(soft) == ["x1", "x2", "x3", "x4"]
    text = [Evidence(f"t{i}", "SectionChunk", "d1", (1,), 1.0 - i / 100, f"t{i}") for i in range(8)]
    table = [Evidence(f"b{i}", "TableChunk", "d1", (1,), 0.5 - i / 100, f"b{i}") for i in range(3)]
    ids = [e.node_id for e in soft_mix(text + table, 6)]
    assert ids[0] == "t0" and "b0" in ids and "b1" not in ids[:4] and sum(i.startswith("t") for i in ids) >= 4
    try:
        HybridRetriever(_Corpus(kinds), mix_tables="sometimes")
    except ValueError as exc:
        assert "soft" in str(exc)
    else:
        raise AssertionError("an unknown mix mode must be refused")


def test_the_named_retrievers_take_the_table_text_mix_asked_for() -> None:
    """``make_retriever(..., mix_tables=...)`` (``Corpus.retrieve``, ``htmlrag graph query --mix-tables``, the
    bench's ``hybrid~soft``) reaches every layout stage: the ranking is the one ``HybridRetriever`` gives with
    that mix, ``full``'s two candidate lists and its rerank stage get it, and a mode not known is refused with
    its name before anything runs."""
    import pytest

    from htmlrag.core.errors import HtmlRagError
    from htmlrag.superrag.pipelines import make_retriever

    kinds = {"x3": "TableChunk", "x4": "TableChunk"}
    for mix in ("turns", "soft", "none"):
        got = [e.node_id for e in make_retriever(_Corpus(kinds), "hybrid", mix_tables=mix)("q", k=4, doc_ids=["d1"])]
        want = [e.node_id for e in HybridRetriever(_Corpus(kinds), mix_tables=mix)("q", k=4, doc_ids=["d1"])]
        assert got == want
    turns = [e.node_id for e in make_retriever(_Corpus(kinds), "hybrid")("q", k=4, doc_ids=["d1"])]
    none = [e.node_id for e in make_retriever(_Corpus(kinds), "hybrid", mix_tables="none")("q", k=4, doc_ids=["d1"])]
    assert sorted(turns[:2]) == ["x1", "x3"] and sorted(turns[2:]) == ["x2", "x4"]  # the default is turns
    assert none == ["x1", "x2", "x3", "x4"]
    full = make_retriever(_Corpus(kinds), "full", mix_tables="soft", rerank=True)
    assert [r.mix for r in full.ranked.base.base.retrievers] == ["soft", "soft"] and full.ranked.mix_tables
    off = make_retriever(_Corpus(kinds), "full", mix_tables="none", rerank=True)
    assert [r.mix for r in off.ranked.base.base.retrievers] == ["none", "none"] and not off.ranked.mix_tables
    assert make_retriever(_Corpus(kinds), "toc", mix_tables="soft").mix == "soft"
    with pytest.raises(HtmlRagError, match="'sometimes'"):
        make_retriever(_Corpus(kinds), "hybrid", mix_tables="sometimes")
