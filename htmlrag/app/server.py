"""The FastAPI application: pages (:mod:`htmlrag.app.views`), the JSON API (:mod:`htmlrag.app.api`), and the
safety layers around them.

Safety layers, outermost first:

* :class:`~htmlrag.app.secrets.RedactBodies`: secrets (:mod:`htmlrag.core.redact`) never leave in a body that is
  not an image or other binary type (a served file is redacted as it streams; byte ranges are not served); log
  lines are redacted too (:func:`htmlrag.core.redact.install`).
* Trusted hosts: only ``127.0.0.1``/``localhost``/``::1`` (and the served host) in the ``Host`` header, which
  defeats DNS rebinding; ``*`` only when the user chose to serve a non-loopback address.
* :class:`BodyLimit`: a request body over the limit is refused with 413 before it is parsed (by its
  Content-Length, or, sent chunked, as soon as the bytes read pass the limit).
* :class:`SameOrigin`: a state-changing request (POST, ...) sent by another site or a sandboxed frame
  (``Sec-Fetch-Site`` other than ``same-origin``/``none``; without that header, a foreign or ``null``
  ``Origin``) is refused with 403 (no cross-site upload or ask).
* Response headers: the app's pages run only the app's own script (CSP ``script-src 'self'``) and cannot be
  framed by other sites; uploaded or pruned HTML is served only with :data:`~htmlrag.app.pages.SANDBOX_CSP`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.middleware.trustedhost import TrustedHostMiddleware

from htmlrag.app import api, views
from htmlrag.app.responses import message_of, status_of, swagger_dir
from htmlrag.app.runs import metric_html, question_url, run_url
from htmlrag.app.secrets import RedactBodies
from htmlrag.app.settings import AppSettings, is_loopback
from htmlrag.app.state import AppState
from htmlrag.core import redact
from htmlrag.core.errors import HtmlRagError

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
APP_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
           "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``limit`` bytes with 413, whether the client says how long
    the body is (Content-Length: refused before any of it is read) or not (``Transfer-Encoding: chunked``:
    refused once the bytes read pass the limit; the app then sees the client gone, and what it answers is
    dropped)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _refuse(send, 413, f"request body of {int(length) / 1e6:.1f} MB is over the "
                                     f"{self.limit / 1e6:.1f} MB limit")
            return
        seen = 0
        started = refused = False

        async def counted() -> Any:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    refused = True
                    if not started:
                        await _refuse(send, 413, f"request body over the {self.limit / 1e6:.1f} MB limit "
                                                 f"(read {seen / 1e6:.1f} MB)")
                    return {"type": "http.disconnect"}
            return msg

        async def sending(message: Any) -> None:
            nonlocal started
            if refused:
                return  # the 413 is the answer
            started = True
            await send(message)

        await self.app(scope, counted, sending)


class SameOrigin:
    """ASGI middleware: refuse state-changing requests sent by other sites (see the module docstring)."""

    SAFE = frozenset(("GET", "HEAD", "OPTIONS"))

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] not in self.SAFE:
            h = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            origin, host, site = h.get("origin"), h.get("host", ""), h.get("sec-fetch-site")
            foreign = ((site is not None and site not in ("same-origin", "none"))
                       or (origin not in (None, "null") and urllib.parse.urlsplit(origin).netloc != host)
                       or (site is None and origin == "null"))
            if foreign:
                await _refuse(send, 403, "cross-site request refused (the app only accepts requests from its own pages)")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def allowed_hosts(settings: AppSettings, extra: tuple[str, ...] = ()) -> list[str]:
    """Host header values accepted: loopback names, the served host, ``extra``; ``*`` for a non-loopback bind."""
    if not is_loopback(settings.host):
        return ["*"]
    return ["127.0.0.1", "localhost", "::1", "[::1]", settings.host, *extra]


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float written as a string (JSON has neither), and every lone
    surrogate in a string as "?" (no encoding can write one)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def create_app(settings: AppSettings | None = None, *, extra_hosts: tuple[str, ...] = ("testserver",)) -> Any:
    """The ASGI application for ``settings`` (``extra_hosts``: more accepted Host values; tests use
    ``testserver``)."""
    settings = settings or AppSettings()
    redact.register_env(settings.api_key_env)  # the reader's key is a secret whatever its variable is called
    redact.install()  # and never appears in a log line either
    state = AppState(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:

        state.builds.sweep()  # before any upload can arrive: files a killed build left behind
        threading.Thread(target=state.library.warm_up, name="htmlrag-warm-up", daemon=True).start()
        yield
        state.close()

    app = FastAPI(title="htmlrag serve", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Local web app over htmlrag: documents, ask, pruning playground, results browser. "
                              "Every page has a JSON twin under /api.")
    app.state.app = state
    app.state.templates = Jinja2Templates(directory=str(HERE / "templates"))
    app.state.templates.env.globals["settings"] = settings
    app.state.templates.env.filters["metric"] = metric_html  # {{ value|metric(name) }}: rounded as the tables
    app.state.templates.env.globals.update(run_url=run_url, question_url=question_url)  # links that round-trip
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    swagger = swagger_dir()
    if swagger is not None:
        app.mount("/swagger", StaticFiles(directory=str(swagger)), name="swagger")
    app.include_router(api.router)
    app.include_router(views.router)

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", APP_CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"  # "no-referrer" would make form posts Origin: null
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> Any:
        code = status_of(exc)
        if code >= 500:
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        msg = message_of(exc, settings)
        if request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"detail": msg}, status_code=code)
        return app.state.templates.TemplateResponse(request, "error.html", {"status": code, "message": msg},
                                                    status_code=code)

    for cls in (HtmlRagError, PermissionError):
        app.add_exception_handler(cls, on_error)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Any:
        # FastAPI's own handler echoes the input, and JSON has no NaN or Infinity: {"k": NaN} became a 500
        return JSONResponse({"detail": _finite(jsonable_encoder(exc.errors()))}, status_code=422)

    app.add_middleware(SameOrigin)
    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(settings, extra_hosts))
    app.add_middleware(RedactBodies)
    return app
