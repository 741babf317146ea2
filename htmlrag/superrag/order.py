"""Reading order of the text blocks of a page, with two-column layouts read column by column.

A page is read as two columns when blocks lying wholly in the left half and blocks lying wholly in the
right half each hold at least ``min_share`` of the page's characters. Blocks crossing the middle
(titles, full-width figures) split the page into horizontal bands; inside a band the left column is read
top to bottom, then the right one. Otherwise blocks are read top to bottom, left to right.
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


def is_two_column(blocks: Sequence[_Boxed], page_width: float, *, min_share: float = 0.2) -> bool:
    """Whether both halves of the page hold at least ``min_share`` of the characters in half-width blocks."""
    mid = page_width / 2
    total = sum(_chars(b) for b in blocks) or 1
    left = sum(_chars(b) for b in blocks if b.bbox[2] <= mid + 4)
    right = sum(_chars(b) for b in blocks if b.bbox[0] >= mid - 4)
    return left / total >= min_share and right / total >= min_share


def reading_order(blocks: Sequence[T], page_width: float, *, min_share: float = 0.2) -> list[T]:
    """Sort blocks into reading order (see the module docstring).

    Args:
        blocks: anything with a ``bbox`` (x0, y0, x1, y1) in points (and optionally ``text``).
        page_width: width of the page in points.
        min_share: share of characters each column needs for the page to be read as two columns.
    """

    def top_down(bs: Sequence[T]) -> list[T]:
        return sorted(bs, key=lambda b: (round(b.bbox[1] / 3), b.bbox[0]))

    if not is_two_column(blocks, page_width, min_share=min_share):
        return top_down(blocks)
    mid = page_width / 2
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
