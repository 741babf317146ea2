"""Reading pages from disk: ``.html`` and ``.html.gz`` files, with errors that name the file."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from htmlrag.core.errors import InputError


def read_page(path: str | Path) -> bytes:
    """Return the raw bytes of a page file (``.gz`` is decompressed).

    Raises:
        InputError: the file is missing, unreadable, or a broken gzip stream.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError as exc:
        raise InputError(f"{p}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{p}: is a directory, not a page") from exc
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    if p.suffix == ".gz" or data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{p}: broken gzip data: {exc}") from exc
    return data


def page_stem(path: str | Path) -> str:
    """File name without ``.html``/``.htm``/``.gz`` suffixes (``a/b.html.gz`` -> ``b``)."""
    name = Path(path).name
    for suffix in (".gz", ".html", ".htm", ".xhtml"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name
