"""LongLLMLingua (Jiang et al., 2024) through the ``llmlingua`` package, configured as in the HtmlRAG
authors' code (``flashrag_refiner/refiner.py``, refiner ``llmlingua``):

- input: one context piece per line of the authors' document format: every page becomes
  ``Doc {i}(Title: {title}) {first section}`` followed by its other sections (LangChain
  ``HTMLSectionSplitter`` chunks at h1-h4, as in :mod:`htmlrag.baselines.chunk_rerank`);
- ``compress_prompt(pieces, instruction="", question=question, target_token=<window>,
  condition_in_question="after_condition", reorder_context="sort", dynamic_context_compression_ratio=0.3,
  condition_compare=True, context_budget="+100", rank_method="longllmlingua")``: question-aware coarse
  ranking, pieces sorted by relevance, a dynamic compression ratio, token-level compression conditioned on
  the question placed after the context;
- compressor model: ``meta-llama/Llama-2-7b-chat-hf`` (the authors' path ``llama-2-7b-chat-hf``).

Where we differ, and why: ``target_token`` is the budget in the harness's tokens (the authors used their
reader tokenizer's window too); the compressed text is then cut to the budget with the harness's token
counter, since the compressor counts its own tokens; ``concate_question=False`` because the reader prompt
adds the question itself; pages that already fit the budget are passed through uncompressed. The package's
constructor (which downloads a tiktoken vocabulary and enables remote code) is replaced by our own loader:
no remote code unless asked, the token counter is the harness's, and the KV cache is converted for
transformers 5 (the package passes legacy ``(key, value)`` lists).

The compressor is loaded on first use; :meth:`LongLLMLinguaRefiner.release` frees it (and empties the CUDA
cache) so that a reader can be loaded afterwards on the same device.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from typing import Any

from htmlrag.baselines.base import decode_pages, fit_to_budget, make_result, model_size, release_model
from htmlrag.baselines.chunk_rerank import html_section_chunks
from htmlrag.baselines.page_formats import page_title
from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.pruning.pipeline import PipelineResult
from htmlrag.pruning.tokens import TokenCounter

log = logging.getLogger(__name__)

#: The authors' ``llmlingua_config`` (``target_token`` is set per call to the budget).
PAPER_CONFIG: dict[str, Any] = {
    "condition_in_question": "after_condition",
    "reorder_context": "sort",
    "dynamic_context_compression_ratio": 0.3,
    "condition_compare": True,
    "context_budget": "+100",
    "rank_method": "longllmlingua",
}
_DTYPES = ("auto", "float32", "float16", "bfloat16")


def document_pieces(pages: Sequence[str], max_words: int | None = None) -> list[str]:
    """The authors' context pieces: per page ``Doc {i}(Title: {title}) {section 1}``, then its other sections."""
    out: list[str] = []
    for i, html in enumerate(pages):
        chunks = html_section_chunks(html, max_words)
        if not chunks:
            continue
        out.append(f"Doc {i + 1}(Title: {page_title(html)}) {chunks[0]}")
        out.extend(chunks[1:])
    return out


class _CounterAsEncoder:
    """What ``llmlingua`` needs of its "OpenAI tokenizer": ``len(encode(text))``."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def encode(self, text: str) -> list[int]:
        return [0] * self.counter.count(text)


def _compressor_class() -> type:
    try:
        from llmlingua import PromptCompressor
    except ImportError as exc:
        raise HtmlRagError("the LongLLMLingua baseline needs llmlingua: pip install 'htmlrag-bench[baselines]'") from exc

    class _Compressor(PromptCompressor):  # type: ignore[misc, valid-type]
        """``PromptCompressor`` with our loader and a transformers-5 KV cache bridge."""

        def __init__(self, model: str, counter: TokenCounter, device: str, dtype: str, trust_remote_code: bool,
                     revision: str | None) -> None:
            import torch
            from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

            self.model_name = model
            self.use_llmlingua2 = False
            self.retrieval_model = None
            self.retrieval_model_name = None
            self.open_api_config = {}
            self.cache_bos_num = 10
            self.prefix_bos_num = 100
            self.oai_tokenizer = _CounterAsEncoder(counter)
            kw = {"trust_remote_code": trust_remote_code, "revision": revision}
            try:
                config = AutoConfig.from_pretrained(model, **kw)
                tok = AutoTokenizer.from_pretrained(model, **kw)
                torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
                lm = AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype, **kw)
            except (OSError, ValueError) as exc:
                raise HtmlRagError(f"cannot load the LongLLMLingua compressor {model!r}: {exc}") from exc
            tok.padding_side = "left"
            tok.pad_token_id = config.pad_token_id if config.pad_token_id else tok.eos_token_id
            self.tokenizer = tok
            self.model = lm.to(device).eval()
            self.device = device
            self.context_idxs = []
            self.max_position_embeddings = config.max_position_embeddings
            self.tokens_fed = 0

            self._cache_kw = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

        def get_ppl(self, text: str, granularity: str = "sentence", input_ids: Any = None, attention_mask: Any = None,
                    past_key_values: Any = None, return_kv: bool = False, end: int | None = None,
                    condition_mode: str = "none", condition_pos_id: int = 0) -> Any:
            """The package's per-token loss, with the KV cache passed as a transformers ``DynamicCache`` and
            returned as the legacy ``[(key, value), ...]`` list the package slices."""
            import torch
            from transformers import DynamicCache

            if input_ids is None:
                enc = self.tokenizer(text, return_tensors="pt")
                input_ids = enc["input_ids"].to(self.device)
                attention_mask = enc["attention_mask"].to(self.device)
            past_length = 0 if past_key_values is None else past_key_values[0][0].shape[2]
            end = input_ids.shape[1] if end is None else end
            end = min(end, past_length + self.max_position_embeddings)
            cache = None if past_key_values is None else DynamicCache(ddp_cache_data=[(k, v) for k, v in past_key_values])
            self.tokens_fed += int(end - past_length)
            with torch.no_grad():
                out = self.model(input_ids[:, past_length:end], attention_mask=attention_mask[:, :end],
                                 use_cache=True, **{self._cache_kw: cache})
            new_cache = getattr(out, "past_key_values", None)
            if new_cache is None:
                new_cache = getattr(out, "cache", None)
            legacy = [(layer.keys, layer.values) for layer in new_cache.layers]
            logits = out.logits[..., :-1, :].contiguous()
            labels = input_ids[..., past_length + 1 : end].contiguous()
            active = (attention_mask[:, past_length:end] == 1)[..., :-1].view(-1)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1))[active], labels.view(-1)[active],
                                                     reduction="none")
            if condition_mode == "before":
                loss = loss[:condition_pos_id]
            elif condition_mode == "after":
                loss = loss[condition_pos_id:]
            res = loss.mean() if granularity == "sentence" else loss
            return (res, legacy) if return_kv else res

    return _Compressor


class LongLLMLinguaRefiner:
    """Question-aware prompt compression of the pages to the budget; plain-text context.

    Args:
        tokenizer: token counter of the budget (the reader's tokenizer).
        budget: context budget in tokens (LongLLMLingua's ``target_token``).
        model: compressor LM (hub name or folder; any causal LM).
        device: ``cpu``, ``cuda``, ``cuda:1``.
        dtype: ``auto``, ``float32``, ``float16``, ``bfloat16``.
        trust_remote_code: off unless a config asks for it.
        revision: model revision.
        max_words: optional size limit of a section piece in words (``None``: whole sections).
        compress_config: the ``compress_prompt`` arguments (default :data:`PAPER_CONFIG`).
    """

    fmt = "text"

    def __init__(self, tokenizer: TokenCounter, budget: int = 4096, model: str = "meta-llama/Llama-2-7b-chat-hf",
                 device: str = "cpu", dtype: str = "auto", trust_remote_code: bool = False, revision: str | None = None,
                 max_words: int | None = None, compress_config: dict[str, Any] | None = None) -> None:
        if not isinstance(budget, int) or budget <= 0:
            raise BudgetError(f"budget must be a positive number of tokens, got {budget!r}")
        if dtype not in _DTYPES:
            raise InputError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        self.tokenizer, self.budget, self.model_name = tokenizer, budget, str(model)
        self.device, self.dtype, self.trust_remote_code, self.revision = device, dtype, trust_remote_code, revision
        self.max_words = max_words
        self.compress_config = dict(PAPER_CONFIG if compress_config is None else compress_config)
        self._compressor: Any = None
        self._size: dict[str, float] = {}

    @property
    def compressor(self) -> Any:
        """The ``llmlingua`` compressor (loaded on first use)."""
        if self._compressor is None:
            cls = _compressor_class()
            log.info("loading LongLLMLingua compressor %s on %s", self.model_name, self.device)
            self._compressor = cls(self.model_name, self.tokenizer, self.device, self.dtype, self.trust_remote_code,
                                   self.revision)
            self._size = model_size(self._compressor.model)
        return self._compressor

    def release(self) -> None:
        """Free the compressor model (and the CUDA cache); it is loaded again if used later."""
        if self._compressor is not None:
            self._compressor.model = None
            self._compressor = None
            release_model()

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """The compressed plain-text context for ``question``."""
        t0 = time.perf_counter()
        pieces = document_pieces(decode_pages(pages), self.max_words)
        joined = "\n".join(pieces)
        if not pieces or self.tokenizer.count(joined) <= self.budget:
            costs = {"input_tokens": 0.0, "output_tokens": 0.0, **self._size}
            return make_result(joined, self.tokenizer.count(joined), t0, self.tokenizer, costs={"compress": costs})
        comp = self.compressor
        comp.tokens_fed = 0
        try:
            out = comp.compress_prompt(pieces, instruction="", question=question, target_token=self.budget,
                                       concate_question=False, **self.compress_config)
        except Exception as exc:  # the package raises bare assertion/index errors on odd inputs
            raise HtmlRagError(f"LongLLMLingua failed on question {question[:60]!r}: {type(exc).__name__}: {exc}") from exc
        context, tokens = fit_to_budget(out["compressed_prompt"].strip(), self.budget, self.tokenizer)
        costs = {"input_tokens": float(comp.tokens_fed), "output_tokens": 0.0, **self._size}
        return make_result(context, tokens, t0, self.tokenizer, costs={"compress": costs})
