"""Tables found by PyMuPDF's ruling-line detector, cleaned into rows of cells and a plain HTML table.

Cleaning: ``None`` cells become empty strings; a cell holding only a currency sign or ``%`` is joined to its
neighbour (financial statements set ``$`` in a column of its own); columns and rows left empty are dropped.
A table needs at least 2 rows and 2 non-empty columns, otherwise it is ignored (its text stays in the flow).

Statements with alternately shaded rows come out of the detector as a stack of one- or two-row tables of the
same width. Stacks of at least ``min_stack`` such strips (same left/right edges within 4 points, at most
``stack_gap`` points apart) are merged into one table whose rows are the visual rows of text inside the
stack's box, one cell per text line.
"""

from __future__ import annotations

import html
import logging
from typing import Any

from htmlrag.superrag.lines import clean_text, inside, rows, union
from htmlrag.superrag.model import BBox, Line, TableItem

log = logging.getLogger(__name__)

_UNITS_BEFORE = {"$", "€", "£", "¥", "("}
_UNITS_AFTER = {"%", ")", "%)"}


def clean_rows(raw: list[list[Any]]) -> list[list[str]]:
    """Cells as stripped strings with currency/percent columns merged and empty rows/columns dropped."""
    rows = [[clean_text(str(c)) if c is not None else "" for c in r] for r in raw]
    for r in rows:
        for j, cell in enumerate(r):
            if cell in _UNITS_BEFORE and j + 1 < len(r):
                k = next((k for k in range(j + 1, len(r)) if r[k]), None)
                if k is not None:
                    r[k] = f"{cell}{r[k]}"
                    r[j] = ""
            elif cell in _UNITS_AFTER and j > 0:
                k = next((k for k in range(j - 1, -1, -1) if r[k]), None)
                if k is not None:
                    r[k] = f"{r[k]}{cell}"
                    r[j] = ""
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any(r[j] for r in rows)]
    return [[r[j] for j in keep] for r in rows if any(r[j] for j in keep)]


def rows_to_html(rows: list[list[str]], caption: str = "") -> str:
    """A ``<table>`` with one ``<tr>`` per row; the first row uses ``<th>`` when it holds no number."""
    out = ["<table>"]
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    for i, r in enumerate(rows):
        head = i == 0 and not any(any(ch.isdigit() for ch in c) for c in r if c.strip()) and len(rows) > 1
        tag = "th" if head else "td"
        out.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def rows_to_text(rows: list[list[str]]) -> str:
    """Rows as text, cells separated by `` | `` and rows by newlines (what full-text search indexes)."""
    return "\n".join(" | ".join(c for c in r if c) for r in rows)


def _stacks(strips: list[tuple[BBox, int]], gap: float) -> list[list[int]]:
    order = sorted(range(len(strips)), key=lambda i: strips[i][0][1])
    groups: list[list[int]] = []
    for i in order:
        b, n = strips[i]
        if n > 2:
            continue
        if groups:
            last = strips[groups[-1][-1]][0]
            if abs(last[0] - b[0]) <= 4 and abs(last[2] - b[2]) <= 4 and b[1] - last[3] <= gap:
                groups[-1].append(i)
                continue
        groups.append([i])
    return groups


def page_tables(
    page: Any, page_no: int, lines: list[Line] | None = None, *, strategy: str = "lines",
    min_stack: int = 3, stack_gap: float = 30.0,
) -> list[TableItem]:
    """Tables of one PyMuPDF page (``strategy`` as ``Page.find_tables``); failures are logged, never raised.

    Args:
        page: the PyMuPDF page.
        page_no: its physical number (1-based).
        lines: the page's text lines, needed to rebuild stacks of strip tables (see the module docstring).
        strategy: ``find_tables`` strategy.
        min_stack: fewest strips that make a stacked table.
        stack_gap: largest vertical gap between strips of one stack, in points.
    """
    try:
        found = page.find_tables(strategy=strategy)
    except Exception as exc:  # a detector crash must not lose the page's text
        log.warning("page %d: table detection failed: %s", page_no, exc)
        return []
    raw: list[tuple[BBox, list[list[str]]]] = []
    for tab in found.tables:
        try:
            raw.append((tuple(float(v) for v in tab.bbox), clean_rows(tab.extract())))  # type: ignore[arg-type]
        except Exception as exc:
            log.warning("page %d: table extraction failed: %s", page_no, exc)
    merged: set[int] = set()
    out: list[TableItem] = []
    if lines:
        for group in _stacks([(b, len(r)) for b, r in raw], stack_gap):
            if len(group) < min_stack:
                continue
            box = union(raw[i][0] for i in group)
            inner = [ln for ln in lines if inside(ln.bbox, box)]
            cells = [[ln.text for ln in r] for r in rows(inner)]
            if len(cells) >= 2:
                merged |= set(group)
                out.append(TableItem(page=page_no, bbox=box, rows=cells, html=rows_to_html(cells)))
    for i, (bbox, cells) in enumerate(raw):
        if i in merged:
            continue
        if len(cells) < 2 or max((sum(1 for c in r if c) for r in cells), default=0) < 2:
            continue
        out.append(TableItem(page=page_no, bbox=bbox, rows=cells, html=rows_to_html(cells)))
    return sorted(out, key=lambda t: (t.bbox[1], t.bbox[0]))
