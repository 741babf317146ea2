"""What an upload is, decided by its bytes (not only its name), within size limits.

A PDF must carry the ``%PDF-`` header within its first 1024 bytes (where PDF readers look for it). An HTML page
(``.html``, ``.htm``, optionally gzipped as ``.html.gz``), decoded by the library's one page decoder
(:mod:`htmlrag.html.encoding`), must start, after white space, with markup (``<`` then a letter, ``!`` or
``?``) and name an HTML element in its first 64 KiB; binary data is refused. A gzipped page is decompressed with a cap on the output (no decompression bomb). The name must
agree with the content: a ``.pdf`` holding HTML is refused, as is an ``.html`` holding a PDF, an image or
anything else.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from htmlrag.core.errors import InputError
from htmlrag.core.io import PageTooLarge
from htmlrag.core.io import gunzip_capped as capped
from htmlrag.html.encoding import to_text

PDF_EXTS = (".pdf",)
HTML_EXTS = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
_SNIFF = 64 * 1024
_HTML_ELEMENT = re.compile(rb"<(!doctype\s+html|html|head|body|title|meta|div|p|table|h[1-6]|ul|ol|section|article|span|a)"
                           rb"[\s>/]", re.I)
_MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image",
          b"PK\x03\x04": "a ZIP archive (or an Office document)", b"\x7fELF": "an executable",
          b"MZ": "a Windows executable", b"\x1f\x8b": "gzip data", b"%PDF-": "a PDF"}


class UploadError(InputError):
    """An upload was refused; ``status`` is the HTTP status to answer with (413: too large, 415: wrong type)."""

    def __init__(self, message: str, status: int = 415) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Upload:
    """An accepted upload: a safe file name, its kind (``pdf`` or ``html``) and its bytes (decompressed)."""

    name: str
    kind: str
    data: bytes


def safe_name(name: str, default: str = "upload") -> str:
    """A file name safe to store: the last path component only, NFKC-normalised, characters outside
    ``[A-Za-z0-9._ -]`` replaced by ``_``, no leading dots, at most 120 characters."""
    base = unicodedata.normalize("NFKC", str(name)).replace("\\", "/").rsplit("/", 1)[-1]
    base = re.sub(r"[^A-Za-z0-9._ -]", "_", base).strip().lstrip(".")
    return (base[-120:] if len(base) > 120 else base) or default


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def describe(data: bytes) -> str:
    """What the first bytes look like, for error messages (``a PNG image``, ``text starting 'hello'``)."""
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            return what
    if not data:
        return "an empty file"
    head = data[:24].decode("utf-8", "replace").replace("\x00", "")  # UTF-16 text reads as itself (redactable)
    return f"content starting {head!r}"


def is_pdf(data: bytes) -> bool:
    """The ``%PDF-`` header lies within the first 1024 bytes."""
    return b"%PDF-" in data[:1024]


def is_html(data: bytes) -> bool:
    """The first 64 KiB, decoded as every page is (:func:`htmlrag.html.encoding.to_text`: BOMs, declared
    charsets, UTF-16/32 without a BOM; binary data refused), start with markup (after white space) and name an
    HTML element: what ``htmlrag clean`` reads, the app accepts."""
    try:
        text = to_text(data[:_SNIFF], "upload")  # decoded, characters HTML cannot carry (NUL) dropped
    except InputError:  # binary data
        return False
    body = text.lstrip(" \t\r\n\x0c\ufeff").encode("utf-8", "replace")
    if not re.match(rb"<[A-Za-z!?]", body):
        return False
    return _HTML_ELEMENT.search(body) is not None


def gunzip_capped(data: bytes, limit: int, name: str) -> bytes:
    """Decompress gzip ``data`` with the library's one capped reader (:func:`htmlrag.core.io.gunzip_capped`),
    refusing output over ``limit`` bytes (413) and broken streams (415)."""
    try:
        return capped(data, limit, name)
    except PageTooLarge as exc:
        raise UploadError(f"{name}: decompresses to more than the {_megabytes(limit)} limit for HTML pages",
                          413) from exc
    except InputError as exc:
        raise UploadError(str(exc)) from exc


def check_upload(name: str, data: bytes, *, max_pdf_bytes: int, max_html_bytes: int, no_pdf: str = "") -> Upload:
    """Accept ``data`` uploaded as ``name``, or raise :class:`UploadError` naming the file and the problem.

    Args:
        no_pdf: where PDFs are not taken (the playground), why: a PDF is refused with it (415) before its size
            is looked at.

    Raises:
        UploadError: an unsupported name, content that does not match it, or a size over the limit.
    """
    clean = safe_name(name)
    low = clean.lower()
    if no_pdf and low.endswith(PDF_EXTS):
        raise UploadError(f"{clean}: {no_pdf}")
    if low.endswith(PDF_EXTS):
        if len(data) > max_pdf_bytes:
            raise UploadError(f"{clean}: {_megabytes(len(data))} is over the {_megabytes(max_pdf_bytes)} limit "
                              "for PDFs", 413)
        if not is_pdf(data):
            raise UploadError(f"{clean}: not a PDF ({describe(data)}; a PDF starts with %PDF-)")
        return Upload(clean, "pdf", data)
    if low.endswith(HTML_EXTS):
        if low.endswith(".gz") or data[:2] == b"\x1f\x8b":
            if data[:2] != b"\x1f\x8b":
                raise UploadError(f"{clean}: named .gz but not gzip data ({describe(data)})")
            data = gunzip_capped(data, max_html_bytes, clean)
            if low.endswith(".gz"):  # (a gzipped page named .html keeps its name)
                clean = clean[:-3]
        if len(data) > max_html_bytes:
            raise UploadError(f"{clean}: {_megabytes(len(data))} is over the {_megabytes(max_html_bytes)} limit "
                              "for HTML pages", 413)
        if not is_html(data):
            raise UploadError(f"{clean}: not an HTML page ({describe(data)})")
        return Upload(clean, "html", data)
    raise UploadError(f"{clean}: unsupported file type (upload .pdf, .html, .htm or .html.gz)")
