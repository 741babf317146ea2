"""Adding and removing the app's documents: uploads stored by content, build jobs, removal, and clean-up.

* **Same content, one document.** A PDF whose bytes are already in the library (under any name) is not stored,
  parsed or indexed again: its job item says which document holds that content. The check runs when the upload
  arrives and again when its build starts (two requests with the same file both queue; the second is skipped).
  An HTML page with the same bytes as a stored page likewise keeps the first name and says so.
* **Nothing left behind.** A PDF that fails to build is deleted from ``uploads/`` at once; at start-up
  (:meth:`Builds.sweep`) files in ``uploads/`` and ``pages/`` that no manifest lists (a build killed half-way)
  and stale temporary files are deleted. The corpus itself recovers from a killed build or removal when it is
  next opened for writing (:mod:`htmlrag.superrag.build.staging`).
* **Removal** (:meth:`Builds.remove`): a PDF's graph nodes, vectors, full-text entries, manifest entry, upload
  and parse-cache entry; an HTML page's entry and file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag.app.jobs import Job
from htmlrag.app.library import Busy, Library, display_name
from htmlrag.app.pages import page_facts
from htmlrag.app.uploads import Upload, UploadError
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import atomic_write as write_whole
from htmlrag.core.redact import redact
from htmlrag.evaluation.store import atomic_write
from htmlrag.superrag.to_html import parse_cache_file, parse_cached

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stored:
    """An accepted upload: where it was stored, or the document that already holds its content."""

    upload: Upload
    path: Path | None
    duplicate_of: str = ""  # a document id (PDF) or page id (HTML) with the same bytes


def content_id(data: bytes) -> str:
    """The content part of a PDF's document id (:func:`htmlrag.superrag.parse.pdfio.doc_id_for`)."""
    return hashlib.sha1(data).hexdigest()[:10]


class Builds:
    """Builds and removals of one :class:`~htmlrag.app.library.Library` (see the module docstring)."""

    def __init__(self, library: Library) -> None:
        self.lib = library

    # ---------------------------------------------------------------- storing
    def pdf_with_content(self, cid: str) -> str:
        """The id of the built PDF with content id ``cid`` (``""``: none)."""
        return next((d for d in self.lib.manifest().get("documents", {}) if d.rsplit("-", 1)[-1] == cid), "")

    def library_bytes(self) -> int:
        return sum(p.stat().st_size for d in (self.lib.uploads, self.lib.pages_dir) if d.is_dir()
                   for p in d.iterdir() if p.is_file())

    def store(self, uploads: Sequence[Upload]) -> list[Stored]:
        """Write the accepted uploads to disk (content-addressed names), skipping content already held.

        Raises:
            UploadError: the library would grow past ``max_library_mb`` (413; nothing is stored).
        """
        limit = int(self.lib.settings.max_library_mb * 1e6)
        if self.library_bytes() + sum(len(u.data) for u in uploads) > limit:
            raise UploadError(f"the library would grow past its {limit / 1e6:.0f} MB limit; remove documents "
                              "first", 413)
        out: list[Stored] = []
        seen: dict[str, str] = {}  # content id -> name, within this request
        pages = self.lib.pages_manifest()
        for up in uploads:
            sha = hashlib.sha256(up.data).hexdigest()[:12]
            key = content_id(up.data) if up.kind == "pdf" else sha
            dup = (self.pdf_with_content(key) if up.kind == "pdf" else (sha if sha in pages else "")) or seen.get(key, "")
            if dup:
                out.append(Stored(up, None, dup))
                continue
            seen[key] = up.name
            folder = self.lib.uploads if up.kind == "pdf" else self.lib.pages_dir
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / (f"{sha}-{up.name}" if up.kind == "pdf" else f"{sha}.html")
            if not path.exists():  # the same file uploaded twice at once: each writes its own temporary file
                write_whole(path, up.data, fsync=False)
            out.append(Stored(up, path))
        return out

    def start(self, uploads: Sequence[Upload]) -> Job:
        """Store the uploads and queue a job that builds them (PDFs: parse, then graph + indexes; pages: facts)."""
        stored = self.store(uploads)
        total = sum(2 if s.upload.kind == "pdf" and s.path else 1 for s in stored)
        return self.lib.jobs.submit("build", total, lambda job: self._run(job, stored))

    def scrub(self, text: str, up: Upload | None = None, path: Path | None = None) -> str:
        """An error for the job's page: the stored file named as uploaded, the corpus and results folders as
        ``…`` (as :func:`htmlrag.app.responses.message_of` does for requests), secrets redacted."""
        if path is not None and up is not None:
            text = text.replace(str(path.resolve()), up.name).replace(str(path), up.name)
        settings = self.lib.settings
        for folder in (Path(settings.db), Path(settings.results)):
            text = text.replace(str(folder.resolve()), "…").replace(str(folder), "…")
        return redact(text)

    def _run(self, job: Job, stored: Sequence[Stored]) -> None:
        """:meth:`_build`; when it stops half-way (the corpus cannot be opened, say), every file not yet built
        fails with the reason and leaves nothing behind, and the job's error names no folder of this machine."""
        try:
            self._build(job, stored)
        except Exception as exc:
            log.exception("build job %s failed", job.id)
            msg = self.scrub(f"{type(exc).__name__}: {exc}")
            done = {i.get("name") for i in job.items}
            for st in stored:
                if st.path is not None and st.upload.name not in done:
                    job.items.append({"name": st.upload.name, "kind": st.upload.kind, "ok": False, "error": msg})
            job.error = msg
        finally:
            built = {i.get("id") for i in job.items if i.get("ok")}
            for st in stored:
                if st.path is None:
                    continue
                if st.upload.kind == "pdf":
                    self.discard(st.path)  # (only when no built document uses it)
                elif st.path.stem not in built and st.path.stem not in self.lib.pages_manifest():
                    st.path.unlink(missing_ok=True)

    def _build(self, job: Job, stored: Sequence[Stored]) -> None:
        for s in stored:
            if s.duplicate_of:
                job.items.append(self._duplicate(s.upload, s.duplicate_of))
                job.done += 1
        for s in stored:
            if s.upload.kind == "html" and s.path is not None:
                job.message = f"{s.upload.name}: cleaning and splitting into blocks"
                job.items.append(self._add_page(s.upload, s.path))
                job.done += 1
        pdfs = [s for s in stored if s.upload.kind == "pdf" and s.path is not None]
        if pdfs:
            with self.lib.writing() as handle:
                for s in pdfs:
                    job.items.append(self._build_one(job, handle, s.upload, s.path))  # type: ignore[arg-type]
            self.lib.prepare_in_background()

    def _duplicate(self, up: Upload, existing: str) -> dict[str, Any]:
        if up.kind == "pdf":
            d = self.lib.manifest().get("documents", {}).get(existing)
            name = display_name(d["path"]) if d else existing
        else:
            name = self.lib.pages_manifest().get(existing, {}).get("name", existing)
        return {"name": up.name, "kind": up.kind, "ok": True, "id": existing, "duplicate_of": name,
                "message": f"same content as {name}, already in the library: not added again"}

    def _add_page(self, up: Upload, path: Path) -> dict[str, Any]:
        page_id = path.stem
        try:
            facts = page_facts(up.data, up.name, self.lib.settings.tokenizer)
        except HtmlRagError as exc:
            path.unlink(missing_ok=True)
            return {"name": up.name, "kind": "html", "ok": False, "error": str(exc)}
        with self.lib.pages_lock:
            manifest = self.lib.pages_manifest()
            if page_id in manifest:  # the same bytes arrived twice at once: the first name stays
                return self._duplicate(up, page_id)
            manifest[page_id] = {"name": up.name, "added": time.strftime("%Y-%m-%d %H:%M"), **facts}
            atomic_write(self.lib.folder / "pages.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        return {"name": up.name, "kind": "html", "ok": True, "id": page_id, **facts}

    def _build_one(self, job: Job, handle: Any, up: Upload, path: Path) -> dict[str, Any]:
        t0 = time.perf_counter()
        dup = self.pdf_with_content(content_id(up.data))
        if dup:  # built by an earlier job since this one was queued
            self.discard(path)
            job.done += 2
            return self._duplicate(up, dup)
        job.message = f"{up.name}: parsing the layout"
        try:
            doc = parse_cached(path, cache_dir=self.lib.folder / "parse-cache",
                                  time_limit=self.lib.settings.max_parse_seconds)
        except Exception as exc:  # one bad file never stops the others
            job.done += 2
            self.discard(path)
            msg = str(exc) if isinstance(exc, HtmlRagError) else f"{type(exc).__name__}: {exc}"
            return {"name": up.name, "kind": "pdf", "ok": False, "error": self.scrub(msg, up, path)}
        job.done += 1
        job.message = f"{up.name}: building the graph and indexes ({doc.page_count} pages)"
        try:
            res = handle.corpus.add_document(path, parsed=doc)  # (opens the corpus writable the first time)
        except Exception as exc:  # one bad file never stops the others, and leaves nothing behind
            log.warning("%s: build failed", up.name, exc_info=True)
            job.done += 1
            self.discard(path)
            msg = str(exc) if isinstance(exc, HtmlRagError) else f"{type(exc).__name__}: {exc}"
            return {"name": up.name, "kind": "pdf", "ok": False, "error": self.scrub(msg, up, path)}
        job.done += 1
        if not res.ok:
            self.discard(path)
            return {"name": up.name, "kind": "pdf", "ok": False, "error": self.scrub(res.error, up, path)}
        return {"name": up.name, "kind": "pdf", "ok": True, "id": res.doc_id, "pages": res.pages, "nodes": res.nodes,
                "edges": res.edges, "seconds": round(time.perf_counter() - t0, 2), "warnings": res.warnings}

    # ---------------------------------------------------------------- removing
    def discard(self, path: Path) -> None:
        """Delete an uploaded file that no built document uses (and its parse-cache entry)."""
        used = {Path(d["path"]).resolve() for d in self.lib.manifest().get("documents", {}).values()}
        if path.resolve() not in used and path.parent.resolve() == self.lib.uploads.resolve():
            _drop_parse_cache(path, self.lib.folder / "parse-cache")
            path.unlink(missing_ok=True)

    def remove(self, doc_id: str) -> dict[str, Any]:
        """Remove a document (PDF or HTML page) and everything the app keeps of it.

        Raises:
            InputError: no document has that id.
            Busy: a build or another removal is running (try again when it has finished).
        """
        if doc_id in self.lib.pages_manifest():
            return self._remove_page(doc_id)
        d = self.lib.manifest().get("documents", {}).get(doc_id)
        if d is None:
            raise InputError(f"unknown document {doc_id!r}")
        with self.lib.writing(wait=False) as handle:
            handle.corpus.remove_document(doc_id)
        self.discard(Path(d["path"]))
        return {"id": doc_id, "kind": "pdf", "name": display_name(d["path"]), "removed": True}

    def _remove_page(self, page_id: str) -> dict[str, Any]:
        with self.lib.pages_lock:
            manifest = self.lib.pages_manifest()
            entry = manifest.pop(page_id, None)
            if entry is None:
                raise InputError(f"unknown document {page_id!r}")
            atomic_write(self.lib.folder / "pages.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
            (self.lib.pages_dir / f"{page_id}.html").unlink(missing_ok=True)
        return {"id": page_id, "kind": "html", "name": entry.get("name", page_id), "removed": True}

    def sweep(self) -> list[str]:
        """Delete files in ``uploads/`` and ``pages/`` that no manifest lists, and stale temporary files (run at
        start-up, before any build can be queued); returns their names."""
        used = {Path(d["path"]).resolve() for d in self.lib.manifest().get("documents", {}).values()}
        pages = set(self.lib.pages_manifest())
        gone = []
        for folder, keep in ((self.lib.uploads, lambda p: p.resolve() in used),
                             (self.lib.pages_dir, lambda p: p.suffix == ".html" and p.stem in pages)):
            if not folder.is_dir():
                continue
            for p in folder.iterdir():
                if p.is_file() and not keep(p):
                    if folder == self.lib.uploads:
                        _drop_parse_cache(p, self.lib.folder / "parse-cache")
                    p.unlink(missing_ok=True)
                    gone.append(p.name)
        if gone:
            log.info("%s: deleted %d stored file(s) no document uses: %s", self.lib.folder, len(gone),
                     ", ".join(gone[:10]))
        return gone


def _drop_parse_cache(pdf: Path, cache_dir: Path) -> None:
    """Delete the parse-cache entry of ``pdf`` (the key of :func:`htmlrag.superrag.to_html.parse_cached`)."""
    try:
        entry = parse_cache_file(pdf, cache_dir)
    except (OSError, HtmlRagError):
        return
    if entry is not None:
        entry.unlink(missing_ok=True)


__all__ = ["Builds", "Busy", "Stored", "content_id"]
