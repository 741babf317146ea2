"""Tiny models for tests: the library's :mod:`htmlrag_bench.training.tiny_model` (also ``htmlrag-train-tiny-model``)."""

from __future__ import annotations

from htmlrag_bench.training.tiny_model import (
    ARCHS,
    CHAT_TEMPLATE,
    SPECIAL_TOKENS,
    save_tiny,
    tiny_causal_lm,
    tiny_config,
    tiny_tokenizer,
)

__all__ = ["ARCHS", "CHAT_TEMPLATE", "SPECIAL_TOKENS", "save_tiny", "tiny_causal_lm", "tiny_config", "tiny_tokenizer"]
