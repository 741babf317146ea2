"""Keep secrets out of everything the app sends: error messages, answers, pages and JSON.

What a secret is, and how it is replaced, is :mod:`htmlrag.core.redact`'s business (environment values of credential
variables, the reader's key variable registered with :func:`htmlrag.core.redact.register_env`, and credential-shaped
strings). :class:`RedactBodies` applies :func:`htmlrag.core.redact.redact` to every text and JSON response body, so a
secret echoed by a model endpoint into an error or an answer never reaches the page.
"""

from __future__ import annotations

from typing import Any

from htmlrag.core.redact import redact


class RedactBodies:
    """ASGI middleware: text and JSON response bodies pass through :func:`htmlrag.core.redact.redact` (images pass
    untouched, and so do the app's own static files under ``skip``: shipped code holds no secret, and
    credential-shaped code such as ``Authorization = ...`` in Swagger UI must not be rewritten)."""

    def __init__(self, app: Any, skip: tuple[str, ...] = ("/static/", "/swagger/")) -> None:
        self.app, self.skip = app, skip

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(self.skip):
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        chunks: list[bytes] = []

        async def wrapped(message: Any) -> None:
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
                clean = redact(text)
                if clean != text:
                    body = clean.encode("utf-8")
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, wrapped)
