"""``htmlrag serve``: its arguments (no web framework is imported until the command runs)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from htmlrag.app.settings import AppSettings, is_loopback
from htmlrag.core.errors import HtmlRagError
from htmlrag.core.io import MAX_PAGE_MB
from htmlrag.core.options import integer, number
from htmlrag.superrag.graph.bounds import QueryLimits

log = logging.getLogger("htmlrag")

BANNER = """
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! WARNING: htmlrag serve is listening on {host}, not on 127.0.0.1.
!! The app has no login: anyone who can reach this address can upload files, run the models
!! you configured (at your cost) and read everything under {results}.
!! Use --host 127.0.0.1 (the default) unless this network is yours alone.
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
"""


def add_serve_parser(sub: Any) -> None:
    """Register ``serve`` on the ``htmlrag`` subcommands."""
    s = sub.add_parser("serve", help="local web app: documents, ask with evidence, pruning playground, results browser "
                                     "(needs the [app] extra)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=integer(1, 65535), default=8000, help="port (default 8000)")
    s.add_argument("--db", default="htmlrag-app", help="corpus folder (as for htmlrag graph build --db); created when "
                                                       "new (default ./htmlrag-app)")
    s.add_argument("--results", default="results", help="results folder to browse (default ./results)")
    s.add_argument("--samples", default=None, help="sample HTML pages for the playground (default data/pages)")
    s.add_argument("--embedding-model", default=None,
                   help="embedder of a new corpus (default: bundled all-MiniLM-L6-v2; 'hashing-256' = fast fake)")
    s.add_argument("--vector-backend", choices=["milvus-lite", "numpy"], default="milvus-lite",
                   help="vector index of a new corpus")
    s.add_argument("--openai-model", default=None, help="model served by the OpenAI-compatible endpoint "
                   "($OPENAI_BASE_URL, key from $OPENAI_API_KEY; default $HTMLRAG_OPENAI_MODEL)")
    s.add_argument("--hf-model", default=None, help="local Hugging Face model for the hf reader "
                   "(default $HTMLRAG_HF_MODEL)")
    s.add_argument("--max-new-tokens", type=integer(1, 100_000), default=256, help="answer length limit of the readers (default 256)")
    s.add_argument("--tokenizer", default=None, help="tokenizer for budgets (default: the offline Mistral-7B one)")
    s.add_argument("--max-upload-mb", type=number(0, 100_000, lo_open=True), default=50.0, help="largest PDF upload (default 50)")
    s.add_argument("--max-html-mb", type=number(0, 10_000, lo_open=True), default=MAX_PAGE_MB,
                   help=f"largest HTML page, decompressed (default {MAX_PAGE_MB:g}, as htmlrag clean/tree/prune)")
    s.add_argument("--max-pdf-pages", type=integer(1, 1_000_000), default=2000, help="most pages of one PDF (default 2000)")
    s.add_argument("--max-files", type=integer(1, 100_000), default=20, help="most files in one upload (default 20)")
    s.add_argument("--max-library-mb", type=number(0, 100_000_000, lo_open=True), default=2000.0,
                   help="most MB of uploaded PDFs and pages kept (default 2000)")
    s.add_argument("--cypher-max-hops", type=integer(1, QueryLimits.MAX["max_hops"]), default=3,
                   help="largest upper bound of a variable-length path in typed or model-written Cypher (default 3)")
    s.add_argument("--cypher-timeout", type=number(0, QueryLimits.MAX["timeout_s"], lo_open=True), default=10.0,
                   help="seconds a typed or model-written Cypher query may run (default 10)")
    s.set_defaults(func=run_serve)


def settings_from(args: argparse.Namespace) -> Any:
    s = AppSettings(db=Path(args.db), results=Path(args.results), host=args.host,
                    vector_backend=args.vector_backend, tokenizer=args.tokenizer, max_pdf_mb=args.max_upload_mb,
                    max_html_mb=args.max_html_mb, max_new_tokens=args.max_new_tokens, max_pdf_pages=args.max_pdf_pages,
                    max_files=args.max_files, max_library_mb=args.max_library_mb,
                    cypher_max_hops=args.cypher_max_hops, cypher_timeout_s=args.cypher_timeout)
    if args.samples:
        s.samples = Path(args.samples)
    if args.embedding_model:
        s.embedding_model = args.embedding_model
    if args.openai_model:
        s.openai_model = args.openai_model
    if args.hf_model:
        s.hf_model = args.hf_model
    return s


def run_serve(args: argparse.Namespace) -> int:
    """Entry point of ``htmlrag serve``."""
    try:  # heavy and optional: uvicorn, and FastAPI/Jinja2 under the app ([app] extra); `htmlrag --help` loads none
        import uvicorn

        from htmlrag.app.server import create_app
    except ImportError as exc:
        print(f"htmlrag: error: htmlrag serve needs the [app] extra: pip install 'htmlrag-bench[app]' ({exc})",
              file=sys.stderr)
        return 2

    settings = settings_from(args)  # numbers were checked when parsed (htmlrag.core.options)

    try:
        settings.query_limits()  # the limits' own bounds (e.g. the largest hop bound allowed)
    except HtmlRagError as exc:
        msg = str(exc).replace("query limit max_hops", "--cypher-max-hops").replace("query limit timeout_s",
                                                                                    "--cypher-timeout")
        print(f"htmlrag: error: {msg}", file=sys.stderr)
        return 2
    if not is_loopback(args.host):
        print(BANNER.format(host=args.host, results=settings.results.resolve()), file=sys.stderr)
        log.warning("htmlrag serve: listening on non-loopback address %s", args.host)
    logging.getLogger("htmlrag").setLevel(logging.INFO)
    app = create_app(settings, extra_hosts=())
    url_host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"htmlrag serve: http://{url_host}:{args.port}/  (corpus {settings.db}, results {settings.results})",
          file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
