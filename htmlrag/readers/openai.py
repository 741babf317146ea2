"""A reader for any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM serve, TGI, ...).

The base URL and the API key come from environment variables only (their *names* are configurable); the
key is sent in the ``Authorization`` header and never logged, cached, or written to results: every message
built from a response goes through :mod:`htmlrag.core.redact` (the key's value, and anything shaped like a
credential, become ``[REDACTED]``) before it is cut short, and log records are redacted as a whole.

Requests run in a thread pool of ``concurrency`` workers; 429, 5xx, timeouts and connection errors are retried
with exponential backoff (``Retry-After`` is honoured); a malformed response (not JSON, no choices) is retried
too, then raises :class:`ReaderHTTPError`. **Failing fast**: 401/403 (the key is refused) raises
:class:`~htmlrag.core.errors.ServiceError` at once, and so does the ``max_consecutive_failures``-th failed attempt
in a row (connection errors, timeouts, 5xx; any success resets the count) -- then every request of the reader,
waiting or new, stops with that error instead of running its own retry schedule.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from htmlrag.core import redact
from htmlrag.core.errors import HtmlRagError, ServiceError
from htmlrag.readers.base import BaseReader, GenerationConfig, ResponseCache
from htmlrag.readers.prompts import SYSTEM

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses that count towards ``max_consecutive_failures`` (the service, not the request, is failing).
DOWN_STATUS = frozenset({500, 502, 503, 504})
AUTH_STATUS = frozenset({401, 403})


class ReaderHTTPError(HtmlRagError):
    """The endpoint failed one request after all retries (the message holds status and a redacted excerpt)."""


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
        max_consecutive_failures: failed attempts in a row (connection errors, timeouts, 5xx; across all
            requests) after which the endpoint counts as down and every request stops with
            :class:`~htmlrag.core.errors.ServiceError` (0: no limit).
    """

    def __init__(self, model: str, window: int | None = None, generation: GenerationConfig | None = None,
                 base_url_env: str = "OPENAI_BASE_URL", api_key_env: str = "OPENAI_API_KEY",
                 default_base_url: str = "https://api.openai.com/v1", timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 1.0, concurrency: int = 8, tokenizer: Any = None,
                 cache: ResponseCache | None = None, system: str | None = SYSTEM,
                 max_consecutive_failures: int = 8) -> None:
        super().__init__(model, window, generation, tokenizer, cache, system)
        self.base_url_env, self.api_key_env, self.default_base_url = base_url_env, api_key_env, default_base_url
        self.timeout, self.max_retries, self.backoff, self.concurrency = timeout, max_retries, backoff, concurrency
        self.max_consecutive_failures = max_consecutive_failures
        self.attempts = 0
        self._failures = 0
        self._down: str | None = None
        self._down_event = threading.Event()
        self._state = threading.Lock()
        redact.register_env(api_key_env)
        redact.install()

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

    def _failed_attempt(self, problem: str, counts: bool) -> None:
        """Record a failed attempt; the ``max_consecutive_failures``-th in a row marks the endpoint down."""
        with self._state:
            self._failures = self._failures + 1 if counts else self._failures
            if counts and self.max_consecutive_failures and self._failures >= self.max_consecutive_failures:
                self._mark_down(f"reader {self.name}: {self.base_url} failed {self._failures} attempts in a row "
                                f"(last: {problem}); stopping instead of retrying every request")

    def _mark_down(self, message: str) -> None:
        if self._down is None:
            self._down = redact.redact(message)
            self._down_event.set()

    def _check_down(self) -> None:
        if self._down is not None:
            raise ServiceError(self._down)

    def _attempt(self, client: Any, url: str, messages: list[dict[str, str]], headers: dict[str, str]
                 ) -> tuple[tuple[str, int] | None, str, float | None, bool]:
        """One request: ``(answer or None, problem, retry-after seconds or None, counts towards down)``."""
        import httpx

        try:
            resp = client.post(url, json=self._payload(messages), headers=headers, timeout=self.timeout)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            return None, type(exc).__name__, None, True
        if resp.status_code == 200:
            try:
                data = resp.json()
                choice = data["choices"][0]
                if isinstance(choice, dict) and choice.get("finish_reason") == "content_filter":
                    # the endpoint withheld (part of) the answer: no answer to score or cache, an error row
                    raise ReaderHTTPError(redact.redact(
                        f"reader {self.name}: {url} withheld the answer (finish_reason content_filter)"))
                text = choice["message"]["content"]
                if not isinstance(text, str):
                    raise TypeError("content is not a string")
                usage = data.get("usage") or {}
                return (redact.redact(text.strip(), shapes=False), int(usage.get("prompt_tokens") or 0)), "", None, False
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
                return None, f"malformed response ({type(exc).__name__}): {redact.excerpt(resp.text, 120)!r}", None, False
        body = redact.excerpt(resp.text, 200)
        if resp.status_code in AUTH_STATUS:
            self._mark_down(f"reader {self.name}: HTTP {resp.status_code} from {url}: the endpoint refuses the key "
                            f"in ${self.api_key_env} ({body!r})")
            self._check_down()
        if resp.status_code not in RETRY_STATUS:
            raise ReaderHTTPError(redact.redact(f"reader {self.name}: HTTP {resp.status_code} from {url}: {body!r}"))
        retry_after = None
        with contextlib.suppress(ValueError, TypeError):
            retry_after = min(60.0, float(resp.headers.get("retry-after")))
        return None, f"HTTP {resp.status_code}: {body[:120]!r}", retry_after, resp.status_code in DOWN_STATUS

    def _one(self, client: Any, messages: list[dict[str, str]]) -> tuple[str, int]:
        url = f"{self.base_url}/chat/completions"
        key = os.environ.get(self.api_key_env)
        redact.register_secret(key)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        problem = ""
        for attempt in range(self.max_retries + 1):
            self._check_down()
            self.attempts += 1
            answer, problem, retry_after, counts = self._attempt(client, url, messages, headers)
            if answer is not None:
                with self._state:
                    self._failures = 0
                return answer
            self._failed_attempt(problem, counts)
            self._check_down()
            if attempt < self.max_retries:
                delay = min(60.0, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
                delay = retry_after if retry_after is not None else delay
                log.warning("reader %s: %s; retry %d/%d in %.1fs", self.name, problem, attempt + 1,
                            self.max_retries, delay)
                self._down_event.wait(delay)  # wakes at once when another request marks the endpoint down
        raise ReaderHTTPError(redact.redact(f"reader {self.name}: {url} failed after {self.max_retries + 1} "
                                            f"attempts: {problem}"))

    def _generate(self, batch: list[list[dict[str, str]]]) -> list[tuple[str, int]]:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover
            raise HtmlRagError("reader=openai needs httpx (pip install 'htmlrag-bench[eval]')") from exc
        with httpx.Client() as client, ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(lambda m: self._one(client, m), batch))
