"""The readers the Ask page offers: none, an OpenAI-compatible endpoint, a local Hugging Face model.

The endpoint's URL and key come from the environment only (``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` by default);
the page shows the endpoint's scheme, host and port and whether a key is set, never the key. Each reader is
built once, on first use, and kept (a local model is loaded once).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from htmlrag.app.settings import AppSettings
from htmlrag.core.errors import InputError
from htmlrag.docqa.judge import ReaderChat
from htmlrag.factory import make_reader
from htmlrag.readers.base import GenerationConfig

READERS = ("none", "openai", "hf")


class Readers:
    """Readers by name (see the module docstring)."""

    def __init__(self, settings: AppSettings) -> None:
        self.settings = settings
        self._made: dict[str, Any] = {}
        self._lock = threading.Lock()

    def options(self) -> list[dict[str, Any]]:
        """What the Ask page lists: name, label, whether it can be used, and why not."""
        s = self.settings
        key = "key set" if os.environ.get(s.api_key_env) else "no key"
        return [
            {"name": "none", "label": "none (evidence only)", "ready": True, "why": ""},
            {"name": "openai", "label": f"OpenAI-compatible: {s.openai_model} at {s.endpoint_label()} ({key})"
             if s.openai_model else "OpenAI-compatible endpoint", "ready": bool(s.openai_model),
             "why": "" if s.openai_model else "start with --openai-model NAME (endpoint from $" + s.base_url_env + ")"},
            {"name": "hf", "label": f"local model: {s.hf_model}" if s.hf_model else "local Hugging Face model",
             "ready": bool(s.hf_model), "why": "" if s.hf_model else "start with --hf-model PATH"},
        ]

    def get(self, name: str) -> Any:
        """The reader called ``name`` (None for ``none``).

        Raises:
            InputError: unknown, or not configured.
        """
        if name not in READERS:
            raise InputError(f"unknown reader {name!r}; choose one of {', '.join(READERS)}")
        if name == "none":
            return None
        opt = next(o for o in self.options() if o["name"] == name)
        if not opt["ready"]:
            raise InputError(f"reader {name!r} is not configured: {opt['why']}")
        with self._lock:
            if name not in self._made:
                self._made[name] = self._make(name)
            return self._made[name]

    def _make(self, name: str) -> Any:
        s = self.settings
        gen = GenerationConfig(max_new_tokens=s.max_new_tokens)
        if name == "openai":
            return make_reader("openai", model=str(s.openai_model), window=8192, generation=gen,
                               base_url_env=s.base_url_env, api_key_env=s.api_key_env, max_retries=2, timeout=120.0,
                               tokenizer=s.tokenizer)
        return make_reader("hf", model=str(s.hf_model), generation=gen)

    def forget(self, name: str) -> None:
        """Drop a built reader (after its endpoint failed for good: the next question builds it afresh)."""
        with self._lock:
            self._made.pop(name, None)

    def chat(self, name: str) -> Callable[[str], str] | None:
        """``prompt -> reply`` with the reader (for self-reflection and Cypher writing), or None for ``none``."""
        reader = self.get(name)
        if reader is None:
            return None

        chat = ReaderChat(reader)
        return lambda prompt: chat.chat([{"role": "user", "content": prompt}])
