"""What the app answers with: the HTTP status and the user's message for an error, and a rendered page.

Shared by the application (:mod:`htmlrag.app.server`) and its pages (:mod:`htmlrag.app.views`), so neither
imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from htmlrag.app.files import PathRefused
from htmlrag.app.library import Busy, NoCorpus
from htmlrag.app.settings import AppSettings
from htmlrag.app.uploads import UploadError
from htmlrag.core.errors import HtmlRagError, InputError, os_error_text
from htmlrag.core.redact import redact

#: OSErrors of a file that is not what the app expects there (a folder, missing, unreadable): a 400 naming it.
_UNREADABLE = (IsADirectoryError, NotADirectoryError, FileNotFoundError, PermissionError)


def _file_of(exc: BaseException) -> str:
    """The file an OSError names ('' for other errors)."""
    return str(exc.filename) if isinstance(exc, OSError) and exc.filename else ""


def status_of(exc: Exception) -> int:
    """HTTP status for a library or app error."""
    if isinstance(exc, UploadError):
        return exc.status
    if isinstance(exc, PathRefused):
        return exc.status  # 404; 415 for a text file that is not UTF-8
    if isinstance(exc, Busy):
        return 409
    if isinstance(exc, NoCorpus | InputError):
        return 400
    if isinstance(exc, PermissionError) and not _file_of(exc):  # the Cypher guard's refusal (WriteQueryError)
        return 400
    if isinstance(exc, _UNREADABLE) and _file_of(exc):  # a run's or page's file is a folder, missing, unreadable
        return 400
    name = type(exc).__name__
    if name in ("ReaderHTTPError", "ServiceError"):  # the model endpoint failed or refused the key
        return 502
    return 400 if isinstance(exc, HtmlRagError) else 500


def message_of(exc: Exception, settings: AppSettings) -> str:
    """What the user sees: the error's own message (library errors name the input and the problem), redacted;
    for unexpected errors only their type (details go to the server log)."""
    if _file_of(exc):  # an OSError naming a file: which file and what is wrong with it, never more
        text = os_error_text(exc)  # type: ignore[arg-type]
    elif isinstance(exc, HtmlRagError | PermissionError):
        text = str(exc)
    else:
        text = f"internal error ({type(exc).__name__})"
    for p in (str(settings.db.resolve()), str(settings.results.resolve())):
        text = text.replace(p, "…")
    return redact(text)


def swagger_dir() -> Path | None:
    """Swagger UI's files from the ``swagger-ui-bundle`` package (served locally: no CDN, no inline script)."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return None
    return Path(str(swagger_ui_path))


def html_response(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """Render a page template with the app state at hand."""
    return request.app.state.templates.TemplateResponse(request, template, context, status_code=status)
