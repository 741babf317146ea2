"""Write the project's own sample PDF set, ``data/pdfs`` (in the sec-10-q layout): two quarterly reports of a
fictional company, with a contents page, numbered sections, a ruled table, a captioned chart, and eight
questions over text and tables (``qna_data.csv``). ``experiment=superrag_quickstart`` runs on it, so the
SuperRAG path works on a fresh clone with no download.

    python scripts/make_sample_pdfs.py [--out data/pdfs]

Everything in it is invented; the numbers are chosen so that each answer is stated once in its report.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPANY = "Northwind Widgets, Inc."
REGIONS = ("Americas", "Europe", "Asia Pacific")
#: quarter -> facts stated in that report
QUARTERS = {
    "2024 Q1": {"sales": {"Americas": 655, "Europe": 412, "Asia Pacific": 288}, "units": 4.1, "cash": 1318,
                "margin": 41.2, "employees": 6240, "debt": 750},
    "2024 Q2": {"sales": {"Americas": 702, "Europe": 395, "Asia Pacific": 341}, "units": 4.6, "cash": 1476,
                "margin": 42.8, "employees": 6395, "debt": 700},
}
SECTIONS = ("Overview", "Results of Operations", "Liquidity and Capital Resources", "Risk Factors")


def _paragraphs(q: str, f: dict) -> dict[str, str]:
    total = sum(f["sales"].values())
    return {
        "Overview": (f"{COMPANY} designs and sells industrial widgets and widget gears. This quarterly report for "
                     f"{q} describes the results of the quarter. The company shipped {f['units']} million widgets "
                     "in the quarter. Amounts are in millions of US dollars unless stated otherwise."),
        "Results of Operations": (f"Total net sales for {q} were ${total:,} million. Gross margin was {f['margin']} "
                                  "percent of net sales, reflecting lower steel prices and a favourable mix of "
                                  "gear products. Table 1 shows net sales by region."),
        "Liquidity and Capital Resources": (f"At the end of {q} the company held cash and cash equivalents of "
                                            f"${f['cash']:,} million and long-term debt of ${f['debt']} million. The "
                                            f"company had {f['employees']:,} employees at the end of the quarter."),
        "Risk Factors": ("The company buys most widget gears from a single supplier in Ohio; an interruption at "
                         "that supplier could delay shipments for several months. Demand for widgets follows "
                         "industrial production and may fall in a recession."),
    }


def _table(page, x: float, y: float, rows: list[list[str]], w: float = 140, h: float = 20) -> None:
    import pymupdf

    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(x + c * w, y + r * h, x + (c + 1) * w, y + (r + 1) * h)
            page.draw_rect(rect, color=(0, 0, 0), width=0.8)
            page.insert_text((rect.x0 + 4, rect.y1 - 6), cell, fontsize=9, fontname="hebo" if r == 0 else "helv")


def report(path: Path, q: str) -> Path:
    """One quarterly report: a contents page, then one page per section (table on Results, chart on Liquidity)."""
    import pymupdf

    f = QUARTERS[q]
    text = _paragraphs(q, f)
    doc = pymupdf.open()
    cover = doc.new_page(width=595, height=842)
    cover.insert_text((72, 90), f"{COMPANY}", fontsize=22, fontname="hebo")
    cover.insert_text((72, 125), f"Quarterly Report {q}", fontsize=16, fontname="hebo")
    cover.insert_text((72, 180), "Table of Contents", fontsize=14, fontname="hebo")
    for i, title in enumerate(SECTIONS):
        cover.insert_text((72, 210 + 22 * i), f"{i + 1}. {title} " + "." * 50, fontsize=11)
        cover.insert_text((500, 210 + 22 * i), str(i + 2), fontsize=11)
    for i, title in enumerate(SECTIONS):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 40), f"{COMPANY} | Quarterly Report {q}", fontsize=8)
        page.insert_text((290, 820), str(i + 2), fontsize=8)
        page.insert_text((72, 90), f"{i + 1}. {title}", fontsize=16, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 110, 523, 260), text[title], fontsize=10, fontname="helv")
        if title == "Results of Operations":
            page.insert_text((72, 292), f"Table 1: Net sales by region, {q} (millions of US dollars)", fontsize=9)
            rows = [["Region", "Net sales", "Share of total"]]
            total = sum(f["sales"].values())
            rows += [[r, f"{f['sales'][r]:,}", f"{100 * f['sales'][r] / total:.1f}%"] for r in REGIONS]
            rows.append(["Total", f"{total:,}", "100.0%"])
            _table(page, 72, 300, rows)
        if title == "Liquidity and Capital Resources":
            pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 40), 0)
            pix.clear_with(210)
            page.insert_image(pymupdf.Rect(150, 290, 450, 440), pixmap=pix)
            page.insert_text((150, 455), f"Figure 1: Cash and cash equivalents by month, {q}", fontsize=9)
    doc.set_metadata({"title": f"{COMPANY} Quarterly Report {q}", "creationDate": "", "modDate": "",
                      "producer": "htmlrag-bench scripts/make_sample_pdfs.py"})
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return path


def questions() -> list[dict[str, str]]:
    """The questions (sec-10-q columns); each answer states the numbers or phrase the report holds."""
    q1, q2 = QUARTERS["2024 Q1"], QUARTERS["2024 Q2"]
    t1, t2 = sum(q1["sales"].values()), sum(q2["sales"].values())
    single = "Single-Doc Single-Chunk RAG"
    return [
        {"Question": "What were Northwind's net sales in the Europe region in 2024 Q1?", "Source Docs": "*2024 Q1 NWND*",
         "Question Type": single, "Source Chunk Type": "Table",
         "Answer": f"Net sales in Europe were ${q1['sales']['Europe']} million in 2024 Q1."},
        {"Question": "Which region had the highest net sales in 2024 Q2, and how much?", "Source Docs": "*2024 Q2 NWND*",
         "Question Type": single, "Source Chunk Type": "Table",
         "Answer": f"The Americas, with net sales of ${q2['sales']['Americas']} million."},
        {"Question": "How much cash and cash equivalents did Northwind hold at the end of 2024 Q2?",
         "Source Docs": "*2024 Q2 NWND*", "Question Type": single, "Source Chunk Type": "Text",
         "Answer": f"${q2['cash']:,} million in cash and cash equivalents."},
        {"Question": "What was Northwind's gross margin in 2024 Q1?", "Source Docs": "*2024 Q1 NWND*",
         "Question Type": single, "Source Chunk Type": "Text", "Answer": f"{q1['margin']} percent of net sales."},
        {"Question": "How many employees did Northwind have at the end of 2024 Q2?", "Source Docs": "*2024 Q2 NWND*",
         "Question Type": single, "Source Chunk Type": "Text", "Answer": f"{q2['employees']:,} employees."},
        {"Question": "Where is the single supplier of widget gears that Northwind names as a risk?",
         "Source Docs": "*2024 Q2 NWND*", "Question Type": single, "Source Chunk Type": "Text",
         "Answer": "In Ohio; an interruption there could delay shipments for several months."},
        {"Question": "How did Northwind's total net sales change from 2024 Q1 to 2024 Q2?", "Source Docs": "*NWND*",
         "Question Type": "Multi-Doc RAG", "Source Chunk Type": "Text",
         "Answer": f"They rose from ${t1:,} million in 2024 Q1 to ${t2:,} million in 2024 Q2."},
        {"Question": "How many widgets did Northwind ship in 2024 Q1 and what was its long-term debt then?",
         "Source Docs": "*2024 Q1 NWND*", "Question Type": "Single-Doc Multi-Chunk RAG", "Source Chunk Type": "Text",
         "Answer": f"{q1['units']} million widgets; long-term debt of ${q1['debt']} million."},
    ]


def write(out: Path) -> Path:
    """Write ``docs/*.pdf``, ``qna_data.csv`` and a README into ``out``."""
    (out / "docs").mkdir(parents=True, exist_ok=True)
    for q in QUARTERS:
        report(out / "docs" / f"{q} NWND.pdf", q)
    rows = questions()
    with (out / "qna_data.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "README.md").write_text(
        "# Sample PDFs (written by the project)\n\n"
        "Two quarterly reports of an invented company and eight questions, in the sec-10-q layout "
        "(`qna_data.csv`, `docs/*.pdf`). Written by `python scripts/make_sample_pdfs.py`; read by "
        "`experiment=superrag_quickstart` (`dataset=sample_pdfs`). Invented content, no licence restrictions.\n",
        encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "data" / "pdfs"))
    print(write(Path(ap.parse_args().out)))


if __name__ == "__main__":
    main()
