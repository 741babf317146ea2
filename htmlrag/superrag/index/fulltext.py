"""Full-text indexes: embedded BM25 (bm25s, the default) or Elasticsearch when a URL is configured.

The BM25 index keeps its documents in ``<folder>/items.jsonl`` (append-only: id, doc_id, kind, text) and
builds the bm25s index in memory when first searched (bm25s with the Snowball English stemmer and English
stop words; scores are BM25 with k1=1.5, b=0.75).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.io import atomic_file

log = logging.getLogger(__name__)


@runtime_checkable
class FullTextIndex(Protocol):
    def add(self, ids: Sequence[str], texts: Sequence[str], doc_ids: Sequence[str], kinds: Sequence[str]) -> None: ...

    def search(self, query: str, k: int, doc_ids: Sequence[str] | None = None,
               kinds: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` (id, score) pairs, best first."""
        ...

    def delete_document(self, doc_id: str) -> None: ...


class BM25Index:
    """Embedded BM25 over ``<folder>/items.jsonl`` (see the module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._items: list[dict[str, str]] | None = None
        self._bm25: Any = None

    @property
    def _file(self) -> Path:
        return self.folder / "items.jsonl"

    def _load(self) -> list[dict[str, str]]:
        if self._items is None:
            self._items = []
            if self._file.exists():
                with self._file.open(encoding="utf-8") as f:
                    self._items = [json.loads(line) for line in f if line.strip()]
        return self._items

    def add(self, ids: Sequence[str], texts: Sequence[str], doc_ids: Sequence[str], kinds: Sequence[str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        rows = [{"id": i, "doc_id": d, "kind": k, "text": t} for i, t, d, k in zip(ids, texts, doc_ids, kinds, strict=True)]
        self._load()  # read what is on disk first, or the rows appended below would be read back and added twice
        with self._file.open("a", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        self._load().extend(rows)
        self._bm25 = None

    def _index(self) -> Any:
        if self._bm25 is None:
            import bm25s
            import Stemmer

            # bm25s sets its own logger to DEBUG at import, so its "Building index from ..." debug lines reach
            # any handler the application configured; hand the level back to the application's configuration
            logging.getLogger("bm25s").setLevel(logging.NOTSET)
            self._stemmer = Stemmer.Stemmer("english")
            corpus = [it["text"] for it in self._load()]
            self._bm25 = bm25s.BM25()
            if corpus:
                tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stemmer, show_progress=False)
                self._bm25.index(tokens, show_progress=False)
        return self._bm25

    def search(self, query: str, k: int, doc_ids: Sequence[str] | None = None,
               kinds: Sequence[str] | None = None) -> list[tuple[str, float]]:
        import bm25s

        items = self._load()
        if not items:
            return []
        bm = self._index()
        q = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False)
        if not q or not q[0]:
            return []
        scores = bm.get_scores(q[0])
        allowed_docs = set(doc_ids) if doc_ids else None
        allowed_kinds = set(kinds) if kinds else None
        order = sorted(range(len(items)), key=lambda i: -scores[i])
        out: list[tuple[str, float]] = []
        for i in order:
            if scores[i] <= 0 or len(out) >= k:
                break
            it = items[i]
            if (allowed_docs is None or it["doc_id"] in allowed_docs) and (allowed_kinds is None or it["kind"] in allowed_kinds):
                out.append((it["id"], float(scores[i])))
        return out

    def doc_ids(self) -> set[str]:
        """The document ids with entries in the index."""
        return {it["doc_id"] for it in self._load()}

    def delete_document(self, doc_id: str) -> None:
        items = [it for it in self._load() if it["doc_id"] != doc_id]
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_file(self._file) as f:
            for r in items:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        self._items, self._bm25 = items, None


class ElasticsearchIndex:
    """Elasticsearch (``elasticsearch`` client, imported lazily); BM25 is the server's default similarity.

    Args:
        url: ``http://host:9200``.
        index: index name.
        api_key: optional API key; never written to the manifest.
    """

    def __init__(self, url: str, index: str = "superrag", *, api_key: str | None = None) -> None:
        try:
            from elasticsearch import Elasticsearch
        except ImportError as exc:  # pragma: no cover - optional
            raise HtmlRagError("the Elasticsearch index needs: pip install elasticsearch") from exc
        self.index = index
        self._es = Elasticsearch(url, api_key=api_key)

    def add(self, ids: Sequence[str], texts: Sequence[str], doc_ids: Sequence[str], kinds: Sequence[str]) -> None:
        from elasticsearch import helpers

        actions = ({"_index": self.index, "_id": i, "_source": {"text": t, "doc_id": d, "kind": k}}
                   for i, t, d, k in zip(ids, texts, doc_ids, kinds, strict=True))
        helpers.bulk(self._es, actions, refresh=True)

    def search(self, query: str, k: int, doc_ids: Sequence[str] | None = None,
               kinds: Sequence[str] | None = None) -> list[tuple[str, float]]:
        filters: list[dict[str, Any]] = []
        if doc_ids:
            filters.append({"terms": {"doc_id.keyword": list(doc_ids)}})
        if kinds:
            filters.append({"terms": {"kind.keyword": list(kinds)}})
        body = {"bool": {"must": {"match": {"text": query}}, "filter": filters}}
        res = self._es.search(index=self.index, query=body, size=k)
        return [(h["_id"], float(h["_score"])) for h in res["hits"]["hits"]]

    def delete_document(self, doc_id: str) -> None:
        self._es.delete_by_query(index=self.index, query={"term": {"doc_id.keyword": doc_id}}, refresh=True)
