"""Reading pages from disk: ``.html`` and ``.html.gz`` files, with errors that name the file; and writing any
file atomically (:func:`atomic_file`).

This is the one reader of page files and of gzip data: the command line (``htmlrag clean/tree/prune``, with
``--max-page-mb``) and the web app's uploads (``--max-html-mb``) read through it with the same limit,
:data:`MAX_PAGE_MB` by default, on a page's size after decompression. Decompression is streamed and stops one
byte past the limit, so a gzip bomb (100 MB of zeros in 100 KB) costs the limit, never its full size. The
library's own callers (datasets, the harness) pass no limit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from htmlrag.core.errors import InputError


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The process's umask, read once at import (reading it means setting it, which is not safe among threads).
_UMASK = _read_umask()

#: The default limit on one page, in MB (10^6 bytes) after decompression: the web app's and the command line's.
MAX_PAGE_MB = 5.0


class PageTooLarge(InputError):
    """A page (after decompression) is over the limit it was read with."""


def _mb(n: int) -> str:
    """A size for messages: ``5.0 MB``, or ``1,000 bytes`` below 0.1 MB."""
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


#: Bytes read or decompressed per step: a limit is never allocated up front, only what the input holds.
_CHUNK = 1 << 20


def gunzip_capped(data: bytes, limit: int | None, name: str) -> bytes:
    """Decompress gzip ``data`` (every member), never holding more than ``limit`` + 1 bytes of output, and
    decompressing in steps of at most 1 MiB (any ``limit`` works: none is allocated up front).

    Raises:
        PageTooLarge: the output is over ``limit`` bytes.
        InputError: broken or truncated gzip data.
    """
    out = bytearray()
    rest = data
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        tail = rest
        while not d.eof:
            room = _CHUNK if limit is None else min(_CHUNK, limit - len(out) + 1)
            try:
                chunk = d.decompress(tail, room)
            except zlib.error as exc:
                raise InputError(f"{name}: broken gzip data ({exc})") from exc
            out += chunk
            if limit is not None and len(out) > limit:
                raise PageTooLarge(f"{name}: decompresses to more than the {_mb(limit)} limit for pages")
            if not chunk and not d.unconsumed_tail:  # every input byte used, no output pending
                break
            tail = d.unconsumed_tail
        if not d.eof:
            raise InputError(f"{name}: truncated gzip data")
        rest = d.unused_data
        if not rest.strip(b"\x00"):  # the end (zero padding after the last member is allowed)
            return bytes(out)


def read_capped(stream: IO[bytes], limit: int | None, name: str) -> bytes:
    """Read ``stream`` to its end in steps of at most 1 MiB, refusing more than ``limit`` bytes (one byte past
    it is read to tell); nothing is allocated up front, so a huge ``limit`` costs only what the stream holds.

    Raises:
        PageTooLarge: the stream holds more than ``limit`` bytes.
    """
    buf = bytearray()
    while True:
        want = _CHUNK if limit is None else min(_CHUNK, limit - len(buf) + 1)
        chunk = stream.read(want)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if limit is not None and len(buf) > limit:
            raise PageTooLarge(f"{name}: over the {_mb(limit)} limit for pages")


def read_page(path: str | Path, max_bytes: int | None = None) -> bytes:
    """Return the raw bytes of a page file (gzip -- by its ``.gz`` name or its magic bytes -- decompressed).

    Args:
        path: the file.
        max_bytes: the largest page accepted, after decompression (``None``: no limit).

    Raises:
        InputError: the file is missing, unreadable, or a broken gzip stream.
        PageTooLarge: the page is over ``max_bytes`` (a plain file is refused before it is read; a device or
            pipe, such as ``/dev/zero``, is read only up to the limit).
    """
    p = Path(path)
    # gzip grows incompressible data by under 1%: a file this much over the limit is over it in any case
    cap = None if max_bytes is None else max_bytes + max_bytes // 100 + 1024
    try:
        if cap is not None and p.is_file() and p.stat().st_size > cap:
            raise PageTooLarge(f"{p}: {_mb(p.stat().st_size)} is over the {_mb(max_bytes)} limit for pages")
        with p.open("rb") as fh:
            try:
                data = read_capped(fh, cap, str(p))
            except PageTooLarge:  # a device or pipe (a file's size is checked above)
                raise PageTooLarge(f"{p}: over the {_mb(max_bytes)} limit for pages") from None
    except FileNotFoundError as exc:
        raise InputError(f"{p}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{p}: is a directory, not a page") from exc
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    if p.suffix == ".gz" or data[:2] == b"\x1f\x8b":
        return gunzip_capped(data, max_bytes, str(p))
    if max_bytes is not None and len(data) > max_bytes:
        raise PageTooLarge(f"{p}: {_mb(len(data))} is over the {_mb(max_bytes)} limit for pages")
    return data


def page_stem(path: str | Path) -> str:
    """File name without ``.html``/``.htm``/``.gz`` suffixes (``a/b.html.gz`` -> ``b``)."""
    name = Path(path).name
    for suffix in (".gz", ".html", ".htm", ".xhtml"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


@contextlib.contextmanager
def atomic_file(path: str | Path, mode: str = "w", *, fsync: bool = True, encoding: str = "utf-8") -> Iterator[IO[Any]]:
    """Open a new temporary file beside ``path`` for writing; when the block ends without error it replaces
    ``path`` (flushed and, with ``fsync``, on disk first), otherwise it is removed. Readers see the old file or
    the new one, never a half-written one. Each call has its own temporary name (``mkstemp``), so writers of
    the same path at once, threads of one process or processes, never write into each other's file: the last
    rename wins whole.

    Args:
        path: the file to write.
        mode: ``"w"`` (text, ``encoding``) or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file: mode {mode!r} (use 'w' or 'wb')")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": encoding})) as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; a plain open() would have honoured the umask
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | Path, data: str | bytes, *, fsync: bool = True) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, "wb" if isinstance(data, bytes) else "w", fsync=fsync) as fh:
        fh.write(data)


def place_file(src: str | Path, dest: str | Path, *, link: bool) -> None:
    """Put a copy of ``src`` at ``dest`` (folders made), leaving ``src`` in place: a hard link with ``link``
    where the file system allows one (no second copy on disk), else a copy with its times."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(src, dest)
            return
        except OSError:
            pass
    shutil.copy2(src, dest)


def sha256_file(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB pieces (a download's checksum, a PDF's parse-cache key, a
    plot's record)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for piece in iter(lambda: fh.read(1 << 20), b""):
            h.update(piece)
    return h.hexdigest()
