"""BM25 block ranker (bm25s), with a tokenisation that also works for CJK text.

Tokenisation: Unicode NFKC, lower case, words are runs of letters/digits; every CJK character is a token of
its own and consecutive CJK characters also give bigrams (so Chinese/Japanese questions match); English
stopwords are dropped; optional Snowball stemming (PyStemmer) for non-CJK words. The corpus is all blocks of
all pages of one question, so IDF is computed over what the question retrieved (as the paper's pruner does).
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from htmlrag.html.blocktree import BlockTree
from htmlrag.html.text import CJK_RANGES
from htmlrag.rankers.base import add_page_prior

_WORD = re.compile(f"[{CJK_RANGES}]+|[^\\W_]+", re.UNICODE)
_IS_CJK = re.compile(f"[{CJK_RANGES}]")
_PLAIN = re.compile(r"[^\W_]+")
#: The same words in lower-case ASCII text (letters and digits are all there is there): a plain class is
#: matched faster than the Unicode word test.
_ASCII_WORD = re.compile(r"[a-z0-9]+")

_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do", "does", "did", "from", "has", "have", "had", "i", "you", "he", "she", "we", "his", "her", "its", "our", "your", "been", "being", "were", "than", "so", "can", "could", "would", "should", "may", "might"]
)


@lru_cache(maxsize=4)
def _stemmer(language: str):
    import Stemmer

    # No PyStemmer cache: inserting into it costs 4x the stemming itself; callers stem distinct words.
    return Stemmer.Stemmer(language, 0)


def tokenize(text: str, stemmer: str | None = "english", stopwords: bool = True) -> list[str]:
    """Tokens of ``text`` for BM25 (see the module docstring)."""
    return list(tokenize_many([text], stemmer, stopwords)[0])


#: Content-keyed tokenisations: pages shared by several questions (and blocks re-scored after a split) are
#: tokenised once. Insertion-ordered; the older half goes when it is full.
_CACHE: dict[tuple[str, str | None, bool], tuple[str, ...]] = {}
_CACHE_MAX = 262_144


def clear_cache() -> None:
    """Forget every remembered tokenisation (benchmarks measure a cold start with it)."""
    _CACHE.clear()


def tokenize_many(texts: Sequence[str], stemmer: str | None = "english", stopwords: bool = True,
                  ) -> list[tuple[str, ...]]:
    """:func:`tokenize` for many texts: each distinct word is stemmed once for the whole batch (a question's
    blocks repeat most of their words)."""
    out: list[tuple[str, ...] | None] = [_CACHE.get((t, stemmer, stopwords)) for t in texts]
    missing = [i for i, r in enumerate(out) if r is None]
    if not missing:
        return out  # type: ignore[return-value]
    split = [_split(texts[i]) for i in missing]
    distinct: set[str] = set()
    for _, words in split:
        distinct.update(words)
    words_list = list(distinct)
    stems = _stemmer(stemmer).stemWords(words_list) if (stemmer and words_list) else words_list
    # One lookup per word, in C (map/filter): a stopword maps to "" and is filtered out.
    table = dict(zip(words_list, stems, strict=True))
    if stopwords:
        for w in _STOPWORDS.intersection(distinct):
            table[w] = ""
    look = table.__getitem__
    if len(_CACHE) + len(missing) > _CACHE_MAX:
        for key in list(itertools.islice(_CACHE, len(_CACHE) // 2 + len(missing))):
            del _CACHE[key]
    for i, (cjk, words) in zip(missing, split, strict=True):
        toks = tuple(filter(None, map(look, words)))
        if cjk:
            toks = tuple(cjk) + toks
        out[i] = _CACHE[(texts[i], stemmer, stopwords)] = toks
    return out  # type: ignore[return-value]


def _split(text: str) -> tuple[list[str], list[str]]:
    """(CJK tokens, other words: lower case, before stopword removal and stemming) of ``text``."""
    if text.isascii():  # NFKC leaves ASCII unchanged
        return [], _ASCII_WORD.findall(text.lower())  # C-level findall, no per-match Python work
    text = unicodedata.normalize("NFKC", text)
    if _IS_CJK.search(text):
        return _split_cjk(text.lower())
    return [], _PLAIN.findall(text.lower())


def _split_cjk(text: str) -> tuple[list[str], list[str]]:
    cjk: list[str] = []
    words = []
    for m in _WORD.finditer(text):
        w = m.group(0)
        if _IS_CJK.match(w):
            cjk.extend(w)
            cjk.extend(w[i : i + 2] for i in range(len(w) - 1))
        else:
            words.append(w)
    return cjk, words


def bm25_scores(corpus: Sequence[Sequence[str]], query: Sequence[str], k1: float = 1.5, b: float = 0.75,
                ) -> np.ndarray:
    """BM25 (Lucene variant, as ``bm25s`` computes it) of every tokenised document for a tokenised query.

    Only the query's terms are looked at: a per-question corpus of a few hundred blocks is scored in well
    under a millisecond, where building a full ``bm25s`` index over every term costs ~6 ms. A query term
    that occurs k times counts k times (as in ``bm25s``). ``float32``, like ``bm25s``.
    """
    n = len(corpus)
    scores = np.zeros(n, dtype=np.float64)
    if not n or not query:
        return scores.astype(np.float32)
    dl = np.fromiter(map(len, corpus), dtype=np.float64, count=n)
    avg = float(dl.mean()) or 1.0
    norm = k1 * ((1.0 - b) + b * dl / avg)
    for term, mult in Counter(query).items():
        tf = np.fromiter((d.count(term) for d in corpus), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        scores += mult * idf * tf / (norm + tf)
    return scores.astype(np.float32)


class BM25Ranker:
    """Scores blocks by BM25 (Lucene variant, k1=1.5, b=0.75 by default) of the block text.

    Args:
        stemmer: Snowball language for PyStemmer, or ``None`` for no stemming.
        k1: term-frequency saturation.
        b: length normalisation.
        contextual: score each block's text with its heading / table-header context
            (:meth:`BlockTree.rank_texts`); ``False`` scores the bare block text (the paper's setting).
        page_prior: add ``page_prior`` x the page's best block score to each block of the page
            (:class:`~htmlrag.rankers.base.PagePrior`; 0, the default, is off).
        backend: ``"terms"`` (default): :func:`bm25_scores`, which reads only the query's terms;
            ``"bm25s"``: a full ``bm25s`` index per question. Both give the same scores (tested); the first
            is ~7x faster on five Wikipedia pages.
    """

    name = "bm25"

    def __init__(self, stemmer: str | None = "english", k1: float = 1.5, b: float = 0.75, contextual: bool = True,
                 backend: str = "terms", page_prior: float = 0.0):
        if backend not in ("terms", "bm25s"):
            raise ValueError(f"BM25 backend must be 'terms' or 'bm25s', got {backend!r}")
        self.stemmer = stemmer
        self.k1 = k1
        self.b = b
        self.contextual = contextual
        self.backend = backend
        if page_prior < 0:
            raise ValueError(f"page_prior must be >= 0, got {page_prior}")
        self.page_prior = page_prior

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        """BM25 score of every block of ``trees`` for ``question`` (0 for blocks sharing no term)."""
        texts = [x for t in trees for x in (t.rank_texts() if self.contextual else [b.text for b in t.blocks])]
        sizes = [len(t.blocks) for t in trees]
        query = tokenize(question, self.stemmer)
        if not texts or not query:
            scores = np.zeros(len(texts), dtype=np.float32)
        elif self.backend == "terms":
            scores = bm25_scores(tokenize_many(texts, self.stemmer), query, self.k1, self.b)
        else:
            import bm25s

            logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets itself to DEBUG
            corpus = [list(t) for t in tokenize_many(texts, self.stemmer)]
            retriever = bm25s.BM25(k1=self.k1, b=self.b)
            retriever.index(corpus, show_progress=False)
            vocab = retriever.vocab_dict
            query = [q for q in query if q in vocab]
            scores = (retriever.get_scores(query) if query else np.zeros(len(texts))).astype(np.float32)
        out, start = [], 0
        for n in sizes:
            out.append(scores[start : start + n])
            start += n
        return add_page_prior(out, self.page_prior)
