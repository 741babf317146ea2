"""OCR for pages without a text layer (scanned pages), with Tesseract through ``pytesseract``.

Optional: the ``[ocr]`` extra (``pytesseract``) and the Tesseract program (Debian/Ubuntu: ``apt-get install
tesseract-ocr``; macOS: ``brew install tesseract``). Without them the parser keeps warning that the page's text
is missing.

A scanned page is rendered at ``dpi`` (grey), Tesseract reads it (``image_to_data``: words with boxes and
confidences), and the words it is confident about (confidence >= ``min_conf``) become
:class:`~htmlrag.superrag.parse.model.Line` records: one per Tesseract line, one block per Tesseract paragraph, boxes
in PDF points. A line's font size is estimated from its words' heights: the median height of the words set
without descenders or ascender-only shapes is not known, so ``size = median word height x 0.8`` (a word box of
Helvetica at 10 pt is ~11-12 pt tall from ascender to descender, ~7 pt for x-height-only words). Bold and italic
are unknown (False). Headings are then found by size like on any other page.
"""

from __future__ import annotations

import functools
import logging
import shutil
import statistics
from typing import Any

from htmlrag.superrag.parse.lines import clean_text
from htmlrag.superrag.parse.model import Line
from htmlrag.superrag.parse.pdfio import capped_zoom

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def ocr_available() -> bool:
    """Whether ``pytesseract`` imports and the ``tesseract`` program runs."""
    try:
        import pytesseract
    except ImportError:
        return False
    if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
        return False
    try:
        pytesseract.get_tesseract_version()
    except Exception:  # broken install
        return False
    return True


def ocr_lines(page: Any, page_no: int, *, dpi: int = 300, lang: str = "eng", min_conf: float = 30.0) -> list[Line]:
    """Text lines of a PyMuPDF page read by Tesseract (see the module docstring)."""
    import pymupdf
    import pytesseract
    from PIL import Image

    zoom = capped_zoom(page.rect, dpi / 72.0)  # a huge page is read at a lower resolution, never unbounded
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    img = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    del pix
    data = pytesseract.image_to_data(img, lang=lang, output_type=pytesseract.Output.DICT)
    scale = 1.0 / zoom
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, word in enumerate(data["text"]):
        if word.strip() and float(data["conf"][i]) >= min_conf:
            groups.setdefault((data["block_num"][i], data["par_num"][i], data["line_num"][i]), []).append(i)
    blocks: dict[tuple[int, int], int] = {}
    out: list[Line] = []
    for (b, p, _), idx in sorted(groups.items(), key=lambda kv: (data["top"][kv[1][0]], data["left"][kv[1][0]])):
        x0 = min(data["left"][i] for i in idx) * scale
        y0 = min(data["top"][i] for i in idx) * scale
        x1 = max(data["left"][i] + data["width"][i] for i in idx) * scale
        y1 = max(data["top"][i] + data["height"][i] for i in idx) * scale
        size = statistics.median(data["height"][i] for i in idx) * scale * 0.8
        text = clean_text(" ".join(data["text"][i] for i in sorted(idx, key=lambda i: data["left"][i])))
        block = blocks.setdefault((b, p), len(blocks))
        out.append(Line(page=page_no, bbox=(x0, y0, x1, y1), text=text, size=round(size * 2) / 2, bold=False,
                        block=block))
    return out
