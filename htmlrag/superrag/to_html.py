"""PDFs as HTML for the HtmlRAG path (HtmlRAG Appendix A): parse the layout once, then write one HTML page.

The page keeps the structure the parser recovered: ``<title>``; each section as a ``<section>`` nested in its
parent's (the section tree, not the heading levels: a part and its items may share a level), its heading as
``<h1>``-``<h4>`` by its depth in the tree (deeper than 4: ``<h4>``); paragraphs as ``<p>``; tables as
the parser's ``<table>`` (rows, cells, caption); figures as ``<figure>`` with a ``<figcaption>`` and a ``<p>``
of the text inside the picture. ``<head>`` also carries two ``<meta>`` tags, ``superrag-doc-id`` (the
document's content id, as in the graph) and ``superrag-source`` (the file path), so that a page converted from a
PDF names its source; cleaning removes them like every ``<meta>``.

Parsing is the slow part (seconds per filing): :func:`parse_cached` keeps parsed documents in memory and,
given a folder, on disk (keyed by the file's SHA-256 and name, the parser options and the parser's code).
"""

from __future__ import annotations

import gzip
import html
import logging
import os
import pickle
import re
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from htmlrag.core.cache import content_key
from htmlrag.core.errors import CacheError
from htmlrag.core.fingerprint import PDF_PARSE, fingerprint
from htmlrag.core.io import sha256_file
from htmlrag.superrag.parse.model import FigureItem, Paragraph, ParsedDocument, TableItem

log = logging.getLogger(__name__)
_MEMO: dict[str, ParsedDocument] = {}
_MEMO_MAX = 64
_META = re.compile(r'<meta name="superrag-(doc-id|source)" content="([^"]*)"\s*/?>')


def _parse_key(p: Path, options: Any) -> tuple[str, str]:
    """The parse cache's key for ``p`` and the file's digest (``""`` when the file is missing)."""
    try:
        digest = sha256_file(p)
    except FileNotFoundError:
        digest = ""  # parse_pdf raises the proper InputError
    return content_key("parsed", digest, p.stem, asdict(options) if options is not None else None,
                       fingerprint(PDF_PARSE)), digest


def parse_cache_file(path: str | Path, cache_dir: str | Path, options: Any = None) -> Path | None:
    """The on-disk parse-cache entry :func:`parse_cached` keeps for ``path`` (None: none exists)."""
    key, digest = _parse_key(Path(path), options)
    _MEMO.pop(key, None)
    f = Path(cache_dir) / "parsed" / f"{key[:32]}.pkl.gz"
    return f if digest and f.exists() else None


def _parse_child() -> None:
    """The child of :func:`parse_isolated` (``python -c``): reads ``(path, options, memory_bytes)`` pickled on
    stdin, parses under that address-space limit, writes ``("ok", document)`` or ``("error", message)``
    pickled on stdout."""
    import resource
    import sys

    from htmlrag.superrag.parse.document import parse_pdf

    path, options, memory_bytes = pickle.load(sys.stdin.buffer)  # from our own parent, below
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        out: tuple[str, Any] = ("ok", parse_pdf(path, options=options))
    except MemoryError:
        out = ("error", f"{path}: parsing needed more than {memory_bytes / 2**30:.0f} GiB of memory; not added")
    except Exception as exc:  # sent back as text: the parent raises InputError naming the file
        out = ("error", str(exc) if str(exc).startswith(str(path)) else f"{path}: {type(exc).__name__}: {exc}")
    pickle.dump(out, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)


def parse_isolated(path: str | Path, *, options: Any = None, time_limit: float = 600.0,
                   memory_bytes: int = 4 << 30) -> ParsedDocument:
    """:func:`~htmlrag.superrag.parse.document.parse_pdf` in a child process, killed after ``time_limit``
    seconds, with at most ``memory_bytes`` of address space. For files from untrusted hands (the app's
    uploads): PyMuPDF holds the GIL while it lays out a page, so a PDF that is cheap to send and costly to
    parse (a content stream drawn by every page, a form drawn thousands of times) held every thread of a
    server; a child is killed on time, and its memory is its own.

    Raises:
        InputError: the parse failed, ran past the limit or out of memory (naming the file).
    """
    import subprocess
    import sys

    from htmlrag.core.errors import InputError

    cmd = [sys.executable, "-c", "from htmlrag.superrag.to_html import _parse_child; _parse_child()"]
    request = pickle.dumps((str(path), options, int(memory_bytes)))
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            out, err = proc.communicate(request, timeout=time_limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise InputError(f"{path}: parsing took more than {time_limit:g} s (its pages are too costly to lay "
                             "out); not added") from None
    try:
        status, value = pickle.loads(out)  # (our own child's answer)
    except Exception:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise InputError(f"{path}: the parser stopped without a result (exit code {proc.returncode}: "
                         f"{tail[0][:200]}); not added") from None
    if status != "ok":
        raise InputError(str(value))
    return value


def parse_cached(path: str | Path, *, options: Any = None, cache_dir: str | Path | None = None,
                 time_limit: float | None = None) -> ParsedDocument:
    """:func:`~htmlrag.superrag.parse.document.parse_pdf` through an in-memory and an optional on-disk cache;
    with ``time_limit`` (seconds) the parse runs in a child process (:func:`parse_isolated`).

    Raises:
        InputError: as ``parse_pdf`` (errors are not cached).
        CacheError: the cache folder cannot be written (an unreadable entry is parsed again, with a warning).
    """
    # CLI start: every HTML run reaches this module (scoring.stages.page_source), `htmlrag --help` included; the
    # PDF parser (a dozen modules) loads only when a PDF is parsed
    from htmlrag.superrag.parse.document import parse_pdf

    p = Path(path)
    key, digest = _parse_key(p, options)
    if key in _MEMO:
        return replace(_MEMO[key], path=str(p))
    disk = Path(cache_dir) / "parsed" / f"{key[:32]}.pkl.gz" if cache_dir is not None and digest else None
    doc: ParsedDocument | None = None
    if disk is not None and disk.exists():
        try:
            with gzip.open(disk, "rb") as fh:
                doc = pickle.load(fh)  # our own cache folder, written below
        except Exception as exc:  # a torn or stale file: parse again
            log.warning("%s: unreadable parse cache entry (%s); parsing again", disk, exc)
            doc = None
    if doc is None:
        doc = parse_pdf(p, options=options) if time_limit is None else \
            parse_isolated(p, options=options, time_limit=time_limit)  # raises on failure: nothing is stored
        if disk is not None:
            _store(disk, doc)
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = doc
    return replace(doc, path=str(p))


def _store(disk: Path, doc: ParsedDocument) -> None:
    """Write one parse cache entry atomically.

    Raises:
        CacheError: the cache folder cannot be written (a file in its place, no permission, a full disk).
    """
    tmp = None
    try:
        disk.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=disk.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as fh:
            pickle.dump(doc, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, disk)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise CacheError(f"parse cache {disk.parent}: cannot write ({exc.strerror or exc})") from exc


def _item_html(item: Paragraph | TableItem | FigureItem) -> str:
    if isinstance(item, Paragraph):
        return f"<p>{html.escape(item.text)}</p>"
    if isinstance(item, TableItem):
        return item.html
    cap = f"<figcaption>{html.escape(item.caption)}</figcaption>" if item.caption else ""
    inner = f"<p>{html.escape(item.text)}</p>" if item.text else ""
    return f"<figure>{cap}{inner}</figure>" if cap or inner else ""


def document_html(doc: ParsedDocument) -> str:
    """The HTML page of a parsed document (see the module docstring)."""
    out = ["<!DOCTYPE html><html><head>", f"<title>{html.escape(doc.title)}</title>",
           f'<meta name="superrag-doc-id" content="{html.escape(doc.doc_id)}">',
           f'<meta name="superrag-source" content="{html.escape(str(doc.path))}">', "</head><body>"]
    opened: list[int] = []  # the sections whose <section> is open, outermost first
    for n, sec in enumerate(doc.sections):
        if sec.heading is not None:
            chain, j = set(), sec.parent
            while j is not None and j not in chain:
                chain.add(j)
                j = doc.sections[j].parent
            while opened and opened[-1] not in chain:  # close up to the section's parent (or its nearest open
                out.append("</section>")                # ancestor, when the parent closed before it)
                opened.pop()
            out.append("<section>")
            opened.append(n)
            tag = f"h{min(len(opened), 4)}"
            out.append(f"<{tag}>{html.escape(sec.title)}</{tag}>")
        out.extend(_item_html(i) for i in sec.items)
    out.extend("</section>" for _ in opened)
    out.append("</body></html>")
    return "".join(out)


def pdf_to_html(path: str | Path, *, options: Any = None, cache_dir: str | Path | None = None) -> str:
    """Parse a PDF (cached, see :func:`parse_cached`) and return its HTML page."""
    return document_html(parse_cached(path, options=options, cache_dir=cache_dir))


def page_source(page: str) -> tuple[str, str] | None:
    """``(doc_id, source path)`` of a page made by :func:`document_html`, or None for other pages."""
    found = dict(_META.findall(page[:4096]))
    if "doc-id" not in found:
        return None
    return html.unescape(found["doc-id"]), html.unescape(found.get("source", ""))
