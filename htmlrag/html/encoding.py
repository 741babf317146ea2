"""Turn page bytes into text as a browser does: the encoding sniffing algorithm of the HTML standard.

1. **BOM** (removed): ``EF BB BF`` UTF-8, ``FE FF`` UTF-16BE, ``FF FE`` UTF-16LE. The Encoding standard has no
   UTF-32, so ``FF FE 00 00`` is UTF-16LE, as in browsers.
2. A **transport** charset (``declared=``, e.g. from an HTTP ``Content-Type``), when a caller has one.
3. The **prescan** of the first 1024 bytes (:func:`prescan`): ``<!-- -->`` comments are skipped, other tags'
   attributes are stepped over, and the first ``<meta charset=...>`` or ``<meta http-equiv="content-type"
   content="...; charset=...">`` with a known label decides. Labels are resolved by the WHATWG Encoding
   standard (``webencodings``: ``latin1``/``ascii`` -> windows-1252, ``gb2312`` -> GBK, ...), an unknown label
   is ignored and the scan goes on, and **UTF-16BE/LE become UTF-8** (bytes that hold an ASCII ``<meta>`` are
   not UTF-16) and **x-user-defined becomes windows-1252**.
4. A declaration **further in** the page: a browser meets it while parsing and, its encoding still tentative,
   "changes the encoding" to it (same mapping); we look for it before decoding, with the same attribute rules.
5. Otherwise **autodetection**, which the standard leaves to the browser: UTF-16 without a BOM (a NUL in every
   other byte of the first 512) and UTF-32 without a BOM (NULs in three of every four bytes; browsers know no
   UTF-32, but a page saved so is still text); valid UTF-8 is UTF-8; mostly UTF-8 (under 1 bad byte in 200) is
   UTF-8 with replacement characters; anything else windows-1252, the default for most locales.

This is the one decoder of pages: the command line, the harness and the web app's upload check all decode with
it, so a page one of them reads the others read too.

Decoding never raises: undecodable bytes become U+FFFD; an encoding whose labels map to WHATWG's
"replacement" (``hz-gb-2312``, ``iso-2022-kr``, ...) turns a non-empty page into one U+FFFD, as browsers do.
NUL and the other C0 controls but TAB/LF/FF/CR are dropped wherever they are, and a form feed (HTML
whitespace, which XML text -- hence the parser's tree -- cannot hold) becomes a space (:func:`to_text`,
:func:`to_utf8`). A page is refused as binary by what it is as a whole -- a binary signature at its start (PDF,
PNG, GIF, JPEG, ZIP, gzip) or over 10% control bytes across all of it (ASCII-compatible encodings only) --
never by where a NUL sits.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

import webencodings

from htmlrag.core.errors import InputError

PRESCAN_BYTES = 1024
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
)
#: WHATWG encoding name -> Python codec, where webencodings' choice is not the WHATWG decoder.
_CODEC = {"gbk": "gb18030"}  # the WHATWG GBK decoder is the gb18030 decoder
_SPACE = b"\t\n\x0c\r "
_META = re.compile(rb"<meta[\t\n\x0c\r /]", re.IGNORECASE)
# "get an attribute": skip whitespace and slashes, then a name (its first byte may be "="), then whitespace
_ATTR_NAME = re.compile(rb"[\t\n\x0c\r /]*([^\t\n\x0c\r />][^\t\n\x0c\r /=>]*)[\t\n\x0c\r ]*")
_UNQUOTED = re.compile(rb"[^\t\n\x0c\r >]*")
_LATER = re.compile(rb"<!--|<meta[\t\n\x0c\r /]", re.IGNORECASE)
_BINARY_SIGNATURES = (b"%PDF-", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"PK\x03\x04",
                      b"\x1f\x8b\x08")
# C0 controls that cannot appear in HTML/XML text (below 0x20 but TAB, LF, FF, CR), lone surrogates, FFFE/FFFF;
# a form feed is HTML whitespace that XML text cannot hold: it becomes a space, so words stay apart.
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_CONTROL_BYTES = bytes([*range(0, 9), 11, *range(14, 32)])
_FF_TO_SPACE = bytes.maketrans(b"\x0c", b" ")


@dataclass(frozen=True)
class Sniffed:
    """The outcome of sniffing: the WHATWG encoding ``name``, the Python ``codec``, the BOM length to skip and
    where the decision came from (``bom``, ``transport``, ``meta``, ``meta-later``, ``detected`` (UTF-16 by its
    NULs, or bytes that are valid UTF-8), ``mostly-utf-8``, ``default``)."""

    name: str
    codec: str
    skip: int
    source: str


def encoding_from_label(label: str | bytes) -> str | None:
    """The WHATWG encoding name for ``label`` (surrounding whitespace and case ignored), or None if unknown."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    enc = webencodings.lookup(label)
    return None if enc is None else enc.name


def _for_meta(name: str | None) -> str | None:
    """The HTML standard's rule for encodings declared in a page: UTF-16 -> UTF-8, x-user-defined -> 1252."""
    if name in ("utf-16be", "utf-16le"):
        return "utf-8"
    if name == "x-user-defined":
        return "windows-1252"
    return name


def charset_from_content(value: bytes) -> str | None:
    """The standard's "extracting a character encoding from a meta element" on a ``content`` value."""
    pos, low = 0, value.lower()
    while True:
        i = low.find(b"charset", pos)
        if i < 0:
            return None
        j = i + 7
        while j < len(value) and value[j] in _SPACE:
            j += 1
        if j >= len(value) or value[j] != ord("="):
            pos = j
            continue
        j += 1
        while j < len(value) and value[j] in _SPACE:
            j += 1
        if j >= len(value):
            return None
        if value[j] in b"\"'":
            end = value.find(value[j : j + 1], j + 1)
            return None if end < 0 else encoding_from_label(value[j + 1 : end])
        end = j
        while end < len(value) and value[end] not in _SPACE and value[end] != ord(";"):
            end += 1
        return encoding_from_label(value[j:end])


def _attribute(data: bytes, pos: int) -> tuple[bytes, bytes, int] | None:
    """The standard's "get an attribute" at ``pos``: ``(name, value, new position)`` (both lower-cased), or
    None at ``>`` or where the input ends (which ends the prescan)."""
    m = _ATTR_NAME.match(data, pos)
    if m is None or m.end() >= len(data):
        return None
    name, pos = m.group(1).lower(), m.end()
    if data[pos] != 0x3D:  # "=": else a name without a value
        return name, b"", pos
    pos += 1
    while pos < len(data) and data[pos] in _SPACE:
        pos += 1
    if pos >= len(data):
        return None
    quote = data[pos]
    if quote in (0x22, 0x27):
        end = data.find(bytes([quote]), pos + 1)
        return None if end < 0 else (name, data[pos + 1 : end].lower(), end + 1)
    if quote == 0x3E:
        return name, b"", pos
    end = _UNQUOTED.match(data, pos).end()  # type: ignore[union-attr]
    return None if end >= len(data) else (name, data[pos:end].lower(), end)


def _meta_charset(data: bytes, pos: int) -> tuple[str | None, int]:
    """Attributes of the ``<meta`` at ``pos``: ``(declared encoding or None, position after the attributes)``."""
    pos += 5
    seen: set[bytes] = set()
    got_pragma, need_pragma, charset = False, None, None
    while (attr := _attribute(data, pos)) is not None:
        name, value, pos = attr
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv" and value == b"content-type":
            got_pragma = True
        elif name == b"content" and charset is None:
            found = charset_from_content(value)
            if found is not None:
                charset, need_pragma = found, True
        elif name == b"charset":
            charset, need_pragma = encoding_from_label(value), False
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return None, pos
    return _for_meta(charset), pos


def prescan(data: bytes, limit: int = PRESCAN_BYTES) -> str | None:
    """The HTML standard's "prescan a byte stream to determine its encoding" over ``data[:limit]``."""
    data = data[:limit]
    pos, n = 0, len(data)
    while (pos := data.find(b"<", pos)) >= 0:
        if data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 2)
            if end < 0:
                return None
            pos = end + 3
            continue
        if data[pos + 1 : pos + 5].lower() == b"meta" and pos + 5 < n and (data[pos + 5] in _SPACE or data[pos + 5] == 0x2F):
            found, pos = _meta_charset(data, pos)
            if found is not None:
                return found
        elif data[pos + 1 : pos + 2].isalpha() or (data[pos + 1 : pos + 2] == b"/" and data[pos + 2 : pos + 3].isalpha()):
            pos += 1
            while pos < n and data[pos] not in _SPACE and data[pos] != 0x3E:
                pos += 1
            while (attr := _attribute(data, pos)) is not None:
                pos = attr[2]
        elif data[pos + 1 : pos + 2] in (b"!", b"/", b"?"):
            end = data.find(b">", pos)
            if end < 0:
                return None
            pos = end
        pos += 1
    return None


def _later_meta(data: bytes) -> str | None:
    """A declaration past the prescanned bytes (outside comments), as a browser finds while parsing."""
    if not _META.search(data, PRESCAN_BYTES - 5):
        return None
    pos = 0
    while (m := _LATER.search(data, pos)) is not None:
        if m.group() == b"<!--":
            end = data.find(b"-->", m.start() + 2)
            if end < 0:
                return None
            pos = end + 3
            continue
        found, pos = _meta_charset(data, m.start())
        if found is not None:
            return found
        pos = max(pos, m.end())
    return None


def sniff(data: bytes, declared: str | None = None) -> Sniffed:
    """Decide the encoding of page bytes (steps 1-5 of the module docstring)."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return Sniffed(name, _codec(name), len(bom), "bom")
    if declared and (name := encoding_from_label(declared)) is not None:
        return Sniffed(name, _codec(name), 0, "transport")
    for source, found in (("meta", lambda: prescan(data)), ("meta-later", lambda: _later_meta(data))):
        name = found()
        if name is not None:
            return Sniffed(name, _codec(name), 0, source)
    wide = _bomless_utf32(data) or _bomless_utf16(data)
    if wide is not None:
        return Sniffed(wide, _codec(wide), 0, "detected")
    try:
        data.decode("utf-8")
        return Sniffed("utf-8", "utf-8", 0, "detected")
    except UnicodeDecodeError:
        sample = data[:65536]
        bad = len(sample.decode("utf-8", errors="replace")) - len(sample.decode("utf-8", errors="ignore"))
        name = "utf-8" if bad * 200 < len(sample) else "windows-1252"
        return Sniffed(name, _codec(name), 0, "mostly-utf-8" if name == "utf-8" else "default")


def _bomless_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM, recognised by its NUL pattern: ASCII markup puts a NUL in every other byte."""
    head = data[:512]
    if len(head) < 16 or head.count(0) * 3 < len(head):
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if odd >= 0.9 * len(head[1::2]) and even <= 0.1 * len(head[0::2]):
        return "utf-16le"
    if even >= 0.9 * len(head[0::2]) and odd <= 0.1 * len(head[1::2]):
        return "utf-16be"
    return None


def _bomless_utf32(data: bytes) -> str | None:
    """UTF-32 without a BOM, by its NUL pattern: ASCII markup puts NULs in three of every four bytes."""
    head = data[: 512 - 512 % 4]
    if len(head) < 32 or head.count(0) * 2 < len(head):
        return None
    lanes = [head[i::4].count(0) / len(head[i::4]) for i in range(4)]
    if lanes[0] <= 0.1 and min(lanes[1:]) >= 0.9:
        return "utf-32le"
    if lanes[3] <= 0.1 and min(lanes[:3]) >= 0.9:
        return "utf-32be"
    return None


#: Encodings we detect that the WHATWG Encoding standard (webencodings) does not have: name -> Python codec.
_NOT_WHATWG = {"utf-32le": "utf-32-le", "utf-32be": "utf-32-be"}


def _codec(name: str) -> str:
    if name in _NOT_WHATWG:
        return _NOT_WHATWG[name]
    if name in _CODEC:
        return _CODEC[name]
    enc = webencodings.lookup(name)
    return enc.codec_info.name if enc is not None else name


def _decode(data: bytes, name: str) -> str:
    """``data`` decoded with the WHATWG encoding ``name`` (errors become U+FFFD)."""
    if name in _CODEC or name in _NOT_WHATWG:
        return data.decode(_CODEC.get(name) or _NOT_WHATWG[name], errors="replace")
    return webencodings.lookup(name).codec_info.decode(data, "replace")[0]


def sniff_encoding(data: bytes) -> tuple[str | None, int]:
    """``(Python codec, BOM length)`` by :func:`sniff` (kept for callers of the first version)."""
    s = sniff(data)
    return s.codec, s.skip


def looks_binary(data: bytes) -> bool:
    """True when ``data`` (in an ASCII-compatible encoding) starts with a binary signature or more than 10% of
    all its bytes are control bytes (a NUL here and there does not make a page binary)."""
    if not data:
        return False
    if data.startswith(_BINARY_SIGNATURES):
        return True
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    return controls / len(data) > 0.10


def decode_html(data: bytes, name: str = "<bytes>", declared: str | None = None) -> str:
    """Decode page bytes to ``str`` as a browser would; undecodable bytes become U+FFFD, never an exception.

    Args:
        data: the raw page.
        name: how to call the input in error messages (a path, an id).
        declared: a transport-layer charset label (an HTTP ``Content-Type``'s), if known.

    Raises:
        InputError: the bytes are binary data, not a page.
    """
    s = sniff(data, declared)
    if not s.name.startswith(("utf-16", "utf-32")) and looks_binary(data):
        raise InputError(f"{name}: input looks like binary data, not an HTML page (a binary signature or "
                         "control bytes)")
    if s.name == "replacement":
        return "\ufffd" if data else ""
    return _decode(data[s.skip :], s.name)


def to_utf8(html: str | bytes, name: str = "<input>") -> bytes:
    """Return the page as UTF-8 bytes fit for the parser (see :func:`to_text`); avoids a decode/encode
    round trip when the input already is valid UTF-8 without characters HTML cannot carry."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        data = bytes(html)
        s = sniff(data)
        if s.name == "utf-8" and not data.startswith(_BINARY_SIGNATURES):  # the fast path never skips that check
            body = data[s.skip :]
            if len(body.translate(None, _CONTROL_BYTES)) == len(body) and b"\x0c" not in body:
                if s.source == "detected":  # sniff found it valid UTF-8 already
                    return body
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
    if len(data.translate(None, _CONTROL_BYTES)) != len(data) or b"\x0c" in data:
        data = data.translate(_FF_TO_SPACE, _CONTROL_BYTES)
    return data


def to_text(html: str | bytes, name: str = "<input>") -> str:
    """Return page text with characters that HTML cannot carry removed (NUL and other C0 controls)."""
    if isinstance(html, (bytes, bytearray, memoryview)):
        html = decode_html(bytes(html), name)
    elif not isinstance(html, str):
        raise InputError(f"{name}: expected str or bytes, got {type(html).__name__}")
    if _CONTROL.search(html):
        html = _CONTROL.sub("", html)
    return html.replace("\x0c", " ") if "\x0c" in html else html
