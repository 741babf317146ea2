"""Figures: raster images placed on the page (nearby pieces merged), with caption and inner text.

Vector drawings count only when captioned: on a page with a figure caption, a cluster of drawings at least
``min_side`` points on both sides that overlaps no table and no image figure, with a caption right below or
above it, is a figure too.

Bar charts drawn as vector graphics whose labels line up in a grid are found as tables first; a table whose
box holds chart bars (:func:`split_charts`) becomes a figure with the chart's text.

An image counts when it is at least ``min_side`` points on both sides; images closer than ``gap`` points are
merged into one figure (a drawing pasted as tiles is one figure). An image covering most of a page that has
no text layer is a scanned page, not a figure (the parser warns about it instead).
"""

from __future__ import annotations

import re
from typing import Any

from htmlrag.superrag.parse.model import BBox, FigureItem, Line

CAPTION = re.compile(r"^(fig(ure)?|chart|image|photo|diagram|exhibit|graph|illustration|plate)\.?\s*[\dA-Z]", re.I)
TABLE_CAPTION = re.compile(r"^table\s*[\dA-Z]+[.:]?", re.I)


def _near(a: BBox, b: BBox, gap: float) -> bool:
    return not (a[2] + gap < b[0] or b[2] + gap < a[0] or a[3] + gap < b[1] or b[3] + gap < a[1])


def merge_boxes(boxes: list[BBox], gap: float) -> list[BBox]:
    """Merge boxes that overlap or lie within ``gap`` points of each other, until none do."""
    out = [tuple(b) for b in boxes]
    changed = True
    while changed:
        changed = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                if _near(out[i], out[j], gap):
                    a, b = out[i], out[j]
                    out[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    del out[j]
                    changed = True
                    break
            if changed:
                break
    return sorted(out, key=lambda b: (b[1], b[0]))  # type: ignore[arg-type]


def image_boxes(page: Any) -> list[BBox]:
    """Boxes of the images drawn on a PyMuPDF page, clipped to the page."""
    pr = page.rect
    out: list[BBox] = []
    for info in page.get_image_info():
        x0, y0, x1, y1 = (float(v) for v in info["bbox"])
        x0, y0, x1, y1 = max(x0, pr.x0), max(y0, pr.y0), min(x1, pr.x1), min(y1, pr.y1)
        if x1 > x0 and y1 > y0:
            out.append((x0, y0, x1, y1))
    return out


def page_figures(boxes: list[BBox], page_no: int, *, min_side: float = 30.0, gap: float = 8.0) -> list[FigureItem]:
    """Figures from image boxes: big enough ones, merged when close."""
    big = [b for b in boxes if b[2] - b[0] >= min_side and b[3] - b[1] >= min_side]
    return [FigureItem(page=page_no, bbox=b) for b in merge_boxes(big, gap)]


def find_caption(box: BBox, lines: list[Line], pattern: re.Pattern[str], *, reach: float = 60.0) -> int | None:
    """Index of the line just below (preferred) or above ``box`` that starts a caption, or None."""
    best: tuple[float, int] | None = None
    for i, ln in enumerate(lines):
        if not pattern.match(ln.text):
            continue
        overlap = min(box[2], ln.bbox[2]) - max(box[0], ln.bbox[0])
        if overlap <= 0:
            continue
        below = ln.bbox[1] - box[3]
        above = box[1] - ln.bbox[3]
        dist = below if -4 <= below <= reach else (above + 0.5 if -4 <= above <= reach else None)
        if dist is not None and (best is None or dist < best[0]):
            best = (dist, i)
    return None if best is None else best[1]


def _overlaps(a: BBox, b: BBox) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def captioned_drawings(page: Any, page_no: int, lines: list[Line], taken: list[BBox], *,
                       min_side: float = 30.0) -> list[FigureItem]:
    """Figures made of vector drawings that have a caption (see the module docstring)."""
    try:
        clusters = page.cluster_drawings()
    except Exception:  # pragma: no cover - very old PyMuPDF or broken drawings
        return []
    out: list[FigureItem] = []
    for r in clusters:
        b = (float(r.x0), float(r.y0), float(r.x1), float(r.y1))
        if b[2] - b[0] < min_side or b[3] - b[1] < min_side or any(_overlaps(b, t) for t in taken):
            continue
        if find_caption(b, lines, CAPTION, reach=30.0) is not None:
            out.append(FigureItem(page=page_no, bbox=b))
            taken = [*taken, b]
    return out


def _bars(rects: list[BBox], box: BBox, most_width: float) -> bool:
    """Whether ``box`` holds the bars of a chart: two filled rectangles inside it, side by side with a gap (at
    least 2 points apart in x: table cells abut), each narrower than ``most_width`` of its width, of different
    heights (by over 10%), that stand on one baseline (a bar's bottom, or its top when it hangs below the line,
    as a loss beside a gain does). ``rects`` are the page's filled, not light, rectangles (:func:`filled_rects`)."""
    w = box[2] - box[0]
    bars = [r for r in rects if box[0] - 1 <= r[0] and r[2] <= box[2] + 1 and box[1] - 1 <= r[1] and r[3] <= box[3] + 1
            and 2.0 <= r[2] - r[0] < most_width * w and r[3] - r[1] >= 2.0]
    on_line: dict[int, list[BBox]] = {}
    for r in bars:
        for y in {round(r[1]), round(r[3])}:
            on_line.setdefault(y, []).append(r)
    for group in on_line.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                apart = a[2] + 2.0 <= b[0] or b[2] + 2.0 <= a[0]
                ha, hb = a[3] - a[1], b[3] - b[1]
                if apart and max(ha, hb) > 1.1 * min(ha, hb):
                    return True
    return False


def page_drawings(page: Any) -> list[dict]:
    """A PyMuPDF page's vector paths (``page.get_drawings()``; none when they cannot be read). Read once per page
    for both :func:`filled_rects` and the underlines (:func:`~htmlrag.superrag.parse.lines.horizontal_rules`)."""
    try:
        return page.get_drawings()
    except Exception:  # pragma: no cover - broken drawings: no charts, no underlines
        return []


def filled_rects(page: Any, light: float = 0.8, drawings: list[dict] | None = None) -> list[BBox]:
    """Boxes of the filled vector paths of a PyMuPDF page (bars, shaded cells, backgrounds) whose fill is not
    light (some colour channel below ``light``: white and pale cell shading are left out). ``drawings``: the
    page's paths when already read (:func:`page_drawings`)."""
    if drawings is None:
        drawings = page_drawings(page)
    return [(float(d["rect"].x0), float(d["rect"].y0), float(d["rect"].x1), float(d["rect"].y1))
            for d in drawings if d.get("fill") is not None and min(d["fill"], default=1.0) < light]


def split_charts(tables: list[Any], rects: list[BBox], page_no: int, *, most_width: float = 0.25
                 ) -> tuple[list[Any], list[FigureItem]]:
    """Tables that are bar charts (:func:`_bars` over the page's filled rectangles ``rects``) become figures:
    a chart's value labels and axis ticks lined up in a grid ("DCAI Revenue $B | DCAI Operating Income $B" /
    "$6.1 $3.7 Q1 2022 Q1 2023") read as a table of two rows that topped the table ranking for every revenue
    question of the Intel 10-Q. A table with shaded rows (full width) or shaded columns (equal heights) stays a
    table. Returns (tables kept, chart figures)."""
    kept: list[Any] = []
    charts: list[FigureItem] = []
    for t in tables:
        if rects and _bars(rects, t.bbox, most_width):
            charts.append(FigureItem(page=page_no, bbox=t.bbox))
        else:
            kept.append(t)
    return kept, charts
