"""The app's documents: PDFs in a SuperRAG corpus (the layout graph and its indexes) and HTML pages on disk.

Folder layout (``--db DIR``, the same corpus folder ``htmlrag graph build --db DIR`` makes)::

    manifest.json, graph.kuzu, vectors.db, fulltext/   the corpus (htmlrag.superrag.build.corpus)
    uploads/<sha>-<name>.pdf                           uploaded PDFs (the manifest points at them)
    parse-cache/                                       parsed layouts (htmlrag.superrag.to_html.parse_cached)
    pages/<id>.html, pages.json                        uploaded HTML pages and their facts

Queries share one read-only corpus (Kuzu opened read-only, so model-written Cypher cannot write even past the
guard). A build closes it, opens the corpus writable through :class:`~htmlrag.superrag.system.CorpusHandle`
(which locks the folder against other processes), adds the documents, and closes it again; queries asked during
a build are answered "busy" rather than left waiting.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from htmlrag.app.jobs import Job, JobRunner
from htmlrag.app.pages import page_facts
from htmlrag.app.pdfview import document_stats
from htmlrag.app.settings import AppSettings
from htmlrag.app.uploads import Upload
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.evaluation.store import atomic_write
from htmlrag.superrag.build.corpus import CorpusConfig, open_corpus
from htmlrag.superrag.build.embed import make_embedder
from htmlrag.superrag.system import CorpusHandle
from htmlrag.superrag.to_html import parse_cached

log = logging.getLogger(__name__)
_PAGE_ID = re.compile(r"^[0-9a-f]{12}$")


class Busy(HtmlRagError):
    """The corpus is being built; ask again when the build job has finished."""


class NoCorpus(InputError):
    """No PDF has been built into the corpus yet."""


class Library:
    """Documents of one app (see the module docstring)."""

    def __init__(self, settings: AppSettings, jobs: JobRunner) -> None:
        self.settings, self.jobs = settings, jobs
        self.folder = Path(settings.db)
        self._lock = threading.RLock()
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
        """The corpus's embedder, loaded once (the manifest's model for an existing corpus)."""
        name = self.embedding_model()
        if self._embedder is None or self._embedder.name != name:
            self._embedder = make_embedder(name)
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
        """The read-only corpus, held alone for the duration (Kuzu connections are not shared across threads).

        Raises:
            Busy: a build is running.
            NoCorpus: nothing is built yet.
        """
        if self.building:
            raise Busy("documents are being built; ask again when the build has finished")
        with self._lock:
            if self.building:
                raise Busy("documents are being built; ask again when the build has finished")
            if self._corpus is None:
                if not (self.folder / "manifest.json").is_file() or not self.manifest().get("documents"):
                    raise NoCorpus("no PDF is built yet: upload one on the Documents page")

                self._corpus = open_corpus(self.folder, embedder=self.embedder(), read_only=True)
            yield self._corpus

    def warm_up(self) -> None:
        """Open the corpus, its vector index and embedder once, so the first question does not pay for it
        (run on a thread at start-up; errors are only logged: a question will report them)."""
        try:
            with self.reading() as corpus:
                from htmlrag.app.pdfview import document_stats

                self._stats = document_stats(corpus)
                corpus.retrieve("warm-up", retriever="hybrid", k=1)  # embedder, vector and full-text indexes
        except (Busy, NoCorpus):
            pass
        except Exception:  # reported when a question needs the corpus
            log.warning("warm-up of %s failed", self.folder, exc_info=True)

    def close(self) -> None:
        with self._lock:
            if self._corpus is not None:
                self._corpus.close()
                self._corpus = None

    def stats(self) -> dict[str, dict[str, int]]:
        """Node counts per document and kind (cached until the next build). Never waits: while the corpus is
        in use (a build, the start-up warm-up, a question) it answers ``{}`` and the counts show later."""
        if self._stats is None:
            if not self._lock.acquire(blocking=False):
                return {}
            try:
                with self.reading() as corpus:
                    self._stats = document_stats(corpus)
            except (Busy, NoCorpus):
                return {}
            finally:
                self._lock.release()
        return self._stats

    def documents(self) -> list[dict[str, Any]]:
        """Every document: PDFs (pages, sections, tables, figures, chunks) and HTML pages (blocks, tables)."""
        out: list[dict[str, Any]] = []
        stats = self.stats()
        for doc_id, d in sorted(self.manifest().get("documents", {}).items(), key=lambda x: Path(x[1]["path"]).name):
            s = stats.get(doc_id, {})
            out.append({"id": doc_id, "kind": "pdf", "name": _display_name(d["path"]), "title": d.get("title", ""),
                        "pages": d.get("pages", 0), "sections": s.get("MainSection", 0) + s.get("Section", 0),
                        "tables": s.get("Table", 0), "figures": s.get("Figure", 0),
                        "chunks": s.get("SectionChunk", 0) + s.get("TableChunk", 0),
                        "seconds": d.get("seconds", 0.0), "warnings": d.get("warnings", []), "counted": doc_id in stats})
        for page_id, p in sorted(self.pages_manifest().items(), key=lambda x: x[1]["name"]):
            out.append({"id": page_id, "kind": "html", **p})
        return out

    # ---------------------------------------------------------------- building
    def store_uploads(self, uploads: Sequence[Upload]) -> list[tuple[Upload, Path]]:
        """Write accepted uploads to disk (content-addressed names); returns ``(upload, path)``."""
        out = []
        for up in uploads:
            sha = hashlib.sha256(up.data).hexdigest()[:12]
            folder = self.uploads if up.kind == "pdf" else self.pages_dir
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / (f"{sha}-{up.name}" if up.kind == "pdf" else f"{sha}.html")
            if not path.exists():
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_bytes(up.data)
                tmp.replace(path)
            out.append((up, path))
        return out

    def start_build(self, uploads: Sequence[Upload]) -> Job:
        """Store the uploads and queue a job that builds them (PDFs: parse, then graph + indexes; pages: facts)."""
        stored = self.store_uploads(uploads)
        total = sum(2 if up.kind == "pdf" else 1 for up, _ in stored)
        return self.jobs.submit("build", total, lambda job: self._build(job, stored))

    def _build(self, job: Job, stored: Sequence[tuple[Upload, Path]]) -> None:
        pages = [(u, p) for u, p in stored if u.kind == "html"]
        pdfs = [(u, p) for u, p in stored if u.kind == "pdf"]
        for up, path in pages:
            job.message = f"{up.name}: cleaning and splitting into blocks"
            job.items.append(self._add_page(up, path))
            job.done += 1
        if pdfs:
            self._build_pdfs(job, pdfs)

    def _add_page(self, up: Upload, path: Path) -> dict[str, Any]:
        page_id = path.stem
        try:
            facts = page_facts(up.data, up.name, self.settings.tokenizer)
        except HtmlRagError as exc:
            return {"name": up.name, "kind": "html", "ok": False, "error": str(exc)}
        with self._lock:
            manifest = self.pages_manifest()
            manifest[page_id] = {"name": up.name, "added": time.strftime("%Y-%m-%d %H:%M"), **facts}
            atomic_write(self.folder / "pages.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        return {"name": up.name, "kind": "html", "ok": True, "id": page_id, **facts}

    def _build_pdfs(self, job: Job, pdfs: Sequence[tuple[Upload, Path]]) -> None:
        self.building = True  # before waiting for the lock: questions arriving now are told "busy", not queued
        try:
            with self._lock:
                self.close()
                config = CorpusConfig(embedding_model=self.embedding_model(), vector_backend=self.settings.vector_backend)
                handle = CorpusHandle(self.folder, config, embedder=self.embedder(),
                                      parse_cache=self.folder / "parse-cache")
                try:
                    corpus = handle.corpus
                    for up, path in pdfs:
                        job.items.append(self._build_one(job, corpus, parse_cached, up, path))
                finally:
                    handle.close()
        finally:
            self._stats = None
            self.building = False

    def _build_one(self, job: Job, corpus: Any, parse_cached: Any, up: Upload, path: Path) -> dict[str, Any]:
        t0 = time.perf_counter()
        job.message = f"{up.name}: parsing the layout"
        try:
            doc = parse_cached(path, cache_dir=self.folder / "parse-cache")
        except Exception as exc:  # one bad file never stops the others
            job.done += 2
            msg = str(exc) if isinstance(exc, HtmlRagError) else f"{type(exc).__name__}: {exc}"
            return {"name": up.name, "kind": "pdf", "ok": False, "error": msg.replace(str(path), up.name)}
        job.done += 1
        job.message = f"{up.name}: building the graph and indexes ({doc.page_count} pages)"
        res = corpus.add_document(path, parsed=doc)
        job.done += 1
        if not res.ok:
            return {"name": up.name, "kind": "pdf", "ok": False, "error": res.error.replace(str(path), up.name)}
        return {"name": up.name, "kind": "pdf", "ok": True, "id": res.doc_id, "pages": res.pages, "nodes": res.nodes,
                "edges": res.edges, "seconds": round(time.perf_counter() - t0, 2), "warnings": res.warnings}


def _display_name(path: str) -> str:
    """``uploads/1a2b3c4d5e6f-report.pdf`` -> ``report.pdf`` (the content hash prefix dropped)."""
    name = Path(path).name
    return name[13:] if re.match(r"^[0-9a-f]{12}-", name) else name
