"""Keep secrets out of everything the app sends: error messages, answers, pages and JSON.

Secrets are the values of the environment variables the app reads keys from (the configured API-key variable)
and of every variable whose name says it holds one (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``,
``*PASSWD*``, ``*CREDENTIAL*``), at least 6 characters long; plus anything shaped like one: ``Bearer <value>``
and ``sk-...`` keys. :func:`redact` replaces them by ``[redacted]``; the app applies it to every text and JSON
response body (:class:`RedactBodies`), so a secret echoed by a model endpoint in an error never reaches the page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_SHAPES = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{6,}|\bsk-[A-Za-z0-9_-]{8,}")
MARK = "[redacted]"


def secret_values(extra_env: Iterable[str] = ()) -> list[str]:
    """The secret values in the environment now (longest first, so a value containing another goes first)."""
    names = {n for n in os.environ if _NAME.search(n) and "TOKENIZER" not in n.upper()} | set(extra_env)
    vals = {os.environ[n] for n in names if len(os.environ.get(n, "")) >= 6}
    return sorted(vals, key=len, reverse=True)


def redact(text: str, extra_env: Iterable[str] = ()) -> str:
    """``text`` with every secret value and secret-shaped string replaced by ``[redacted]``."""
    for v in secret_values(extra_env):
        if v in text:
            text = text.replace(v, MARK)
    return _SHAPES.sub(MARK, text)


class RedactBodies:
    """ASGI middleware: text and JSON response bodies pass through :func:`redact` (images pass untouched)."""

    def __init__(self, app, extra_env: Iterable[str] = ()) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        self.extra_env = tuple(extra_env)

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        chunks: list[bytes] = []

        async def wrapped(message) -> None:  # type: ignore[no-untyped-def]
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                ctype = headers.get(b"content-type", b"").decode("latin-1")
                if ctype.startswith(("text/", "application/json")):
                    start = message
                    return
                await send(message)
                return
            if message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                text = body.decode("utf-8", "replace")
                clean = redact(text, self.extra_env)
                if clean != text:
                    body = clean.encode("utf-8")
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, wrapped)
