"""The token tree of block paths (HtmlRAG §3.4.2, Equations 2–3) and the cached walk that scores it.

Definitions used throughout:

* **Token tree.** Every block path (``"<html><body><div0><p>"``) is tokenized with the pruner's tokenizer;
  paths are merged on common token prefixes. The root (node 0) stands for the prompt; every other node is
  one token at depth ``d >= 1`` (its position in the answer). A path ends at a node, which may be internal
  when its tokens are a prefix of another path's; identical paths end at the same node.
* **Probabilities (Eq. 2).** A node that is the only child of its parent gets probability 1.0 without a
  forward pass (*dynamic skipping*: such a node is *skipped*); the root has probability 1.0. The children of
  a *branching node* (>= 2 children) get the softmax of their tokens' logits at the parent's position,
  restricted to the siblings (the released pruners' rule). Probabilities below ``min_prob`` are clamped to
  it (1e-9 as in the released toolkit; 0 disables the clamp).
* **Block score (Eq. 3).** The sum of the log-probabilities of the nodes on the path, i.e. ``log P(path)``.

The walk processes the prompt once, then only the tree tokens that lie on the way to a branching node
(tokens after a path's last branching node need no forward pass). It cuts the tree into *segments*: a chain
that starts at a child of the root or of a branching node and ends at the next branching node. Two modes,
both exact (equal to one full forward pass per path, up to float rounding):

* ``batch_size == 1`` — depth-first, one forward call per segment on a :class:`transformers.DynamicCache`
  that holds exactly the prompt and the segment's ancestors: before a segment the cache is cropped back to
  its parent's length (``DynamicCache.crop``). No custom mask, so any attention implementation works.
* ``batch_size > 1`` — up to ``batch_size`` segments (taken in depth-first order) share one forward call,
  packed along the sequence: the cache keeps every processed tree token and a 4D additive attention mask
  lets each token see the prompt and its own ancestors only (tree attention), with ``position_ids`` =
  prompt length + depth - 1. Needs an attention implementation that takes 4D masks (``eager``, ``sdpa``);
  other implementations (flash-attention) fall back to ``batch_size == 1``.

Sliding-window models whose config lists ``layer_types`` (Gemma 2/3, Qwen2, ...): the cache is a plain
``DynamicCache()`` (full layers: nothing is evicted, so cropping back is safe), the depth-first mode lets the
model build its own masks (cache index = position there), and the packed mode passes one mask per layer type
(``{"full_attention": ..., "sliding_attention": ...}``, the models' public mask mapping), the sliding one also
hiding keys ``window`` or more positions behind the query (the rule of ``transformers.masking_utils``). So a
prompt longer than the sliding window is scored exactly (Gemma-3-270M: window 512, prompts of thousands of
tokens). Models with a sliding window but no ``layer_types`` stay limited to the window (:func:`model_window`).

Logits are computed only where needed (``logits_to_keep``, as an index tensor in the packed mode). Only
public transformers API is used: the forward's cache argument (``cache``, ``past_key_values`` before it was
renamed), ``DynamicCache``, ``position_ids``, 4D ``attention_mask``. Tested with transformers 5.24.

Accounting (:class:`TreeStats`) counts model tokens processed by our walk, by the released toolkit's
strategy (the whole prompt plus the node's prefix re-run at every branching node, no cache) and by a naive
scorer (one full forward pass of prompt + path per block).
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from htmlrag.core.errors import BudgetError, InputError

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

ROOT = 0
#: Attention implementations known to accept a custom 4D additive mask (packed mode).
MASK_ATTENTION = ("eager", "sdpa")


@dataclass(frozen=True)
class Segment:
    """A chain of tree nodes fed to the model in one piece.

    Attributes:
        parent: the node whose cached prefix the segment continues (the root or a branching node).
        nodes: node ids from a child of ``parent`` down to the next branching node (inclusive).
    """

    parent: int
    nodes: tuple[int, ...]


@dataclass
class TokenTree:
    """Block paths merged on common token prefixes (see the module docstring).

    Attributes:
        token: token id of every node (``-1`` for the root).
        parent: parent node id (``-1`` for the root). A parent's id is always smaller than its children's.
        depth: number of tokens from the root (0 for the root).
        children: child node ids in order of first appearance.
        path_node: for every input path, the node where it ends (the root for an empty path).
    """

    token: list[int]
    parent: list[int]
    depth: list[int]
    children: list[list[int]]
    path_node: list[int]

    @classmethod
    def build(cls, token_paths: Sequence[Sequence[int]]) -> TokenTree:
        """Merge ``token_paths`` (one token-id sequence per block) into a tree."""
        token, parent, depth = [-1], [-1], [0]
        children: list[list[int]] = [[]]
        index: list[dict[int, int]] = [{}]
        ends: list[int] = []
        for path in token_paths:
            node = ROOT
            for t in path:
                t = int(t)
                child = index[node].get(t)
                if child is None:
                    child = len(token)
                    token.append(t)
                    parent.append(node)
                    depth.append(depth[node] + 1)
                    children.append([])
                    index.append({})
                    children[node].append(child)
                    index[node][t] = child
                node = child
            ends.append(node)
        return cls(token, parent, depth, children, ends)

    @property
    def num_nodes(self) -> int:
        """Nodes of the tree, the root excluded."""
        return len(self.token) - 1

    def branching_nodes(self) -> list[int]:
        """Nodes (the root included) with at least two children: one softmax each."""
        return [v for v, c in enumerate(self.children) if len(c) >= 2]

    def num_skipped(self) -> int:
        """Non-root nodes that are their parent's only child: probability 1.0 with no computation."""
        return sum(1 for v in range(1, len(self.token)) if len(self.children[self.parent[v]]) == 1)

    def needs_feed(self) -> list[bool]:
        """Whether each node must be fed to the model: its subtree holds a branching node (itself included)."""
        need = [False] * len(self.token)
        for v in range(len(self.token) - 1, 0, -1):
            if need[v] or len(self.children[v]) >= 2:
                need[v] = True
                need[self.parent[v]] = True
        return need

    def segments(self) -> list[Segment]:
        """The chains to feed, in depth-first preorder (a segment's ancestors always come before it)."""
        need = self.needs_feed()
        out: list[Segment] = []
        stack = [(ROOT, c) for c in reversed(self.children[ROOT]) if need[c]]
        while stack:
            parent, v = stack.pop()
            nodes = [v]
            while len(self.children[v]) == 1:
                v = self.children[v][0]
                nodes.append(v)
            # need[first node] holds, so the chain ends at a branching node, not at a leaf
            out.append(Segment(parent, tuple(nodes)))
            stack.extend((v, c) for c in reversed(self.children[v]) if need[c])
        return out

    def path_scores(self, node_logprob: np.ndarray) -> np.ndarray:
        """Eq. 3: per path, the sum of ``node_logprob`` from the root to the path's node (float64)."""
        cum = np.zeros(len(self.token), dtype=np.float64)
        for v in range(1, len(self.token)):
            cum[v] = cum[self.parent[v]] + node_logprob[v]
        return cum[np.asarray(self.path_node, dtype=np.int64)] if self.path_node else np.zeros(0)

    def released_cost(self, prompt_tokens: int) -> tuple[int, int]:
        """(model tokens, forward calls) of the released strategy: prompt + node prefix per branching node."""
        branching = self.branching_nodes()
        return sum(prompt_tokens + self.depth[v] for v in branching), len(branching)

    def naive_cost(self, prompt_tokens: int) -> tuple[int, int]:
        """(model tokens, forward calls) of one full forward pass of prompt + path per path."""
        return sum(prompt_tokens + self.depth[v] for v in self.path_node), len(self.path_node)


@dataclass
class TreeStats:
    """Accounting of one scoring call (all counts are model tokens or calls, not characters).

    Attributes:
        blocks: blocks (paths) scored.
        path_tokens: tokens of all paths together (identical paths counted once per block).
        nodes_total: token-tree nodes, the root excluded.
        nodes_skipped: nodes given probability 1.0 without computation (only children, Eq. 2).
        branching_nodes: nodes with >= 2 children, the root included (one softmax each).
        prompt_tokens: tokens of the prompt after truncation (0 when no node branches: nothing is run).
        prompt_tokens_dropped: HTML tokens removed from the prompt by truncation.
        tree_tokens: tree tokens fed to the model by our walk.
        model_tokens: tokens processed by our walk (prompt once + tree tokens).
        forward_calls: forward calls of our walk.
        released_tokens: tokens the released strategy processes on the same tree (prompt + prefix per
            branching node).
        released_calls: forward calls of the released strategy (one per branching node).
        naive_tokens: tokens of one full forward pass of prompt + path per block.
        naive_calls: forward calls of the naive scorer (one per block).
        batch_size: segments per forward call actually used (1 = depth-first with cache cropping).
        seconds: wall time of the call in seconds (tokenization, forward passes, scoring).
    """

    blocks: int = 0
    path_tokens: int = 0
    nodes_total: int = 0
    nodes_skipped: int = 0
    branching_nodes: int = 0
    prompt_tokens: int = 0
    prompt_tokens_dropped: int = 0
    tree_tokens: int = 0
    model_tokens: int = 0
    forward_calls: int = 0
    released_tokens: int = 0
    released_calls: int = 0
    naive_tokens: int = 0
    naive_calls: int = 0
    batch_size: int = 1
    seconds: float = 0.0

    @property
    def skip_fraction(self) -> float:
        """``nodes_skipped / nodes_total`` (0.0 for an empty tree)."""
        return self.nodes_skipped / self.nodes_total if self.nodes_total else 0.0

    @property
    def released_ratio(self) -> float:
        """``released_tokens / model_tokens``: how many times fewer tokens our walk processes (nan if none)."""
        return self.released_tokens / self.model_tokens if self.model_tokens else math.nan

    def as_dict(self) -> dict[str, Any]:
        """All fields plus ``skip_fraction`` and ``released_ratio``, for logs and results files."""
        return {**asdict(self), "skip_fraction": self.skip_fraction, "released_ratio": self.released_ratio}


def sliding_window(config: Any) -> int | None:
    """The sliding window the walk must apply itself: set when some of the model's ``layer_types`` are
    ``sliding_attention`` (those models take a mask per layer type); ``None`` otherwise."""
    layer_types = getattr(config, "layer_types", None)
    sliding = getattr(config, "sliding_window", None)
    return int(sliding) if sliding and layer_types is not None and "sliding_attention" in layer_types else None


def model_window(config: Any) -> int | None:
    """The longest sequence (tokens) the walk scores exactly: ``max_position_embeddings``; for a model with a
    sliding window and no ``layer_types`` (no mask per layer type, see the module docstring), that window."""
    window = getattr(config, "max_position_embeddings", None)
    sliding = getattr(config, "sliding_window", None)
    if getattr(config, "layer_types", None) is not None:
        return window  # sliding layers, if any, are masked exactly by the walk
    if sliding and getattr(config, "use_sliding_window", True):
        window = sliding if window is None else min(window, sliding)
    return window


def tree_stats(tree: TokenTree, prompt_tokens: int) -> TreeStats:
    """The counts of ``tree`` that need no model (our walk's counts assume a forward pass is needed)."""
    segments = tree.segments()
    branching = tree.branching_nodes()
    tree_tokens = sum(len(s.nodes) for s in segments)
    released_tokens, released_calls = tree.released_cost(prompt_tokens)
    naive_tokens, naive_calls = tree.naive_cost(prompt_tokens)
    run = bool(branching)
    return TreeStats(
        blocks=len(tree.path_node),
        path_tokens=sum(tree.depth[v] for v in tree.path_node),
        nodes_total=tree.num_nodes,
        nodes_skipped=tree.num_skipped(),
        branching_nodes=len(branching),
        prompt_tokens=prompt_tokens,
        tree_tokens=tree_tokens,
        model_tokens=(prompt_tokens + tree_tokens) if run else 0,
        released_tokens=released_tokens,
        released_calls=released_calls,
        naive_tokens=naive_tokens,
        naive_calls=naive_calls,
    )


def _attn_implementation(model: Any) -> str | None:
    return getattr(model.config, "_attn_implementation", None)


class _Scorer:
    """Turns logits at a branching node's position into its children's log-probabilities (Eq. 2)."""

    def __init__(self, tree: TokenTree, min_prob: float):
        self.tree = tree
        self.floor = math.log(min_prob) if min_prob > 0 else -math.inf
        self.logprob = np.zeros(len(tree.token), dtype=np.float64)

    def assign(self, node: int, logits: torch.Tensor) -> None:
        import torch

        kids = self.tree.children[node]
        ids = torch.tensor([self.tree.token[c] for c in kids], device=logits.device)
        ls = torch.log_softmax(logits.index_select(-1, ids).float(), dim=-1).cpu().numpy().astype(np.float64)
        self.logprob[kids] = np.maximum(ls, self.floor)


def cache_kwarg(model: Any) -> str:
    """Name of the forward argument that takes the KV cache: ``cache`` (transformers >= 5.2x, where
    ``past_key_values`` is deprecated) or ``past_key_values`` (earlier versions)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _forward(model: Any, ids: list[int], positions: list[int], cache: Any, keep: Any, mask: Any = None) -> Any:
    import torch

    device = model.device
    out = model(
        input_ids=torch.tensor([ids], dtype=torch.long, device=device),
        position_ids=torch.tensor([positions], dtype=torch.long, device=device),
        attention_mask=mask,
        use_cache=True,
        logits_to_keep=keep,
        **{cache_kwarg(model): cache},
    )
    return out.logits[0]


def walk_token_tree(
    model: Any,
    prompt_ids: Sequence[int],
    tree: TokenTree,
    *,
    batch_size: int = 32,
    min_prob: float = 1e-9,
) -> tuple[np.ndarray, TreeStats]:
    """Score every node of ``tree`` after ``prompt_ids`` with a causal LM (see the module docstring).

    Args:
        model: a ``transformers`` causal LM (``AutoModelForCausalLM``), already on its device, in eval mode.
        prompt_ids: the prompt's token ids (chat template applied), the answer starts right after them.
        tree: the token tree of the block paths.
        batch_size: segments per forward call; 1 = depth-first with cache cropping, no custom mask.
        min_prob: floor of a sibling probability before the log (0 disables it).

    Returns:
        ``(node_logprob, stats)``: the log-probability of every node (0.0 for the root and only children;
        per node id) and the accounting (``seconds`` = time of this walk).

    Raises:
        InputError: empty prompt while some node branches, or ``batch_size < 1``.
        BudgetError: prompt + deepest fed path is longer than the model's window.
    """
    import torch

    start = time.perf_counter()
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    prompt = [int(t) for t in prompt_ids]
    stats = tree_stats(tree, len(prompt))
    scorer = _Scorer(tree, min_prob)
    if not stats.branching_nodes:
        stats.seconds = time.perf_counter() - start
        return scorer.logprob, stats
    if not prompt:
        raise InputError("the prompt is empty: the pruner needs at least one prompt token before the path")
    segments = tree.segments()
    deepest = max((tree.depth[s.nodes[-1]] for s in segments), default=0)
    window = model_window(model.config)
    if window is not None and len(prompt) + deepest > window:
        raise BudgetError(
            f"prompt of {len(prompt)} tokens + block paths of up to {deepest} tokens exceed the model's window "
            f"of {window} tokens; truncate the prompt or use a model with a longer window"
        )
    attn = _attn_implementation(model)
    if batch_size > 1 and attn not in MASK_ATTENTION:
        logger.info("attention %r takes no custom 4D mask: walking depth-first (batch_size=1)", attn)
        batch_size = 1
    stats.batch_size = batch_size

    from transformers import DynamicCache

    cache = DynamicCache()
    p = len(prompt)
    with torch.inference_mode():
        logits = _forward(model, prompt, list(range(p)), cache, keep=1)
        calls = 1
        if len(tree.children[ROOT]) >= 2:
            scorer.assign(ROOT, logits[-1])
        if batch_size == 1:
            calls += _walk_depth_first(model, tree, segments, cache, p, scorer)
        else:
            calls += _walk_packed(model, tree, segments, cache, p, scorer, batch_size)
    stats.forward_calls = calls
    stats.seconds = time.perf_counter() - start
    return scorer.logprob, stats


def _walk_depth_first(model: Any, tree: TokenTree, segments: list[Segment], cache: Any, p: int, scorer: _Scorer) -> int:
    """One call per segment; the cache is cropped back to the segment's parent first. Returns calls made."""
    for seg in segments:
        target = p + tree.depth[seg.parent]
        current = cache.get_seq_length()
        if current > target:
            cache.crop(target - current)  # negative: remove that many tokens (all transformers versions)
        ids = [tree.token[v] for v in seg.nodes]
        positions = [p + tree.depth[v] - 1 for v in seg.nodes]
        logits = _forward(model, ids, positions, cache, keep=1)
        scorer.assign(seg.nodes[-1], logits[-1])
    return len(segments)


def _tree_mask(
    tree: TokenTree, chunk: Sequence[Segment], slot: dict[int, int], ancestors: dict[int, np.ndarray], p: int, past: int
) -> np.ndarray:
    """Boolean ``(q, past + q)`` mask: token i may attend to the prompt and to its ancestors-or-self.

    ``slot`` maps a fed node to its cache index; ``ancestors[b]`` holds the cache indices of the fed nodes on
    the path from the root to ``b`` (inclusive). Both are filled for this chunk's nodes as a side effect.
    """
    q = sum(len(s.nodes) for s in chunk)
    allowed = np.zeros((q, past + q), dtype=bool)
    allowed[:, :p] = True
    row = 0
    for seg in chunk:
        base = ancestors.get(seg.parent, np.zeros(0, dtype=np.int64))
        own = np.arange(past + row, past + row + len(seg.nodes))
        for i, v in enumerate(seg.nodes):
            slot[v] = int(own[i])
            allowed[row + i, base] = True
            allowed[row + i, own[: i + 1]] = True
        ancestors[seg.nodes[-1]] = np.concatenate([base, own])
        row += len(seg.nodes)
    return allowed


def _additive(allowed: np.ndarray, model: Any) -> torch.Tensor:
    """A ``(1, 1, q, k)`` additive float mask (0 where allowed, the dtype's minimum elsewhere)."""
    import torch

    dtype = model.dtype
    mask = torch.zeros(allowed.shape, dtype=dtype, device=model.device)
    mask.masked_fill_(~torch.from_numpy(allowed).to(model.device), torch.finfo(dtype).min)
    return mask[None, None]


def _walk_packed(
    model: Any, tree: TokenTree, segments: list[Segment], cache: Any, p: int, scorer: _Scorer, batch_size: int
) -> int:
    """Up to ``batch_size`` segments per call, packed with a tree-attention mask. Returns calls made."""
    import torch

    slot: dict[int, int] = {}
    ancestors: dict[int, np.ndarray] = {}
    window = sliding_window(model.config)
    key_pos = np.arange(p, dtype=np.int64)  # the position of every cached token, in cache order
    calls = 0
    for start in range(0, len(segments), batch_size):
        chunk = segments[start : start + batch_size]
        past = cache.get_seq_length()
        allowed = _tree_mask(tree, chunk, slot, ancestors, p, past)
        ids = [tree.token[v] for s in chunk for v in s.nodes]
        positions = [p + tree.depth[v] - 1 for s in chunk for v in s.nodes]
        mask: Any = _additive(allowed, model)
        if window is not None:  # sliding layers: also hide keys `window` or more positions behind the query
            key_pos = np.concatenate([key_pos, np.asarray(positions, dtype=np.int64)])
            near = (np.asarray(positions)[:, None] - key_pos[None, :]) < window
            mask = {"full_attention": mask, "sliding_attention": _additive(allowed & near, model)}
        ends = np.cumsum([len(s.nodes) for s in chunk]) - 1
        keep = torch.tensor(ends, dtype=torch.long, device=model.device)
        logits = _forward(model, ids, positions, cache, keep=keep, mask=mask)
        for j, seg in enumerate(chunk):
            scorer.assign(seg.nodes[-1], logits[j])
        calls += 1
    return calls


def score_paths(
    model: Any,
    prompt_ids: Sequence[int],
    token_paths: Sequence[Sequence[int]],
    *,
    batch_size: int = 32,
    min_prob: float = 1e-9,
) -> tuple[np.ndarray, TreeStats]:
    """Eq. 3 score (log-probability, <= 0) of every path in ``token_paths``, and the accounting.

    Builds the :class:`TokenTree` and runs :func:`walk_token_tree`; ``stats.seconds`` covers both.
    """
    start = time.perf_counter()
    tree = TokenTree.build(token_paths)
    node_logprob, stats = walk_token_tree(model, prompt_ids, tree, batch_size=batch_size, min_prob=min_prob)
    scores = tree.path_scores(node_logprob)
    stats.seconds = time.perf_counter() - start
    return scores, stats
