"""Serving files from one folder only: no ``..``, no absolute paths, no symlink (or hard-to-see encoding) that
leads outside it, no hidden files, and only the file types the results browser shows.
"""

from __future__ import annotations

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


def resolve_under(root: Path, rel: str, *, must_exist: bool = True) -> Path:
    """The real path of ``rel`` inside ``root``, or raise :class:`PathRefused`.

    ``rel`` is refused when it is absolute, holds ``..``, a backslash, a NUL, a component starting with ``.``,
    or still holds percent-escapes after one decoding (double encoding); and when its real path (symlinks
    resolved) is not inside the real ``root``.
    """
    text = str(rel)
    if "%" in text:
        decoded = urllib.parse.unquote(text)
        if decoded != text and "%" in decoded:
            raise PathRefused(f"{rel!r}: doubly encoded path")
        text = decoded
    if "\x00" in text or "\\" in text:
        raise PathRefused(f"{rel!r}: invalid characters in path")
    pure = PurePosixPath(text)
    if pure.is_absolute() or text.startswith("~"):
        raise PathRefused(f"{rel!r}: absolute paths are not served")
    parts = [p for p in pure.parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(f"{rel!r}: '..' is not allowed")
    if any(p.startswith(".") for p in parts):
        raise PathRefused(f"{rel!r}: hidden files are not served")
    base = root.resolve()
    target = base.joinpath(*parts)
    real = Path(os.path.realpath(target))
    if real != base and base not in real.parents:
        raise PathRefused(f"{rel!r}: outside the served folder")
    if must_exist and not real.exists():
        raise PathRefused(f"{rel!r}: no such file")
    return real


def servable_file(root: Path, rel: str) -> tuple[Path, str]:
    """``(real path, media type)`` of a file the results browser may send, or raise :class:`PathRefused`."""
    path = resolve_under(root, rel)
    if not path.is_file():
        raise PathRefused(f"{rel!r}: not a file")
    media = MEDIA_TYPES.get(path.suffix.lower())
    if media is None:
        raise PathRefused(f"{rel!r}: {path.suffix or 'this'} files are not served")
    return path, media
