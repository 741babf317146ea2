"""Turn page bytes into text: BOM, then a declared charset, then UTF-8, then Windows-1252.

Decoding never raises on undecodable bytes: they become U+FFFD. Input that is clearly binary (NUL bytes in a
page that is not UTF-16/32) raises :class:`~htmlrag.errors.InputError`.
"""

from __future__ import annotations

import codecs
import re

from htmlrag.errors import InputError

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# <meta charset="x">, <meta http-equiv="Content-Type" content="text/html; charset=x">, <?xml encoding="x"?>
_DECLARED = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)

# WHATWG encoding standard: these labels mean windows-1252 in browsers.
_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252", "us-ascii": "cp1252",
            "ascii": "cp1252", "iso8859-1": "cp1252", "l1": "cp1252", "x-sjis": "shift_jis",
            "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "utf8": "utf-8"}

# C0 controls that cannot appear in HTML/XML text (below 0x20 but TAB, LF, CR), lone surrogates, FFFE/FFFF.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def sniff_encoding(data: bytes, scan: int = 4096) -> tuple[str | None, int]:
    """Return ``(encoding, bom_length)`` from a BOM or a declaration in the first ``scan`` bytes.

    The encoding is ``None`` when neither is present or the declared name is unknown to Python.
    """
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    match = _DECLARED.search(data[:scan])
    if match:
        label = (match.group(1) or match.group(2)).decode("ascii", "replace").strip().lower()
        label = _ALIASES.get(label, label)
        try:
            return codecs.lookup(label).name, 0
        except LookupError:
            return None, 0
    return None, 0


_CONTROL_BYTES = bytes([*range(0, 9), 11, 12, *range(14, 32)])


def looks_binary(data: bytes, sample: int = 8192) -> bool:
    """True when ``data`` (without a UTF-16/32 BOM) holds NUL bytes or is mostly non-text control bytes."""
    head = data[:sample]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls / len(head) > 0.10


def decode_html(data: bytes, name: str = "<bytes>") -> str:
    """Decode page bytes to ``str``; undecodable bytes become U+FFFD, never an exception.

    Args:
        data: the raw page.
        name: how to call the input in error messages (a path, an id).

    Raises:
        InputError: the bytes are binary data, not a page.
    """
    encoding, skip = sniff_encoding(data)
    if encoding is None or (not encoding.startswith("utf-16") and not encoding.startswith("utf-32")):
        if looks_binary(data):
            raise InputError(f"{name}: input looks like binary data, not an HTML page (NUL or control bytes)")
    body = data[skip:]
    if encoding is not None:
        text = body.decode(encoding, errors="replace")
    else:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            # Mostly UTF-8 with a few stray bytes stays UTF-8; otherwise assume the web's legacy default.
            sample = body[:65536]
            bad = len(sample.decode("utf-8", errors="replace")) - len(sample.decode("utf-8", errors="ignore"))
            text = body.decode("utf-8" if bad * 200 < len(sample) else "cp1252", errors="replace")
    return text


def to_utf8(html: str | bytes, name: str = "<input>") -> bytes:
    """Return the page as UTF-8 bytes fit for the parser (see :func:`to_text`); avoids a decode/encode
    round trip when the input already is valid UTF-8 without characters HTML cannot carry."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        data = bytes(html)
        encoding, skip = sniff_encoding(data)
        if encoding in (None, "utf-8"):
            body = data[skip:]
            if len(body.translate(None, _CONTROL_BYTES)) == len(body):
                try:
                    body.decode("utf-8")
                except UnicodeDecodeError:
                    pass
                else:
                    return body
        html = decode_html(data, name)
    elif not isinstance(html, str):
        raise InputError(f"{name}: expected str or bytes, got {type(html).__name__}")
    try:
        data = html.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        data = html.encode("utf-8", errors="replace")
    if len(data.translate(None, _CONTROL_BYTES)) != len(data):
        data = data.translate(None, _CONTROL_BYTES)
    return data


def to_text(html: str | bytes, name: str = "<input>") -> str:
    """Return page text with characters that HTML cannot carry removed (NUL and other C0 controls)."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        html = decode_html(bytes(html), name)
    elif not isinstance(html, str):
        raise InputError(f"{name}: expected str or bytes, got {type(html).__name__}")
    if _CONTROL.search(html):
        html = _CONTROL.sub("", html)
    return html
