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


# ------------------------------------------------------------------ layouts with a known truth (bench_parse.py)
STATEMENT_ROWS = [["Net sales:", "", ""], ["Products", "60,584", "63,355"], ["Services", "21,213", "19,604"],
                  ["Total net sales", "81,797", "82,959"], ["Cost of sales", "45,384", "47,074"],
                  ["Gross margin", "36,413", "35,885"], ["Research and development", "7,442", "6,797"],
                  ["Operating income", "22,998", "23,076"], ["Net income", "19,881", "19,442"]]
STATEMENT_HEAD = ["", "July 1, 2023", "June 25, 2022"]
STATEMENT_NOTE = ("Net sales rose in the third quarter because services grew faster than products did; the "
                  "company expects services to keep growing as the installed base of devices increases. ")


def statement_pdf(path: Path, *, style: str = "unruled") -> tuple[Path, dict]:
    """A 10-Q-like page: a title in capitals (regular weight, not bold), an intro paragraph, a statement table
    drawn as ``style`` (``unruled``: aligned text only, totals in bold; ``shaded``: alternate rows on grey
    strips; ``ruled``: every cell boxed; ``partial``: as a filing rules or shades only part of a table, the column
    headings and the first two rows plain text, the other rows boxed; ``strips``: as the MSFT filings, alternate
    rows on shaded cells the ruling detector finds as a stack of one-row tables, the rows between them plain
    text), a note heading in bold and a paragraph. Returns the path and the truth
    (reading-order text, headings, table rows)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    title = "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS"
    page.insert_text((120, 70), title, fontsize=12, fontname="helv")
    intro = "The following table shows net sales and income for the quarters, in millions of dollars."
    page.insert_text((60, 100), intro, fontsize=9, fontname="helv")
    x = (60, 380, 480)
    rows = [STATEMENT_HEAD, *STATEMENT_ROWS]
    y = 130
    for r, row in enumerate(rows):
        if style == "shaded" and r % 2 == 1:
            page.draw_rect(pymupdf.Rect(55, y - 10, 560, y + 4), color=None, fill=(0.88, 0.88, 0.88))
        if style == "strips" and r % 2 == 1:
            edges = (55, 370, 470, 560)
            for c in range(3):
                page.draw_rect(pymupdf.Rect(edges[c] + 1, y - 10, edges[c + 1] - 1, y + 4), color=None,
                               fill=(0.85, 0.9, 0.95))
        bold = row[0].startswith(("Total", "Net income", "Gross"))
        for c, cell in enumerate(row):
            if not cell:
                continue
            if style == "ruled" or (style == "partial" and r >= 3):
                page.draw_rect(pymupdf.Rect(x[c] - 4, y - 11, (*x, 560)[c + 1] - 4, y + 5), color=(0, 0, 0), width=0.5)
            page.insert_text((x[c], y), cell, fontsize=9, fontname="hebo" if bold and c == 0 else "helv")
        y += 16
    head = "Note 1 - Revenue"
    page.insert_text((60, y + 30), head, fontsize=9, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(60, y + 40, 552, y + 140), STATEMENT_NOTE * 2, fontsize=9, fontname="helv")
    doc.save(path)
    doc.close()
    text = "\n".join([title, intro, *(" ".join(r) for r in rows), head, (STATEMENT_NOTE * 2).strip()])
    return path, {"text": text, "headings": [title, head], "tables": [[r for r in rows]]}


def small_amounts_pdf(path: Path) -> tuple[Path, dict]:
    """Page 1: an unruled table of small amounts (labels, then 1-3 digit numbers: looks like contents rows but
    the numbers point past the last page), page 2: body text. Nothing on it is a table of contents."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((60, 60), "Segment Results", fontsize=14, fontname="hebo")
    rows = [("Americas revenue", "412"), ("Europe revenue", "388"), ("Greater China revenue", "305"),
            ("Japan revenue", "121"), ("Rest of Asia Pacific revenue", "96"), ("Total segment revenue", "322")]
    for i, (label, value) in enumerate(rows):
        page.insert_text((60, 100 + 18 * i), label, fontsize=10)
        page.insert_text((480, 100 + 18 * i), value, fontsize=10)
    page2 = doc.new_page(width=612, height=792)
    page2.insert_textbox(pymupdf.Rect(60, 60, 552, 300), LOREM * 2, fontsize=10)
    doc.save(path)
    doc.close()
    text = "\n".join(["Segment Results", *(f"{a} {b}" for a, b in rows), (LOREM * 2).strip()])
    return path, {"text": text, "headings": ["Segment Results"], "tables": [[list(r) for r in rows]]}


def _report_truth(folder: Path) -> tuple[Path, dict]:
    path = report_pdf(folder / "report.pdf")
    text, heads = ["Widget Annual Report"], ["Widget Annual Report"]
    for i in range(3):
        heads += [f"{i + 1} Chapter about topic {chr(65 + i)}", f"{i + 1}.1 Details of {chr(65 + i)}"]
        text += [*heads[-2:], (LOREM * 3).strip() + f" Marker{i + 1}."]
        if i == 1:
            text += ["Table 1: Revenue by region", "Region Revenue Units", "North 1,234 56", "South 7,890 12"]
        if i == 2:
            text += ["Figure 1: Widget sales chart"]
    table = [["Region", "Revenue", "Units"], ["North", "1,234", "56"], ["South", "7,890", "12"]]
    return path, {"text": "\n".join(text), "headings": heads, "tables": [table]}


TRUTH_MAKERS = [
    _report_truth,
    lambda folder: statement_pdf(folder / "statement-unruled.pdf", style="unruled"),
    lambda folder: statement_pdf(folder / "statement-shaded.pdf", style="shaded"),
    lambda folder: statement_pdf(folder / "statement-ruled.pdf", style="ruled"),
    lambda folder: statement_pdf(folder / "statement-partial.pdf", style="partial"),
    lambda folder: statement_pdf(folder / "statement-strips.pdf", style="strips"),
    lambda folder: small_amounts_pdf(folder / "small-amounts.pdf"),
]
