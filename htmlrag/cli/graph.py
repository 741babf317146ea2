"""``htmlrag graph build`` and ``htmlrag graph query``: PDFs as layout-aware graphs (SuperRAG).

``build`` parses every PDF into the corpus folder and prints one line per file; a file that fails gets an
error line on stderr, the others are still built, and the exit status is 1 if any failed (``--db`` that is a
file: exit 2). ``query`` prints the evidence (rank, score, node id, kind, pages, title, text preview), or JSON
with ``--json``; a ``--doc`` the corpus does not hold is an error naming it (exit 1). Numeric options are
checked when parsed (:mod:`htmlrag.core.options`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.options import integer, number
from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus
from htmlrag.superrag.build.embed import make_embedder
from htmlrag.superrag.graph.bounds import QueryLimits
from htmlrag.superrag.pipelines import MIX_TABLES, RETRIEVERS
from htmlrag.superrag.retrieve.cypher_qa import FixedCypherWriter

#: Most evidence items ``graph query -k`` returns.
MAX_K = 1000

#: Upper bounds of ``graph build``'s and ``--preview``'s numeric options (far above any useful value)
MAX_CHUNK_WORDS = 1_000_000
MAX_KNN_K = 1000
MAX_PREVIEW = 1_000_000

#: What pdfio's message tells a library caller, and what a ``graph build`` user can do instead
_REPAIR_HINT = "(pass repair=True to accept)"
_REPAIR_CLI = ("(htmlrag graph build accepts no damaged PDF: repair it first, e.g. `qpdf in.pdf out.pdf` "
               "or `mutool clean in.pdf out.pdf`, and build from the repaired copy)")


def _cli_error(message: str) -> str:
    """A build error as a command-line user can act on it (library hints rewritten)."""
    return str(message).replace(_REPAIR_HINT, _REPAIR_CLI)


def _cmd_build(args: argparse.Namespace) -> int:
    db = Path(args.db)
    if db.exists() and not db.is_dir():
        print(f"htmlrag: error: --db {db}: not a folder (a file is in the way); give a corpus folder, new or "
              "existing", file=sys.stderr)
        return 2
    cfg = CorpusConfig(embedding_model=args.embedding_model, chunk_words=args.chunk_words, knn_k=args.knn_k,
                       knn_metric=args.knn_metric, graph_backend=args.graph_backend, neo4j_uri=args.neo4j_uri,
                       vector_backend=args.vector_backend, vector_uri=args.vector_uri,
                       fulltext_backend=args.fulltext_backend, fulltext_url=args.fulltext_url)
    try:
        results = build_corpus(args.pdfs, args.db, config=cfg, embedder=make_embedder(args.embedding_model),
                               password=args.password)
    except HtmlRagError as exc:
        print(f"htmlrag: error: {_cli_error(str(exc))}", file=sys.stderr)
        return 1
    failed = 0
    for r in results:
        if r.ok:
            print(f"{r.path}\t{r.doc_id}\t{r.pages} pages\t{r.nodes} nodes\t{r.edges} edges\t{r.seconds:.1f} s")
            for w in r.warnings:
                print(f"htmlrag: warning: {w}", file=sys.stderr)
        else:
            failed += 1
            print(f"htmlrag: error: {_cli_error(r.error)}", file=sys.stderr)
    return 1 if failed else 0


def _cmd_query(args: argparse.Namespace) -> int:
    try:
        limits = QueryLimits(max_hops=args.max_hops, timeout_s=args.timeout, max_rows=args.max_rows,
                             memory_mb=args.query_memory_mb)
    except HtmlRagError as exc:
        print(f"htmlrag: error: {exc}", file=sys.stderr)
        return 2
    writer: Any = None
    retriever = args.retriever
    if args.cypher is not None and not args.cypher.strip():
        print("htmlrag: error: --cypher: empty query; give a Cypher query (read-only), or leave --cypher out to "
              f"use --retriever ({args.retriever})", file=sys.stderr)
        return 2
    if args.cypher:
        writer, retriever = FixedCypherWriter(args.cypher), "cypher"
    try:
        with open_corpus(args.db, limits=limits) as corpus:
            known = {str(d.get("doc_id") or d.get("id")) for d in corpus.documents()}
            unknown = [d for d in args.doc or [] if d not in known]
            if unknown:
                raise HtmlRagError(f"--doc {', '.join(map(repr, unknown))}: not in the corpus {args.db}; its documents: "
                                   f"{', '.join(sorted(known)[:10]) or '(none)'}")
            ev = corpus.retrieve(args.question, retriever=retriever, k=args.k, doc_ids=args.doc or None,
                                 cypher_writer=writer, rerank=args.rerank != "off",
                                 rerank_fuse=args.rerank != "replace", mix_tables=args.mix_tables)
    except HtmlRagError as exc:
        print(f"htmlrag: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump([e.to_dict() for e in ev], sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    for i, e in enumerate(ev, start=1):
        pages = ",".join(map(str, e.pages))
        text = " ".join(e.text.split())[: args.preview]
        print(f"{i:>3} {e.score:8.4f} {e.node_id} [{e.kind}] p.{pages} {e.title[:60]!r}\n      {text}")
    return 0


def add_graph_parser(subparsers: Any) -> None:
    """Add ``graph build`` and ``graph query`` to the ``htmlrag`` command line."""
    g = subparsers.add_parser("graph", help="PDFs as layout-aware graphs (SuperRAG): build, query")
    gs = g.add_subparsers(dest="graph_command", required=True)
    b = gs.add_parser("build", help="parse PDFs into a graph database with vector and full-text indexes")
    b.add_argument("pdfs", nargs="+", help="PDF files")
    b.add_argument("--db", required=True, help="corpus folder (created or extended)")
    b.add_argument("--embedding-model", default="sentence-transformers/all-MiniLM-L6-v2",
                   help="sentence-transformers model (default: bundled all-MiniLM-L6-v2); 'hashing-256' = fake")
    b.add_argument("--chunk-words", type=integer(1, MAX_CHUNK_WORDS), default=150, help="largest section chunk, in words")
    b.add_argument("--knn-k", type=integer(0, MAX_KNN_K), default=3, help="IS_SIMILAR neighbours per content node")
    b.add_argument("--knn-metric", choices=["cosine", "dot", "l2"], default="cosine")
    b.add_argument("--graph-backend", choices=["kuzu", "neo4j"], default="kuzu")
    b.add_argument("--neo4j-uri", help="with --graph-backend neo4j (user/password from NEO4J_USER/NEO4J_PASSWORD)")
    b.add_argument("--vector-backend", choices=["milvus-lite", "milvus", "numpy"], default="milvus-lite")
    b.add_argument("--vector-uri", help="Milvus server URI (with --vector-backend milvus)")
    b.add_argument("--fulltext-backend", choices=["bm25", "elasticsearch"], default="bm25")
    b.add_argument("--fulltext-url", help="Elasticsearch URL (with --fulltext-backend elasticsearch)")
    b.add_argument("--password", help="user password for encrypted PDFs")
    b.set_defaults(func=_cmd_build)
    q = gs.add_parser("query", help="retrieve evidence for a question")
    q.add_argument("question")
    q.add_argument("--db", required=True, help="corpus folder")
    q.add_argument("--retriever", choices=RETRIEVERS, default="hybrid")
    q.add_argument("-k", type=integer(1, MAX_K), default=10, help=f"evidence to return (default 10, at most {MAX_K})")
    q.add_argument("--mix-tables", choices=MIX_TABLES, default="turns",
                   help="how tables and text share the layout retrievers' lists: turns (default, measured best "
                        "with each company held out), soft (RRF of the overall and per-kind ranks) or none (one "
                        "ranking)")
    q.add_argument("--rerank", choices=["off", "fuse", "replace"], default="off",
                   help="the rerank stage of full/nonlayout: off (default, measured best), fuse (RRF of the "
                        "first-stage and cosine orders) or replace (cosine order); the rerank retriever always "
                        "reranks (off = fuse)")
    q.add_argument("--doc", action="append", help="restrict to this document id (repeatable)")
    q.add_argument("--cypher", help="run this Cypher query (read-only) instead of a model-written one")
    d, top = QueryLimits(), QueryLimits.MAX
    q.add_argument("--max-hops", type=integer(1, top["max_hops"]), default=d.max_hops,
                   help=f"largest upper bound of a variable-length path in a typed or model-written query "
                        f"(default {d.max_hops}; unbounded -[*]-> is refused)")
    q.add_argument("--timeout", type=number(0, top["timeout_s"], lo_open=True), default=d.timeout_s,
                   help=f"seconds a typed or model-written query may run (default {d.timeout_s:g}, at most "
                        f"{top['timeout_s']:,})")
    q.add_argument("--max-rows", type=integer(1, top["max_rows"]), default=d.max_rows,
                   help=f"rows a typed or model-written query returns at most (default {d.max_rows}, at most "
                        f"{top['max_rows']:,})")
    q.add_argument("--query-memory-mb", type=integer(1, top["memory_mb"]), default=d.memory_mb,
                   help=f"memory a query may hold in the graph database, MB (default {d.memory_mb}, at most "
                        f"{top['memory_mb']:,})")
    q.add_argument("--json", action="store_true", help="print the evidence as JSON")
    q.add_argument("--preview", type=integer(0, MAX_PREVIEW), default=160, help="characters of text shown per evidence")
    q.set_defaults(func=_cmd_query)
