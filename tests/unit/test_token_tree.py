"""Token tree (Eq. 2–3), dynamic skipping, accounting, and the cached walk against a naive scorer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htmlrag.core.errors import BudgetError, InputError
from htmlrag.rankers import token_tree
from htmlrag.rankers.token_tree import TokenTree, model_window, score_paths, walk_token_tree
from tests.helpers.naive import naive_path_scores

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.helpers.tiny import ARCHS, tiny_causal_lm, tiny_tokenizer  # noqa: E402

# Paths chosen to cover: shared prefixes, a path that is a prefix of another (tags and tokens), identical
# paths, sibling suffix numbers (div1 vs div10) and a root with one child.
PATH_STRINGS = [
    "<html><body><div0><p>",
    "<html><body><div1><p>",
    "<html><body><div1>",
    "<html><body><div1><table><tr0>",
    "<html><body><div1><table><tr1>",
    "<html><title>",
    "<html><title>",
    "<html><body><div10><ul>",
    "<html><body><div10><ul><li>",
]


# ---------------------------------------------------------------- structure (no model)


def test_tree_merges_prefixes_and_counts_skipped_nodes():
    #        root
    #         1
    #        / \
    #       2   5
    #      / \   \
    #     3   4   6
    tree = TokenTree.build([[1, 2, 3], [1, 2, 4], [1, 5, 6], [1, 2]])
    assert tree.num_nodes == 6
    assert tree.branching_nodes() == [1, 2]  # node ids: 1 -> token 1, 2 -> token 2
    # only children: token 1 (root's only child) and token 6 (5's only child)
    assert tree.num_skipped() == 2
    # the path [1, 2] ends at an internal node
    assert tree.path_node[3] == tree.parent[tree.path_node[0]]


def test_identical_paths_share_a_node_and_empty_input_gives_empty_tree():
    tree = TokenTree.build([[7, 8], [7, 8], [7, 9]])
    assert tree.path_node[0] == tree.path_node[1]
    assert tree.num_nodes == 3
    empty = TokenTree.build([])
    assert empty.num_nodes == 0 and empty.segments() == [] and len(empty.path_scores(np.zeros(1))) == 0


def test_segments_feed_only_tokens_on_the_way_to_a_branching_node():
    # 1 -> 2 -> {3 -> 4 -> 5, 6 -> {7, 8}}: the chain 3-4-5 ends in a leaf and is never fed
    tree = TokenTree.build([[1, 2, 3, 4, 5], [1, 2, 6, 7], [1, 2, 6, 8]])
    segments = tree.segments()
    fed = [[tree.token[v] for v in s.nodes] for s in segments]
    assert fed == [[1, 2], [6]]
    assert [tree.token[s.parent] for s in segments] == [-1, 2]
    assert all(len(tree.children[s.nodes[-1]]) >= 2 for s in segments)


def test_costs_of_the_three_strategies():
    tree = TokenTree.build([[1, 2, 3], [1, 2, 4], [1, 5, 6], [1, 2]])
    p = 100
    # released: one run of prompt + prefix at each branching node (token 1 at depth 1, token 2 at depth 2)
    assert tree.released_cost(p) == (p + 1 + p + 2, 2)
    # naive: prompt + path per path
    assert tree.naive_cost(p) == (4 * p + 3 + 3 + 3 + 2, 4)
    stats = token_tree.tree_stats(tree, p)
    assert stats.tree_tokens == 2  # tokens 1 and 2; token 5 needs no pass (its only child gets 1.0)
    assert stats.model_tokens == p + 2
    assert stats.skip_fraction == pytest.approx(2 / 6)


def test_path_scores_sum_log_probabilities_along_the_path():
    tree = TokenTree.build([[1, 2], [1, 3]])
    lp = np.zeros(len(tree.token))
    lp[tree.path_node[0]] = math.log(0.25)
    lp[tree.path_node[1]] = math.log(0.75)
    assert np.allclose(tree.path_scores(lp), [math.log(0.25), math.log(0.75)])


def test_model_window_is_limited_by_a_sliding_window_only_without_layer_types():
    from types import SimpleNamespace

    from htmlrag.rankers.token_tree import sliding_window

    assert model_window(SimpleNamespace(max_position_embeddings=4096, sliding_window=None)) == 4096
    # a sliding window the walk cannot mask per layer type (no layer_types): the window limits the prompt
    assert model_window(SimpleNamespace(max_position_embeddings=4096, sliding_window=512)) == 512
    off = SimpleNamespace(max_position_embeddings=4096, sliding_window=512, layer_types=["full_attention"])
    assert model_window(off) == 4096 and sliding_window(off) is None
    # Gemma 3 style: sliding layers listed in layer_types are masked by the walk, the full window applies
    mixed = SimpleNamespace(max_position_embeddings=32768, sliding_window=512,
                            layer_types=["sliding_attention", "full_attention"])
    assert model_window(mixed) == 32768 and sliding_window(mixed) == 512


def test_gemma3_prompt_is_longer_than_its_sliding_window(models, prompt):
    """The exactness tests below would not exercise the sliding mask if the prompt fit in the window."""
    from htmlrag_bench.training.tiny_model import TINY_SLIDING_WINDOW

    assert models["gemma3"].config.sliding_window == TINY_SLIDING_WINDOW < len(prompt) // 2


# ---------------------------------------------------------------- the walk on tiny models


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def models(tok):
    return {arch: tiny_causal_lm(arch, tok, seed=1) for arch in ARCHS}


@pytest.fixture(scope="module")
def token_paths(tok):
    paths = [tok.encode(s, add_special_tokens=False) for s in PATH_STRINGS]
    # "><" is one token, so no tag path above is a token prefix of another; add two that extend path 0
    return [*paths, paths[0] + paths[5], paths[0] + paths[7]]


@pytest.fixture(scope="module")
def prompt(tok):
    text = tok.apply_chat_template(
        [{"role": "user", "content": "<html><body><p>Which table lists the 1998 results?</p></body></html>"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    return tok.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_walk_equals_naive_full_forward_per_path(models, prompt, token_paths, arch, batch_size):
    model = models[arch]
    ours, stats = score_paths(model, prompt, token_paths, batch_size=batch_size)
    ref = naive_path_scores(model, prompt, token_paths)
    assert np.abs(ours - ref).max() <= 1e-4
    # the check has teeth: scores differ between blocks by far more than the tolerance
    assert np.ptp(ref) > 0.5
    # identical paths score identically; extending a path (in tokens) never raises its score
    assert ours[5] == ours[6]
    assert ours[-1] < ours[0] and ours[-2] < ours[0]
    assert stats.forward_calls >= 2


def test_rankings_do_not_depend_on_batch_size(models, prompt, token_paths):
    model = models["llama"]
    orders = {
        bs: tuple(np.argsort(-score_paths(model, prompt, token_paths, batch_size=bs)[0], kind="stable"))
        for bs in (1, 2, 5, 64)
    }
    assert len(set(orders.values())) == 1


def test_accounting_counts_calls_and_tokens(models, prompt, token_paths):
    model = models["qwen2"]
    tree = TokenTree.build(token_paths)
    segments = tree.segments()
    _, seq = walk_token_tree(model, prompt, tree, batch_size=1)
    _, packed = walk_token_tree(model, prompt, tree, batch_size=2)
    assert seq.forward_calls == 1 + len(segments)
    assert packed.forward_calls == 1 + math.ceil(len(segments) / 2)
    for stats in (seq, packed):
        assert stats.model_tokens == len(prompt) + sum(len(s.nodes) for s in segments)
        assert stats.released_tokens == sum(len(prompt) + tree.depth[v] for v in tree.branching_nodes())
        assert stats.nodes_skipped + stats.nodes_total > 0 and 0 < stats.skip_fraction < 1
        assert stats.seconds > 0


def test_a_broken_cache_crop_is_caught(models, prompt, token_paths, monkeypatch):
    """If the depth-first walk forgot to crop siblings out of the cache, the naive check must fail."""
    from transformers import DynamicCache

    model = models["llama"]
    ref = naive_path_scores(model, prompt, token_paths)
    monkeypatch.setattr(DynamicCache, "crop", lambda self, n: None)
    broken, _ = score_paths(model, prompt, token_paths, batch_size=1)
    assert np.abs(broken - ref).max() > 1e-3


def test_a_broken_tree_mask_is_caught(models, prompt, token_paths, monkeypatch):
    """If packed siblings could see each other (plain causal mask), the naive check must fail."""
    model = models["phi3"]
    ref = naive_path_scores(model, prompt, token_paths)
    real = token_tree._tree_mask

    def causal(tree, chunk, slot, ancestors, p, past):
        allowed = real(tree, chunk, slot, ancestors, p, past)
        return np.tril(np.ones_like(allowed), k=past)

    monkeypatch.setattr(token_tree, "_tree_mask", causal)
    broken, _ = score_paths(model, prompt, token_paths, batch_size=32)
    assert np.abs(broken - ref).max() > 1e-3


class _NoModel:
    """Fails the test if the walk runs a forward pass."""

    config = None

    def __call__(self, *a, **k):
        raise AssertionError("no forward pass expected")


@pytest.mark.parametrize("paths", [[], [[5, 6, 7]], [[5, 6], [5, 6]], [[5], [5, 6, 7]]])
def test_trees_without_branching_run_no_model(paths):
    scores, stats = score_paths(_NoModel(), [1, 2, 3], paths)
    assert scores.tolist() == [0.0] * len(paths)
    assert stats.forward_calls == 0 and stats.model_tokens == 0


def test_prompt_plus_paths_over_the_window_is_rejected(tok, prompt, token_paths):
    small = tiny_causal_lm("llama", tok, max_position_embeddings=len(prompt) + 2)
    with pytest.raises(BudgetError, match="window"):
        score_paths(small, prompt, token_paths)


def test_bad_arguments_are_rejected(models, token_paths):
    with pytest.raises(InputError, match="prompt is empty"):
        score_paths(models["llama"], [], token_paths)
    with pytest.raises(InputError, match="batch_size"):
        score_paths(models["llama"], [1, 2], token_paths, batch_size=0)


def test_min_prob_clamps_each_sibling_probability(models, prompt, token_paths):
    tree = TokenTree.build(token_paths)
    lp, _ = walk_token_tree(models["llama"], prompt, tree, min_prob=0.3)
    assert lp.min() >= math.log(0.3) - 1e-12
    lp0, _ = walk_token_tree(models["llama"], prompt, tree, min_prob=0.0)
    assert lp0.min() < math.log(0.3)  # the clamp changed something, so the assertion above can fail
