"""Content-derived edges: ``IS_SIMILAR`` (k nearest neighbours) and ``HAS_STEM`` (shared key terms).

``IS_SIMILAR``: for each content node, its ``k`` most similar other content nodes of the same document by
``metric`` over the embeddings: ``cosine`` (dot product of unit vectors), ``dot`` (raw dot product) or
``l2`` (score = minus the Euclidean distance). One directed edge per (node, neighbour), score = similarity.

``HAS_STEM``: content words (letters only, 3+ characters, not stop words) are stemmed with the Snowball
English stemmer; each node keeps its ``per_node`` stems of highest tf-idf within the document; stems kept by
at least 2 nodes and by at most ``max_share`` of the document's nodes become Stem nodes linked from them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from htmlrag.superrag.graph.build import GraphDoc

METRICS = ("cosine", "dot", "l2")
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
STOP = frozenset(
    "the and for are but not you all any can had her was one our out has have from with this that they "
    "which will would there their what when where who whom been being into than then them these those "
    "such its also may might shall should could upon about above after again against because before "
    "below between both during each few more most other over same some through under until very while "
    "only own off once here how why nor too just does did doing per".split()
)


def similarity(vecs: np.ndarray, metric: str) -> np.ndarray:
    """Pairwise similarity matrix (larger = more similar) for ``metric`` (see the module docstring)."""
    return _block_sim(vecs, 0, len(vecs), metric)


def add_similar(g: GraphDoc, ids: Sequence[tuple[str, str]], vecs: np.ndarray, *, k: int = 3,
                metric: str = "cosine", block: int = 1024) -> None:
    """Add ``IS_SIMILAR`` edges among ``ids`` ((label, id) pairs, rows of ``vecs``)."""
    n = len(ids)
    if n < 2 or k <= 0:
        return
    kk = min(k, n - 1)
    for s in range(0, n, block):
        sim = _block_sim(vecs, s, block, metric)
        for r in range(sim.shape[0]):
            sim[r, s + r] = -np.inf
        top = np.argpartition(-sim, kk - 1, axis=1)[:, :kk]
        for r in range(sim.shape[0]):
            for j in sorted(top[r], key=lambda j: -sim[r, j]):
                g.link("IS_SIMILAR", ids[s + r], ids[int(j)], float(sim[r, j]))


def _block_sim(vecs: np.ndarray, s: int, block: int, metric: str) -> np.ndarray:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    a = vecs[s : s + block].astype(np.float32)
    b = vecs.astype(np.float32)
    if metric == "cosine":
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T
    if metric == "dot":
        return a @ b.T
    return -np.sqrt(np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0.0))


def key_stems(texts: Sequence[str], *, per_node: int = 5) -> list[list[str]]:
    """For each text, its ``per_node`` stems of highest tf-idf among ``texts``."""
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWords
    bags = [Counter(stem([w for w in _WORD.findall(t.lower()) if w not in STOP])) for t in texts]
    df = Counter(s for b in bags for s in b)
    n = len(texts)
    out: list[list[str]] = []
    for b in bags:
        scored = sorted(b, key=lambda s: (-(b[s] * math.log((1 + n) / (1 + df[s]))), s))
        out.append(scored[:per_node])
    return out


def add_stems(g: GraphDoc, ids: Sequence[tuple[str, str]], texts: Sequence[str], *, per_node: int = 5,
              max_share: float = 0.2) -> None:
    """Add Stem nodes and ``HAS_STEM`` edges (see the module docstring)."""
    keys = key_stems(texts, per_node=per_node)
    count = Counter(s for ks in keys for s in ks)
    limit = max(2, int(max_share * len(ids)))
    kept = {s for s, c in count.items() if 2 <= c <= limit}
    for s in sorted(kept):
        g.add("Stem", id=f"{g.doc_id}:stem:{s}", title=s)
    for ref, ks in zip(ids, keys, strict=True):
        for s in ks:
            if s in kept:
                g.link("HAS_STEM", ref, ("Stem", f"{g.doc_id}:stem:{s}"))
