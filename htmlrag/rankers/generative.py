"""The generative ranker (HtmlRAG step 2): score each block by the probability a pruner LM generates its path.

Prompt format (the format the released pruners ``zstanjj/HTML-Pruner-Phi-3.8B`` and
``zstanjj/HTML-Pruner-Llama-1B`` were trained on, and the training format of our own pruners):

1. User message = :data:`PRUNER_TEMPLATE` filled with the pages' HTML (several pages joined with ``"\\n"``)
   and the question: ``**HTML**: ```{html}```\\n**Question**: **{question}**\\n`` followed by the instruction
   (identify the most relevant text piece, 300–500 words, give its path, example ``<html 1><body><div 2><p>``).
   Source: the ``apply_html_tree_template`` function in the released model code (``modeling_llama.py`` /
   ``modeling_phi3.py`` of the two model repositories, mirrored in the HtmlRAG GitHub repository under
   ``llm_modeling/``); the paper's Figure 4 shows the same instruction.
2. The message goes through the tokenizer's chat template with ``add_generation_prompt=True``, and the
   rendered text is tokenized with ``add_special_tokens=False`` (the template carries BOS where the model
   wants one). Source: the same ``generate_html_tree`` function (``apply_chat_template`` on one user turn).
3. The assistant answer starts with the block path ``"<" + "><".join(tags) + ">"`` (``<html><body><div0><p>``),
   tokenized on its own with ``add_special_tokens=False``, right after the prompt. Source: same function and
   the PyPI toolkit ``htmlrag`` 0.1.1 (``GenHTMLPruner``).

Fallback (our choice, not from the authors): a tokenizer without a chat template gets the plain prompt
``{bos_token}{user message}\\n`` (no BOS when the tokenizer has none).

With several pages the root of page ``i`` is named ``html{i}`` in the paths (``<html0><body>...``,
``<html1><body>...``), as the released toolkit's parser did on concatenated pages, so paths stay unique.
The score of a block is Eq. 3 (see :mod:`htmlrag.rankers.token_tree`): the log-probability of its path,
optionally divided by the average path depth in tags (the released toolkit's normalisation, which does not
change the order within one call). Where we differ from the released model code: the shared prefix is never
re-run, and the children's logits are read at the parent's position (Eq. 2 of the paper); the copy of that
code we could read (GitHub mirror, ``llm_modeling/``) indexes ``logits[:, 0, :]``, which we take for a slip.

The released checkpoints hold plain Llama / Phi-3 weights (their remote code only adds the scoring loop), so
``AutoModelForCausalLM`` loads them by ``model_type`` without ``trust_remote_code`` (not verifiable offline).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.core.models.aliases import resolve_model
from htmlrag.html.blocktree import BlockTree
from htmlrag.rankers.token_tree import TokenTree, TreeStats, model_window, tree_stats, walk_token_tree

logger = logging.getLogger(__name__)

#: The released pruners' user message; ``{html}`` and ``{question}`` are filled by :func:`build_pruner_messages`.
PRUNER_TEMPLATE = (
    "**HTML**: ```{html}```\n**Question**: **{question}**\n Your task is to identify the most relevant text piece "
    "to the given question in the HTML document. This text piece could either be a direct paraphrase to the "
    "fact, or a supporting evidence that can be used to infer the fact. The overall length of the text piece "
    "should be more than 300 words and less than 500 words. You should provide the path to the text piece in "
    "the HTML document. An example for the output is: <html 1><body><div 2><p>Some key information..."
)
_HTML_PREFIX = PRUNER_TEMPLATE.split("{html}")[0]
TRUNCATIONS = ("left", "right", "error")
_DTYPES = ("float32", "bfloat16", "float16", "auto")


def _join_pages(html: str | Sequence[str]) -> str:
    return html if isinstance(html, str) else "\n".join(html)


def build_pruner_messages(question: str, html: str | Sequence[str]) -> list[dict[str, str]]:
    """The chat messages of the pruner prompt: one user turn (see the module docstring).

    Args:
        question: the user's question.
        html: one page's HTML, or several pages (joined with newlines).
    """
    return [{"role": "user", "content": PRUNER_TEMPLATE.format(html=_join_pages(html), question=question)}]


def format_pruner_prompt(tokenizer: Any, question: str, html: str | Sequence[str]) -> str:
    """The prompt text, up to where the answer (the block path) starts.

    Uses the tokenizer's chat template with a generation prompt; without one, ``{bos_token}{message}\\n``.
    Tokenize the result with ``add_special_tokens=False``.
    """
    messages = build_pruner_messages(question, html)
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return f"{tokenizer.bos_token or ''}{messages[0]['content']}\n"


@dataclass
class PromptIds:
    """Token ids of a pruner prompt.

    Attributes:
        ids: the prompt's token ids.
        dropped: HTML tokens removed by truncation (0 when the prompt fit).
    """

    ids: list[int]
    dropped: int = 0


def pruner_prompt_ids(
    tokenizer: Any,
    question: str,
    html: str | Sequence[str],
    *,
    max_tokens: int | None = None,
    truncation: str = "error",
    name: str = "the pruner prompt",
) -> PromptIds:
    """Tokenize the pruner prompt, fitting it into ``max_tokens`` by cutting HTML tokens only.

    Args:
        tokenizer: the pruner's tokenizer.
        question: the question.
        html: the pages' HTML.
        max_tokens: the most prompt tokens allowed (``None``: no limit).
        truncation: ``"left"`` drops the first HTML tokens, ``"right"`` the last ones, ``"error"`` raises.
        name: how to call the prompt in error messages.

    Raises:
        BudgetError: the prompt is too long and ``truncation="error"``, or the instruction and question alone
            exceed ``max_tokens``.
    """
    if truncation not in TRUNCATIONS:
        raise InputError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
    text = format_pruner_prompt(tokenizer, question, html)
    html_text = _join_pages(html)
    ids, html_idx = _tokenize_locating_html(tokenizer, text, question, html_text)
    if max_tokens is None or len(ids) <= max_tokens:
        return PromptIds(ids)
    excess = len(ids) - max_tokens
    if truncation == "error":
        raise BudgetError(
            f"{name} has {len(ids)} tokens, over the limit of {max_tokens} (the model's window less the longest "
            f"block path, or max_prompt_tokens); pass truncation='left' or 'right' to cut {excess} HTML tokens, "
            "or prune the pages harder first"
        )
    if excess > len(html_idx):
        raise BudgetError(
            f"{name}: even without any HTML the instruction and question take {len(ids) - len(html_idx)} tokens, "
            f"over the limit of {max_tokens}"
        )
    drop = set(html_idx[:excess] if truncation == "left" else html_idx[len(html_idx) - excess :])
    return PromptIds([t for i, t in enumerate(ids) if i not in drop], dropped=excess)


def _tokenize_locating_html(tokenizer: Any, text: str, question: str, html: str) -> tuple[list[int], list[int]]:
    """Token ids of ``text`` and the indices of the tokens that lie wholly inside the HTML."""
    content = PRUNER_TEMPLATE.format(html=html, question=question)
    at = text.find(content)
    if at >= 0 and getattr(tokenizer, "is_fast", False):
        start = at + len(_HTML_PREFIX)
        end = start + len(html)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        html_idx = [i for i, (s, e) in enumerate(enc["offset_mapping"]) if e > s and s >= start and e <= end]
        return ids, html_idx
    # No offsets (slow tokenizer) or a template that rewrites the message: tokenize around the HTML.
    marker = "\x00HTML\x00"
    framed = format_pruner_prompt(tokenizer, question, marker)
    before, _, after = framed.partition(marker)
    parts = [tokenizer.encode(x, add_special_tokens=False) if x else [] for x in (before, html, after)]
    ids = parts[0] + parts[1] + parts[2]
    return ids, list(range(len(parts[0]), len(parts[0]) + len(parts[1])))


def block_paths(trees: Sequence[BlockTree]) -> list[tuple[str, ...]]:
    """Every block's tag path, trees in order; with several trees the root of tree ``i`` becomes ``html{i}``."""
    multi = len(trees) > 1
    out: list[tuple[str, ...]] = []
    for i, tree in enumerate(trees):
        for block in tree.blocks:
            path = block.path
            out.append((f"{path[0]}{i}", *path[1:]) if multi else path)
    return out


def path_string(path: Sequence[str]) -> str:
    """``("html", "body", "div0")`` -> ``"<html><body><div0>"`` (the pruners' answer format)."""
    return "<" + "><".join(path) + ">"


class GenerativeRanker:
    """Scores blocks by the log-probability that a pruner LM generates their paths (HtmlRAG §3.4.2).

    Implements :class:`htmlrag.rankers.base.Ranker`. The model and tokenizer load lazily on first use (no
    torch import before). Any ``AutoModelForCausalLM`` works (Llama, Phi-3, Qwen2, ...); the released
    pruners load as plain ``LlamaForCausalLM`` / ``Phi3ForCausalLM`` without their remote code.

    Args:
        model_name_or_path: hub name or local folder of the pruner, or an alias of
            :mod:`htmlrag.core.models.aliases` (``gemma3-270m``, converted once to a cached folder).
        device: torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``"auto"``.
        max_prompt_tokens: cap on the prompt length in tokens. The model's window always applies, less the
            path tokens the walk feeds (up to the deepest branching node of the token tree).
        truncation: what to do with a prompt over the limit: ``"left"``/``"right"`` cut HTML tokens at that
            end, ``"error"`` raises :class:`~htmlrag.core.errors.BudgetError`.
        trust_remote_code: let transformers run the checkpoint's own code (off by default; not needed).
        attn_implementation: e.g. ``"sdpa"`` (default of transformers), ``"eager"``, ``"flash_attention_2"``
            (the latter walks depth-first, ``batch_size`` 1).
        batch_size: token-tree segments per forward call (1: depth-first with cache cropping).
        min_prob: floor of a sibling probability (1e-9 as the released toolkit; 0 disables it).
        length_normalize: divide scores by the average path depth in tags (released toolkit; same order).
        revision: model revision (branch, tag or commit) to load.

    Attributes:
        last_stats: :class:`~htmlrag.rankers.token_tree.TreeStats` of the last :meth:`score` call.
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        device: str = "cpu",
        dtype: str = "float32",
        max_prompt_tokens: int | None = None,
        truncation: str = "error",
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
        batch_size: int = 32,
        min_prob: float = 1e-9,
        length_normalize: bool = False,
        revision: str | None = None,
    ):
        if truncation not in TRUNCATIONS:
            raise InputError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
        if dtype not in _DTYPES:
            raise InputError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        if max_prompt_tokens is not None and max_prompt_tokens < 1:
            raise InputError(f"max_prompt_tokens must be >= 1, got {max_prompt_tokens}")
        self.model_name_or_path = str(model_name_or_path)
        self.name = f"gen:{self.model_name_or_path}"
        self.needs_paths = True  # one element per block path: the pipeline never packs siblings for it
        self.device = device
        self.dtype = dtype
        self.max_prompt_tokens = max_prompt_tokens
        self.truncation = truncation
        self.trust_remote_code = trust_remote_code
        self.attn_implementation = attn_implementation
        self.batch_size = batch_size
        self.min_prob = min_prob
        self.length_normalize = length_normalize
        self.revision = revision
        self.last_stats: TreeStats | None = None
        self.token_usage = {"input": 0, "output": 0}  # prompt and path tokens, cumulative (the cost ledger)
        self.usage_name = self.model_name_or_path
        self._model: Any = None
        self._tokenizer: Any = None

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, name: str = "in-memory", **kwargs: Any) -> GenerativeRanker:
        """A ranker around an already loaded model (on its device, in eval mode) and tokenizer."""
        ranker = cls(name, **kwargs)
        ranker._model, ranker._tokenizer = model, tokenizer
        return ranker

    @property
    def tokenizer(self) -> Any:
        """The pruner's tokenizer (loaded on first access)."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(
                    resolve_model(self.model_name_or_path), trust_remote_code=self.trust_remote_code, revision=self.revision
                )
            except (OSError, ValueError) as e:
                raise HtmlRagError(f"cannot load the tokenizer of pruner {self.model_name_or_path!r}: {e}") from e
        return self._tokenizer

    @property
    def model(self) -> Any:
        """The pruner LM (loaded on first access, in eval mode, on :attr:`device`)."""
        if self._model is None:
            import torch
            from transformers import AutoModelForCausalLM

            kwargs: dict[str, Any] = {
                "dtype": self.dtype if self.dtype == "auto" else getattr(torch, self.dtype),
                "trust_remote_code": self.trust_remote_code,
                "revision": self.revision,
            }
            if self.attn_implementation:
                kwargs["attn_implementation"] = self.attn_implementation
            try:
                model = AutoModelForCausalLM.from_pretrained(resolve_model(self.model_name_or_path), **kwargs)
            except (OSError, ValueError) as e:
                raise HtmlRagError(f"cannot load pruner model {self.model_name_or_path!r}: {e}") from e
            self._model = model.to(self.device).eval()
        return self._model

    def score(self, question: str, trees: Sequence[BlockTree]) -> list[np.ndarray]:
        """Score every block of ``trees`` for ``question`` (log-probabilities, higher is kept first).

        Blocks are scored together (one prompt with all pages), so scores are comparable across trees. A call
        where no token-tree node branches (zero or one block, or identical paths) runs no model and gives
        every block 0.0 (probability 1).

        Raises:
            InputError: ``question`` is not a string.
            BudgetError: the prompt does not fit and ``truncation="error"``, or the paths alone do not fit.
        """
        start = time.perf_counter()
        if not isinstance(question, str):
            raise InputError(f"question must be a string, got {type(question).__name__}")
        trees = list(trees)
        paths = block_paths(trees)
        if not paths:
            self.last_stats = TreeStats(seconds=time.perf_counter() - start)
            return [np.zeros(0) for _ in trees]
        tok = self.tokenizer
        token_paths = tok([path_string(p) for p in paths], add_special_tokens=False)["input_ids"]
        tree = TokenTree.build(token_paths)
        if not tree.branching_nodes():
            scores = np.zeros(len(paths))
            stats = tree_stats(tree, 0)
        else:
            prompt = self._prompt(question, trees, tree)
            node_logprob, stats = walk_token_tree(
                self.model, prompt.ids, tree, batch_size=self.batch_size, min_prob=self.min_prob
            )
            stats.prompt_tokens_dropped = prompt.dropped
            scores = tree.path_scores(node_logprob)
            if self.length_normalize:
                scores = scores / float(np.mean([len(p) for p in paths]))
        stats.seconds = time.perf_counter() - start
        self.last_stats = stats
        self.token_usage["input"] += int(stats.prompt_tokens)
        self.token_usage["output"] += int(stats.tree_tokens)
        logger.debug("%s: %s", self.name, stats)
        bounds = np.cumsum([len(t.blocks) for t in trees])[:-1]
        return [np.asarray(s, dtype=np.float64) for s in np.split(scores, bounds)]

    def _prompt(self, question: str, trees: Sequence[BlockTree], tree: TokenTree) -> PromptIds:
        """The prompt ids, fitted into the window less the deepest fed path (and ``max_prompt_tokens``)."""
        deepest = max(tree.depth[s.nodes[-1]] for s in tree.segments())
        limit = self.max_prompt_tokens
        window = model_window(self.model.config)
        if window is not None:
            if deepest >= window:
                raise BudgetError(
                    f"block paths of {deepest} tokens leave no room for a prompt in the {window}-token window "
                    f"of {self.model_name_or_path!r}"
                )
            limit = window - deepest if limit is None else min(limit, window - deepest)
        pages = [t.html() for t in trees if t.root is not None and t.blocks]
        return pruner_prompt_ids(
            self.tokenizer, question, pages, max_tokens=limit, truncation=self.truncation,
            name=f"the prompt of {self.name}",
        )
