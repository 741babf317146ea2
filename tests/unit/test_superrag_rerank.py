"""The embedding reranker: cosine order alone, or fused with the first-stage order (rerank_fuse)."""

from __future__ import annotations

import numpy as np

from htmlrag.superrag.retrieve.evidence import Evidence
from htmlrag.superrag.retrieve.merge import EmbeddingReranker


class _Corpus:
    """Texts "t0".."t3" embed so that the cosine order with the question is t3, t0, t1, t2."""

    sims = {"t0": 0.8, "t1": 0.5, "t2": 0.1, "t3": 0.9}

    def encode_texts(self, texts):
        return np.array([[self.sims[t.split("\n")[-1]], 0.0] for t in texts], dtype=np.float32)

    def embed_query(self, q):
        return np.array([1.0, 0.0], dtype=np.float32)


def _ev() -> list[Evidence]:
    return [Evidence(f"n{i}", "SectionChunk", "d", (1,), 1.0 - i / 10, f"t{i}") for i in range(4)]


def test_cosine_order_replaces_the_first_stage_order() -> None:
    out = EmbeddingReranker(_Corpus()).rerank("q", _ev(), 2)
    assert [e.node_id for e in out] == ["n3", "n0"] and out[0].score == np.float32(0.9)


def test_fused_order_keeps_the_first_stage_leader() -> None:
    out = EmbeddingReranker(_Corpus(), fuse=True).rerank("q", _ev(), 4)
    # n0: ranks 1 and 2 -> 1/61 + 1/62; n3: ranks 4 and 1 -> 1/64 + 1/61; n1: 2 and 3; n2: 3 and 4
    assert [e.node_id for e in out] == ["n0", "n3", "n1", "n2"]
    assert out[0].score == 1 / 61 + 1 / 62 and out[0].retriever.endswith("+rerank")


def test_rerank_stage_is_off_by_default_in_the_pipelines_and_settings() -> None:
    """``full``/``nonlayout`` and the harness settings have no rerank stage unless asked (the bi-encoder second
    pass lost to none on the held-out benchmark); the ``rerank`` retriever always reranks, fused by default."""
    from htmlrag.superrag.pipelines import make_retriever
    from htmlrag.superrag.retrieve.merge import CrossPageMerge, Rerank
    from htmlrag.superrag.settings import GraphSetting, setting_retriever

    c = _Corpus()
    full = make_retriever(c, "full")
    assert not isinstance(full.ranked, Rerank) and isinstance(full.ranked, CrossPageMerge)
    on = make_retriever(c, "full", rerank=True, rerank_fuse=False)
    assert isinstance(on.ranked, Rerank) and on.ranked.reranker.fuse is False
    assert isinstance(make_retriever(c, "nonlayout"), CrossPageMerge)
    assert isinstance(make_retriever(c, "nonlayout", rerank=True), Rerank)
    always = make_retriever(c, "rerank")
    assert isinstance(always, Rerank) and always.reranker.fuse is True
    assert isinstance(setting_retriever(c, GraphSetting()), CrossPageMerge)
    assert isinstance(setting_retriever(c, GraphSetting(rerank=True)), Rerank)
