"""Small PDFs made with PyMuPDF for the SuperRAG tests (nothing is read from disk but what these write)."""

from __future__ import annotations

from pathlib import Path

LOREM = ("The quarterly revenue of the widget division grew steadily because customers ordered more "
         "widgets in every region, and the company expects the trend to continue next year. ")


def report_pdf(path: Path, *, pages: int = 3, with_table: bool = True, with_figure: bool = True) -> Path:
    """A report: repeated header and page-number footer, a title, numbered headings at two sizes,
    body paragraphs, a ruled table on page 2 and a captioned picture on page 3."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 30), "ACME Corp Annual Report", fontsize=8)
        page.insert_text((290, 820), str(i + 1), fontsize=8)
        y = 90
        if i == 0:
            page.insert_text((72, y), "Widget Annual Report", fontsize=24, fontname="hebo")
            y += 50
        page.insert_text((72, y), f"{i + 1} Chapter about topic {chr(65 + i)}", fontsize=16, fontname="hebo")
        y += 30
        page.insert_text((72, y), f"{i + 1}.1 Details of {chr(65 + i)}", fontsize=13, fontname="hebo")
        y += 20
        rect = pymupdf.Rect(72, y, 523, y + 120)
        page.insert_textbox(rect, LOREM * 3 + f"Marker{i + 1}.", fontsize=10, fontname="helv")
        y += 140
        if with_table and i == 1:
            _table(page, 72, y, [["Region", "Revenue", "Units"], ["North", "1,234", "56"], ["South", "7,890", "12"]])
            page.insert_text((72, y - 8), "Table 1: Revenue by region", fontsize=9)
            y += 100
        if with_figure and i == 2:
            pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 40), 0)
            pix.clear_with(200)
            page.insert_image(pymupdf.Rect(150, y, 450, y + 150), pixmap=pix)
            page.insert_text((150, y + 165), "Figure 1: Widget sales chart", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def _table(page, x: float, y: float, rows: list[list[str]], w: float = 120, h: float = 20) -> None:
    import pymupdf

    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(x + c * w, y + r * h, x + (c + 1) * w, y + (r + 1) * h)
            page.draw_rect(rect, color=(0, 0, 0), width=0.8)
            page.insert_text((rect.x0 + 4, rect.y1 - 6), cell, fontsize=9)


def two_column_pdf(path: Path) -> Path:
    """One page, two columns: the left column says LEFT1..LEFT6, the right one RIGHT1..RIGHT6."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 60), "Two Column Title", fontsize=20, fontname="hebo")
    for j in range(6):
        y = 100 + j * 110
        page.insert_textbox(pymupdf.Rect(50, y, 280, y + 100), f"LEFT{j + 1} " + LOREM, fontsize=9)
        page.insert_textbox(pymupdf.Rect(315, y, 545, y + 100), f"RIGHT{j + 1} " + LOREM, fontsize=9)
    doc.save(path)
    doc.close()
    return path


def toc_pdf(path: Path) -> Path:
    """A contents page (printed page numbers) then 4 body pages printed as 1-4 (physical 2-5)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "Contents", fontsize=18, fontname="hebo")
    titles = ["Introduction", "Methods", "Results", "Discussion"]
    for i, t in enumerate(titles):
        page.insert_text((72, 130 + 25 * i), f"{t} " + "." * 60, fontsize=11)
        page.insert_text((500, 130 + 25 * i), str(i + 1), fontsize=11)
    for i, t in enumerate(titles):
        p = doc.new_page(width=595, height=842)
        p.insert_text((72, 80), t, fontsize=18, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(72, 100, 523, 300), LOREM * 2, fontsize=10)
        p.insert_text((290, 820), str(i + 1), fontsize=9)
    doc.save(path)
    doc.close()
    return path


def scanned_pdf(path: Path) -> Path:
    """Page 1 has text; page 2 is only an image covering the page (no text layer)."""
    import pymupdf

    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((72, 72), "A normal page with text.", fontsize=12)
    p = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 80, 100), 0)
    pix.clear_with(255)
    p.insert_image(p.rect, pixmap=pix)
    doc.save(path)
    doc.close()
    return path


def encrypted_pdf(path: Path) -> Path:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret", fontsize=12)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    doc.close()
    return path


def zero_page_pdf(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to save one, so it is written by hand)."""
    path.write_bytes(b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
                     b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
    return path


def truncated_pdf(path: Path, source: Path) -> Path:
    """The first 60% of another PDF's bytes."""
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.6)])
    return path


def big_pdf(path: Path, pages: int = 500) -> Path:
    """``pages`` pages, each with a heading and two paragraphs."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        p = doc.new_page(width=595, height=842)
        p.insert_text((72, 80), f"Section {i + 1}", fontsize=16, fontname="hebo")
        p.insert_textbox(pymupdf.Rect(72, 100, 523, 400), LOREM * 4, fontsize=10)
        p.insert_text((290, 820), str(i + 1), fontsize=9)
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path
