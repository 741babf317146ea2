"""The app's documents: PDFs in a SuperRAG corpus (the layout graph and its indexes) and HTML pages on disk.

Folder layout (``--db DIR``, the same corpus folder ``htmlrag graph build --db DIR`` makes)::

    manifest.json, graph.kuzu, vectors.db, fulltext/   the corpus (htmlrag.superrag.build.corpus)
    uploads/<sha>-<name>.pdf                           uploaded PDFs (the manifest points at them)
    parse-cache/                                       parsed layouts (htmlrag.superrag.to_html.parse_cached)
    pages/<id>.html, pages.json                        uploaded HTML pages and their facts

**Reading.** Questions share one read-only corpus (Kuzu opened read-only, so model-written Cypher cannot write
even past the guard), opened once and kept open: the embedder, the vector and full-text indexes stay loaded
between questions. Readers do not exclude each other: each thread queries Kuzu through its own connection, and
a slow question (a model-written query runs at most ``QueryLimits.timeout_s``) holds up no other.

**Writing** (builds, removals; :mod:`htmlrag.app.builds`) is one at a time: it waits for the questions in
progress, closes the read-only corpus, opens it writable through :class:`~htmlrag.superrag.system.CorpusHandle`
(which locks the folder against other processes) and closes it again; questions asked meanwhile are answered
"busy" rather than left waiting.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from htmlrag.app.jobs import JobRunner
from htmlrag.app.pdfview import document_stats
from htmlrag.app.settings import AppSettings
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.superrag.build.corpus import CorpusConfig, open_corpus
from htmlrag.superrag.build.embed import CachedEmbedder, make_embedder
from htmlrag.superrag.retrieve.expand import candidate_text
from htmlrag.superrag.system import CorpusHandle

log = logging.getLogger(__name__)
_PAGE_ID = re.compile(r"^[0-9a-f]{12}$")


class Busy(HtmlRagError):
    """The corpus is being built or changed; ask again when that has finished."""


class NoCorpus(InputError):
    """No PDF has been built into the corpus yet."""


class Library:
    """Documents of one app (see the module docstring)."""

    def __init__(self, settings: AppSettings, jobs: JobRunner) -> None:
        self.settings, self.jobs = settings, jobs
        self.folder = Path(settings.db)
        self._cond = threading.Condition()  # guards _readers; a writer waits on it for the readers to finish
        self._readers = 0
        self._open_lock = threading.RLock()  # opening and closing the read-only corpus
        self.write_lock = threading.Lock()  # one build or removal at a time
        self.pages_lock = threading.Lock()  # pages.json read-modify-write
        self._corpus: Any = None
        self._embedder: Any = None
        self._stats: dict[str, dict[str, int]] | None = None
        self.building = False

    # ---------------------------------------------------------------- paths and manifests
    @property
    def uploads(self) -> Path:
        return self.folder / "uploads"

    @property
    def pages_dir(self) -> Path:
        return self.folder / "pages"

    def manifest(self) -> dict[str, Any]:
        """The corpus manifest (``{}`` before the first build)."""
        mf = self.folder / "manifest.json"
        return json.loads(mf.read_text(encoding="utf-8")) if mf.is_file() else {}

    def pages_manifest(self) -> dict[str, dict[str, Any]]:
        mf = self.folder / "pages.json"
        return json.loads(mf.read_text(encoding="utf-8")) if mf.is_file() else {}

    def embedding_model(self) -> str:
        return str(self.manifest().get("config", {}).get("embedding_model") or self.settings.embedding_model)

    def embedder(self) -> Any:
        """The corpus's embedder, loaded once (the manifest's model for an existing corpus), behind a persistent
        cache in the corpus folder (``embeddings.sqlite``): a text embedded once -- a table a question brought
        up, a repeated question -- is never embedded again, also after a restart."""
        name = self.embedding_model()
        if self._embedder is None or self._embedder.name != name:
            inner = make_embedder(name)
            self._embedder = inner if name.startswith("hashing-") else CachedEmbedder(
                inner, self.folder / "embeddings.sqlite")
        return self._embedder

    def pdf_path(self, doc_id: str) -> Path:
        """The file of a built document, or raise :class:`InputError` for an unknown id."""
        d = self.manifest().get("documents", {}).get(doc_id)
        if d is None:
            raise InputError(f"unknown document {doc_id!r}")
        return Path(d["path"])

    def page_path(self, page_id: str) -> Path:
        """The stored file of an HTML page, or raise :class:`InputError` for an unknown id."""
        if not _PAGE_ID.match(page_id) or page_id not in self.pages_manifest():
            raise InputError(f"unknown page {page_id!r}")
        return self.pages_dir / f"{page_id}.html"

    # ---------------------------------------------------------------- reading
    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """The read-only corpus, shared with other readers for the duration.

        Raises:
            Busy: a build or removal is running.
            NoCorpus: nothing is built yet.
        """
        with self._cond:
            if self.building:
                raise Busy("documents are being built or removed; ask again when that has finished")
            self._readers += 1
        try:
            yield self._open()
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    def _open(self) -> Any:
        """The read-only corpus, opened once with everything a question needs loaded (the embedding model,
        the vector index's server, the full-text index): the first question after start-up waits for this
        once, no later one does."""
        with self._open_lock:
            if self._corpus is None:
                if not (self.folder / "manifest.json").is_file() or not self.manifest().get("documents"):
                    raise NoCorpus("no PDF is built yet: upload one on the Documents page")

                t0 = time.perf_counter()
                self._torch_threads()
                corpus = open_corpus(self.folder, embedder=self.embedder(), read_only=True,
                                     limits=self.settings.query_limits())
                try:
                    # the vector index's server starts (a process of its own) while the model loads here
                    with concurrent.futures.ThreadPoolExecutor(1) as pool:
                        vectors = pool.submit(lambda: corpus.vectors)
                        inner = getattr(corpus.embedder, "inner", corpus.embedder)  # under the cache
                        if callable(getattr(inner, "load", None)):
                            inner.load()  # the model, even when the cache would answer the line below
                        corpus.embed_query("warm-up")
                        corpus.fulltext.search("warm up", 1)  # builds the BM25 index in memory
                        vectors.result()
                except Exception:
                    corpus.close()
                    raise
                self._corpus = corpus
                log.info("%s: corpus opened in %.1f s", self.folder, time.perf_counter() - t0)
            return self._corpus

    def _torch_threads(self) -> None:
        n = self.settings.torch_threads
        if n > 0 and not self.embedding_model().startswith("hashing-"):
            import torch

            if torch.get_num_threads() != n:
                torch.set_num_threads(n)

    @contextlib.contextmanager
    def writing(self, *, wait: bool = True) -> Iterator[Any]:
        """The corpus opened writable (a :class:`~htmlrag.superrag.system.CorpusHandle`), alone: waits for the
        questions in progress; questions asked meanwhile are told "busy".

        Raises:
            Busy: ``wait=False`` and another build or removal is running.
        """
        if not self.write_lock.acquire(blocking=wait):
            raise Busy("documents are being built or removed; try again when that has finished")
        try:
            with self._cond:
                self.building = True  # from here on, new questions are told "busy", not queued
                self._cond.wait_for(lambda: self._readers == 0)
            self.close()
            config = CorpusConfig(embedding_model=self.embedding_model(), vector_backend=self.settings.vector_backend)
            handle = CorpusHandle(self.folder, config, embedder=self.embedder(), parse_cache=self.folder / "parse-cache")
            stats = None
            try:
                yield handle
                stats = document_stats(handle.corpus)  # the counts the Documents page shows next
            finally:
                handle.close()
                self._stats = stats
        finally:
            self.building = False
            self.write_lock.release()

    def warm_up(self) -> None:
        """Start-up work, on a thread: finish what an interrupted build or removal left (:func:`recover_if_needed`),
        open the corpus with its model and indexes so the first question does not pay for them, then
        :meth:`prepare`. Errors are only logged: a question will report them."""
        try:
            self.recover_if_needed()
            with self.reading() as corpus:
                self._stats = document_stats(corpus)
            self.prepare()
        except (Busy, NoCorpus):
            pass
        except Exception:  # reported when a question needs the corpus
            log.warning("warm-up of %s failed", self.folder, exc_info=True)

    def prepare(self) -> int:
        """Embed every table and figure the Ask page's table/figure expansion may compare with a question, into
        the embedder's persistent cache (once per corpus: later calls find them cached), eight at a time and
        only while no question is being answered. Returns how many were embedded now."""
        with self.reading() as corpus:  # only for the query: builds need not wait for the embedding below
            rows = corpus.store.query("MATCH (n) WHERE n.kind IN ['Table', 'Figure'] RETURN n.title AS title, "
                                      "n.text AS text")
        embedder, t0 = self.embedder(), time.perf_counter()
        cache = getattr(embedder, "_cache", None)
        misses = cache.misses if cache is not None else 0
        texts = [candidate_text(r) for r in rows]
        for i in range(0, len(texts), 8):  # small steps, each after the questions in progress: they come first
            with self._cond:
                self._cond.wait_for(lambda: self._readers == 0, timeout=60)
            embedder.encode(texts[i : i + 8])
        done = cache.misses - misses if cache is not None else len(texts)
        if done:
            log.info("%s: embedded %d tables and figures for the expansion in %.1f s", self.folder, done,
                     time.perf_counter() - t0)
        return done

    def prepare_in_background(self) -> None:
        """:meth:`prepare` on a thread (after a build); errors are only logged."""

        def run() -> None:
            try:
                self.prepare()
            except (Busy, NoCorpus):
                pass
            except Exception:
                log.warning("preparing %s failed", self.folder, exc_info=True)

        threading.Thread(target=run, name="htmlrag-prepare", daemon=True).start()

    def recover_if_needed(self) -> list[str]:
        """Remove documents a killed build or removal left in the graph or indexes (the manifest marks them
        pending, or does not list them); returns their ids. Cheap when there are none (one graph query)."""
        manifest = self.manifest()
        if not manifest.get("documents") and not manifest.get("pending") and not (self.folder / "graph.kuzu").exists():
            return []
        stray = set(manifest.get("pending", []))
        if manifest.get("documents"):
            with self.reading() as corpus:
                stray |= set(document_stats(corpus)) - set(manifest["documents"])
        elif (self.folder / "graph.kuzu").exists():
            stray.add("?")  # no document listed but a graph exists: let the writable open look
        if not stray:
            return []
        with self.writing() as handle:
            handle.corpus  # noqa: B018 - opening it writable runs htmlrag.superrag.build.staging.recover
        return sorted(stray - {"?"})

    def close(self) -> None:
        """Close the read-only corpus (callers make sure no question uses it: :meth:`writing`, :meth:`shutdown`)."""
        with self._open_lock:
            if self._corpus is not None:
                self._corpus.close()
                self._corpus = None

    def shutdown(self, wait_s: float = 30.0) -> None:
        """At the server's end: refuse new questions, wait (up to ``wait_s``) for those in progress, close."""
        with self._cond:
            self.building = True
            done = self._cond.wait_for(lambda: self._readers == 0, timeout=wait_s)
        if not done:
            log.warning("%s: %d question(s) still running at shutdown; the corpus is left open", self.folder,
                        self._readers)
            return
        self.close()

    def stats(self) -> dict[str, dict[str, int]]:
        """Node counts per document and kind (cached until the next build). Never waits: while the corpus is
        being opened or changed it answers ``{}`` and the counts show later."""
        if self._stats is None:
            if not self._open_lock.acquire(blocking=False):
                return {}
            try:
                with self.reading() as corpus:
                    self._stats = document_stats(corpus)
            except (Busy, NoCorpus):
                return {}
            finally:
                self._open_lock.release()
        return self._stats

    def documents(self) -> list[dict[str, Any]]:
        """Every document: PDFs (pages, sections, tables, figures, chunks) and HTML pages (blocks, tables)."""
        out: list[dict[str, Any]] = []
        stats = self.stats()
        for doc_id, d in sorted(self.manifest().get("documents", {}).items(), key=lambda x: Path(x[1]["path"]).name):
            s = stats.get(doc_id, {})
            out.append({"id": doc_id, "kind": "pdf", "name": display_name(d["path"]), "title": d.get("title", ""),
                        "pages": d.get("pages", 0), "sections": s.get("MainSection", 0) + s.get("Section", 0),
                        "tables": s.get("Table", 0), "figures": s.get("Figure", 0),
                        "chunks": s.get("SectionChunk", 0) + s.get("TableChunk", 0),
                        "seconds": d.get("seconds", 0.0), "warnings": d.get("warnings", []), "counted": doc_id in stats})
        for page_id, p in sorted(self.pages_manifest().items(), key=lambda x: x[1]["name"]):
            out.append({"id": page_id, "kind": "html", **p})
        return out


def display_name(path: str) -> str:
    """``uploads/1a2b3c4d5e6f-report.pdf`` -> ``report.pdf`` (the content hash prefix dropped)."""
    name = Path(path).name
    return name[13:] if re.match(r"^[0-9a-f]{12}-", name) else name


