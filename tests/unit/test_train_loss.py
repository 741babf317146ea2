"""htmlrag_bench.training.loss: the output head applied at the answer positions only gives the full forward's loss."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from htmlrag_bench.training.data import IGNORE_INDEX  # noqa: E402
from htmlrag_bench.training.loss import answer_loss, answer_positions  # noqa: E402
from tests.helpers.tiny import tiny_causal_lm, tiny_tokenizer  # noqa: E402


def _batch(tok):
    """Two right-padded samples whose answers sit at different positions (prompt labels -100)."""
    a = tok.encode("<html><body><p>The mill was built in 1998.</p></body></html> Who?", add_special_tokens=False)
    b = tok.encode("<html><body><div0><p>Ada</p></div0></body></html> Name the builder of the mill?",
                   add_special_tokens=False)
    ans_a = tok.encode("<html><body><p>", add_special_tokens=False)
    ans_b = tok.encode("<html><body><div0><p>Ada", add_special_tokens=False)
    rows = [(a, ans_a), (b, ans_b)]
    width = max(len(p) + len(x) for p, x in rows)
    ids = torch.full((2, width), tok.pad_token_id)
    labels = torch.full((2, width), IGNORE_INDEX)
    mask = torch.zeros((2, width), dtype=torch.long)
    for i, (p, x) in enumerate(rows):
        n = len(p) + len(x)
        ids[i, :n] = torch.tensor(p + x)
        labels[i, len(p):n] = torch.tensor(x)
        mask[i, :n] = 1
    return ids, labels, mask


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_answer_loss_equals_the_full_forward_loss(arch):
    tok = tiny_tokenizer()
    model = tiny_causal_lm(arch, tok, seed=3, max_position_embeddings=256)
    ids, labels, mask = _batch(tok)
    full = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    ours, tokens = answer_loss(model, ids, labels, mask)
    assert tokens.item() == int((labels[:, 1:] != IGNORE_INDEX).sum())
    assert torch.allclose(ours, full, atol=1e-5), (ours.item(), full.item())
    # gradients agree too (what training uses)
    g_full = torch.autograd.grad(full, model.lm_head.weight)[0]
    g_ours = torch.autograd.grad(answer_loss(model, ids, labels, mask)[0], model.lm_head.weight)[0]
    assert torch.allclose(g_ours, g_full, atol=1e-6)
    # normalised by the accumulated batch's label count when the Trainer passes it
    half, _ = answer_loss(model, ids, labels, mask, num_items_in_batch=2 * tokens)
    assert torch.allclose(half, full / 2, atol=1e-5)


def test_positions_are_the_union_of_rows_and_shifted_by_one():
    labels = torch.tensor([[-100, -100, 5, 6, -100], [-100, -100, -100, -100, 7]])
    assert answer_positions(labels).tolist() == [1, 2, 3]
    assert answer_positions(torch.full((1, 4), -100)).tolist() == []


def test_only_answer_positions_reach_the_head():
    """The head sees as many positions as there are answer positions, not the whole sequence."""
    tok = tiny_tokenizer()
    model = tiny_causal_lm("llama", tok, seed=3, max_position_embeddings=256)
    ids, labels, mask = _batch(tok)
    seen = []
    hook = model.lm_head.register_forward_hook(lambda m, i, o: seen.append(i[0].shape[1]))
    answer_loss(model, ids, labels, mask)
    hook.remove()
    assert seen == [len(answer_positions(labels))] and seen[0] < ids.shape[1] // 2
