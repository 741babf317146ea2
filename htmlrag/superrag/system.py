"""SuperRAG graph retrieval as a context builder for the evaluation loop (same protocol as
:class:`htmlrag.pruning.pipeline.HtmlRagPipeline`: ``run(question, pages) -> PipelineResult``).

The pages are the HTML pages of the question's PDFs made by :mod:`htmlrag.superrag.to_html`; their
``superrag-doc-id``/``superrag-source`` tags say which documents to search. A :class:`CorpusHandle` adds a
document to its corpus the first time a question needs it (the parse is shared with the HTML conversion
through :func:`~htmlrag.superrag.to_html.parse_cached`), so a run with ``limit=3`` builds only what its three
questions need. The evidence (best first) is written as HTML -- a ``<section>`` per item with its title as
``<h3>``, tables as tables, figures as ``<figure>``, and a line naming the source file and pages -- converted
to the context format and cut to the token budget (the lowest-ranked evidence goes first).
"""

from __future__ import annotations

import html
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.locks import hold_or_refuse
from htmlrag.html.formats import convert
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.superrag.build.corpus import open_writable
from htmlrag.superrag.graph.schema import CONTENT, FLAT
from htmlrag.superrag.retrieve.evidence import Evidence
from htmlrag.superrag.settings import GraphSetting, setting_retriever
from htmlrag.superrag.to_html import page_source, parse_cached

log = logging.getLogger(__name__)


class CorpusHandle:
    """A corpus folder opened once per process for adding documents on demand and retrieving.

    Args:
        folder: the corpus folder (created when new).
        config: a :class:`~htmlrag.superrag.build.corpus.CorpusConfig` for a new corpus.
        embedder: the embedder (default: the one the config names).
        parse_cache: folder of the on-disk parse cache (shared with the PDF -> HTML conversion).

    The folder is locked (``fcntl``) while the handle is open: a second process gets a clear error instead
    of a corrupted store.
    """

    def __init__(self, folder: str | Path, config: Any = None, *, embedder: Any = None,
                 parse_cache: str | Path | None = None) -> None:
        self.folder, self.config, self.embedder, self.parse_cache = Path(folder), config, embedder, parse_cache
        self._corpus: Any = None
        self._lock: Any = None
        self.build_seconds = 0.0
        self.failed: dict[str, str] = {}

    @property
    def corpus(self) -> Any:
        if self._corpus is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = _lock(self.folder / ".lock")
            self._corpus = open_writable(self.folder, config=self.config, embedder=self.embedder)
        return self._corpus

    def ensure(self, sources: Sequence[tuple[str, str]]) -> None:
        """Add the documents ``(doc_id, pdf path)`` that are not in the corpus yet.

        Raises:
            InputError: a document cannot be parsed (also on later questions that need it).
        """
        corpus = self.corpus
        for doc_id, path in sources:
            if doc_id in self.failed:
                raise InputError(self.failed[doc_id])
            if corpus.has_document(doc_id):
                continue
            t0 = time.perf_counter()
            log.info("graph corpus %s: adding %s", self.folder.name, Path(path).name)
            try:
                doc = parse_cached(path, cache_dir=self.parse_cache)
                res = corpus.add_document(path, parsed=doc)
            except HtmlRagError as exc:
                self.failed[doc_id] = str(exc)
                raise
            self.build_seconds += time.perf_counter() - t0
            if not res.ok:
                self.failed[doc_id] = res.error
                raise InputError(res.error)
            log.info("graph corpus %s: %s added (%d pages, %d nodes) in %.1f s", self.folder.name,
                     Path(path).name, res.pages, res.nodes, time.perf_counter() - t0)

    def source_name(self, doc_id: str) -> str:
        d = self.corpus.manifest["documents"].get(doc_id)
        return Path(d["path"]).stem if d else doc_id

    def close(self) -> None:
        if self._corpus is not None:
            self._corpus.close()
            self._corpus = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _lock(path: Path) -> Any:
    return hold_or_refuse(path, f"{path.parent}: the graph corpus is in use by another process; graph systems run "
                                "in one process at a time (no sharding)")


def _pages(e: Evidence) -> str:
    if not e.pages:
        return ""
    return f"p. {e.pages[0]}" if len(e.pages) == 1 else f"pp. {e.pages[0]}-{e.pages[-1]}"


def render_evidence(evidence: Sequence[Evidence], source: Any = None) -> str:
    """Evidence as one HTML page (see the module docstring); ``source(doc_id) -> name`` names the files."""
    out = ["<html><body>"]
    for e in evidence:
        out.append("<section>")
        if e.title and e.kind != "Figure":
            out.append(f"<h3>{html.escape(e.title)}</h3>")
        where = ", ".join(x for x in (source(e.doc_id) if source else "", _pages(e)) if x)
        if where:
            out.append(f"<p>[{html.escape(where)}]</p>")
        if e.html:
            out.append(e.html)
        elif e.kind == "Figure":
            cap = f"<figcaption>{html.escape(e.title)}</figcaption>" if e.title else ""
            out.append(f"<figure>{cap}<p>{html.escape(e.text)}</p></figure>")
        else:
            out.append(f"<p>{html.escape(e.text)}</p>")
        out.append("</section>")
    out.append("</body></html>")
    return "".join(out)


class GraphContextPipeline:
    """Graph retrieval of one setting, turned into a reader context of at most ``budget`` tokens.

    Args:
        handle: the shared corpus.
        setting: which retrieval stages run.
        tokenizer: token counter (the pruners' and the reader's).
        budget: context budget in tokens.
        fmt: ``html``, ``text`` or ``markdown``.
        reader: the self-reflection reader (``prompt -> reply``; None: the keyword heuristic).
        toc_reader: the model that picks sections from the contents (``setting.toc_select="reader"``).
    """

    def __init__(self, handle: CorpusHandle, setting: GraphSetting, tokenizer: Any, *, budget: int = 4096,
                 fmt: str = "html", reader: Any = None, toc_reader: Any = None) -> None:
        self.handle, self.setting, self.tokenizer = handle, setting, tokenizer
        self.budget, self.fmt, self.reader, self.toc_reader = budget, fmt, reader, toc_reader
        self._retriever: Any = None
        self._trace: dict[str, Any] = {}
        self._chunks: dict[tuple[str, ...], str] = {}
        self.last_evidence: list[Evidence] = []
        # the stage-loss waterfall: the non-layout setting chunks the PDFs' text layer, not the layout parse
        self.waterfall_inputs = ("pdf_text",) if setting.flat else None

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """Retrieve from the documents the pages came from; the context is the rendered evidence."""
        return self.run_budgets(question, pages, [self.budget])[self.budget]

    def chunk_text(self, doc_ids: Sequence[str]) -> str:
        """The text of every chunk of ``doc_ids`` this setting searches (the waterfall's ``chunks`` stage)."""
        key = tuple(doc_ids)
        if key not in self._chunks:
            kinds = FLAT if self.setting.flat else CONTENT
            texts = [str(r.get("text") or "") for d in doc_ids for kind in kinds
                     for r in self.handle.corpus.store.query(
                         f"MATCH (n:`{kind}`) WHERE n.doc_id = $doc RETURN n.text AS text", {"doc": d})]
            self._chunks = {key: "\n".join(texts)}  # the last question's documents only
        return self._chunks[key]

    def run_budgets(self, question: str, pages: Sequence[str | bytes], budgets: Sequence[int]
                    ) -> dict[int, PipelineResult]:
        """One retrieval, its evidence cut to each budget (a budget frontier); see :meth:`run`. The stages of
        the waterfall are ``chunks``, ``retrieved`` (the first stage's evidence) and ``reranked`` (the final
        evidence before cutting)."""
        t0 = time.perf_counter()
        sources = []
        for i, p in enumerate(pages):
            text = p.decode("utf-8", "replace") if isinstance(p, bytes) else p
            src = page_source(text)
            if src is None:
                raise InputError(f"page {i}: not converted from a PDF (no superrag-doc-id); graph systems need "
                                 "a PDF dataset (docbench, spiqa, sec10q)")
            sources.append(src)
        self.handle.ensure(sources)
        t1 = time.perf_counter()
        if self._retriever is None:
            self._retriever = setting_retriever(self.handle.corpus, self.setting, reader=self.reader,
                                                toc_reader=self.toc_reader, trace=self._trace)
        doc_ids = list(dict.fromkeys(d for d, _ in sources))
        self._trace.clear()
        self.last_evidence = self._retriever(question, self.setting.k, doc_ids)
        page = render_evidence(self.last_evidence, self.handle.source_name)
        full = convert(page, self.fmt) if self.fmt != "html" else page
        t2 = time.perf_counter()
        stages = {"chunks": self.chunk_text(doc_ids),
                  "retrieved": "\n".join(e.text for e in self._trace.get("retrieved", [])), "reranked": full}
        full_tokens = self.tokenizer.count(full)
        out = {}
        for b in sorted({int(x) for x in budgets}):
            context = self.tokenizer.truncate(full, b)
            res = PipelineResult(context=context, tokens=self.tokenizer.count(context), seconds=0.0)
            res.stages = dict(stages)
            res.stage_formats = {"chunks": "text", "retrieved": "text", "reranked": self.fmt}
            res.stage_tokens = {"evidence": full_tokens}
            res.stage_seconds = {"build": t1 - t0, "retrieve": t2 - t1}
            res.seconds = t2 - t0
            out[b] = res
        return out
