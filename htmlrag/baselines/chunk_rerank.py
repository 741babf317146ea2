"""Chunk-and-rerank refiners (the HtmlRAG paper's LangChain-style baselines: BM25, BGE, E5-Mistral).

As in the authors' code (``html4rag/chunk_rerank.py`` and ``trim_html_fill_chunk.py``): each page is split
into sections by LangChain's ``HTMLSectionSplitter`` at ``h1``-``h4`` (plus the text before the first
heading, under ``body``); every section's text is one chunk (no further size limit unless ``max_words`` is
set); all chunks of a question's pages are ranked by a ranker (BM25, or an embedding model with its query
instruction); chunks are then taken in rank order until the next one would exceed the token budget
(``fill="stop"``, the authors' rule; ``fill="skip"`` goes on with smaller chunks). If not even the best chunk
fits, it is cut to the budget. The context is plain text: the chosen chunks in rank order, one per line,
whitespace collapsed inside each chunk.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from htmlrag.baselines.base import decode_pages, fit_to_budget, make_result, model_size
from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.html.chunking import chunk_tree, cut_words
from htmlrag.html.parse import shallow_html
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.pruning.tokens import TokenCounter
from htmlrag.rankers.base import Ranker
from htmlrag.rankers.embedding import EmbeddingRanker

log = logging.getLogger(__name__)

#: The authors' ``headers_to_split_on`` (``body`` keeps the text before the first heading).
HEADERS: tuple[tuple[str, str], ...] = (
    ("h1", "Header 1"), ("h2", "Header 2"), ("h3", "Header 3"), ("h4", "Header 4"), ("body", "Body"),
)
FILLS = ("stop", "skip")
#: Deeper nesting is flattened (tags dropped, text kept) before LangChain's splitter, whose libxml2 parser
#: silently drops everything below 256 levels.
SPLITTER_MAX_DEPTH = 200


def html_section_chunks(html: str, max_words: int | None = None,
                        headers: Sequence[tuple[str, str]] = HEADERS) -> list[str]:
    """Section texts of one page by ``langchain_text_splitters.HTMLSectionSplitter``, whitespace collapsed.

    Args:
        html: the page (raw or cleaned HTML).
        max_words: if set, sections longer than this many words are cut further (at sentence ends when
            possible); ``None`` keeps whole sections (the paper).
        headers: ``(tag, metadata key)`` pairs that start a section.

    Raises:
        HtmlRagError: ``langchain-text-splitters`` (or BeautifulSoup) is not installed.
    """
    if not html.strip():
        return []
    try:
        from langchain_text_splitters import HTMLSectionSplitter
    except ImportError as exc:
        raise HtmlRagError("chunk-and-rerank needs langchain-text-splitters and beautifulsoup4: "
                           "pip install 'htmlrag-bench[eval]'") from exc

    splitter = HTMLSectionSplitter(headers_to_split_on=list(headers))
    try:
        # the splitter's parser keeps 256 levels and silently drops what is deeper: flatten deep pages first
        docs = splitter.split_text(shallow_html(html, SPLITTER_MAX_DEPTH))
    except Exception as exc:  # lxml/XSLT errors on broken markup: report, do not leak
        raise InputError(f"HTMLSectionSplitter could not split the page: {type(exc).__name__}: {exc}") from exc
    chunks = []
    for d in docs:
        text = " ".join(d.page_content.split())
        if not text:
            continue
        chunks.extend(cut_words(text, max_words) if max_words else [text])
    return chunks


class ChunkRerankRefiner:
    """Chunk, rerank, fill to the budget; plain-text context.

    Args:
        ranker: any :class:`~htmlrag.rankers.base.Ranker` (``BM25Ranker``, ``EmbeddingRanker("BAAI/bge-large-en")``,
            ``EmbeddingRanker("intfloat/e5-mistral-7b-instruct")``; each embedding model gets its documented
            query instruction).
        tokenizer: token counter of the budget (the reader's tokenizer).
        budget: context budget in tokens.
        max_words: optional size limit of a chunk in words (``None``: whole sections, the paper).
        fill: ``stop`` (the authors' rule) or ``skip``.
        separator: placed between chunks.
        cache_pages: how many pages' chunk lists to keep in memory (pages recur across questions).
    """

    fmt = "text"

    def __init__(self, ranker: Ranker, tokenizer: TokenCounter, budget: int = 4096, max_words: int | None = None,
                 fill: str = "stop", separator: str = "\n", cache_pages: int = 1024) -> None:
        if fill not in FILLS:
            raise InputError(f"fill must be one of {FILLS}, got {fill!r}")
        if not isinstance(budget, int) or budget <= 0:
            raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
        if max_words is not None and max_words < 1:
            raise InputError(f"max_words must be >= 1 or None, got {max_words}")
        self.ranker, self.tokenizer, self.budget = ranker, tokenizer, budget
        self.max_words, self.fill, self.separator = max_words, fill, separator
        self._chunks: OrderedDict[str, list[str]] = OrderedDict()
        self._cache_pages = cache_pages

    def chunks(self, html: str) -> list[str]:
        """The chunks of one page (memoised by content)."""
        key = hashlib.sha1(html.encode("utf-8", "surrogatepass")).hexdigest()
        hit = self._chunks.get(key)
        if hit is not None:
            self._chunks.move_to_end(key)
            return hit
        out = html_section_chunks(html, self.max_words)
        self._chunks[key] = out
        if len(self._chunks) > self._cache_pages:
            self._chunks.popitem(last=False)
        return out

    def rank(self, question: str, pages: Sequence[str]) -> list[str]:
        """All chunks of ``pages`` in rank order (best first; ties by page, then position)."""
        per_page = [self.chunks(p) for p in pages]
        trees = [chunk_tree(c, page=i) for i, c in enumerate(per_page) if c]
        if not trees:
            return []
        scores = self.ranker.score(question, trees)
        items = []
        for tree, s in zip(trees, scores, strict=True):
            if len(tree.blocks) != len(s):
                raise HtmlRagError(f"ranker {getattr(self.ranker, 'name', '?')} returned {len(s)} scores for "
                                   f"{len(tree.blocks)} chunks")
            for bi, (block, score) in enumerate(zip(tree.blocks, np.asarray(s, dtype=np.float64), strict=True)):
                items.append((-float(score), tree.page, bi, " ".join(block.text.split())))
        items.sort(key=lambda x: x[:3])
        return [text for *_, text in items if text]

    def fill_budget(self, ranked: Sequence[str]) -> tuple[list[str], bool]:
        """Chunks taken in rank order within the budget; ``True`` when the top chunk had to be cut."""
        if not ranked:
            return [], False
        costs = self.tokenizer.count_many(list(ranked))
        sep = self.tokenizer.count(self.separator) if self.separator else 0
        kept: list[str] = []
        total = 0
        for text, cost in zip(ranked, costs, strict=True):
            extra = cost + (sep if kept else 0)
            if total + extra <= self.budget:
                kept.append(text)
                total += extra
            elif self.fill == "stop":
                break
        if not kept:
            cut, _ = fit_to_budget(ranked[0], self.budget, self.tokenizer)
            return [cut], True
        while len(kept) > 1 and self.tokenizer.count(self.separator.join(kept)) > self.budget:
            kept.pop()  # boundary merges of the tokenizer pushed the joined text over
        return kept, False

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """The plain-text context for ``question`` from its retrieved ``pages``."""
        t0 = time.perf_counter()
        texts = decode_pages(pages)
        ranked = self.rank(question, texts)
        kept, _ = self.fill_budget(ranked)
        context, tokens = fit_to_budget(self.separator.join(kept), self.budget, self.tokenizer)
        return make_result(context, tokens, t0, self.tokenizer, stages={}, costs={"rank": ranker_costs(self.ranker, question, ranked)})


def ranker_costs(ranker: Any, question: str, texts: Sequence[str]) -> dict[str, float]:
    """Model cost of ranking ``texts`` for ``question``: tokens the model reads (each text capped at its
    maximum sequence length, plus the instructed query), parameters and their bytes. Rankers without a
    neural model (BM25) cost nothing here."""
    if not isinstance(ranker, EmbeddingRanker) or not texts:
        return {"input_tokens": 0.0, "output_tokens": 0.0, "params": 0.0, "storage_bytes": 0.0}
    model = ranker._load()
    tok = model.tokenizer
    cap = int(model.max_seq_length or 512)
    ids = tok([ranker.query_instruction + question, *texts], add_special_tokens=True, truncation=True,
              max_length=cap)["input_ids"]
    return {"input_tokens": float(sum(len(x) for x in ids)), "output_tokens": 0.0, **model_size(model)}
