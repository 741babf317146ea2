"""Small PDFs that would cost a lot: huge pages, decompression bombs, huge declared images, many pages."""

from __future__ import annotations

import zlib
from pathlib import Path


def huge_page_pdf(path: Path, size: float) -> Path:
    """One ``size`` x ``size`` point page with a line of text (a few KB)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=size, height=size)
    page.insert_text((72, 72), "A very large page.", fontsize=12)
    doc.save(path)
    doc.close()
    return path


def bomb_pdf(path: Path, expanded: int, *, layers: int = 1) -> Path:
    """A page whose content stream is ``expanded`` bytes of white space, Flate-compressed ``layers`` times
    (``[/FlateDecode /FlateDecode]`` for 2): a few KB on disk."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "hello", fontsize=12)
    xref = page.get_contents()[0]
    data = b"BT /F1 12 Tf 72 72 Td (bomb) Tj ET" + b" " * expanded
    for _ in range(layers):
        data = zlib.compress(data, 9)
    doc.update_stream(xref, data, compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode" if layers == 1 else "[" + " /FlateDecode" * layers + "]")
    doc.save(path, garbage=0, deflate=False)
    doc.close()
    return path


def big_image_pdf(path: Path, side: int) -> Path:
    """A page showing a ``side`` x ``side`` grey image (its zero bytes compress to almost nothing)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, side, side), 0)
    pix.clear_with(255)
    page.insert_image(page.rect, pixmap=pix)
    doc.save(path, deflate=True)
    doc.close()
    return path


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
