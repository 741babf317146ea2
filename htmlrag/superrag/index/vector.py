"""Vector indexes: Milvus Lite / Milvus server through pymilvus (default), or an in-process numpy index.

All vectors are L2-normalised, so scores are cosine similarities (higher is better) in both backends.
Collections: ``content`` (SectionChunk, TableChunk, Figure) and ``titles`` (MainSection, Section titles).
The numpy index keeps one ``.npz`` per collection and searches exactly; it is the fallback where Milvus
Lite cannot run (it needs a Linux or macOS wheel of ``milvus-lite``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.io import atomic_file

log = logging.getLogger(__name__)


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search by node id."""

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray, doc_ids: Sequence[str],
            kinds: Sequence[str]) -> None: ...

    def search(self, collection: str, vector: np.ndarray, k: int,
               doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, cosine) pairs, best first, optionally only from the given documents."""
        ...

    def delete_document(self, doc_id: str) -> None: ...

    def close(self) -> None: ...


class MilvusIndex:
    """Milvus through ``pymilvus.MilvusClient``: a local ``.db`` file is Milvus Lite, an http URI a server.

    Args:
        uri: ``path/to/vectors.db`` (Milvus Lite) or ``http://host:19530``.
        dim: vector size.
        token: server token (None for Milvus Lite); never written to the manifest.
    """

    def __init__(self, uri: str, dim: int, *, token: str | None = None) -> None:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - optional extra
            raise HtmlRagError("Milvus needs pymilvus: pip install 'htmlrag-bench[graph]'") from exc
        self.uri, self.dim = uri, dim
        self._loaded: set[str] = set()
        if "://" not in uri:
            # Milvus Lite serves pymilvus in-process; its gRPC servicer logs a traceback for every call it
            # does not implement (AllocTimestamp), which pymilvus handles. Keep those out of the user's log.
            logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
        try:
            self._client = MilvusClient(uri, token=token or "")
        except Exception as exc:
            if "://" in uri or not _release_lite(uri):
                raise HtmlRagError(f"{uri}: cannot open Milvus: {exc}") from exc
            # Milvus Lite keeps one in-process server per file; after a long idle time its gRPC connection can be
            # dropped ("too_many_pings") while the server stays registered. Start a fresh one, once.
            log.warning("%s: Milvus Lite server unreachable (%s); restarting it", uri, type(exc).__name__)
            try:
                self._client = MilvusClient(uri, token=token or "")
            except Exception as exc2:
                raise HtmlRagError(f"{uri}: cannot open Milvus: {exc2}") from exc2

    def _ensure(self, collection: str) -> None:
        if not self._client.has_collection(collection):
            self._client.create_collection(collection, dimension=self.dim, primary_field_name="id", id_type="string",
                                           max_length=512, metric_type="COSINE", auto_id=False)

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray, doc_ids: Sequence[str],
            kinds: Sequence[str]) -> None:
        if not len(ids):
            return
        self._ensure(collection)
        rows = [{"id": i, "vector": v.tolist(), "doc_id": d, "kind": k}
                for i, v, d, k in zip(ids, vectors, doc_ids, kinds, strict=True)]
        for s in range(0, len(rows), 1000):
            self._client.insert(collection, rows[s : s + 1000])

    def search(self, collection: str, vector: np.ndarray, k: int,
               doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        if collection not in self._loaded:  # a reopened (or restarted) server holds collections released
            if not self._client.has_collection(collection):  # one call per collection, not per search
                return []
            self._client.load_collection(collection)
            self._loaded.add(collection)
        flt = f"doc_id in {json.dumps(list(doc_ids))}" if doc_ids else ""
        res = self._client.search(collection, data=[vector.tolist()], limit=k, filter=flt, output_fields=["doc_id"])
        return [(str(h["id"]), float(h["distance"])) for h in res[0]]

    def delete_document(self, doc_id: str) -> None:
        for c in self._client.list_collections():
            self._client.delete(c, filter=f"doc_id == {json.dumps(doc_id)}")

    def close(self) -> None:
        self._client.close()
        if "://" not in self.uri:
            _release_lite(self.uri)  # the next open starts a fresh in-process server for the file


def _release_lite(path: str) -> bool:
    """Stop Milvus Lite's in-process server for ``path`` (True when milvus_lite's server manager exists)."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return False
    server_manager_instance.release_server(path)
    return True


class NumpyIndex:
    """Exact cosine search in memory, persisted as ``<folder>/<collection>.npz`` (ids, docs, kinds, vectors)."""

    def __init__(self, folder: str | Path, dim: int) -> None:
        self.folder = Path(folder)
        self.dim = dim
        self._data: dict[str, dict[str, Any]] = {}

    def _load(self, collection: str) -> dict[str, Any]:
        if collection not in self._data:
            f = self.folder / f"{collection}.npz"
            if f.exists():
                z = np.load(f, allow_pickle=False)
                self._data[collection] = {k: z[k] for k in ("ids", "docs", "kinds", "vecs")}
            else:
                self._data[collection] = {"ids": np.array([], dtype=str), "docs": np.array([], dtype=str),
                                          "kinds": np.array([], dtype=str),
                                          "vecs": np.zeros((0, self.dim), dtype=np.float32)}
        return self._data[collection]

    def _save(self, collection: str) -> None:
        with atomic_file(self.folder / f"{collection}.npz", "wb") as fh:  # a file object: savez adds no suffix
            np.savez(fh, **self._data[collection])

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray, doc_ids: Sequence[str],
            kinds: Sequence[str]) -> None:
        d = self._load(collection)
        d["ids"] = np.concatenate([d["ids"], np.asarray(ids, dtype=str)])
        d["docs"] = np.concatenate([d["docs"], np.asarray(doc_ids, dtype=str)])
        d["kinds"] = np.concatenate([d["kinds"], np.asarray(kinds, dtype=str)])
        d["vecs"] = np.concatenate([d["vecs"], np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)])
        self._save(collection)

    def search(self, collection: str, vector: np.ndarray, k: int,
               doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        d = self._load(collection)
        if not len(d["ids"]):
            return []
        scores = d["vecs"] @ np.asarray(vector, dtype=np.float32)
        if doc_ids:
            scores = np.where(np.isin(d["docs"], list(doc_ids)), scores, -np.inf)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(str(d["ids"][i]), float(scores[i])) for i in top if np.isfinite(scores[i])]

    def delete_document(self, doc_id: str) -> None:
        for f in self.folder.glob("*.npz"):
            c = f.name[: -len(".npz")]
            d = self._load(c)
            keep = d["docs"] != doc_id
            self._data[c] = {k: v[keep] for k, v in d.items()}
            self._save(c)

    def close(self) -> None:
        self._data.clear()
