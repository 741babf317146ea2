"""Bar charts drawn as vector graphics, whose value labels and axis ticks line up in a grid, are figures, not
tables (issue 35: the Intel 10-Q's segment charts read as 2-row tables, "DCAI Revenue $B | DCAI Operating
Income (Loss) $B", and topped the table ranking for every revenue question). Tables with shaded rows or a
shaded column stay tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.superrag.parse.figures import split_charts
from htmlrag.superrag.parse.model import TableItem

pymupdf = pytest.importorskip("pymupdf")


def _boxed_grid(p, x0: float, y0: float, x1: float, y1: float, ym: float) -> None:
    for y in (y0, ym, y1):
        p.draw_line((x0, y), (x1, y))
    for x in (x0, (x0 + x1) / 2, x1):
        p.draw_line((x, y0), (x, y1))


def _chart_pdf(path: Path, *, bars: bool) -> Path:
    """A page of text with a ruled 2 x 2 box of two bar charts (a gain and a loss beside each other in the
    second); with ``bars=False`` the same labels without the bars (what the old rule saw as a table)."""
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((72, 72), "Segment Results", fontsize=14)
    p.insert_textbox(pymupdf.Rect(72, 90, 520, 140), "Revenue of the segment fell in the quarter as customers cut "
                     "inventory and demand weakened.", fontsize=10)
    _boxed_grid(p, 72, 160, 540, 330, 180)
    p.insert_text((80, 174), "DCAI Revenue $B", fontsize=9)
    p.insert_text((314, 174), "DCAI Operating Income (Loss) $B", fontsize=9)
    base = 300
    for cx, vals, labels in ((100, (6.1, 3.7), ("$6.1", "$3.7")), (334, (1.4, -0.5), ("$1.4", "$(0.5)"))):
        for k, (v, lab) in enumerate(zip(vals, labels, strict=True)):
            bx = cx + 90 * k
            r = pymupdf.Rect(bx, base - 14 * v, bx + 40, base) if v >= 0 else pymupdf.Rect(bx, base, bx + 40, base - 14 * v)
            if bars:
                p.draw_rect(r, color=None, fill=(0.2, 0.4, 0.8))
            p.insert_text((bx + 5, min(r.y0, base) - 3), lab, fontsize=8)
            p.insert_text((bx + 2, 322), ["Q1 2022", "Q1 2023"][k], fontsize=8)
    p.insert_textbox(pymupdf.Rect(72, 350, 520, 420), "Operating income fell as well, on lower revenue and "
                     "higher costs of new products.", fontsize=10)
    doc.save(str(path))
    doc.close()
    return path


def test_a_bar_chart_in_a_ruled_box_is_a_figure_with_its_labels(tmp_path: Path) -> None:
    from htmlrag.superrag.parse.document import parse_pdf

    doc = parse_pdf(_chart_pdf(tmp_path / "chart.pdf", bars=True))
    assert doc.tables == []
    (f,) = doc.figures
    assert "DCAI Revenue $B" in f.text and "$(0.5)" in f.text
    plain = parse_pdf(_chart_pdf(tmp_path / "grid.pdf", bars=False))  # no bars: the grid of labels is a table
    assert [t.rows[0] for t in plain.tables] == [["DCAI Revenue $B", "DCAI Operating Income (Loss) $B"]]


def test_shaded_rows_and_columns_keep_a_table() -> None:
    t = TableItem(page=1, bbox=(72, 100, 540, 200), rows=[["a", "1"], ["b", "2"]], html="")
    rows_shaded = [(72, 112, 540, 124), (72, 136, 540, 148)]  # full width: row shading
    column = [(400, 100 + 12 * i, 460, 112 + 12 * i) for i in range(8)]  # a shaded column: equal cells, stacked
    wrapped = [(400, 100, 460, 112), (400, 112, 460, 136)]  # a shaded column over a wrapped (taller) row
    merged = [(100, 100, 200, 136), (200, 112, 300, 136)]  # a heading cell over two rows beside a one-row cell
    for rects in (rows_shaded, column, wrapped, merged):
        kept, charts = split_charts([t], rects, 1)
        assert kept == [t] and charts == [], rects
    bars = [(100, 150, 140, 190), (190, 170, 230, 190)]  # side by side on one baseline, different heights
    kept, charts = split_charts([t], bars, 1)
    assert kept == [] and charts[0].bbox == t.bbox
