"""Ask: retrieve evidence from the chosen documents, optionally answer with a reader, and say where the evidence
lies (PDF page regions; blocks of HTML pages).

PDFs are searched with a SuperRAG retriever over the layout graph (:meth:`htmlrag.superrag.build.corpus.Corpus.retrieve`;
the Cypher retriever runs a query the user typed or a model wrote, checked by the read-only guard
:func:`htmlrag.superrag.graph.readonly.check_read_only` and bounded by :mod:`htmlrag.superrag.graph.bounds` before
it reaches the read-only database). Questions run side by side: the corpus is shared, not locked, while read. HTML pages are
searched the HtmlRAG way: cleaned, split into blocks, ranked (BM25 or embeddings); the best blocks are the
evidence and the pages pruned to the budget are the reader's context. The reader sees the PDF evidence as
:func:`htmlrag.superrag.system.render_evidence` writes it, then the pruned pages, cut to the budget.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.app.library import Library, display_name
from htmlrag.app.pages import EVIDENCE_WORDS, block_tree, safe_table_html
from htmlrag.app.pdfview import evidence_regions, section_paths
from htmlrag.app.readers import Readers
from htmlrag.core.errors import HtmlRagError, InputError, ServiceError
from htmlrag.pruning.prune import prune_to_budget, rank_blocks
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.readers.base import ReadRequest
from htmlrag.superrag.graph.bounds import bound_query
from htmlrag.superrag.retrieve.cypher_qa import FixedCypherWriter
from htmlrag.superrag.system import render_evidence

log = logging.getLogger(__name__)

#: Retrievers the Ask page offers for PDFs (htmlrag.superrag.pipelines.RETRIEVERS has more).
PDF_RETRIEVERS = ("full", "hybrid", "toc", "tables", "reflect", "cypher")
#: Rankers for HTML pages.
HTML_RANKERS = ("bm25", "embed")
MAX_QUESTION = 2000


@dataclass
class AskRequest:
    """One question.

    Attributes:
        question: the question (at most 2000 characters).
        retriever: one of :data:`PDF_RETRIEVERS` (for PDFs).
        reader: ``none``, ``openai`` or ``hf``.
        k: evidence items per source kind (1-50).
        docs: document ids to search (PDF doc ids and page ids); empty: all.
        cypher: a Cypher query for the ``cypher`` retriever (without it a model reader writes one).
        budget: reader context budget in tokens.
        html_ranker: ``bm25`` or ``embed`` (for HTML pages).
    """

    question: str
    retriever: str = "full"
    reader: str = "none"
    k: int = 5
    docs: list[str] = field(default_factory=list)
    cypher: str = ""
    budget: int = 2048
    html_ranker: str = "bm25"

    def validate(self) -> None:
        q = self.question.strip()
        if not q:
            raise InputError("the question is empty")
        if len(q) > MAX_QUESTION:
            raise InputError(f"the question is {len(q)} characters long; at most {MAX_QUESTION}")
        if self.retriever not in PDF_RETRIEVERS:
            raise InputError(f"unknown retriever {self.retriever!r}; choose one of {', '.join(PDF_RETRIEVERS)}")
        if self.html_ranker not in HTML_RANKERS:
            raise InputError(f"unknown HTML ranker {self.html_ranker!r}; choose one of {', '.join(HTML_RANKERS)}")
        if not 1 <= self.k <= 50:
            raise InputError(f"k must be within 1-50, got {self.k}")
        if not 64 <= self.budget <= 131072:
            raise InputError(f"budget must be within 64-131072 tokens, got {self.budget}")


#: Estimated memory of a page's block tree per byte of the page (a 0.9 MB page's tree, block texts included,
#: took 14 MB: 15 bytes per byte).
TREE_BYTES_PER_BYTE = 16


class PageTrees:
    """Block trees of HTML pages, kept between questions: cleaning a page and splitting it into blocks is most
    of the cost of asking over it (0.27 s for a 0.9 MB page), and every question over the page needs the same
    tree. A least-recently-used cache of at most ``max_pages`` trees and ``max_bytes`` of estimated memory
    (:data:`TREE_BYTES_PER_BYTE`); a tree larger than that is built, used, and not kept.

    The key is the page's bytes (SHA-256) and every other input of :func:`htmlrag.app.pages.block_tree`: the name
    (its error messages name the page), the block size and sibling packing (the cleaner's options are fixed
    there). A kept tree is shared, never changed: ranking reads it, pruning and marking work on copies
    (:func:`htmlrag.pruning.prune.prune_to_budget`, :func:`htmlrag.app.pages.mark_blocks`), and what a tree
    computes on first use (block texts) is the same whoever computes it. Safe under concurrent requests: a lock
    guards the cache, and a page two questions need at once is built once (the second waits for the first). A
    page that fails is not kept: the next question tries again.
    """

    def __init__(self, max_pages: int = 256, max_bytes: int = 256 << 20) -> None:
        self.max_pages, self.max_bytes = max_pages, max_bytes
        self._items: OrderedDict[tuple[str, str, int, bool], tuple[Any, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self._building: dict[tuple[str, str, int, bool], threading.Event] = {}

    def get(self, data: bytes, name: str, max_words: int = EVIDENCE_WORDS, pack: bool = True) -> Any:
        """The block tree of the page ``data`` called ``name`` (:func:`htmlrag.app.pages.block_tree`), built
        once while kept."""
        key = (hashlib.sha256(data).hexdigest(), name, max_words, pack)
        while True:
            with self._lock:
                hit = self._items.get(key)
                if hit is not None:
                    self._items.move_to_end(key)
                    return hit[0]
                building = self._building.get(key)
                if building is None:
                    self._building[key] = threading.Event()
                    break
            building.wait()  # another question builds this page: take its tree (or build it if that failed)
        try:
            tree = block_tree(data, name, max_words, pack=pack)
        except BaseException:
            with self._lock:
                self._building.pop(key).set()
            raise
        weight = TREE_BYTES_PER_BYTE * len(data)
        with self._lock:
            if weight <= self.max_bytes and self.max_pages > 0:
                self._items[key] = (tree, weight)
                self._size += weight
                while len(self._items) > self.max_pages or self._size > self.max_bytes:
                    _, (_, gone) = self._items.popitem(last=False)
                    self._size -= gone
            self._building.pop(key).set()
        return tree

    def clear(self) -> None:
        """Forget every kept tree."""
        with self._lock:
            self._items.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """Estimated bytes of the kept trees."""
        return self._size


class Asker:
    """Answers :class:`AskRequest` over a :class:`~htmlrag.app.library.Library`; HTML pages' block trees are
    kept between questions (:class:`PageTrees`)."""

    def __init__(self, library: Library, readers: Readers, rankers: Any, trees: PageTrees | None = None) -> None:
        self.library, self.readers, self.rankers = library, readers, rankers
        self.trees = trees if trees is not None else PageTrees()

    def ask(self, req: AskRequest) -> dict[str, Any]:
        """The answer, the evidence (best first per source) and timings; see ``docs/app.md`` for the fields.

        A reader whose service failed (while answering, reflecting or writing a Cypher query) stays "down" once
        failed: it is forgotten, so the next question builds it afresh and a fixed endpoint works."""
        try:
            return self._ask(req)
        except ServiceError:
            self.readers.forget(req.reader)
            raise

    def _ask(self, req: AskRequest) -> dict[str, Any]:
        req.validate()
        t0 = time.perf_counter()
        pdf_ids, page_ids = self._scope(req.docs)
        if not pdf_ids and not page_ids:
            raise InputError("no documents to search: upload PDFs or HTML pages first")
        reader = self.readers.get(req.reader)  # fails fast when not configured
        out: dict[str, Any] = {"question": req.question.strip(), "retriever": req.retriever, "reader": req.reader,
                               "evidence": [], "cypher_query": None, "answer": "", "reflection": None,
                               "errors": []}
        contexts: list[str] = []
        if pdf_ids:
            ev, ctx, extra = self._pdf(req, pdf_ids)
            out["evidence"] += ev
            out.update(extra)
            contexts.append(ctx)
        if page_ids:
            ev, ctx, errors = self._html(req, page_ids)
            out["evidence"] += ev
            out["errors"] += errors
            contexts.append(ctx)
        t1 = time.perf_counter()

        tok = load_tokenizer(self.library.settings.tokenizer)
        context = tok.truncate("\n".join(c for c in contexts if c), req.budget)
        out["context_tokens"] = tok.count(context)
        if reader is not None:
            (res,) = reader.read([ReadRequest(req.question.strip(), context, fmt="html", short_answer=False)])
            out["answer"] = res.text
        t2 = time.perf_counter()
        out["seconds"] = {"retrieve": round(t1 - t0, 3), "read": round(t2 - t1, 3), "total": round(t2 - t0, 3)}
        return out

    def _scope(self, docs: Sequence[str]) -> tuple[list[str], list[str]]:
        pdfs = list(self.library.manifest().get("documents", {}))
        pages = list(self.library.pages_manifest())
        if not docs:
            return pdfs, pages
        unknown = [d for d in docs if d not in pdfs and d not in pages]
        if unknown:
            raise InputError(f"unknown document(s): {', '.join(map(repr, unknown[:5]))}")
        return [d for d in docs if d in pdfs], [d for d in docs if d in pages]

    def _writer(self, req: AskRequest) -> Any:
        if req.retriever != "cypher":
            return None

        if req.cypher.strip():  # refused here, with the guard's or a bound's message, before anything runs
            bound_query(req.cypher, None, self.library.settings.query_limits())
            return FixedCypherWriter(req.cypher)
        chat = self.readers.chat(req.reader)
        if chat is None:
            raise InputError("the cypher retriever needs a Cypher query, or a model reader to write one")
        return chat

    def _pdf(self, req: AskRequest, doc_ids: list[str]) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
        writer = self._writer(req)
        chat = self.readers.chat(req.reader) if req.retriever in ("reflect", "full") else None
        manifest = self.library.manifest().get("documents", {})
        with self.library.reading() as corpus:
            retriever = corpus.retriever(req.retriever, reader=chat, cypher_writer=writer)
            evidence = retriever(req.question.strip(), req.k, doc_ids)
            paths = section_paths(corpus, [e.node_id for e in evidence])
            by_doc: dict[str, list[Any]] = defaultdict(list)
            for e in evidence:
                if e.doc_id in manifest:
                    by_doc[e.doc_id].append(e)
            regions: dict[str, list[Any]] = {}
            for doc_id, evs in by_doc.items():
                regions.update(evidence_regions(self.library.pdf_path(doc_id), evs, corpus=corpus))
        names = {d: _name(m["path"]) for d, m in manifest.items()}
        items = []
        for rank, e in enumerate(evidence, start=1):
            items.append({
                "rank": rank, "source": "pdf", "node_id": e.node_id, "kind": e.kind, "doc_id": e.doc_id,
                "doc_name": names.get(e.doc_id, e.doc_id), "pages": list(e.pages), "score": round(float(e.score), 6),
                "title": e.title, "section_path": paths.get(e.node_id, []), "text": e.text[:4000],
                "table_html": safe_table_html(e.html) if e.html else "", "retriever": e.retriever,
                "regions": [r.to_dict() for r in regions.get(e.node_id, [])],
            })
        extra: dict[str, Any] = {"cypher_query": getattr(_inner(retriever), "last_query", None)}
        decision = getattr(_inner(retriever, "reflect"), "last_decision", None)
        if req.retriever in ("reflect", "full"):
            extra["reflection"] = decision
        return items, render_evidence(evidence, lambda d: names.get(d, d)), extra

    def _trees(self, page_ids: list[str]) -> tuple[list[str], list[Any], list[dict[str, str]]]:
        """Block trees of the pages that can be read: ``(their ids, trees, errors of the others)``. One page
        that fails never fails the ask over the others; its error is listed (and logged)."""
        manifest = self.library.pages_manifest()
        ids, trees, errors = [], [], []
        for p in page_ids:
            try:
                trees.append(self.trees.get(self.library.page_path(p).read_bytes(), manifest[p]["name"]))
                ids.append(p)
            except Exception as exc:
                known = isinstance(exc, HtmlRagError)
                log.log(logging.WARNING if known else logging.ERROR, "ask: page %s left out: %s", p, exc,
                        exc_info=not known)
                errors.append({"doc_id": p, "doc_name": manifest[p]["name"],
                               "error": str(exc) if known else f"internal error ({type(exc).__name__})"})
        return ids, trees, errors

    def _html(self, req: AskRequest, page_ids: list[str]) -> tuple[list[dict[str, Any]], str, list[dict[str, str]]]:
        manifest = self.library.pages_manifest()
        page_ids, trees, errors = self._trees(page_ids)
        if not trees:
            return [], "", errors
        ranker = self.rankers.get(req.html_ranker)
        scores = ranker.score(req.question.strip(), trees)
        ranked = rank_blocks(trees, scores)
        if req.html_ranker == "bm25":  # a BM25 score of 0 means no question term in the block: not evidence
            ranked = [(ti, bi) for ti, bi in ranked if scores[ti][bi] > 0]
        items = []
        for rank, (ti, bi) in enumerate(ranked[: req.k], start=1):
            b = trees[ti].blocks[bi]
            pid = page_ids[ti]
            items.append({
                "rank": rank, "source": "html", "node_id": f"{pid}:{bi}", "kind": b.element.tag, "doc_id": pid,
                "doc_name": manifest[pid]["name"], "pages": [], "score": round(float(scores[ti][bi]), 6),
                "title": manifest[pid].get("title", ""), "section_path": list(b.path), "text": b.text[:4000],
                "table_html": "", "retriever": f"blocks:{req.html_ranker}", "regions": [],
                "view_url": f"/view/pages/{pid}?block={bi}#hr-0",
            })
        tok = load_tokenizer(self.library.settings.tokenizer)
        pruned = prune_to_budget(trees, scores, req.budget, tok, ranker=ranker, question=req.question.strip())
        return items, pruned.context, errors


def _inner(retriever: Any, name: str = "cypher") -> Any:
    """The stage called ``name`` inside a composed retriever (``full`` wraps ``reflect``), else the retriever."""
    if getattr(retriever, "name", "") == name:
        return retriever
    return getattr(retriever, name, retriever)


def _name(path: str) -> str:
    return display_name(path)
