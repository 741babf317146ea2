"""Figures: raster images placed on the page (nearby pieces merged), with caption and inner text.

Vector drawings count only when captioned: on a page with a figure caption, a cluster of drawings at least
``min_side`` points on both sides that overlaps no table and no image figure, with a caption right below or
above it, is a figure too.

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
