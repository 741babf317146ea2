"""Reading order of the text blocks of a page, with two-column layouts read column by column.

A page is read as two columns when some vertical line near the middle of the page (the gutter: between 35%
and 65% of the width) has column-like blocks (a quarter of the page wide or more) wholly to its left and
wholly to its right that each hold at least ``min_share`` of the page's characters. The gutter is found from the blocks' own edges, not assumed at half
the page width: pages with unequal margins (a book page whose columns sit right of centre) put it elsewhere.
Blocks crossing the gutter (titles, full-width figures) split the page into horizontal bands; inside a band
the left column is read top to bottom, then the right one. Otherwise blocks are read top to bottom, left to
right.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar


class _Boxed(Protocol):
    @property
    def bbox(self) -> tuple[float, float, float, float]: ...


T = TypeVar("T", bound=_Boxed)


def _chars(b: object) -> int:
    return len(getattr(b, "text", "")) or 1


def column_split(blocks: Sequence[_Boxed], page_width: float, *, min_share: float = 0.2) -> float | None:
    """The x of the gutter of a two-column page, or ``None`` for a page read top to bottom.

    Only column-like blocks (at least a quarter of the page wide) vote: the narrow cells of a table header
    spread across the page are not columns. Candidates are their left and right edges between 35% and 65% of
    the page width (and the middle itself); a block counts on the left of a candidate ``c`` when it ends
    before ``c + 4`` points, on the right when it starts after ``c - 4``. The candidate whose smaller side
    holds the most characters wins; the page has two columns when both sides then hold at least
    ``min_share`` of all characters."""
    total = sum(_chars(b) for b in blocks) or 1
    cols = [b for b in blocks if b.bbox[2] - b.bbox[0] >= 0.25 * page_width]
    lo, hi = 0.35 * page_width, 0.65 * page_width
    candidates = {page_width / 2} | {x for b in cols for x in (b.bbox[0], b.bbox[2]) if lo <= x <= hi}
    best, best_side = None, -1
    for c in sorted(candidates, key=lambda x: (abs(x - page_width / 2), x)):  # ties: nearest the middle
        left = sum(_chars(b) for b in cols if b.bbox[2] <= c + 4)
        right = sum(_chars(b) for b in cols if b.bbox[0] >= c - 4)
        if min(left, right) > best_side:
            best, best_side = c, min(left, right)
    return best if best is not None and best_side / total >= min_share else None


def reading_order(blocks: Sequence[T], page_width: float, *, min_share: float = 0.2) -> list[T]:
    """Sort blocks into reading order (see the module docstring).

    Args:
        blocks: anything with a ``bbox`` (x0, y0, x1, y1) in points (and optionally ``text``).
        page_width: width of the page in points.
        min_share: share of characters each column needs for the page to be read as two columns.
    """

    def top_down(bs: Sequence[T]) -> list[T]:
        return sorted(bs, key=lambda b: (round(b.bbox[1] / 3), b.bbox[0]))

    mid = column_split(blocks, page_width, min_share=min_share)
    if mid is None:
        return top_down(blocks)
    spanning = top_down([b for b in blocks if b.bbox[0] < mid - 4 and b.bbox[2] > mid + 4])
    rest = [b for b in blocks if not (b.bbox[0] < mid - 4 and b.bbox[2] > mid + 4)]
    out: list[T] = []
    top = float("-inf")
    for sep in [*spanning, None]:
        bottom = sep.bbox[1] if sep is not None else float("inf")
        band = [b for b in rest if top <= (b.bbox[1] + b.bbox[3]) / 2 < bottom]
        out += top_down([b for b in band if (b.bbox[0] + b.bbox[2]) / 2 < mid])
        out += top_down([b for b in band if (b.bbox[0] + b.bbox[2]) / 2 >= mid])
        if sep is not None:
            out.append(sep)
            top = (sep.bbox[1] + sep.bbox[3]) / 2
    return out
