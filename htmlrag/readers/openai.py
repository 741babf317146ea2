"""A reader for any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM serve, TGI, ...).

The base URL and the API key come from environment variables only (their *names* are configurable); the
key is sent in the ``Authorization`` header and never logged, cached, or written to results: every message
built from a response goes through :mod:`htmlrag.core.redact` (the key's value, and anything shaped like a
credential, become ``[REDACTED]``) before it is cut short, and log records are redacted as a whole.

Requests run in a thread pool of ``concurrency`` workers; 429, 5xx, timeouts and connection errors are retried
with exponential backoff (``Retry-After`` is honoured); a malformed response (not JSON, no choices) is retried
too, then raises :class:`ReaderHTTPError`. ``timeout`` bounds the **whole request** (connecting, sending, the
response headers and the whole body: an endpoint that trickles its answer a byte at a time fails the attempt at
the deadline like a timeout), and ``max_response_bytes`` its body (a larger response fails the attempt, as a
5xx does). An empty answer whose generation was cut at ``max_tokens`` (``finish_reason`` ``length``)
is an error like one withheld by a content filter (not retried: the same prompt is cut the same way); a cut
non-empty answer is kept, counted (``truncated``, with a warning) and marked ``truncated`` in its row; an empty
answer is scored as given but never cached (the rules of every reader: :mod:`htmlrag.readers.base`).

**Failing fast**: 401/403 (the key is refused) raises :class:`~htmlrag.core.errors.ServiceError` at once, and
so does the ``max_consecutive_failures``-th failed attempt in a row (connection errors, timeouts -- a passed
deadline included --, 5xx, oversized responses; any success resets the count) -- then every request of the
reader, waiting or new, stops with that error instead of running its own retry schedule.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from htmlrag.core import redact
from htmlrag.core.errors import HtmlRagError, ServiceError
from htmlrag.readers.base import BaseReader, Completion, GenerationConfig, ResponseCache
from htmlrag.readers.prompts import SYSTEM

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses that count towards ``max_consecutive_failures`` (the service, not the request, is failing).
DOWN_STATUS = frozenset({500, 502, 503, 504})
AUTH_STATUS = frozenset({401, 403})
#: Default bound of a response body (bytes): a chat completion is a few kB; an endless body fails, not OOMs.
MAX_RESPONSE_BYTES = 8_000_000
#: Bytes of a body that an error excerpt is taken from.
_EXCERPT_SOURCE = 65536


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
        timeout: seconds per request, for the whole of it: connecting, sending, the response headers and the
            whole body (not per network read: an endpoint trickling bytes fails the attempt at the deadline).
        max_retries: retries after the first attempt.
        backoff: first backoff in seconds (doubles each retry, with jitter, capped at 60).
        concurrency: parallel requests.
        tokenizer: token counter for cutting the context (default: the offline tokenizer).
        max_consecutive_failures: failed attempts in a row (connection errors, timeouts, 5xx; across all
            requests) after which the endpoint counts as down and every request stops with
            :class:`~htmlrag.core.errors.ServiceError` (0: no limit).
        max_response_bytes: the largest response body read (decoded); a larger one fails the attempt (retried,
            and counted towards ``max_consecutive_failures``, as a 5xx).

    Attributes:
        truncated: answers cut at ``max_tokens`` (``finish_reason`` ``length``) that were kept (non-empty).
        empty: empty answers received (scored as given, never cached).
    """

    limit_name = "max_tokens"
    cut_reason = "finish_reason length"

    def __init__(self, model: str, window: int | None = None, generation: GenerationConfig | None = None,
                 base_url_env: str = "OPENAI_BASE_URL", api_key_env: str = "OPENAI_API_KEY",
                 default_base_url: str = "https://api.openai.com/v1", timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 1.0, concurrency: int = 8, tokenizer: Any = None,
                 cache: ResponseCache | None = None, system: str | None = SYSTEM,
                 max_consecutive_failures: int = 8, max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        super().__init__(model, window, generation, tokenizer, cache, system)
        self.base_url_env, self.api_key_env, self.default_base_url = base_url_env, api_key_env, default_base_url
        self.timeout, self.max_retries, self.backoff, self.concurrency = timeout, max_retries, backoff, concurrency
        self.max_consecutive_failures = max_consecutive_failures
        if int(max_response_bytes) < 1:
            raise HtmlRagError(f"reader {model}: max_response_bytes must be at least 1 (got {max_response_bytes})")
        self.max_response_bytes = int(max_response_bytes)
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
                 ) -> tuple[Completion | None, str, float | None, bool]:
        """One request: ``(answer or None, problem, retry-after seconds or None, counts towards down)``.

        The request runs under a deadline of ``timeout`` seconds from now, for all of it (see :func:`_deadline`)."""
        import httpx

        deadline = time.monotonic() + self.timeout
        try:
            with _deadline(deadline), client.stream("POST", url, json=self._payload(messages), headers=headers,
                                                    timeout=self.timeout) as resp:
                status, retry_after_header = resp.status_code, resp.headers.get("retry-after")
                raw, text_of = self._body(resp, deadline)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            problem = type(exc).__name__
            if isinstance(exc, httpx.TimeoutException):
                problem += f" (no complete response within timeout={self.timeout:g}s)"
            return None, problem, None, True
        except _TooLarge:  # no chat completion is that large: the service is broken, as with a 5xx
            return None, (f"response from {url} larger than max_response_bytes={self.max_response_bytes}; "
                          "not read further"), None, True
        if status == 200:
            try:
                data = json.loads(raw)
                choice = data["choices"][0]
                finish = choice.get("finish_reason") if isinstance(choice, dict) else None
                if finish == "content_filter":
                    # the endpoint withheld (part of) the answer: no answer to score or cache, an error row
                    raise ReaderHTTPError(redact.redact(
                        f"reader {self.name}: {url} withheld the answer (finish_reason content_filter)"))
                text = choice["message"]["content"]
                if not isinstance(text, str):
                    raise TypeError("content is not a string")
                usage = data.get("usage") or {}
                answer = Completion(redact.redact(text.strip(), shapes=False), int(usage.get("prompt_tokens") or 0),
                                    _CUT.get(finish) if isinstance(finish, str) else None)
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
                return None, f"malformed response ({type(exc).__name__}): {redact.excerpt(text_of(), 120)!r}", None, False
            self._refuse_empty_cut(url, answer)
            return answer, "", None, False
        body = redact.excerpt(text_of(), 200)
        if status in AUTH_STATUS:
            self._mark_down(f"reader {self.name}: HTTP {status} from {url}: the endpoint refuses the key "
                            f"in ${self.api_key_env} ({body!r})")
            self._check_down()
        if status not in RETRY_STATUS:
            raise ReaderHTTPError(redact.redact(f"reader {self.name}: HTTP {status} from {url}: {body!r}"))
        retry_after = None
        with contextlib.suppress(ValueError, TypeError):
            retry_after = min(60.0, float(retry_after_header))
        return None, f"HTTP {status}: {body[:120]!r}", retry_after, status in DOWN_STATUS

    def _body(self, resp: Any, deadline: float) -> tuple[bytes, Any]:
        """The body of a streamed response, read chunk by chunk up to ``max_response_bytes`` (else
        :class:`_TooLarge`) and the deadline (else ``httpx.ReadTimeout``): ``(bytes, () -> text)``."""
        import httpx

        chunks, size = [], 0
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the request's deadline passed while reading the body")
        raw = b"".join(chunks)
        # for excerpts of 120-200 characters: the start of a large body is enough (redacted before it is cut
        # short; redacting megabytes for every failed attempt would take seconds)
        return raw, lambda: raw[:_EXCERPT_SOURCE].decode(resp.encoding or "utf-8", errors="replace")

    def _refuse_empty_cut(self, url: str, answer: Completion) -> None:
        """An empty answer cut at ``max_tokens`` raises at once, naming the endpoint (an error row, never cached,
        not retried). Cut and empty answers are otherwise counted and logged by :meth:`BaseReader._answers`."""
        if answer.truncated and not answer.text:
            raise ReaderHTTPError(redact.redact(
                f"reader {self.name}: {url} returned an empty answer cut at max_tokens={self.generation.max_new_tokens}"
                " (finish_reason length): no answer to score; raise reader.generation.max_new_tokens"))

    def _one(self, client: Any, messages: list[dict[str, str]]) -> Completion:
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

    def _complete(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        try:
            import httpx  # noqa: F401
        except ImportError as exc:  # pragma: no cover
            raise HtmlRagError("reader=openai needs httpx (pip install 'htmlrag-bench[eval]')") from exc
        with _deadline_client() as client, ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(lambda m: self._one(client, m), batch))


class _TooLarge(Exception):
    """A response body over ``max_response_bytes`` (reported as a failed attempt, never raised out of the reader)."""


#: ``finish_reason`` -> whether the answer was cut at ``max_tokens`` (other reasons: cannot tell).
_CUT = {"length": True, "stop": False}


# ----------------------------------------------------------------------------------------- the request deadline
#: The deadline (``time.monotonic()``) of the request the current thread is making, or absent.
_local = threading.local()


@contextlib.contextmanager
def _deadline(when: float) -> Iterator[None]:
    """Every network operation of this thread's request ends by ``when`` (see :class:`_DeadlineBackend`)."""
    _local.deadline = when
    try:
        yield
    finally:
        _local.deadline = None


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before the current thread's deadline; ``error`` once it has passed."""
    when = getattr(_local, "deadline", None)
    if when is None:
        return timeout
    left = when - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _deadline_client() -> Any:
    """An ``httpx.Client`` (proxies from the environment as usual) whose connections are made through
    :class:`_DeadlineBackend`: httpx's own timeouts bound each network read, not a whole request, so an endpoint
    sending its headers or body a byte at a time would never time out. Where httpx's internals differ from what
    this expects, the deadline is still checked between body chunks (:meth:`OpenAIReader._body`)."""
    import httpcore
    import httpx

    client = httpx.Client()
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            if transport is not None:
                log.debug("httpx transport %r: no network backend found; the deadline is checked per chunk",
                          transport)
            continue
        if not isinstance(backend, _DeadlineBackend):
            pool._network_backend = _DeadlineBackend(backend, httpcore)  # type: ignore[union-attr]
    return client


class _DeadlineStream:
    """A network stream whose reads and writes wait no longer than the time left to the thread's request."""

    def __init__(self, stream: Any, httpcore: Any) -> None:
        self._stream, self._httpcore = stream, httpcore

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, self._httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, self._httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        tls = self._stream.start_tls(ssl_context, server_hostname, _left(timeout, self._httpcore.ConnectTimeout))
        return _DeadlineStream(tls, self._httpcore)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend:
    """httpcore's network backend, with :class:`_DeadlineStream` streams and connects bounded by the deadline."""

    def __init__(self, backend: Any, httpcore: Any) -> None:
        self._backend, self._httpcore = backend, httpcore

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _DeadlineStream:
        stream = self._backend.connect_tcp(host, port, _left(timeout, self._httpcore.ConnectTimeout),
                                           local_address=local_address, socket_options=socket_options)
        return _DeadlineStream(stream, self._httpcore)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None
                            ) -> _DeadlineStream:
        stream = self._backend.connect_unix_socket(path, _left(timeout, self._httpcore.ConnectTimeout),
                                                   socket_options=socket_options)
        return _DeadlineStream(stream, self._httpcore)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)
