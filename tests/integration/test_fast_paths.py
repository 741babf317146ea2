"""The fast paths of BM25 pruning give the same answers as the plain ones, on real WTQ pages.

- BM25 reading only the query's terms == a full ``bm25s`` index;
- blocks counted lazily with the word lower bound == every block tokenized;
- block trees built from the cleaned tree == trees parsed from the cleaned HTML (the pipeline's shortcut);
- word counts made while cleaning == counting the cleaned tree;
- BM25 tokenisation of a batch (each distinct word stemmed once) == one text at a time.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htmlrag import build_block_tree, clean_html
from htmlrag.html.blocktree import _word_counts
from htmlrag.html.clean import clean_page, clean_page_counted
from htmlrag.pruning.pipeline import HtmlRagPipeline
from htmlrag.pruning.prune import prune_to_budget
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.bm25 import BM25Ranker, bm25_scores, clear_cache, tokenize, tokenize_many
from tests.conftest import shared_path

TOK = load_tokenizer()


def _questions(n: int) -> list[dict]:
    data = shared_path() / "wtq-html-qa"
    out = []
    for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()[:n]:
        q = json.loads(line)
        pages = []
        for rel in [q["page"], *q["distractors"]]:
            p = data / rel
            p = p if p.exists() else p.with_name(p.name + ".gz")
            raw = p.read_bytes()
            pages.append(gzip.decompress(raw) if p.suffix == ".gz" else raw)
        out.append({"question": q["question"], "pages": pages})
    return out


@pytest.fixture(scope="module")
def questions():
    return _questions(6)


def test_bm25_terms_backend_equals_bm25s(questions):
    fast, full = BM25Ranker(), BM25Ranker(backend="bm25s")
    for q in questions:
        trees = [build_block_tree(clean_html(p), 128, page=i, pack_siblings=True) for i, p in enumerate(q["pages"])]
        a = np.concatenate(fast.score(q["question"], trees))
        b = np.concatenate(full.score(q["question"], trees))
        assert b.max() > 0
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bm25_scores_counts_repeated_query_terms_and_unknown_terms():
    corpus = [("river", "bridge"), ("river",), ("cat",)]
    once, twice = bm25_scores(corpus, ["river"]), bm25_scores(corpus, ["river", "river"])
    np.testing.assert_allclose(twice, 2 * once)
    assert once[2] == 0 and once[1] > once[0] > 0  # shorter document, same tf: higher score
    assert not bm25_scores(corpus, ["absent"]).any() and len(bm25_scores([], ["river"])) == 0


class _NoBound:
    """The same tokenizer without the word lower bound: every block is tokenized."""

    def __init__(self, tok):
        self.tok, self.name, self.words_lower_bound = tok, tok.name, False

    def count(self, text):
        return self.tok.count(text)

    def count_many(self, texts):
        return self.tok.count_many(texts)

    def truncate(self, text, n):
        return self.tok.truncate(text, n)


@pytest.mark.parametrize("fmt", ["html", "text"])
def test_lazy_counting_keeps_the_same_blocks(questions, fmt):
    assert TOK.words_lower_bound and TOK.segments_lower_bound
    ranker = BM25Ranker()
    for q in questions[:4]:
        trees = [build_block_tree(clean_html(p), 128, page=i, pack_siblings=True) for i, p in enumerate(q["pages"])]
        scores = ranker.score(q["question"], trees)
        for budget in (256, 512, 2048):
            lazy = prune_to_budget(trees, scores, budget, TOK, fmt=fmt, ranker=ranker, question=q["question"])
            eager = prune_to_budget(trees, scores, budget, _NoBound(TOK), fmt=fmt, ranker=ranker,
                                    question=q["question"])
            assert lazy.context == eager.context and lazy.tokens <= budget


def test_tree_from_cleaned_tree_equals_tree_from_cleaned_html(questions):
    for q in questions:
        for raw in q["pages"]:
            html, root = clean_page(raw)
            for max_words in (32, 256):
                a = build_block_tree(html, max_words, pack_siblings=True)
                b = build_block_tree(root, max_words, pack_siblings=True)
                assert [(x.path_str, x.words, x.position, " ".join(x.text.split())) for x in a.blocks] == \
                       [(x.path_str, x.words, x.position, " ".join(x.text.split())) for x in b.blocks]


def test_pipeline_shortcut_gives_the_context_of_cleaned_pages(questions):
    on_raw = HtmlRagPipeline(BM25Ranker(), None, TOK, budget2=1024, max_words1=128, count_stages=False)
    on_clean = HtmlRagPipeline(BM25Ranker(), None, TOK, budget2=1024, max_words1=128, clean=False)
    for q in questions:
        a = on_raw.run(q["question"], q["pages"])
        b = on_clean.run(q["question"], [clean_html(p) for p in q["pages"]])
        assert a.context == b.context and a.tokens == b.tokens <= 1024
        assert a.stage_tokens == {} and b.stage_tokens["cleaned"] > b.tokens


def test_word_counts_made_while_cleaning_equal_counting_the_tree(questions):
    pages = [raw for q in questions for raw in q["pages"]]
    checked = 0
    for raw in pages:
        html, root, counts = clean_page_counted(raw)
        assert html == clean_html(raw)
        expected, elements, cjk = _word_counts(root)
        assert (counts is None) == cjk
        if counts is None:
            continue
        checked += 1
        assert [counts.by_id[id(e)] for e in elements] == [expected[id(e)] for e in elements]
        a = build_block_tree(root, 128, pack_siblings=True, word_counts=counts)
        b = build_block_tree(html, 128, pack_siblings=True)
        assert [(x.words, x.position) for x in a.blocks] == [(x.words, x.position) for x in b.blocks]
        counts.release()  # a tree built after the counts are let go counts words itself
        c = build_block_tree(root, 128, pack_siblings=True, word_counts=counts)
        assert [(x.words, x.position) for x in c.blocks] == [(x.words, x.position) for x in b.blocks]
    assert checked >= 0.8 * len(pages)
    # Pages with CJK text count each character as a word: no counts from cleaning there.
    assert clean_page_counted("<p>\u6771\u4eac is a city</p>")[2] is None
    # <pre> keeps its whitespace; image alt text counts; a removed empty inline element joins words.
    html, root, counts = clean_page_counted('<div><pre> a  b\n c </pre><p>x<img alt="two words">y<i></i>z</p></div>')
    expected, elements, _ = _word_counts(root)
    assert [counts.by_id[id(e)] for e in elements] == [expected[id(e)] for e in elements]


def test_batch_tokenisation_equals_one_text_at_a_time(questions):
    texts = []
    for q in questions[:2]:
        for raw in q["pages"]:
            texts.extend(build_block_tree(clean_html(raw), 128, pack_siblings=True).rank_texts())
    texts += ["\u6771\u4eac\u90fd Running cats", "Stations and STATION", ""]
    clear_cache()
    one = [tokenize(t) for t in texts]
    clear_cache()
    assert [list(t) for t in tokenize_many(texts)] == one
    assert tokenize("Running cats and the stations") == ["run", "cat", "station"]
    assert [list(t) for t in tokenize_many(texts, stemmer=None)][-2] == ["stations", "station"]


def test_pipeline_cache_does_not_keep_every_element_alive(questions):
    pipe = HtmlRagPipeline(BM25Ranker(), None, TOK, budget2=1024, max_words1=128, cache_pages=64)
    first = pipe.run(questions[0]["question"], questions[0]["pages"])
    cleaned = [v for k, v in pipe._cache.items() if k[0] == "clean"]
    assert cleaned and all(v[2] is None or (v[2].by_id is None and not v[2].alive) for v in cleaned)
    again = pipe.run(questions[0]["question"], questions[0]["pages"])  # trees come from the cache
    assert again.context == first.context


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_word_split_equals_the_unicode_word_class(text):
    # ASCII texts skip NFKC and match [a-z0-9]+ after lower-casing: the same words as [^\W_]+ (underscore,
    # punctuation and control characters separate words in both)
    from htmlrag.rankers.bm25 import _PLAIN, _split

    assert _split(text) == ([], _PLAIN.findall(text.lower()))
    assert _split(text + "\u00e9") == ([], _PLAIN.findall((text + "\u00e9").lower()))  # the non-ASCII path
