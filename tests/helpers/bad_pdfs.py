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


def nested_forms_pdf(path: Path, depth: int, fanout: int, leaf_bytes: int = 200) -> Path:
    """One page drawing a form XObject that draws the next one ``fanout`` times, ``depth`` levels down to a
    form of ``leaf_bytes`` bytes that shows a word: a few KB on disk, ``fanout ** depth`` leaf layouts to read
    the page (the PDF form of "billion laughs")."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "nested", fontsize=12)
    kind, value = doc.xref_get_key(page.xref, "Resources")
    holder = int(value.split()[0]) if kind == "xref" else page.xref  # the resources dictionary's object
    prefix = "" if kind == "xref" else "Resources/"
    fonts = doc.xref_get_key(holder, f"{prefix}Font")[1]
    below = None
    for _ in range(depth + 1):
        xref = doc.get_new_xref()
        if below is None:
            body = b"BT /F1 8 Tf 10 10 Td (x) Tj ET" + b" " * max(leaf_bytes - 31, 0)
            res = f"<</Font {fonts}>>"
        else:
            body = b" ".join([b"q 1 0 0 1 0 0 cm /F0 Do Q"] * fanout)
            res = f"<</XObject<</F0 {below} 0 R>>>>"
        doc.update_object(xref, f"<</Type/XObject/Subtype/Form/BBox[0 0 200 200]/Resources{res}>>")
        doc.update_stream(xref, body)
        below = xref
    content = page.get_contents()[0]
    doc.update_stream(content, doc.xref_stream(content) + b" q /Top Do Q")
    doc.xref_set_key(holder, f"{prefix}XObject", f"<</Top {below} 0 R>>")
    doc.save(path, garbage=0, deflate=True)
    doc.close()
    return path


def self_drawing_form_pdf(path: Path) -> Path:
    """One page drawing a form XObject whose content draws that same form (a cycle)."""
    import pymupdf

    path = nested_forms_pdf(path, 1, 2)
    doc = pymupdf.open(path)
    top = next(x for x, name, invoker, _ in doc[0].get_xobjects() if name == "Top" and invoker == 0)
    doc.update_object(top, f"<</Type/XObject/Subtype/Form/BBox[0 0 200 200]/Resources<</XObject<</F0 {top} 0 R>>>>>>")
    doc.update_stream(top, b"q /F0 Do Q")
    doc.save(path, incremental=True, encryption=0)
    doc.close()
    return path
