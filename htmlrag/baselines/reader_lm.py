"""JinaAI Reader-LM (``jinaai/reader-lm-1.5b``): an LM that turns HTML into Markdown, as the HtmlRAG
authors ran it (``flashrag_refiner/jinaai_reader.py``):

- the pages are packed into ``num_packs`` packs (default: the budget in thousands of tokens, so 4 packs for a
  4K window, 128 for 128K): each page goes to the currently shortest pack, packing stops once every pack holds
  more than ``max_pack_tokens`` (64,000) tokens;
- each pack (its pages joined with newlines) is stripped of scripts, styles, meta/link tags and comments,
  SVG contents and base64 images are replaced (the model card's regular expressions), cut to
  ``max_pack_tokens`` tokens, and sent as one user turn through the model's chat template;
- decoding is greedy with repetition penalty 1.08 and at most 1000 new tokens per pack (vLLM also applies the
  authors' presence penalty 0.25, which transformers does not have);
- the Markdown of the packs, joined with newlines, is cut to the budget.

Empty packs (fewer pages than packs) are skipped. ``backend="hf"`` uses transformers, ``"vllm"`` an offline
vLLM engine (imported only then). No remote code runs unless ``trust_remote_code`` is set (Reader-LM is a
Qwen2 model and loads without it). :meth:`ReaderLMRefiner.release` frees the model.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from htmlrag.baselines.base import decode_pages, fit_to_budget, make_result, model_size, release_model
from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.pruning.tokens import TokenCounter

log = logging.getLogger(__name__)

_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL
_STRIP = [re.compile(p, _FLAGS) for p in (
    r"<[ ]*script.*?\/[ ]*script[ ]*>", r"<[ ]*style.*?\/[ ]*style[ ]*>", r"<[ ]*meta.*?>",
    r"<[ ]*!--.*?--[ ]*>", r"<[ ]*link.*?>",
)]
_SVG = re.compile(r"(<svg[^>]*>)(.*?)(<\/svg>)", re.DOTALL)
_BASE64_IMG = re.compile(r'<img[^>]+src="data:image/[^;]+;base64,[^"]+"[^>]*>')
BACKENDS = ("hf", "vllm")


def strip_for_reader_lm(html: str) -> str:
    """The model card's pre-cleaning: scripts, styles, meta/link tags, comments removed; SVG contents and
    base64 images replaced by placeholders."""
    for pattern in _STRIP:
        html = pattern.sub("", html)
    html = _SVG.sub(lambda m: f"{m.group(1)}this is a placeholder{m.group(3)}", html)
    return _BASE64_IMG.sub('<img src="#"/>', html)


def pack_pages(pages: Sequence[str], lengths: Sequence[int], num_packs: int, max_pack_tokens: int) -> list[list[str]]:
    """The authors' packing: each page to the currently shortest pack (first such pack on ties), until the
    shortest pack holds more than ``max_pack_tokens`` tokens."""
    if num_packs < 1:
        raise InputError(f"num_packs must be >= 1, got {num_packs}")
    packs: list[list[str]] = [[] for _ in range(num_packs)]
    sizes = [0] * num_packs
    for page, n in zip(pages, lengths, strict=True):
        smallest = min(sizes)
        if smallest > max_pack_tokens:
            break
        i = sizes.index(smallest)
        packs[i].append(page)
        sizes[i] += n
    return packs


class ReaderLMRefiner:
    """HTML -> Markdown with Reader-LM over packed pages, cut to the budget.

    Args:
        tokenizer: token counter of the budget (the reader's tokenizer).
        budget: context budget in tokens.
        model: Reader-LM hub name or folder (any chat causal LM works mechanically).
        num_packs: packs per question (``None``: ``max(1, round(budget / 1000))``, the authors' rule).
        max_pack_tokens: the most tokens (Reader-LM's tokenizer) of one pack.
        max_new_tokens: Markdown tokens generated per pack (1000 in the paper).
        repetition_penalty: 1.08 in the paper.
        presence_penalty: vLLM only (0.25 in the paper).
        backend: ``hf`` (transformers) or ``vllm``.
        device, dtype: for ``hf`` (``dtype``: ``auto``, ``float32``, ``float16``, ``bfloat16``).
        batch_size: packs per ``generate`` call (``hf``).
        trust_remote_code, revision: passed to the loaders.
        vllm_kwargs: extra ``vllm.LLM`` arguments (``tensor_parallel_size``, ``gpu_memory_utilization``, ...).
    """

    fmt = "markdown"

    def __init__(self, tokenizer: TokenCounter, budget: int = 4096, model: str = "jinaai/reader-lm-1.5b",
                 num_packs: int | None = None, max_pack_tokens: int = 64000, max_new_tokens: int = 1000,
                 repetition_penalty: float = 1.08, presence_penalty: float = 0.25, backend: str = "hf",
                 device: str = "cpu", dtype: str = "auto", batch_size: int = 4, trust_remote_code: bool = False,
                 revision: str | None = None, vllm_kwargs: dict[str, Any] | None = None) -> None:
        if not isinstance(budget, int) or budget <= 0:
            raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
        if backend not in BACKENDS:
            raise InputError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if max_new_tokens < 1 or max_pack_tokens < 1 or batch_size < 1:
            raise InputError("max_new_tokens, max_pack_tokens and batch_size must be >= 1")
        self.tokenizer, self.budget, self.model_name = tokenizer, budget, str(model)
        self.num_packs = num_packs if num_packs is not None else max(1, round(budget / 1000))
        self.max_pack_tokens, self.max_new_tokens = max_pack_tokens, max_new_tokens
        self.repetition_penalty, self.presence_penalty = repetition_penalty, presence_penalty
        self.backend, self.device, self.dtype, self.batch_size = backend, device, dtype, batch_size
        self.trust_remote_code, self.revision = trust_remote_code, revision
        self.vllm_kwargs = dict(vllm_kwargs or {})
        self._model: Any = None
        self._tok: Any = None
        self._size: dict[str, float] = {}

    # ------------------------------------------------------------------ loading
    @property
    def lm_tokenizer(self) -> Any:
        """Reader-LM's own tokenizer (loaded on first use)."""
        if self._tok is None:
            from transformers import AutoTokenizer

            try:
                self._tok = AutoTokenizer.from_pretrained(self.model_name, trust_remote_code=self.trust_remote_code,
                                                          revision=self.revision)
            except (OSError, ValueError) as exc:
                raise HtmlRagError(f"cannot load the Reader-LM tokenizer {self.model_name!r}: {exc}") from exc
            self._tok.padding_side = "left"
            if self._tok.pad_token_id is None:
                self._tok.pad_token = self._tok.eos_token
        return self._tok

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        log.info("loading Reader-LM %s (%s) on %s", self.model_name, self.backend, self.device)
        if self.backend == "vllm":
            try:
                from vllm import LLM
            except ImportError as exc:
                raise HtmlRagError("backend='vllm' needs vllm (pip install vllm on a CUDA machine)") from exc
            self._model = LLM(model=self.model_name, revision=self.revision, trust_remote_code=self.trust_remote_code,
                              dtype=self.dtype, **self.vllm_kwargs)
            return self._model
        import torch
        from transformers import AutoModelForCausalLM

        try:
            model = AutoModelForCausalLM.from_pretrained(
                self.model_name, dtype=self.dtype if self.dtype == "auto" else getattr(torch, self.dtype),
                trust_remote_code=self.trust_remote_code, revision=self.revision)
        except (OSError, ValueError) as exc:
            raise HtmlRagError(f"cannot load Reader-LM {self.model_name!r}: {exc}") from exc
        self._model = model.to(self.device).eval()
        self._size = model_size(self._model)
        return self._model

    def release(self) -> None:
        """Free the model (and the CUDA cache); it is loaded again if used later."""
        if self._model is not None:
            self._model = None
            release_model()

    # ------------------------------------------------------------------ work
    def prompts(self, pages: Sequence[str]) -> list[str]:
        """The chat prompts of the non-empty packs of ``pages``."""
        tok = self.lm_tokenizer
        pages = [p for p in pages if p.strip()]
        lengths = [len(ids) for ids in tok(pages, add_special_tokens=False)["input_ids"]] if pages else []
        out = []
        for pack in pack_pages(pages, lengths, self.num_packs, self.max_pack_tokens):
            if not pack:
                continue
            html = strip_for_reader_lm("\n".join(pack))
            ids = tok(html, add_special_tokens=False)["input_ids"]
            if len(ids) > self.max_pack_tokens:
                html = tok.decode(ids[: self.max_pack_tokens])
            messages = [{"role": "user", "content": html}]
            if getattr(tok, "chat_template", None):
                out.append(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
            else:
                out.append(html)
        return out

    def generate(self, prompts: Sequence[str]) -> tuple[list[str], int, int]:
        """Markdown per prompt, prompt tokens and generated tokens in total."""
        if not prompts:
            return [], 0, 0
        model = self._load()
        if self.backend == "vllm":
            from vllm import SamplingParams

            params = SamplingParams(temperature=0.0, top_k=1, presence_penalty=self.presence_penalty,
                                    repetition_penalty=self.repetition_penalty, max_tokens=self.max_new_tokens)
            results = model.generate(list(prompts), sampling_params=params, use_tqdm=False)
            texts = [r.outputs[0].text for r in results]
            return (texts, sum(len(r.prompt_token_ids) for r in results),
                    sum(len(r.outputs[0].token_ids) for r in results))
        import torch

        tok = self.lm_tokenizer
        texts, n_in, n_out = [], 0, 0
        for start in range(0, len(prompts), self.batch_size):
            batch = list(prompts[start : start + self.batch_size])
            enc = tok(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            with torch.no_grad():
                gen = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                     repetition_penalty=self.repetition_penalty, pad_token_id=tok.pad_token_id)
            new = gen[:, enc["input_ids"].shape[1] :]
            for row, mask in zip(new, enc["attention_mask"], strict=True):
                n_in += int(mask.sum())
                ids = row.tolist()
                if tok.eos_token_id is not None and tok.eos_token_id in ids:
                    ids = ids[: ids.index(tok.eos_token_id) + 1]
                n_out += len(ids)
                texts.append(tok.decode(ids, skip_special_tokens=True))
        return texts, n_in, n_out

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """The Markdown context of ``pages`` (``question`` is not used: Reader-LM is query-agnostic)."""
        t0 = time.perf_counter()
        texts, n_in, n_out = self.generate(self.prompts(decode_pages(pages)))
        joined = "\n".join(t.strip() for t in texts if t.strip())
        context, tokens = fit_to_budget(joined, self.budget, self.tokenizer)
        costs = {"input_tokens": float(n_in), "output_tokens": float(n_out), **self._size}
        return make_result(context, tokens, t0, self.tokenizer, costs={"convert": costs})
