"""On real WTQ Wikipedia pages (tables everywhere), splits take whole table rows at the smallest, in every
context format, at the budgets the benchmark uses, with the pipeline's settings (BM25 with the page prior,
128-word packed blocks, split-to-fill 4)."""

from __future__ import annotations

from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_page_counted
from htmlrag.html.formats import FORMATS
from htmlrag.pruning.prune import prune_to_budget
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.bm25 import BM25Ranker
from tests.helpers.rows import rows_torn
from tests.integration.test_fast_paths import _questions

TOK = load_tokenizer()


def test_splits_keep_rows_whole_on_wtq_pages():
    ranker = BM25Ranker(page_prior=0.5)
    splits = 0
    for q in _questions(8):
        trees = []
        for i, page in enumerate(q["pages"]):
            _, root, counts = clean_page_counted(page, serialize_html=False)
            trees.append(build_block_tree(root, 128, page=i, pack_siblings=True, word_counts=counts))
        scores = ranker.score(q["question"], trees)
        for fmt in FORMATS:
            for budget in (512, 1024, 2048, 4096):
                res = prune_to_budget(trees, scores, budget, TOK, fmt=fmt, ranker=ranker, question=q["question"],
                                      split_to_fill=4)
                assert res.tokens <= budget
                assert not rows_torn(trees, res), (q["question"], fmt, budget)
                splits += res.trees != trees
    assert splits > 20  # the splits this checks did happen
