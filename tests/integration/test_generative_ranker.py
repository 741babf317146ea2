"""GenerativeRanker on real shared pages with tiny models: exactness, prompt format, budgets, bad input."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from htmlrag.core.errors import BudgetError, InputError
from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.rankers.base import Ranker
from htmlrag.rankers.generative import (
    GenerativeRanker,
    block_paths,
    build_pruner_messages,
    format_pruner_prompt,
    path_string,
    pruner_prompt_ids,
)
from htmlrag.rankers.token_tree import TokenTree
from tests.conftest import shared_path
from tests.helpers.naive import naive_path_scores

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.helpers.tiny import ARCHS, save_tiny, tiny_causal_lm, tiny_tokenizer  # noqa: E402

QUESTION = "Who wrote the article?"
SMALL_PAGE = ("readability-pages", "daringfireball-1", "source.html.gz")  # 19 blocks at 128 words


def _tree(parts: tuple[str, ...], page: int = 0):
    html = clean_html(gzip.open(shared_path(*parts), "rb").read())
    return build_block_tree(html, 128, page=page)


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def page():
    return _tree(SMALL_PAGE)


def _naive_for(ranker: GenerativeRanker, question: str, trees) -> np.ndarray:
    """Reference: our documented prompt format + one full forward pass per block path."""
    tok = ranker.tokenizer
    prompt = tok.encode(format_pruner_prompt(tok, question, [t.html() for t in trees]), add_special_tokens=False)
    paths = [tok.encode(path_string(p), add_special_tokens=False) for p in block_paths(trees)]
    return naive_path_scores(ranker.model, prompt, paths)


@pytest.mark.shared_data
@pytest.mark.parametrize("arch", ARCHS)
def test_scores_equal_the_naive_scorer_on_a_real_page(tok, page, arch):
    ranker = GenerativeRanker.from_model(tiny_causal_lm(arch, tok, seed=2), tok, batch_size=4)
    (scores,) = ranker.score(QUESTION, [page])
    ref = _naive_for(ranker, QUESTION, [page])
    assert scores.shape == (len(page.blocks),)
    assert np.abs(scores - ref).max() <= 1e-4
    assert np.ptp(ref) > 0.5
    stats = ranker.last_stats
    assert stats.blocks == len(page.blocks) and stats.prompt_tokens_dropped == 0
    assert stats.model_tokens < stats.released_tokens < stats.naive_tokens


@pytest.mark.shared_data
def test_several_pages_share_one_prompt_and_get_numbered_roots(tok, page, page_or_small_tree):
    second = page_or_small_tree
    paths = block_paths([page, second])
    assert {p[0] for p in paths} == {"html0", "html1"}
    assert block_paths([page])[0][0] == "html"
    ranker = GenerativeRanker.from_model(tiny_causal_lm("qwen2", tok, seed=3), tok)
    out = ranker.score(QUESTION, [page, second])
    assert [len(s) for s in out] == [len(page.blocks), len(second.blocks)]
    ref = _naive_for(ranker, QUESTION, [page, second])
    assert np.abs(np.concatenate(out) - ref).max() <= 1e-4


@pytest.mark.shared_data
def test_rankings_do_not_change_with_batch_size(tok, page):
    model = tiny_causal_lm("phi3", tok, seed=4)
    orders = set()
    for bs in (1, 3, 64):
        (scores,) = GenerativeRanker.from_model(model, tok, batch_size=bs).score(QUESTION, [page])
        orders.add(tuple(np.argsort(-scores, kind="stable")))
    assert len(orders) == 1


@pytest.mark.shared_data
def test_loads_a_saved_checkpoint_lazily_and_implements_the_protocol(tmp_path, page):
    folder = save_tiny(tmp_path, "llama", seed=5)
    ranker = GenerativeRanker(str(folder), dtype="float32", batch_size=8)
    assert isinstance(ranker, Ranker) and ranker.name == f"gen:{folder}"
    assert ranker._model is None  # nothing loaded before the first score
    (scores,) = ranker.score(QUESTION, [page])
    same = GenerativeRanker.from_model(tiny_causal_lm("llama", tiny_tokenizer(), seed=5), tiny_tokenizer())
    assert np.abs(scores - same.score(QUESTION, [page])[0]).max() <= 1e-5


def test_prompt_format_is_the_released_pruners_one(tok):
    messages = build_pruner_messages("Q?", ["<p>a</p>", "<p>b</p>"])
    assert len(messages) == 1 and messages[0]["role"] == "user"
    content = messages[0]["content"]
    assert content.startswith("**HTML**: ```<p>a</p>\n<p>b</p>```\n**Question**: **Q?**\n Your task is")
    assert "You should provide the path to the text piece in the HTML document." in content
    text = format_pruner_prompt(tok, "Q?", "<p>a</p>")
    assert text.startswith("<s><|user|>\n**HTML**") and text.endswith("<|end|>\n<|assistant|>\n")


def test_without_a_chat_template_the_plain_prompt_is_used(page_or_small_tree):
    plain = tiny_tokenizer(chat_template=False)
    text = format_pruner_prompt(plain, "Q?", "<p>a</p>")
    assert text == "<s>" + build_pruner_messages("Q?", "<p>a</p>")[0]["content"] + "\n"
    ranker = GenerativeRanker.from_model(tiny_causal_lm("llama", plain, seed=6), plain)
    (scores,) = ranker.score("Q?", [page_or_small_tree])
    assert np.abs(scores - _naive_for(ranker, "Q?", [page_or_small_tree])).max() <= 1e-4


@pytest.fixture
def page_or_small_tree():
    """A small synthetic page (no shared data needed) with a few blocks that branch."""
    rows = "".join(f"<tr><td>row {i} " + "word " * 20 + "</td></tr>" for i in range(6))
    html = f"<html><body><h1>Title</h1><table>{rows}</table><p>{'text ' * 30}</p></body></html>"
    return build_block_tree(html, 25)


def test_zero_and_one_block_need_no_model(page_or_small_tree):
    ranker = GenerativeRanker("/nonexistent/pruner")  # would fail to load; must not be loaded at all
    ranker._tokenizer = tiny_tokenizer()
    assert ranker.score("Q?", []) == []
    empty = build_block_tree("<html><body></body></html>", 128)
    assert [s.tolist() for s in ranker.score("Q?", [empty])] == [[]]
    one = build_block_tree("<html><body><p>one short block</p></body></html>", 128)
    assert [s.tolist() for s in ranker.score("Q?", [one, empty])] == [[0.0], []]
    assert ranker.last_stats.forward_calls == 0 and ranker._model is None


def test_a_prompt_over_the_window_is_rejected_or_truncated(tok, page_or_small_tree):
    tree = page_or_small_tree
    html = tree.html()
    window = len(pruner_prompt_ids(tok, QUESTION, html).ids) - 50
    model = tiny_causal_lm("llama", tok, seed=7, max_position_embeddings=window)
    with pytest.raises(BudgetError, match=r"over the limit of \d+.*truncation='left' or 'right'"):
        GenerativeRanker.from_model(model, tok).score(QUESTION, [tree])
    for side in ("left", "right"):
        ranker = GenerativeRanker.from_model(model, tok, truncation=side)
        (scores,) = ranker.score(QUESTION, [tree])
        stats = ranker.last_stats
        assert stats.prompt_tokens_dropped > 0 and len(scores) == len(tree.blocks)
        # the walk feeds path tokens up to the deepest branching node; those must fit after the prompt
        tree_tokens = TokenTree.build([tok.encode(path_string(p)) for p in block_paths([tree])])
        deepest = max(tree_tokens.depth[s.nodes[-1]] for s in tree_tokens.segments())
        assert stats.prompt_tokens + deepest == window


def test_truncation_cuts_html_only_and_keeps_the_named_end(tok):
    html = "<p>" + " ".join(f"w{i}" for i in range(300)) + "</p>"
    full = pruner_prompt_ids(tok, "Where?", html)
    limit = len(full.ids) - 100
    right = pruner_prompt_ids(tok, "Where?", html, max_tokens=limit, truncation="right")
    left = pruner_prompt_ids(tok, "Where?", html, max_tokens=limit, truncation="left")
    for cut in (right, left):
        text = tok.decode(cut.ids)
        assert len(cut.ids) == limit and cut.dropped == 100
        assert "**Question**: **Where?**" in text and text.endswith("<|assistant|>\n")
    assert "w0 w1" in tok.decode(right.ids) and "w299" not in tok.decode(right.ids)
    assert "w299" in tok.decode(left.ids) and "w0 w1 " not in tok.decode(left.ids)
    with pytest.raises(BudgetError, match="without any HTML"):
        pruner_prompt_ids(tok, "Where?", html, max_tokens=20, truncation="left")


def test_max_prompt_tokens_caps_the_prompt(tok, page_or_small_tree):
    cap = len(pruner_prompt_ids(tok, QUESTION, page_or_small_tree.html()).ids) - 40
    model = tiny_causal_lm("qwen2", tok, seed=8)
    ranker = GenerativeRanker.from_model(model, tok, max_prompt_tokens=cap, truncation="right")
    ranker.score(QUESTION, [page_or_small_tree])
    assert ranker.last_stats.prompt_tokens == cap and ranker.last_stats.prompt_tokens_dropped == 40


def test_paths_longer_than_the_window_are_rejected(tok, page_or_small_tree):
    model = tiny_causal_lm("llama", tok, max_position_embeddings=8)
    with pytest.raises(BudgetError, match="leave no room"):
        GenerativeRanker.from_model(model, tok, truncation="left").score(QUESTION, [page_or_small_tree])


def test_bad_arguments_raise_input_errors(tok, page_or_small_tree):
    with pytest.raises(InputError, match="truncation"):
        GenerativeRanker("x", truncation="middle")
    with pytest.raises(InputError, match="dtype"):
        GenerativeRanker("x", dtype="fp8")
    with pytest.raises(InputError, match="batch_size"):
        GenerativeRanker("x", batch_size=0)
    ranker = GenerativeRanker.from_model(tiny_causal_lm("llama", tok), tok)
    with pytest.raises(InputError, match="question must be a string"):
        ranker.score(None, [page_or_small_tree])  # type: ignore[arg-type]


def test_the_gpu_check_script_runs_end_to_end_on_cpu(tmp_path):
    """The GPU check can only run where a GPU is lent; its logic is exercised here at a toy size on CPU."""
    import json

    from scripts.gpu_check_gen_pruner import main

    out = tmp_path / "gpu.json"
    main(["--device", "cpu", "--shape", "smoke", "--lengths", "600", "--repeats", "1",
          "--released-samples", "1", "--data", str(tmp_path / "absent"), "--out", str(out)])
    row = json.loads(out.read_text())["lengths"]["600"]
    assert row["prompt_tokens"] == 600 and row["blocks"] > 1
    assert row["model_tokens"] < row["released_tokens"] and row["ms_per_doc"] > 0
