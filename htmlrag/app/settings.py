"""Settings of one ``htmlrag serve`` process (plain values; the command line fills them)."""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.core.io import MAX_PAGE_MB
from htmlrag.core.models import MINILM
from htmlrag.superrag.graph.bounds import QueryLimits


def default_samples() -> Path:
    """The project's sample pages: ``data/pages`` under the working directory, else ``$HTMLRAG_SAMPLES/pages``,
    else the pages shipped with the package (``htmlrag_bench.samples``: ``data/`` of a checkout, package data of
    an installed wheel)."""
    here = Path("data/pages")
    if here.is_dir():
        return here
    if os.environ.get("HTMLRAG_SAMPLES"):
        return Path(os.environ["HTMLRAG_SAMPLES"]) / "pages"
    from importlib import resources

    try:  # looked up by name: the library does not import the harness
        shipped = Path(str(resources.files("htmlrag_bench.samples"))) / "pages"
    except ModuleNotFoundError:  # the library installed without the harness
        shipped = Path(__file__).resolve().parents[2] / "data" / "pages"
    return shipped


@dataclass
class AppSettings:
    """What the app serves and how.

    Attributes:
        db: the corpus folder (as for ``htmlrag graph build --db``); uploads, HTML pages and the parse cache
            live in it too (``uploads/``, ``pages/``, ``parse-cache/``).
        results: the ``results/`` folder the results browser reads (and the only folder it serves files from).
        samples: sample HTML pages for the playground.
        embedding_model: embedder of a new corpus (an existing corpus keeps its own; ``hashing-256`` is the
            deterministic fake).
        vector_backend: vector index of a new corpus (``milvus-lite`` or ``numpy``).
        rank_model: the embedding model of the ``embed`` ranker (playground, HTML pages).
        tokenizer: token counter for budgets (None: the offline default).
        max_pdf_mb, max_html_mb: upload limits per file (HTML: after decompression).
        max_request_mb: limit on one request body (several files).
        max_files: files in one upload request at most.
        max_library_mb: uploaded PDFs and pages kept at most, in MB (an upload that would pass it is refused).
        max_pdf_pages: pages of one PDF at most.
        max_pdf_stream_mb: what one compressed stream of a PDF may expand to, and ``max_pdf_expanded_mb`` all of
            them together (decompression bombs are refused at upload); ``max_pdf_page_content_mb`` the content
            one page draws and ``max_pdf_content_mb`` all pages together, a stream shared by pages counted once
            per page (:mod:`htmlrag.app.pdfcheck`).
        max_parse_seconds: an uploaded PDF is parsed in a child process, killed after this long (the server's
            threads stay free: :func:`htmlrag.superrag.to_html.parse_isolated`).
        max_image_megapixels: pixels of one image in a PDF at most (its declared size).
        max_render_megapixels: pixels of one rendered page image; a bigger page is rendered at a smaller zoom.
        max_renders: page images rendered at the same time (more wait their turn).
        cypher_max_hops, cypher_timeout_s, cypher_max_rows, cypher_memory_mb: bounds on typed and model-written
            Cypher (:class:`~htmlrag.superrag.graph.bounds.QueryLimits`).
        torch_threads: intra-op threads of the models the app runs (``torch.set_num_threads``; 0: torch's
            default). 1 suits a server answering questions side by side: on a loaded 2-core machine a question's
            embedding took 20-28 ms with one thread and 550-600 ms with two.
        openai_model: model name served by the OpenAI-compatible endpoint (None: that reader is off).
        base_url_env, api_key_env: environment variables holding the endpoint and its key (never shown).
        hf_model: local Hugging Face model folder or name for the ``hf`` reader (None: off).
        max_new_tokens: answer length limit of the readers, in tokens.
        host: the address served (shown in the page footer).
    """

    db: Path = Path("htmlrag-app")
    results: Path = Path("results")
    samples: Path = field(default_factory=default_samples)
    embedding_model: str = MINILM
    vector_backend: str = "milvus-lite"
    rank_model: str = MINILM
    tokenizer: str | None = None
    max_pdf_mb: float = 50.0
    max_html_mb: float = MAX_PAGE_MB
    max_request_mb: float = 200.0
    max_files: int = 20
    max_library_mb: float = 2000.0
    max_pdf_pages: int = 2000
    max_pdf_stream_mb: float = 64.0
    max_pdf_expanded_mb: float = 512.0
    max_pdf_page_content_mb: float = 16.0
    max_pdf_content_mb: float = 128.0
    max_parse_seconds: float = 600.0
    max_image_megapixels: float = 100.0
    max_render_megapixels: float = 8.0
    max_renders: int = 2
    cypher_max_hops: int = 3
    cypher_timeout_s: float = 10.0
    cypher_max_rows: int = 1000
    cypher_memory_mb: int = 256
    torch_threads: int = 1
    openai_model: str | None = field(default_factory=lambda: os.environ.get("HTMLRAG_OPENAI_MODEL") or None)
    base_url_env: str = "OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    hf_model: str | None = field(default_factory=lambda: os.environ.get("HTMLRAG_HF_MODEL") or None)
    max_new_tokens: int = 256
    host: str = "127.0.0.1"

    @property
    def max_pdf_bytes(self) -> int:
        return int(self.max_pdf_mb * 1e6)

    @property
    def max_html_bytes(self) -> int:
        return int(self.max_html_mb * 1e6)

    @property
    def max_request_bytes(self) -> int:
        return int(self.max_request_mb * 1e6)

    def query_limits(self) -> Any:
        """The :class:`~htmlrag.superrag.graph.bounds.QueryLimits` of typed and model-written Cypher."""
        return QueryLimits(max_hops=self.cypher_max_hops, timeout_s=self.cypher_timeout_s,
                           max_rows=self.cypher_max_rows, memory_mb=self.cypher_memory_mb)

    def endpoint_label(self) -> str:
        """The OpenAI-compatible endpoint as shown to users: scheme, host and port only (no user, password,
        path or query, which can hold credentials)."""
        url = os.environ.get(self.base_url_env, "https://api.openai.com/v1")
        p = urllib.parse.urlsplit(url)
        host = p.hostname or "?"
        return f"{p.scheme}://{host}{f':{p.port}' if p.port else ''}"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
