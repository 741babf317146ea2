"""Opening PDFs safely with PyMuPDF (the optional ``[graph]`` extra), with errors that name the file.

PyMuPDF is imported here and only when a PDF is opened, so ``import htmlrag`` stays light.
"""

from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError

log = logging.getLogger(__name__)

#: How far from the end of the file the ``%%EOF`` marker may sit (producers append a little garbage).
_EOF_WINDOW = 2048


def import_pymupdf() -> Any:
    """Import PyMuPDF quietly (no banner, no MuPDF warnings on stderr).

    Raises:
        HtmlRagError: PyMuPDF is not installed (``pip install 'htmlrag-bench[graph]'``).
    """
    try:
        import pymupdf
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise HtmlRagError(
            "parsing PDFs needs PyMuPDF (AGPL-3.0): pip install 'htmlrag-bench[graph]'"
        ) from exc
    quiet = getattr(pymupdf, "no_recommend_layout", None)
    if quiet is not None:
        quiet()
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    return pymupdf


def doc_id_for(data: bytes, path: str | Path) -> str:
    """A stable document id: the file stem (made id-safe) plus 10 hex digits of the content's SHA-1."""
    stem = "".join(c if c.isalnum() else "_" for c in Path(path).stem).strip("_") or "doc"
    return f"{stem[:40]}-{hashlib.sha1(data).hexdigest()[:10]}"


def open_pdf(path: str | Path, *, password: str | None = None, repair: bool = False) -> tuple[Any, bytes]:
    """Open a PDF and check it can be parsed.

    Args:
        path: the PDF file.
        password: user password for an encrypted PDF.
        repair: accept a truncated or damaged file that MuPDF could repair (logged as a warning);
            by default such a file is refused, because pages and text may be silently missing.

    Returns:
        The open ``pymupdf.Document`` and the file's bytes.

    Raises:
        InputError: the file is missing, not a PDF, truncated or damaged, encrypted without the right
            password, or has no pages. The message names the file.
    """
    pymupdf = import_pymupdf()
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: file not found") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc}") from exc
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise InputError(f"{p}: not a PDF (no %PDF header)")
    truncated = b"%%EOF" not in data[-_EOF_WINDOW:]
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # pymupdf.FileDataError and friends
        why = "truncated or damaged" if truncated else "damaged"
        raise InputError(f"{p}: cannot open PDF ({why}): {exc}") from exc
    if doc.page_count == 0 and not doc.needs_pass:
        doc.close()
        raise InputError(f"{p}: PDF has no pages")
    if truncated or doc.is_repaired:
        what = "truncated (no %%EOF marker at the end)" if truncated else "damaged (MuPDF had to repair it)"
        if not repair:
            doc.close()
            raise InputError(f"{p}: PDF is {what}; pages or text may be missing (pass repair=True to accept)")
        log.warning("%s: PDF is %s; parsing what MuPDF recovered", p, what)
    if doc.needs_pass:
        if password is None or not doc.authenticate(password):
            doc.close()
            hint = "wrong password" if password is not None else "pass the password"
            raise InputError(f"{p}: PDF is encrypted and needs a password ({hint})")
    return doc, data


#: Pixels of one page image rendered for OCR or a figure description, at most: a 7,000-point page at 300 dpi
#: would be 850 megapixels (over 4 GB while rendering); 25 megapixels is an A3 page at 300 dpi.
MAX_RENDER_PIXELS = 25_000_000


def capped_zoom(rect: Any, zoom: float, max_pixels: int = MAX_RENDER_PIXELS) -> float:
    """The zoom (1.0 = 72 dpi) at which ``rect`` (a PyMuPDF Rect: a page or a clip) renders to at most
    ``max_pixels``: ``zoom`` itself, or the largest smaller one (MuPDF rounds the image size up)."""
    import pymupdf

    z = min(zoom, math.sqrt(max_pixels / max(float(rect.width) * float(rect.height), 1.0)))
    while (r := (rect * pymupdf.Matrix(z, z)).irect).width * r.height > max_pixels and z > 1e-6:
        z *= 0.995
    return z
