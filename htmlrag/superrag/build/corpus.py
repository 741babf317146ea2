"""Build a corpus of PDFs into a graph database plus indexes, and open it again for retrieval.

A corpus folder holds ``manifest.json`` (settings and documents; never secrets), ``graph.kuzu`` (the
default graph store), ``vectors.db`` (Milvus Lite) or ``vectors/`` (numpy fallback), and ``fulltext/``
(embedded BM25). Servers are used when configured: Neo4j (``graph_backend="neo4j"``, ``neo4j_uri``; user and
password from ``NEO4J_USER``/``NEO4J_PASSWORD``), a Milvus server (``vector_uri``; token from
``MILVUS_TOKEN``), Elasticsearch (``fulltext_url``; key from ``ES_API_KEY``).

Building never stops at a bad PDF: each file's error is recorded in its :class:`DocResult` and the others
are still built. A file already in the corpus (same content, same id) is replaced.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.io import atomic_write
from htmlrag.core.models import MINILM
from htmlrag.superrag.build import staging
from htmlrag.superrag.build.embed import Embedder, make_embedder
from htmlrag.superrag.build.owners import document_label
from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.schema import CONTENT, FLAT, LABELS, TITLED
from htmlrag.superrag.retrieve.evidence import Evidence, fetch_nodes

log = logging.getLogger(__name__)
MANIFEST = "manifest.json"
#: Version of the graph layout on disk (2: Company nodes, HAS_NEXT between sections, FlatChunks).
FORMAT = 2


def _read_manifest(root: Path) -> dict[str, Any]:
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise HtmlRagError(f"{root}: corpus format {manifest.get('format')} was built by an older version "
                           f"(this one reads format {FORMAT}); build it again into a new folder")
    return manifest


@dataclass
class CorpusConfig:
    """Settings fixed when a corpus is created (stored in the manifest).

    Attributes:
        embedding_model: sentence-transformers name/path, or ``hashing-<dim>`` for the deterministic fake.
        chunk_words: largest SectionChunk, in words.
        min_chunk_words: a section boundary closes a chunk only from this many words on (shorter ones run on
            into the next section; see :mod:`~htmlrag.superrag.graph.build`).
        title_depth: how many section titles, innermost first, make up the title path that names a section and
            its content nodes (the title embedded with a chunk's text; ``Item 2. MD&A > Gross Margin`` is 2):
            1 = the section's own title. 3, the depth used since the first version, is chosen leave-one-company-out
            over depths 3, 1, 2 (``scripts/bench_superrag.py --title-depth 3,1,2``): the other companies' questions
            choose 3 for each company left out, although 1 lifts NVIDIA's and FinanceBench's (docs/superrag.md,
            issue 35's eleventh round; bench_superrag_loco_b271b91).
        table_rows: body rows per TableChunk (plus the repeated heading rows).
        flat_words: > 0 also builds the non-layout baseline's FlatChunks of this many words of each page's
            plain text (setting 1 of the paper; retriever ``flat``); 0 leaves them out.
        company: the owner of every document (a Company node above the Documents); None: no Company node
            unless ``companies`` or ``company_metadata`` names one.
        companies: file-name glob -> company (``{"*AAPL*": "Apple Inc."}``); the first match wins.
        company_metadata: a PDF info field (``author``, ``subject``, ...) holding the company's name, used
            for documents no glob matched.
        companies_from_names: for documents neither a glob nor the metadata field names, the company is read
            from the file name (:func:`htmlrag.superrag.build.owners.owner_of`: ``2023 Q3 AAPL.pdf`` -> ``AAPL``), so
            a folder of any companies' filings groups itself with no list of companies.
        figure_model: a vision-language model that describes every figure (:mod:`~htmlrag.superrag.build.figdesc`)
            through the OpenAI-compatible endpoint at ``$<figure_base_url_env>`` (key from
            ``$<figure_api_key_env>``); None (default): no descriptions.
        knn_k: ``IS_SIMILAR`` neighbours per content node.
        knn_metric: ``cosine``, ``dot`` or ``l2``.
        stems_per_node: key stems per content node for ``HAS_STEM``.
        graph_backend: ``kuzu`` (embedded) or ``neo4j``.
        neo4j_uri: e.g. ``neo4j://localhost:7687`` (with ``graph_backend="neo4j"``).
        neo4j_database: database name on the server (None: default).
        vector_backend: ``milvus-lite`` (embedded), ``milvus`` (server at ``vector_uri``) or ``numpy``.
        vector_uri: Milvus server URI.
        fulltext_backend: ``bm25`` (embedded) or ``elasticsearch`` (at ``fulltext_url``).
        fulltext_url: Elasticsearch URL.
        doc_header: where each content node (SectionChunk, TableChunk, Figure) gets a header naming its
            document and section path (``INTEL CORPORATION — Financial Statements > Note 9: Borrowings``):
            ``none`` (default: section path only), ``embed`` (in the text embedded for the vector index),
            ``both`` (also in the BM25 text). Not the default: with each company left out, the other companies'
            questions choose ``none`` for ``full`` every time (bench_superrag_loco_5f5e370; before the fourth and
            fifth rounds' parse fixes they chose ``both`` for every company, then for AAPL only), although ``both`` lifts
            NVIDIA's ``vector`` and ``hybrid`` (docs/superrag.md, issue 35). The name is the one the document gives itself
            (:func:`htmlrag.superrag.parse.names.document_name`: its cover page's registrant or title line, else
            its metadata title), else the owner in its file name. Nodes' ``title``/``text``, and so the
            evidence handed to a reader, never hold the header. Chosen leave-one-company-out
            (docs/superrag.md, "Document names in chunk headers").
    """

    embedding_model: str = MINILM
    chunk_words: int = 150
    min_chunk_words: int = 75
    title_depth: int = 3
    table_rows: int = 15
    flat_words: int = 0
    company: str | None = None
    companies: dict[str, str] = field(default_factory=dict)
    company_metadata: str | None = None
    companies_from_names: bool = False
    figure_model: str | None = None
    figure_base_url_env: str = "OPENAI_BASE_URL"
    figure_api_key_env: str = "OPENAI_API_KEY"
    knn_k: int = 3
    knn_metric: str = "cosine"
    stems_per_node: int = 5
    graph_backend: str = "kuzu"
    neo4j_uri: str | None = None
    neo4j_database: str | None = None
    vector_backend: str = "milvus-lite"
    vector_uri: str | None = None
    fulltext_backend: str = "bm25"
    fulltext_url: str | None = None
    doc_header: str = "none"

    def __post_init__(self) -> None:
        """Refuse a ``title_depth`` below 1 here, before a document is built with it."""
        d = self.title_depth
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise HtmlRagError(f"title_depth={d!r}: expected a whole number >= 1 (1: the section's own title)")


#: Where :attr:`CorpusConfig.doc_header` puts the document's name: (in the embedded text, in the BM25 text).
DOC_HEADERS: dict[str, tuple[bool, bool]] = {"none": (False, False), "embed": (True, False), "both": (True, True)}


def headed_texts(rows: list[dict[str, Any]], name: str) -> tuple[list[str], list[str]]:
    """(plain, headed) texts of content rows: ``title\ntext`` and ``name — title\ntext`` (the document's name
    before the section path; just the name when the row has no title)."""
    plain = [f"{r['title']}\n{r['text']}".strip() for r in rows]
    if not name:
        return plain, plain
    headed = [f"{name} — {r['title']}\n{r['text']}".strip() if r["title"].strip() else f"{name}\n{r['text']}".strip()
              for r in rows]
    return plain, headed


@dataclass
class DocResult:
    """Outcome of building one PDF: counts and seconds, or the error that stopped it."""

    path: str
    doc_id: str = ""
    title: str = ""
    name: str = ""
    pages: int = 0
    nodes: int = 0
    edges: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


class Corpus:
    """An opened corpus: graph store, vector index, full-text index and embedder.

    Use :func:`open_corpus` / :func:`build_corpus` rather than the constructor. Close it (or use ``with``).
    """

    TEXT_CACHE = 20000  # evidence embeddings kept in memory (~1.5 KB each with MiniLM)

    def save_manifest(self) -> None:
        """Write ``manifest.json`` of this corpus (atomically)."""
        write_manifest(self.folder, self.manifest)

    def __init__(self, folder: Path, config: CorpusConfig, *, embedder: Embedder | None, read_only: bool,
                 limits: Any = None) -> None:
        self.folder, self.config, self.read_only = folder, config, read_only
        self.embedder: Embedder = embedder or make_embedder(config.embedding_model)
        self.store = _open_store(folder, config, read_only, limits)
        self._vec: Any = None
        self.fulltext = _open_fulltext(folder, config)
        self._qcache: dict[str, np.ndarray] = {}
        self._tcache: dict[str, np.ndarray] = {}
        self._docs: dict[str, Any] | None = None

    @property
    def vectors(self) -> Any:
        """The vector index, opened on first use (Milvus Lite starts a local server process)."""
        if self._vec is None:
            self._vec = _open_vectors(self.folder, self.config, self._dim())
        return self._vec

    def _dim(self) -> int:
        dim = getattr(self.embedder, "dim", 0)
        return int(dim) if dim else int(self.embedder.encode(["x"]).shape[1])

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._vec is not None:
            self._vec.close()
            self._vec = None
        self.store.close()

    # --- what retrievers use -------------------------------------------------------------------------
    def nodes(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return fetch_nodes(self.store, ids)

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._qcache:
            self._qcache[text] = self.embedder.encode([text])[0]
        return self._qcache[text]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of evidence texts (rerank, expansion) through an in-memory cache keyed by the text: the
        same nodes come back for every setting and for related questions, so most are embedded once."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._tcache))
        if todo:
            if len(self._tcache) + len(todo) > self.TEXT_CACHE:
                self._tcache.clear()
            for t, v in zip(todo, self.embedder.encode(todo), strict=True):
                self._tcache[t] = v
        if not texts:
            return np.zeros((0, self._dim()), dtype=np.float32)
        return np.stack([self._tcache[t] for t in texts])

    def documents(self) -> list[dict[str, Any]]:
        return self.store.query(cypher.DOCUMENTS)

    def document_names(self, doc_ids: Sequence[str] | None = None) -> list[str]:
        """The name each document goes by (:func:`~htmlrag.superrag.build.owners.document_label`, kept in the
        manifest; ``""`` for documents built before names were kept), for ``doc_ids`` or every document."""
        docs = self._manifest_documents()
        return [str((docs.get(d) or {}).get("name") or "") for d in (doc_ids if doc_ids is not None else docs)]

    def _manifest_documents(self) -> dict[str, Any]:
        manifest = getattr(self, "manifest", None)  # a writable corpus keeps it current
        if manifest is None:
            if self._docs is None:
                self._docs = _read_manifest(self.folder).get("documents", {})
            return self._docs
        return manifest.get("documents", {})

    def retriever(self, name: str = "hybrid", *, reader: Any = None, cypher_writer: Any = None,
                  toc_reader: Any = None, rerank: bool = False, rerank_fuse: bool = True,
                  mix_tables: str = "turns") -> Any:
        """A retriever by name; see :func:`htmlrag.superrag.pipelines.make_retriever`."""
        from htmlrag.superrag.pipelines import make_retriever

        return make_retriever(self, name, reader=reader, cypher_writer=cypher_writer, toc_reader=toc_reader,
                              rerank=rerank, rerank_fuse=rerank_fuse, mix_tables=mix_tables)

    def retrieve(self, question: str, *, retriever: str = "hybrid", k: int = 10, doc_ids: Sequence[str] | None = None,
                 reader: Any = None, cypher_writer: Any = None, toc_reader: Any = None,
                 rerank: bool = False, rerank_fuse: bool = True, mix_tables: str = "turns") -> list[Evidence]:
        """Evidence for a question (node ids, pages, scores), best first."""
        return self.retriever(retriever, reader=reader, cypher_writer=cypher_writer, toc_reader=toc_reader,
                              rerank=rerank, rerank_fuse=rerank_fuse, mix_tables=mix_tables)(question, k, doc_ids)

    # --- building ------------------------------------------------------------------------------------
    def add_pdf(self, path: str | Path, *, parse_options: Any = None, password: str | None = None,
                parsed: Any = None) -> DocResult:
        """Parse one PDF and add it (replacing an earlier copy); errors are returned, not raised.

        ``parsed``: the document already parsed (a :class:`~htmlrag.superrag.parse.model.ParsedDocument`), e.g. from
        :func:`~htmlrag.superrag.to_html.parse_cached`; then the file is not parsed again.
        """
        from htmlrag.superrag.parse.document import parse_pdf

        res = DocResult(path=str(path))
        t0 = time.perf_counter()
        try:
            doc = parsed if parsed is not None else parse_pdf(path, options=parse_options, password=password)
            if self.config.figure_model:
                doc = self.describer(doc, path)
            res.doc_id, res.title, res.pages, res.warnings = doc.doc_id, doc.title, doc.page_count, doc.warnings
            res.name = document_label(doc)
            res.nodes, res.edges = self._write(doc)
        except HtmlRagError as exc:
            res.error = str(exc)
        except Exception as exc:  # one broken file never loses the batch
            log.debug("build failed", exc_info=True)
            res.error = f"{path}: {type(exc).__name__}: {exc}"
        res.seconds = time.perf_counter() - t0
        if res.error:
            log.error("%s", res.error)
        return res

    @property
    def describer(self) -> Any:
        """The figure describer of ``config.figure_model`` (replies cached in ``figures.sqlite``)."""
        if getattr(self, "_describer", None) is None:
            from htmlrag.factory import make_reader
            from htmlrag.readers.base import GenerationConfig
            from htmlrag.superrag.build.figdesc import FigureDescriber

            c = self.config
            reader = make_reader("openai", model=str(c.figure_model), window=8192,
                                 generation=GenerationConfig(max_new_tokens=300), base_url_env=c.figure_base_url_env,
                                 api_key_env=c.figure_api_key_env)
            self._describer = FigureDescriber(reader, self.folder / "figures.sqlite")
        return self._describer

    def company_of(self, doc: Any) -> str | None:
        """The company a document belongs to (see :class:`CorpusConfig`), or None."""
        import fnmatch

        c = self.config
        name = Path(doc.path).name
        for pattern, company in c.companies.items():
            if fnmatch.fnmatch(name, pattern):
                return company
        meta = (getattr(doc, "metadata", None) or {}).get(c.company_metadata or "", "").strip()
        if not meta and c.companies_from_names:
            from htmlrag.superrag.build.owners import owner_of

            return owner_of(name)
        return meta or c.company

    def _write(self, doc: Any) -> tuple[int, int]:
        from htmlrag.superrag.graph.build import company_id, document_graph
        from htmlrag.superrag.graph.links import add_similar, add_stems

        c = self.config
        company = self.company_of(doc)
        g = document_graph(doc, chunk_words=c.chunk_words, min_chunk_words=c.min_chunk_words,
                           table_rows=c.table_rows, company=company, flat_words=c.flat_words,
                           title_depth=c.title_depth)
        content = g.content(CONTENT)
        refs = [(r["kind"], r["id"]) for r in content]
        if c.doc_header not in DOC_HEADERS:
            raise HtmlRagError(f"doc_header={c.doc_header!r}: expected one of {', '.join(DOC_HEADERS)}")
        in_vec, in_bm25 = DOC_HEADERS[c.doc_header]
        texts, headed = headed_texts(content, document_label(doc) if in_vec or in_bm25 else "")
        vecs = self.embedder.encode(headed if in_vec else texts) if texts else \
            np.zeros((0, self._dim()), dtype=np.float32)
        add_similar(g, refs, vecs, k=c.knn_k, metric=c.knn_metric)
        add_stems(g, refs, texts, per_node=c.stems_per_node)
        titled = [r for r in g.content(TITLED) if r["title"].strip()]
        tvecs = self.embedder.encode([r["title"] for r in titled]) if titled else vecs[:0]
        flat = g.content(FLAT)
        fvecs = self.embedder.encode([r["text"] for r in flat]) if flat else vecs[:0]
        self._remove(doc.doc_id)
        if company:
            self._ensure_company(company, company_id(company))
        for lab in LABELS:
            if g.nodes.get(lab):
                self.store.write_nodes(lab, g.nodes[lab])
        for (rel, a, b), rows in g.edges.items():
            self.store.write_edges(rel, a, b, rows)
        ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
        kinds = lambda rows: [r["kind"] for r in rows]  # noqa: E731
        self.vectors.add("content", ids(content), vecs, [doc.doc_id] * len(content), kinds(content))
        self.vectors.add("titles", ids(titled), tvecs, [doc.doc_id] * len(titled), kinds(titled))
        self.vectors.add("flat", ids(flat), fvecs, [doc.doc_id] * len(flat), kinds(flat))
        everything = content + titled + flat
        self.fulltext.add(ids(everything), (headed if in_bm25 else texts) + [r["title"] for r in titled]
                          + [r["text"] for r in flat],
                          [doc.doc_id] * len(everything), kinds(everything))
        return sum(map(len, g.nodes.values())), sum(map(len, g.edges.values()))

    def _ensure_company(self, name: str, cid: str) -> None:
        from htmlrag.superrag.graph.store import node_row

        if not self.store.query("MATCH (c:Company) WHERE c.id = $id RETURN c.id AS id", {"id": cid}):
            self.store.write_nodes("Company", [node_row(id=cid, kind="Company", title=name)])
            self.store.write_edges("IS_UNDER", "Company", "Corpus", [{"src": cid, "dst": "corpus", "score": 1.0}])

    def _remove(self, doc_id: str) -> None:
        if self.store.query("MATCH (d:Document) WHERE d.id = $id RETURN d.id AS id", {"id": doc_id}):
            log.info("%s: already in the corpus; replacing it", doc_id)
            self.store.delete_document(doc_id)
            self.vectors.delete_document(doc_id)
            self.fulltext.delete_document(doc_id)


def _open_store(folder: Path, c: CorpusConfig, read_only: bool, limits: Any = None) -> Any:
    """The graph store; ``limits`` (:class:`~htmlrag.superrag.graph.bounds.QueryLimits`) bound its
    model-written and typed queries (None: the defaults)."""
    if c.graph_backend == "neo4j":
        from htmlrag.superrag.graph.neo4j_store import Neo4jStore

        if not c.neo4j_uri:
            raise HtmlRagError("graph_backend='neo4j' needs neo4j_uri")
        user, pw = os.environ.get("NEO4J_USER"), os.environ.get("NEO4J_PASSWORD")
        return Neo4jStore(c.neo4j_uri, auth=(user, pw) if user and pw else None, database=c.neo4j_database,
                          read_only=read_only, limits=limits)
    if c.graph_backend != "kuzu":
        raise HtmlRagError(f"unknown graph backend {c.graph_backend!r} (kuzu or neo4j)")
    from htmlrag.superrag.graph.store import KuzuStore

    return KuzuStore(folder / "graph.kuzu", read_only=read_only, limits=limits)


def _open_vectors(folder: Path, c: CorpusConfig, dim: int) -> Any:
    from htmlrag.superrag.index.vector import MilvusIndex, NumpyIndex

    if c.vector_backend == "numpy":
        return NumpyIndex(folder / "vectors", dim)
    if c.vector_backend == "milvus":
        if not c.vector_uri:
            raise HtmlRagError("vector_backend='milvus' needs vector_uri")
        return MilvusIndex(c.vector_uri, dim, token=os.environ.get("MILVUS_TOKEN"))
    if c.vector_backend != "milvus-lite":
        raise HtmlRagError(f"unknown vector backend {c.vector_backend!r} (milvus-lite, milvus or numpy)")
    return MilvusIndex(str(folder / "vectors.db"), dim)


def _open_fulltext(folder: Path, c: CorpusConfig) -> Any:
    from htmlrag.superrag.index.fulltext import BM25Index, ElasticsearchIndex

    if c.fulltext_backend == "elasticsearch":
        if not c.fulltext_url:
            raise HtmlRagError("fulltext_backend='elasticsearch' needs fulltext_url")
        return ElasticsearchIndex(c.fulltext_url, api_key=os.environ.get("ES_API_KEY"))
    if c.fulltext_backend != "bm25":
        raise HtmlRagError(f"unknown full-text backend {c.fulltext_backend!r} (bm25 or elasticsearch)")
    return BM25Index(folder / "fulltext")


def _milvus_lite_available() -> bool:
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError:
        return False
    return True


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False))


def _settings(root: Path, config: CorpusConfig | None, embedder: Embedder | None) -> tuple[CorpusConfig, dict[str, Any]]:
    mf = root / MANIFEST
    if mf.exists():
        manifest = _read_manifest(root)
        cfg = CorpusConfig(**manifest["config"])
    else:
        cfg = config or CorpusConfig()
        if embedder is not None:
            cfg.embedding_model = embedder.name
        if cfg.vector_backend == "milvus-lite" and not _milvus_lite_available():
            log.warning("milvus-lite is not installed; using the in-process numpy vector index instead")
            cfg.vector_backend = "numpy"
        manifest = {"format": FORMAT, "config": asdict(cfg), "documents": {}}
    if embedder is not None and embedder.name != cfg.embedding_model:
        raise HtmlRagError(f"{root}: corpus embeds with {cfg.embedding_model}, not {embedder.name}")
    return cfg, manifest


class WritableCorpus(Corpus):
    """A corpus open for adding documents and querying in the same process (see :func:`open_writable`)."""

    manifest: dict[str, Any]

    def has_document(self, doc_id: str) -> bool:
        return doc_id in self.manifest["documents"]

    def add_document(self, path: str | Path, *, parse_options: Any = None, password: str | None = None,
                     parsed: Any = None) -> DocResult:
        """:meth:`Corpus.add_pdf`, then record the document in the manifest (written atomically); a document
        that fails half-way is removed again (:mod:`~htmlrag.superrag.build.staging`)."""
        r = self.add_pdf(path, parse_options=parse_options, password=password, parsed=parsed)
        staging.finish(self, r)
        return r

    def remove_document(self, doc_id: str) -> bool:
        """Remove a document (graph nodes, vectors, full-text entries, manifest entry); False if absent."""
        return staging.remove_document(self, doc_id)

    def _write(self, doc: Any) -> tuple[int, int]:
        staging.mark_pending(self, doc.doc_id)  # before anything of it is written
        return super()._write(doc)


def open_writable(folder: str | Path, *, config: CorpusConfig | None = None,
                  embedder: Embedder | None = None) -> WritableCorpus:
    """Open the corpus at ``folder`` for writing (created with ``config`` when new; an existing corpus keeps
    the settings in its manifest). Close it when done."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    cfg, manifest = _settings(root, config, embedder)
    corpus = WritableCorpus(root, cfg, embedder=embedder, read_only=False)
    corpus.manifest = manifest
    try:
        corpus.store.create_schema()
        if not corpus.store.query("MATCH (c:Corpus) RETURN c.id AS id"):
            from htmlrag.superrag.graph.store import node_row

            corpus.store.write_nodes("Corpus", [node_row(id="corpus", kind="Corpus", title=root.name)])
        staging.recover(corpus)  # what a killed build or removal left half-done
    except Exception:
        corpus.close()
        raise
    write_manifest(root, manifest)
    return corpus


def build_corpus(pdfs: Sequence[str | Path], folder: str | Path, *, config: CorpusConfig | None = None,
                 embedder: Embedder | None = None, parse_options: Any = None,
                 password: str | None = None) -> list[DocResult]:
    """Parse PDFs into the corpus at ``folder`` (created, or extended with its stored settings).

    Args:
        pdfs: PDF files; each failure is reported in its result and the rest are still built.
        folder: the corpus folder.
        config: settings for a new corpus (an existing corpus keeps the settings in its manifest).
        embedder: an embedder instance (its ``name`` must match the corpus's ``embedding_model``).
        parse_options: :class:`~htmlrag.superrag.parse.document.ParseOptions`.
        password: user password for encrypted PDFs.

    Returns:
        One :class:`DocResult` per PDF, in order.
    """
    with open_writable(folder, config=config, embedder=embedder) as corpus:
        return [corpus.add_document(p, parse_options=parse_options, password=password) for p in pdfs]


def open_corpus(folder: str | Path, *, embedder: Embedder | None = None, read_only: bool = True,
                limits: Any = None) -> Corpus:
    """Open a built corpus (read-only by default: the graph store refuses writes at the connection).

    ``limits``: a :class:`~htmlrag.superrag.graph.bounds.QueryLimits` for model-written and typed queries
    (None: the defaults)."""
    root = Path(folder)
    mf = root / MANIFEST
    if not mf.exists():
        raise HtmlRagError(f"{root}: not a corpus folder (no {MANIFEST}; build it with: htmlrag graph build)")
    cfg = CorpusConfig(**_read_manifest(root)["config"])
    if embedder is not None and embedder.name != cfg.embedding_model:
        raise HtmlRagError(f"{root}: corpus embeds with {cfg.embedding_model}, not {embedder.name}")
    return Corpus(root, cfg, embedder=embedder, read_only=read_only, limits=limits)
