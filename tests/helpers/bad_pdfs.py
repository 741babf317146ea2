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


def shared_content_pdf(path: Path, pages: int, expanded: int) -> Path:
    """``pages`` pages that all draw one content stream of ``expanded`` bytes of white space (a few KB on
    disk): each stream is small, but laying out the pages reads it once per page."""
    import pymupdf

    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_text((72, 72), "shared", fontsize=12)
    xref = first.get_contents()[0]
    doc.update_stream(xref, b"BT /F1 12 Tf 72 72 Td (shared) Tj ET" + b" " * expanded)
    resources = doc.xref_get_key(first.xref, "Resources")[1]
    for _ in range(pages - 1):
        page = doc.new_page()
        doc.xref_set_key(page.xref, "Resources", resources)
        doc.xref_set_key(page.xref, "Contents", f"{xref} 0 R")
    doc.save(path, garbage=0, deflate=True)
    doc.close()
    return path
