"""OCR of pages without a text layer: a page rendered to an image-only PDF (a generated report page, and a
shared docling page when ../shared is there) parsed into text and headings; without OCR the warning stays."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pymupdf")

import pymupdf

from htmlrag.evaluation.parse_quality import heading_scores, nid
from htmlrag.superrag.parse.document import ParseOptions, parse_pdf
from htmlrag.superrag.parse.ocr import ocr_available
from htmlrag.testing import pdfs as mk
from tests.conftest import shared_path

needs_ocr = pytest.mark.skipif(not ocr_available(), reason="Tesseract is not installed (apt-get install tesseract-ocr; "
                                                           "pip install pytesseract)")


def image_only(src: Path, page: int, dest: Path, dpi: int = 200) -> Path:
    """Page ``page`` (0-based) of ``src`` as a PDF page holding only its picture (no text layer)."""
    with pymupdf.open(src) as doc:
        p = doc[page]
        pix = p.get_pixmap(dpi=dpi)
        out = pymupdf.open()
        new = out.new_page(width=p.rect.width, height=p.rect.height)
        new.insert_image(new.rect, pixmap=pix)
        out.save(dest)
        out.close()
    return dest


def _text(doc) -> str:
    """Reading-order text: headings, paragraphs and table rows as they come."""
    out = []
    for s in doc.sections:
        out += [s.title] + [getattr(i, "text", "") or "\n".join(" ".join(r) for r in getattr(i, "rows", []))
                            for i in s.items]
    return "\n".join(out)


@needs_ocr
def test_scanned_report_page_is_read_into_text_and_headings(tmp_path: Path) -> None:
    scan = image_only(mk.report_pdf(tmp_path / "report.pdf"), 0, tmp_path / "scan.pdf")
    assert pymupdf.open(scan)[0].get_text().strip() == ""  # really no text layer
    doc = parse_pdf(scan)
    assert doc.pages[0].scanned and not doc.warnings
    heads = [h.text for h in doc.headings]
    assert "Widget Annual Report" in heads and "1 Chapter about topic A" in heads
    body = " ".join(p.text for s in doc.sections for p in s.paragraphs)
    assert "quarterly revenue of the widget division" in body and "Marker1." in body
    assert doc.page_texts[0]  # the flat baseline gets the OCR text too


@needs_ocr
def test_scanned_shared_page_matches_its_text_layer(tmp_path: Path) -> None:
    src = shared_path("pdf", "docling", "2305.03393v1-pg9.pdf")
    truth = parse_pdf(src)
    doc = parse_pdf(image_only(src, 0, tmp_path / "scan.pdf"))
    assert doc.pages[0].scanned
    assert nid(_text(truth), _text(doc)) >= 0.85
    matched, n_ref, _ = heading_scores([h.text for h in truth.headings], [h.text for h in doc.headings])
    assert n_ref >= 1 and matched >= 1


def test_without_ocr_the_page_warns_and_require_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import htmlrag.superrag.parse.ocr as ocr
    from htmlrag.core.errors import InputError

    scan = image_only(mk.report_pdf(tmp_path / "report.pdf"), 0, tmp_path / "scan.pdf")
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)
    doc = parse_pdf(scan)
    assert any("page 1 has no text layer" in w and "OCR is not installed" in w for w in doc.warnings)
    assert not doc.headings
    with pytest.raises(InputError, match="OCR is not installed"):
        parse_pdf(scan, options=ParseOptions(ocr="require"))
    off = parse_pdf(scan, options=ParseOptions(ocr="off"))
    assert any("OCR is off" in w for w in off.warnings)


@pytest.mark.parametrize("points", [1000, 7000, 14000])
def test_a_huge_scanned_page_is_read_within_the_pixel_cap(monkeypatch: pytest.MonkeyPatch, points: int) -> None:
    """A 7,000-point page at 300 dpi would be 850 megapixels (over 4 GB while rendering, from a 7 KB PDF): OCR
    and figure images render at the largest resolution within MAX_RENDER_PIXELS, and OCR's boxes are still in
    page points."""
    pytest.importorskip("pytesseract")
    import pytesseract

    from htmlrag.superrag.build.figdesc import figure_png
    from htmlrag.superrag.parse.ocr import ocr_lines
    from htmlrag.superrag.parse.pdfio import MAX_RENDER_PIXELS

    seen = {}

    def fake_ocr(img, **kw):
        seen["size"] = img.size
        w, h = img.size
        return {"text": ["Revenue"], "conf": ["95"], "block_num": [1], "par_num": [1], "line_num": [1],
                "left": [w // 2], "top": [h // 2], "width": [w // 10], "height": [h // 50]}

    monkeypatch.setattr(pytesseract, "image_to_data", fake_ocr)
    doc = pymupdf.open()
    page = doc.new_page(width=points, height=points)
    (line,) = ocr_lines(page, 1)
    w, h = seen["size"]
    assert w * h <= MAX_RENDER_PIXELS and (points > 1000 or (w, h) == (round(points * 300 / 72),) * 2)
    assert abs(line.bbox[0] - points / 2) < points * 0.01 and abs(line.bbox[1] - points / 2) < points * 0.01
    png = figure_png(page, (0, 0, points, points), dpi=144)
    pix = pymupdf.Pixmap(png)
    assert pix.width * pix.height <= MAX_RENDER_PIXELS
