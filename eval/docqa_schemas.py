"""Typed schemas of the document-QA (SuperRAG) parts of the config: PDF datasets, graph systems, the corpus,
the LLM judge. Registered with the other schemas by :func:`htmlrag_bench.eval.schemas.register_configs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import II, MISSING


def rng(default: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None) -> Any:
    """A field with a range (see :func:`htmlrag_bench.eval.schemas.check_ranges`)."""
    return field(default=default, metadata={"range": (ge, gt, le)})


MINILM = "sentence-transformers/all-MiniLM-L6-v2"


# ---------------------------------------------------------------- datasets
@dataclass
class Sec10qLoader:
    _target_: str = "htmlrag.data.pdfqa.load_sec10q"
    root: str = MISSING
    docs: list[str] | None = None
    sample_size: int | None = rng(None, ge=1)
    seed: int = II("seed")
    parse_cache: str | None = II("docqa.parse_cache")


@dataclass
class DocbenchLoader:
    _target_: str = "htmlrag.data.docbench.load_docbench"
    root: str = MISSING
    domains: list[str] | None = None
    types: list[str] | None = None
    docs: list[str] | None = None
    sample_size: int | None = rng(None, ge=1)
    seed: int = II("seed")
    parse_cache: str | None = II("docqa.parse_cache")


@dataclass
class SpiqaLoader:
    _target_: str = "htmlrag.data.spiqa.load_spiqa"
    root: str = MISSING
    split: str = "test-A"
    pdf_dir: str | None = None
    missing_pdfs: str = "error"
    docs: list[str] | None = None
    sample_size: int | None = rng(None, ge=1)
    seed: int = II("seed")
    parse_cache: str | None = II("docqa.parse_cache")


@dataclass
class _PdfDataset:
    name: str = MISSING
    short_answer: bool = False
    require_pages: bool = True
    limit: int | None = rng(None, ge=1)


@dataclass
class Sec10qDataset(_PdfDataset):
    loader: Sec10qLoader = field(default_factory=Sec10qLoader)


@dataclass
class DocbenchDataset(_PdfDataset):
    loader: DocbenchLoader = field(default_factory=DocbenchLoader)


@dataclass
class SpiqaDataset(_PdfDataset):
    loader: SpiqaLoader = field(default_factory=SpiqaLoader)


DATASET_SCHEMAS: dict[str, Any] = {"sec10q_schema": Sec10qDataset, "docbench_schema": DocbenchDataset,
                                   "spiqa_schema": SpiqaDataset}


# ---------------------------------------------------------------- graph systems
@dataclass
class GraphSystemConfig:
    """A SuperRAG retrieval setting (:class:`htmlrag.superrag.settings.GraphSetting`), used as a baseline's
    ``graph`` entry. ``reflect_reader``: ``keyword`` (deterministic heuristic, no model) or ``reader`` (the run's
    reader model answers the self-reflection question). ``flat``: search the non-layout FlatChunks (fixed windows
    of each page's plain text; the paper's setting 1) instead of the layout graph's chunks. ``toc_select``:
    ``similarity`` (section titles vs the question) or ``reader`` (the run's reader model picks sections from
    the contents: the paper's few-shot ToC prompt)."""

    flat: bool = False
    toc: bool = False
    toc_select: str = "similarity"
    expand: bool = False
    reflect: bool = False
    reflect_reader: str = "keyword"
    merge: bool = True
    rerank: bool = False  # the bi-encoder second pass: off, as measured best (docs/superrag.md, seventh round)
    rerank_fuse: bool = True
    pool: int = rng(20, ge=1)
    k: int = rng(10, ge=1)
    expand_top: int = rng(3, ge=0)
    candidates: int = rng(50, ge=1)


@dataclass
class CorpusSchema:
    """:class:`htmlrag.superrag.build.corpus.CorpusConfig`: one corpus (graph + indexes) per distinct setting."""

    embedding_model: str = MINILM
    chunk_words: int = rng(150, ge=1)
    min_chunk_words: int = rng(75, ge=0)
    title_depth: int = rng(3, ge=1)  # titles in a chunk's section path, innermost first (1: its own section's)
    table_rows: int = rng(15, ge=1)
    flat_words: int = rng(0, ge=0)  # > 0: also build the flat (non-layout) chunks of this many words; 0: off
    company: str | None = None
    companies: dict[str, str] = field(default_factory=dict)
    company_metadata: str | None = None
    companies_from_names: bool = False
    figure_model: str | None = None
    figure_base_url_env: str = "OPENAI_BASE_URL"
    figure_api_key_env: str = "OPENAI_API_KEY"
    knn_k: int = rng(3, ge=0)
    knn_metric: str = "cosine"
    stems_per_node: int = 5
    graph_backend: str = "kuzu"
    neo4j_uri: str | None = None
    neo4j_database: str | None = None
    vector_backend: str = "milvus-lite"
    vector_uri: str | None = None
    fulltext_backend: str = "bm25"
    fulltext_url: str | None = None
    doc_header: str = "none"  # none | embed | both: the document's name in the embedded (and BM25) chunk text


@dataclass
class DocQAConfig:
    """Document-QA settings: the graph corpus, the parse cache, and the extra tables.

    ``subsets``: example metadata keys (``type``, ``domain``, ``question_type``, ...); for each, one more
    table with a column group per value (``tables/by_<key>/``). ``pairwise``: paired t-tests between every two
    systems, overall and per subset value (``tables/pairwise.md``). ``embedding_cache``: SQLite file of the graph
    corpora's text embeddings (model + text -> vector), so a rebuilt corpus embeds only new texts; null: none.
    """

    corpus: CorpusSchema = field(default_factory=CorpusSchema)
    corpus_root: str = "${paths.cache}/superrag/corpora"
    parse_cache: str = "${paths.cache}/superrag"
    embedding_cache: str | None = "${paths.cache}/superrag/embeddings.sqlite"
    subsets: list[str] = field(default_factory=list)
    pairwise: bool = False


# ---------------------------------------------------------------- judge
@dataclass
class JudgeConfig:
    """The LLM judge (:mod:`htmlrag.docqa.judge`), run after the evaluation on every answer.

    ``reader``: a reader option used as the judge model (``/reader@reader: openai`` or ``hf``); ``prompt``: the
    template with ``{{question}}``, ``{{sys_ans}}``, ``{{ref_ans}}``, ``{{ref_text}}``; ``prompt_file``: read
    the template from this file instead (e.g. DOCBENCH's ``evaluation_prompt.txt``); ``reference``: show the
    gold evidence text (``metadata.evidence``); ``cache``: cache replies in ``<paths.cache>/judge.sqlite``;
    ``draws``: judge every answer this many times (the score is the mean verdict; > 1: agreement as
    Krippendorff's alpha, flagged answers, and no draw is served from the cache: :mod:`htmlrag.docqa.agreement`);
    ``second``: a second judge model (a reader option, like ``reader``), judged with the same draws, for the
    agreement between the two models (the score stays the first judge's).
    """

    enabled: bool = False
    name: str = "none"
    reader: Any = None
    prompt: str = ""
    prompt_file: str | None = None
    system: str | None = "You are a helpful evaluator."
    reference: bool = True
    max_reference_chars: int = rng(4000, ge=1)
    concurrency: int = rng(4, ge=1)
    cache: bool = True
    draws: int = rng(1, ge=1)
    second: Any = None
