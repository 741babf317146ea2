"""Evidence records, reciprocal rank fusion, and what retrievers need from a built corpus."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from htmlrag.superrag.graph import cypher


@dataclass
class Evidence:
    """One retrieved graph node.

    Attributes:
        node_id: the node's id in the graph.
        kind: its label (SectionChunk, TableChunk, Table, Figure, ...).
        doc_id: the document it belongs to.
        pages: physical pages (1-based) it covers, ascending.
        score: the retriever's score (higher is better; its meaning depends on the retriever).
        text: the node's text (tables: rows as ``cell | cell`` lines), with merged continuations appended.
        title: section title, table or figure caption.
        html: ``<table>`` markup for tables and table chunks, else empty.
        retriever: which stage produced or last re-scored it.
        merged: ids of nodes whose text was appended (cross-page merging).
    """

    node_id: str
    kind: str
    doc_id: str
    pages: tuple[int, ...]
    score: float
    text: str
    title: str = ""
    html: str = ""
    retriever: str = ""
    merged: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pages"], d["merged"] = list(self.pages), list(self.merged)
        return d


class Backend(Protocol):
    """A built corpus as retrievers see it (see :class:`htmlrag.superrag.build.corpus.Corpus`)."""

    store: Any
    vectors: Any
    fulltext: Any
    embedder: Any

    def nodes(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def encode_texts(corpus: Any, texts: Sequence[str]) -> np.ndarray:
    """``corpus.encode_texts`` (cached) when the corpus has it, else its embedder."""
    enc = getattr(corpus, "encode_texts", None)
    return enc(texts) if callable(enc) else corpus.embedder.encode(texts)


def fetch_nodes(store: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Rows of the given node ids (all schema properties), keyed by id."""
    if not ids:
        return {}
    return {r["id"]: r for r in store.query(cypher.NODES_BY_ID, {"ids": list(dict.fromkeys(ids))})}


def to_evidence(row: dict[str, Any], score: float, retriever: str) -> Evidence:
    p0, p1 = int(row.get("page_start") or 0), int(row.get("page_end") or 0)
    pages = tuple(range(p0, max(p0, p1) + 1)) if p0 else ()
    return Evidence(node_id=row["id"], kind=row.get("kind") or "", doc_id=row.get("doc_id") or "", pages=pages,
                    score=float(score), text=row.get("text") or "", title=row.get("title") or "",
                    html=row.get("html") or "" if row.get("kind") in ("Table", "TableChunk") else "",
                    retriever=retriever)


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(id) = sum over rankings of 1 / (k + rank), rank from 1; best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for r, i in enumerate(ranking, start=1):
            scores[i] = scores.get(i, 0.0) + 1.0 / (k + r)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


def spread_over(doc_ids: Sequence[str] | None) -> list[str]:
    """The documents a question is scoped to when there are several of them (else ``[]``: no balancing)."""
    docs = list(dict.fromkeys(doc_ids or ()))
    return docs if len(docs) > 1 else []


def take_turns(lists: Sequence[Sequence[Any]], k: int, score: Any = None) -> list[Any]:
    """Up to ``k`` items from best-first ``lists`` (one per document) taken in turns: every list's first item,
    then every list's second, and so on. With ``score(item)``, the lists go in the order of their first item's
    score (best first; empty lists last), else in the order given."""
    if score is not None:
        lists = sorted(lists, key=lambda v: -score(v[0]) if v else float("inf"))
    out: list[Any] = []
    turn = 0
    while len(out) < k and any(turn < len(v) for v in lists):
        out += [v[turn] for v in lists if turn < len(v)][: k - len(out)]
        turn += 1
    return out


TABLE_KINDS = ("Table", "TableChunk")


def mix_tables(ranked: Sequence[Evidence], k: int, *, by_doc: bool = False) -> list[Evidence]:
    """The best ``k`` of ``ranked`` (best first) with tables and the other evidence in turns: each kind keeps
    its order (interleaved by document first when ``by_doc``), and the kinds take turns, the one with the
    better first score first. Where ``ranked`` holds one kind only this is ``ranked[:k]`` (or its document
    interleave). A filing states its figures in tables and explains them in text: a stage that re-sorts
    evidence (a reranker) must not let the wordier kind take every slot (see
    :class:`~htmlrag.superrag.retrieve.hybrid.HybridRetriever` ``mix_tables``)."""
    tabs = [e for e in ranked if e.kind in TABLE_KINDS]
    rest = [e for e in ranked if e.kind not in TABLE_KINDS]
    if by_doc:
        tabs = interleave_by_doc(tabs, lambda e: e.doc_id, len(tabs))
        rest = interleave_by_doc(rest, lambda e: e.doc_id, len(rest))
    return take_turns([v for v in (tabs, rest) if v], k, score=lambda e: e.score)


def soft_mix(ranked: Sequence[Evidence], k: int, rrf_k: int = 60) -> list[Evidence]:
    """The best ``k`` of ``ranked`` (best first) re-ordered by RRF of each item's place in ``ranked`` and its
    place among the items of its own kind (tables / the rest): the best table rises towards the top even where
    text outranks it, without taking half the slots from text that outranks every table by far (the soft
    form of :func:`mix_tables`; scores become the fused score)."""
    tabs = [e.node_id for e in ranked if e.kind in TABLE_KINDS]
    rest = [e.node_id for e in ranked if e.kind not in TABLE_KINDS]
    first = {e.node_id: e for e in reversed(ranked)}
    fused = rrf([[e.node_id for e in ranked], tabs, rest], rrf_k)[:k]
    return [replace(first[i], score=s) for i, s in fused]


def interleave_by_doc(ranked: Sequence[Any], doc_of: Any, k: int) -> list[Any]:
    """The best ``k`` of ``ranked`` (best first) taken in turns from each document: every document's best item,
    then every document's second best, and so on; within a turn, documents in the order of their best item.

    A question scoped to several filings ("over the reported quarters") needs evidence from each of them; a
    global top-k lets one filing's near-duplicate passages fill every slot. ``doc_of(item)`` names an item's
    document. With one document this is ``ranked[:k]``."""
    per_doc: dict[str, list[Any]] = {}
    for item in ranked:
        per_doc.setdefault(doc_of(item), []).append(item)
    return take_turns(list(per_doc.values()), k)
