"""Serving files from one folder only: no ``..``, no absolute paths, no symlink (or hard-to-see encoding) that
leads outside it, no hidden files, and only the file types the results browser shows.
"""

from __future__ import annotations

import codecs
import os
import urllib.parse
from pathlib import Path, PurePosixPath

from htmlrag.core.errors import InputError

#: Extension -> media type of what the results browser serves. Text is served as text/plain (never HTML/SVG,
#: which a browser would run).
MEDIA_TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
    ".csv": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8", ".tex": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8", ".json": "text/plain; charset=utf-8",
    ".jsonl": "text/plain; charset=utf-8", ".yaml": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8",
}


class PathRefused(InputError):
    """A requested path is not a servable file under the root (the message says why, without the root's path)."""

    status = 404


class NotUtf8(PathRefused):
    """A text file the results browser would serve is not UTF-8 text (415: redaction reads UTF-8; a secret in
    UTF-16 or another encoding would not be recognised)."""

    status = 415


#: Bytes read at a time when a text file is checked for UTF-8.
CHECK_CHUNK = 1 << 20
#: Byte order marks of UTF-32 and UTF-16 (longest first), each with its encoding's name.
BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))


def _readings(name: str) -> list[str]:
    """``name`` as written, and as it would read each time something decoded its percent-escapes again (until
    nothing changes): a name that reads as ``..`` or a hidden file once decoded is a double-encoding trick."""
    out = [name]
    while "%" in out[-1]:
        decoded = urllib.parse.unquote(out[-1])
        if decoded == out[-1]:
            break
        out.append(decoded)
    return out


def refusal(rel: str) -> str | None:
    """Why the relative path ``rel`` (as the route received it: percent-decoded once) is not served, or None.

    Names are taken literally: a folder called ``a%41b`` or ``%25`` is served under that name (links quote it
    once, the server decodes it once). Refused: a NUL, an absolute path (``/x``, or ``~`` as the first name),
    ``..``, a hidden name (``.x``), and a name that would be one of these if its percent-escapes were decoded
    once more (``%2e%2e``, ``%252e%252e``, ``%2fetc``) or its backslashes separated folders (``..\\x``: on
    Windows any backslash is refused)."""
    text = str(rel)
    if "\x00" in text or (os.sep != "/" and "\\" in text):
        return "invalid characters in path"
    if text.startswith("/"):
        return "absolute paths are not served"
    parts = [p for p in text.split("/") if p not in ("", ".")]
    for i, part in enumerate(parts):
        for n, reading in enumerate(_readings(part)):
            if "\x00" in reading:
                return "invalid characters in path"
            if i == 0 and (reading == "~" or reading.startswith(("/", "~/"))):
                return "absolute paths are not served" if not n else "an encoded absolute path is not served"
            for piece in reading.replace("\\", "/").split("/"):
                if piece == "..":
                    return "'..' is not allowed" if not n and "\\" not in part else "an encoded '..' is not allowed"
                if piece.startswith(".") and piece != ".":
                    return "hidden files are not served"
    return None


def resolve_under(root: Path, rel: str, *, must_exist: bool = True) -> Path:
    """The real path of ``rel`` inside ``root``, or raise :class:`PathRefused`.

    ``rel`` is the path as the route received it (the server decoded its percent-escapes once); it is taken
    literally (never decoded again), and refused for the reasons of :func:`refusal`, and when its real path
    (symlinks resolved) is not inside the real ``root``.
    """
    why = refusal(rel)
    if why is not None:
        raise PathRefused(f"{rel!r}: {why}")
    parts = [p for p in str(rel).split("/") if p not in ("", ".")]
    base = root.resolve()
    target = base.joinpath(*parts)
    real = Path(os.path.realpath(target))
    if real != base and base not in real.parents:
        raise PathRefused(f"{rel!r}: outside the served folder")
    if must_exist and not real.exists():
        raise PathRefused(f"{rel!r}: no such file")
    return real


def check_utf8(path: Path, rel: str) -> None:
    """Raise :class:`NotUtf8` (naming ``rel`` and the reason) unless the file is UTF-8 text: no UTF-16/32 byte
    order mark, no NUL byte (UTF-16 and UTF-32 text without a mark has them), no byte sequence that is not
    UTF-8. Read in chunks of :data:`CHECK_CHUNK` bytes (memory stays bounded; the cost is a read of the file)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHECK_CHUNK)
            if offset == 0:
                bom = next((enc for mark, enc in BOMS if chunk.startswith(mark)), None)
                if bom:
                    raise NotUtf8(f"{rel!r}: not UTF-8 text (it starts with a {bom} byte order mark); the results "
                                  f"browser serves text files in UTF-8 only")
            nul = chunk.find(b"\x00")
            if nul >= 0:
                raise NotUtf8(f"{rel!r}: not UTF-8 text (a NUL byte at offset {offset + nul}, as in UTF-16 or UTF-32 "
                              f"text or binary data); the results browser serves text files in UTF-8 only")
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                raise NotUtf8(f"{rel!r}: not UTF-8 text (byte {offset + exc.start} is not UTF-8); the results "
                              f"browser serves text files in UTF-8 only") from None
            if not chunk:
                return
            offset += len(chunk)


def servable_file(root: Path, rel: str) -> tuple[Path, str]:
    """``(real path, media type)`` of a file the results browser may send, or raise :class:`PathRefused`
    (:class:`NotUtf8` for a text file that is not UTF-8)."""
    path = resolve_under(root, rel)
    if not path.is_file():
        raise PathRefused(f"{rel!r}: not a file")
    media = MEDIA_TYPES.get(path.suffix.lower())
    if media is None:
        raise PathRefused(f"{rel!r}: {path.suffix or 'this'} files are not served")
    if media.startswith("text/"):
        check_utf8(path, rel)
    return path, media


def served(rel: str) -> bool:
    """Whether :func:`servable_file` would consider ``rel`` by its name alone (its type, and :func:`refusal`):
    the results pages link only such files."""
    return refusal(rel) is None and PurePosixPath(rel).suffix.lower() in MEDIA_TYPES
