"""Documents enter and leave a corpus whole: a build killed half-way (``kill -9``, a crash, a full disk) leaves
nothing a query can see once the corpus is opened for writing again.

* Before the first graph node, vector or full-text entry of a document is written, its id is recorded as
  *pending* in ``manifest.json`` (written atomically); when the document is complete it moves to
  ``documents`` in the same manifest write. A build that fails half-way removes what it wrote at once.
* :func:`remove_document` marks the document pending and drops it from ``documents`` first, then removes its
  full-text entries, vectors and graph nodes: a removal killed half-way is finished by the next recovery.
* :func:`recover` (run by :func:`~htmlrag.superrag.build.corpus.open_writable`) removes every pending document
  and every document id found in the graph or the full-text index that the manifest does not list (a corpus
  damaged before pending marks existed).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)
PENDING = "pending"
#: Document ids present in the graph (every node of a document carries its id).
GRAPH_DOC_IDS = "MATCH (n) WHERE n.doc_id IS NOT NULL AND n.doc_id <> '' RETURN DISTINCT n.doc_id AS doc"


def _save(corpus: Any) -> None:
    corpus.save_manifest()


def mark_pending(corpus: Any, doc_id: str) -> None:
    """Record ``doc_id`` as being written (before anything of it is)."""
    pending = corpus.manifest.setdefault(PENDING, [])
    if doc_id not in pending:
        pending.append(doc_id)
        _save(corpus)


def finish(corpus: Any, result: Any) -> None:
    """After a build of one document: record it (``result.ok``) or remove what it wrote; clear its mark."""
    pending = corpus.manifest.get(PENDING, [])
    if result.doc_id and result.doc_id in pending:
        if not result.ok:  # half-written (an earlier copy it replaced is gone too)
            _erase(corpus, result.doc_id)
            corpus.manifest["documents"].pop(result.doc_id, None)
        pending.remove(result.doc_id)
        if not pending:
            corpus.manifest.pop(PENDING, None)
    if result.ok:
        corpus.manifest["documents"][result.doc_id] = {
            "path": result.path, "title": result.title, "name": result.name, "pages": result.pages,
            "seconds": round(result.seconds, 3), "warnings": result.warnings}
    if result.ok or result.doc_id:
        _save(corpus)


def _erase(corpus: Any, doc_id: str) -> None:
    """Remove a document's full-text entries, vectors and graph nodes (in that order; each step idempotent)."""
    corpus.fulltext.delete_document(doc_id)
    corpus.vectors.delete_document(doc_id)
    corpus.store.delete_document(doc_id)


def remove_document(corpus: Any, doc_id: str) -> bool:
    """Remove one document from a writable corpus (graph nodes, vectors, full-text entries, manifest entry).

    Returns:
        False when the corpus holds nothing of ``doc_id`` (nothing is changed then).
    """
    listed = doc_id in corpus.manifest["documents"]
    if not listed and doc_id not in stray_ids(corpus) and doc_id not in corpus.manifest.get(PENDING, []):
        return False
    corpus.manifest["documents"].pop(doc_id, None)
    mark_pending(corpus, doc_id)  # saves the manifest without the document: a query never lists it again
    _erase(corpus, doc_id)
    corpus.manifest[PENDING].remove(doc_id)
    if not corpus.manifest[PENDING]:
        corpus.manifest.pop(PENDING)
    _save(corpus)
    log.info("%s: removed %s", corpus.folder, doc_id)
    return True


def stray_ids(corpus: Any) -> set[str]:
    """Document ids in the graph or the full-text index that the manifest does not list as built."""
    found = {str(r["doc"]) for r in corpus.store.query(GRAPH_DOC_IDS)}
    items = getattr(corpus.fulltext, "doc_ids", None)
    if callable(items):
        found |= set(items())
    return found - set(corpus.manifest["documents"])


def recover(corpus: Any) -> list[str]:
    """Remove every pending document and every stray document id (see the module docstring); returns them."""
    todo = list(dict.fromkeys([*corpus.manifest.get(PENDING, []), *sorted(stray_ids(corpus))]))
    for doc_id in todo:
        log.warning("%s: removing %s, left half-built or half-removed by an interrupted process", corpus.folder,
                    doc_id)
        corpus.manifest["documents"].pop(doc_id, None)
        _erase(corpus, doc_id)
    if PENDING in corpus.manifest or todo:
        corpus.manifest.pop(PENDING, None)
        _save(corpus)
    return todo
