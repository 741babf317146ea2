"""Keep secrets out of everything the app sends: error messages, answers, pages, JSON and served files.

What a secret is, and how it is replaced, is :mod:`htmlrag.core.redact`'s business (environment values of credential
variables, the reader's key variable registered with :func:`htmlrag.core.redact.register_env`, and credential-shaped
strings). :class:`RedactBodies` applies it to every response body that is not an image or other binary type, so a
secret echoed by a model endpoint into an error or an answer, or written into a log under ``results/``, never
reaches the page.

Bodies are read as UTF-8. Bytes that are not UTF-8 are read as the Latin-1 characters they would be, and NUL
characters are dropped, before redaction: an ASCII or Latin-1 secret written in UTF-16 or UTF-32 (its characters
with NUL bytes between them) then reads as itself and is redacted; the body sent is UTF-8. A body of up to
:data:`STREAM_AFTER` bytes is redacted whole and sent with the length of its redacted text; a longer one (a
file) is redacted as it streams (:class:`htmlrag.core.redact.RedactStream`): memory stays bounded, the first
bytes leave early, and its ``Content-Length`` is dropped (the redacted length is not known in advance).
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import anyio

from htmlrag.core.redact import RedactStream, redact

#: Media types sent untouched (their bytes are not text).
BINARY_TYPES = ("image/", "audio/", "video/", "font/", "application/pdf", "application/octet-stream",
                "application/zip", "application/gzip", "application/wasm")
#: Request headers dropped: a byte range of a redacted body is not a range of the file it came from, and a range
#: that starts after ``Authorization:`` would send the credential without the word that marks it.
RANGE_HEADERS = (b"range", b"if-range")
#: Server extensions that would send a file without passing its bytes through the app (and so unredacted).
FILE_EXTENSIONS = ("http.response.pathsend", "http.response.zerocopysend")
#: Bodies (or pieces of them) larger than this are redacted in a worker thread, not in the event loop.
THREAD_BYTES = 64 * 1024
#: A body is held until it ends (then it is redacted whole and sent with its exact length) or passes this
#: many bytes (then it is redacted as it streams, without a length).
STREAM_AFTER = 256 * 1024
_ERRORS = "htmlrag-latin1"


def _latin1(err: UnicodeError) -> tuple[str, int]:
    """Codec error handler: bytes that are not UTF-8 read as Latin-1 (so the characters of a UTF-16 or Latin-1
    secret stay what they are, for redaction to see)."""
    if isinstance(err, UnicodeDecodeError):
        return err.object[err.start:err.end].decode("latin-1"), err.end
    raise err


codecs.register_error(_ERRORS, _latin1)


def body_text(body: bytes) -> str:
    """A response body as the text redaction reads (see the module docstring: UTF-8, else Latin-1; no NUL)."""
    return body.decode("utf-8", _ERRORS).replace("\x00", "")


class BodyRedactor:
    """One streamed body: bytes in (in order, as they arrive), redacted UTF-8 bytes out."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(_ERRORS)
        self._text = RedactStream()

    def feed(self, body: bytes, more: bool) -> bytes:
        """The redacted bytes that can be sent after ``body`` (all that is left when ``more`` is False)."""
        out = self._text.feed(self._decoder.decode(body, final=not more).replace("\x00", ""))
        if not more:
            out += self._text.close()
        return out.encode("utf-8")


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in headers if k.lower() == name), "")


def _is_binary(ctype: str) -> bool:
    return ctype.strip().lower().startswith(BINARY_TYPES)


def _utf8(headers: list[tuple[bytes, bytes]], length: int | None) -> list[tuple[bytes, bytes]]:
    """``headers`` for the redacted body: its length (or none), and ``charset=utf-8`` for a declared other one."""
    out = []
    for k, v in headers:
        low = k.lower()
        if low == b"content-length":
            continue
        if low == b"content-type" and b"charset=" in v.lower() and b"charset=utf-8" not in v.lower():
            v = b";".join(p for p in v.split(b";") if not p.strip().lower().startswith(b"charset=")) \
                + b"; charset=utf-8"
        out.append((k, v))
    if length is not None:
        out.append((b"content-length", str(length).encode()))
    return out


async def _run(fn: Any, *args: Any, size: int) -> Any:
    """``fn(*args)``, in a worker thread when ``size`` bytes are a lot of work for the event loop."""
    if size > THREAD_BYTES:
        return await anyio.to_thread.run_sync(fn, *args)
    return fn(*args)


class RedactBodies:
    """ASGI middleware: every response body but binary ones (:data:`BINARY_TYPES`) passes through
    :mod:`htmlrag.core.redact` (see the module docstring). The app's own static files under ``skip`` pass
    untouched: shipped code holds no secret, and credential-shaped code such as ``Authorization = ...`` in
    Swagger UI must not be rewritten. Byte ranges are not served (:data:`RANGE_HEADERS`), and a compressed text
    body, which cannot be redacted, is refused (500)."""

    def __init__(self, app: Any, skip: tuple[str, ...] = ("/static/", "/swagger/")) -> None:
        self.app, self.skip = app, skip

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(self.skip):
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers") or [] if k.lower() not in RANGE_HEADERS],
                 "extensions": {k: v for k, v in (scope.get("extensions") or {}).items() if k not in FILE_EXTENSIONS}}
        no_length = scope.get("method") == "HEAD"
        start: dict | None = None
        stream: BodyRedactor | None = None
        held: list[bytes] = []
        held_bytes = 0
        batch = bytearray()
        refused = False

        async def wrapped(message: Any) -> None:
            nonlocal start, stream, refused, held_bytes
            kind = message["type"]
            if refused:
                return
            if kind == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers") or [] if k.lower() != b"accept-ranges"]
                if _is_binary(_header(headers, b"content-type")):
                    await send({**message, "headers": headers})
                    return
                if _header(headers, b"content-encoding").strip().lower() not in ("", "identity"):
                    refused = True
                    await _refuse(send, 500, "a compressed text response cannot be redacted, so it is not sent")
                    return
                start = {**message, "headers": headers}
                return
            if start is None:  # a binary body
                await send(message)
                return
            if kind != "http.response.body":  # nothing else may carry a text body out unredacted
                raise RuntimeError(f"RedactBodies: unexpected {kind!r} message for a text response")
            body, more = message.get("body", b""), bool(message.get("more_body"))
            if stream is None:
                held.append(body)
                held_bytes += len(body)
                if not more:  # the whole body, and a small one: redacted whole, sent with its exact length
                    whole = b"".join(held)
                    out = (await _run(redact, body_text(whole), size=len(whole))).encode("utf-8")
                    status = start.get("status", 200)
                    length = None if no_length or status in (204, 304) or 100 <= status < 200 else len(out)
                    await send({**start, "headers": _utf8(start["headers"], length)})
                    await send({"type": "http.response.body", "body": out})
                    return
                if held_bytes <= STREAM_AFTER:
                    return
                stream = BodyRedactor()  # a big body: streamed from now on, its length unknown
                await send({**start, "headers": _utf8(start["headers"], None)})
                body = b"".join(held)
                held.clear()
            batch.extend(body)
            if len(batch) < THREAD_BYTES and more:
                return  # small pieces are redacted together (one trip to a worker thread per 64 KiB)
            out = await anyio.to_thread.run_sync(stream.feed, bytes(batch), more)  # a block may be redacted now
            batch.clear()
            if out or not more:
                await send({"type": "http.response.body", "body": out, "more_body": more})

        await self.app(scope, receive, wrapped)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
