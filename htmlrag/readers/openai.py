"""A reader for any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM serve, TGI, ...).

The base URL and the API key come from environment variables only (their *names* are configurable); the
key is sent in the ``Authorization`` header and never logged, cached, or written to results. Requests run in
a thread pool of ``concurrency`` workers; 429, 5xx, timeouts and connection errors are retried with
exponential backoff (``Retry-After`` is honoured); a malformed response (not JSON, no choices) is retried too,
then raises :class:`~htmlrag.errors.HtmlRagError`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from htmlrag.errors import HtmlRagError
from htmlrag.readers.base import BaseReader, GenerationConfig, ResponseCache
from htmlrag.readers.prompts import SYSTEM

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ReaderHTTPError(HtmlRagError):
    """The endpoint failed after all retries (the message holds status and a short body excerpt)."""


class OpenAIReader(BaseReader):
    """Chat completions over HTTP with ``httpx``.

    Args:
        model: the served model name.
        window: the model's context window in tokens (``None``: derived from the run's budgets).
        generation: decoding settings (``temperature=0`` is greedy).
        base_url_env: environment variable holding the base URL (``.../v1``).
        api_key_env: environment variable holding the key (may be unset for local servers).
        default_base_url: used when ``base_url_env`` is unset.
        timeout: seconds per request.
        max_retries: retries after the first attempt.
        backoff: first backoff in seconds (doubles each retry, with jitter, capped at 60).
        concurrency: parallel requests.
        tokenizer: token counter for cutting the context (default: the offline tokenizer).
    """

    def __init__(self, model: str, window: int | None = None, generation: GenerationConfig | None = None,
                 base_url_env: str = "OPENAI_BASE_URL", api_key_env: str = "OPENAI_API_KEY",
                 default_base_url: str = "https://api.openai.com/v1", timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 1.0, concurrency: int = 8, tokenizer: Any = None,
                 cache: ResponseCache | None = None, system: str | None = SYSTEM) -> None:
        super().__init__(model, window, generation, tokenizer, cache, system)
        self.base_url_env, self.api_key_env, self.default_base_url = base_url_env, api_key_env, default_base_url
        self.timeout, self.max_retries, self.backoff, self.concurrency = timeout, max_retries, backoff, concurrency
        self.attempts = 0

    @property
    def base_url(self) -> str:
        return os.environ.get(self.base_url_env, self.default_base_url).rstrip("/")

    def cache_identity(self) -> str:
        return f"openai|{self.base_url}"

    def _payload(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        g = self.generation
        body: dict[str, Any] = {"model": self.name, "messages": messages, "max_tokens": g.max_new_tokens,
                                "temperature": g.temperature}
        if g.sampled:
            body.update(top_p=g.top_p, seed=g.seed)
        return body

    def _one(self, client: Any, messages: list[dict[str, str]]) -> tuple[str, int]:
        import httpx

        url = f"{self.base_url}/chat/completions"
        key = os.environ.get(self.api_key_env)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        problem = ""
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            delay = min(60.0, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            try:
                resp = client.post(url, json=self._payload(messages), headers=headers, timeout=self.timeout)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                problem = f"{type(exc).__name__}"
            else:
                if resp.status_code == 200:
                    try:
                        data = resp.json()
                        text = data["choices"][0]["message"]["content"]
                        if not isinstance(text, str):
                            raise TypeError("content is not a string")
                        usage = data.get("usage") or {}
                        return text.strip(), int(usage.get("prompt_tokens") or 0)
                    except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
                        problem = f"malformed response ({type(exc).__name__}): {resp.text[:120]!r}"
                elif resp.status_code in RETRY_STATUS:
                    problem = f"HTTP {resp.status_code}: {resp.text[:120]!r}"
                    retry_after = resp.headers.get("retry-after")
                    if retry_after:
                        with contextlib.suppress(ValueError):
                            delay = min(60.0, float(retry_after))
                else:
                    raise ReaderHTTPError(f"reader {self.name}: HTTP {resp.status_code} from {url}: {resp.text[:200]!r}")
            if attempt < self.max_retries:
                log.warning("reader %s: %s; retry %d/%d in %.1fs", self.name, problem, attempt + 1,
                            self.max_retries, delay)
                time.sleep(delay)
        raise ReaderHTTPError(f"reader {self.name}: {url} failed after {self.max_retries + 1} attempts: {problem}")

    def _generate(self, batch: list[list[dict[str, str]]]) -> list[tuple[str, int]]:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover
            raise HtmlRagError("reader=openai needs httpx (pip install 'htmlrag-bench[eval]')") from exc
        with httpx.Client() as client, ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(lambda m: self._one(client, m), batch))
