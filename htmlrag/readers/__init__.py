"""Readers: question + context -> answer, behind one protocol (:class:`Reader`).

``none`` (no model), ``fake`` (deterministic, tests), ``hf`` (transformers), ``vllm`` (offline engine,
optional), ``openai`` (any OpenAI-compatible endpoint). Heavy dependencies are imported on first use.
"""

from __future__ import annotations

from htmlrag.readers.base import (
    BaseReader,
    Completion,
    FakeReader,
    GenerationConfig,
    NoneReader,
    Reader,
    ReaderOutput,
    ReadRequest,
    ResponseCache,
)

__all__ = [
    "BaseReader",
    "Completion",
    "FakeReader",
    "GenerationConfig",
    "NoneReader",
    "ReadRequest",
    "Reader",
    "ReaderOutput",
    "ResponseCache",
]
