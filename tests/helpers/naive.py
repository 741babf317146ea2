"""A naive reference scorer for the generative pruner: one full forward pass (no cache) per block path.

Written independently of :mod:`htmlrag.rankers.token_tree`: sibling sets come from comparing raw token
lists, not from a tree. Eq. 2: at step ``j`` of a path, the candidates are the ``j``-th tokens of all paths
that share the first ``j`` tokens; with one candidate the probability is 1, otherwise it is the softmax of
the candidates' logits at the previous position. Eq. 3: the score is the sum of the logs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def naive_path_scores(
    model: Any, prompt_ids: Sequence[int], token_paths: Sequence[Sequence[int]], *, min_prob: float = 1e-9
) -> np.ndarray:
    """Score every path by a full forward pass of prompt + path (float64 log-probabilities)."""
    import torch

    prompt = [int(t) for t in prompt_ids]
    paths = [[int(t) for t in p] for p in token_paths]
    floor = math.log(min_prob) if min_prob > 0 else -math.inf
    out = np.zeros(len(paths))
    for k, path in enumerate(paths):
        needs_model = any(len(_candidates(paths, path, j)) > 1 for j in range(len(path)))
        if not needs_model:
            continue
        ids = torch.tensor([prompt + path], device=model.device)
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].float()
        total = 0.0
        for j, token in enumerate(path):
            cands = _candidates(paths, path, j)
            if len(cands) < 2:
                continue
            logp = torch.log_softmax(logits[len(prompt) + j - 1, cands], dim=-1)
            total += max(float(logp[cands.index(token)]), floor)
        out[k] = total
    return out


def _candidates(paths: list[list[int]], path: list[int], j: int) -> list[int]:
    return sorted({p[j] for p in paths if len(p) > j and p[:j] == path[:j]})
