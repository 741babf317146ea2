"""Repeated page headers and footers ("furniture") and printed page numbers.

A line is furniture when it sits in the top or bottom margin band (``band`` of the page height), or is one
of the ``edge_lines`` top-most or bottom-most lines of its page (short pages end high), and its text, with every digit replaced by ``#``, recurs in the same band on at least ``min_share`` of the pages
(and on at least 2 pages). A lone page number in the band is furniture on any document of 3+ pages.
Exception: a recurring line set at heading size (``heading_size`` points or more) whose texts differ from page
to page ("Section 1", "Section 2", ...) is a numbered heading that happens to open every page, not a running
header; it stays in the text. A heading-sized line with the *same* text on every page is still furniture.
The printed page label of a page is the page number found in its band (arabic or roman).

Two more kinds of running lines, found on filings of other producers:

* a running header of one part of the document (``NOTES TO ... STATEMENTS (Continued)`` over the notes
  only): the same text (digits included: "Exhibit 31.1", "Exhibit 31.2" are titles) in the same band at the same height (within 2 points) on ``run_pages`` (3) or more
  consecutive pages is furniture even where it recurs on fewer than ``min_share`` of the pages;
* a footer that names the part of the document it is in and ends (or starts) with the page number
  (``Financial Statements  Notes to Financial Statements  10``, ``MD&A  24``): its text changes from part to
  part, but its number follows the physical page number at one fixed offset; a band line whose leading or
  trailing number has the offset most such lines share, on at least ``min_share`` of the pages (and 3), is
  furniture, and the number is the page's printed label (a line at heading size is not: "Section 12" opening
  page 12 is a heading).
"""

from __future__ import annotations

import re
from collections import defaultdict

from htmlrag.superrag.parse.model import Line

_DIGITS = re.compile(r"\d+")
_PAGE_NO = re.compile(r"^(?:page\s+)?(\d{1,4}|[ivxlcdm]{1,7})(?:\s+of\s+\d+)?$", re.I)
# "Apple Inc. | Q3 2022 Form 10-Q | 5" or "5 | Report title": a number at either end after a separator.
_EDGE_NO = re.compile(r"(?:^(\d{1,4})\s*[|•·–-]\s+)|(?:\s+[|•·–-]\s*(\d{1,4})$)")
# A number at either end of a line with words: "MD&A 24", "12 Notes to Financial Statements".
_END_NO = re.compile(r"^(\d{1,4})\s+\D.*[^\W\d_]|[^\W\d_].*\D\s(\d{1,4})$", re.UNICODE)


def _key(text: str) -> str:
    return _DIGITS.sub("#", text.lower()).strip()


def _bands(lines: list[Line], height: float, band: float, edge_lines: int) -> list[str | None]:
    """"top", "bottom" or None for each line."""
    order = sorted(range(len(lines)), key=lambda i: lines[i].bbox[1])
    first, last = set(order[:edge_lines]), set(order[-edge_lines:]) if edge_lines else set()
    out: list[str | None] = []
    for i, ln in enumerate(lines):
        if ln.bbox[3] <= height * band or i in first:
            out.append("top")
        elif ln.bbox[1] >= height * (1 - band) or i in last:
            out.append("bottom")
        else:
            out.append(None)
    return out


def page_label(text: str) -> str | None:
    """The page number in a header/footer text (``"12"``, ``"iv"``, ``"Page 3 of 9"`` -> ``"3"``), or None."""
    t = text.strip()
    m = _PAGE_NO.match(t)
    if m:
        return m.group(1).lower()
    m = _EDGE_NO.search(t)
    if m:
        return m.group(1) or m.group(2)
    return None


def _runs(where: dict[int, float], need: int) -> set[int]:
    """Pages (indexes) in runs of at least ``need`` consecutive pages at the same height (within 2 points)."""
    out: set[int] = set()
    run: list[int] = []
    for pi in sorted(where):
        if run and pi == run[-1] + 1 and abs(where[pi] - where[run[-1]]) <= 2:
            run.append(pi)
        else:
            run = [pi]
        if len(run) >= need:
            out |= set(run)
    return out


def _numbered_footers(pages: list[tuple[list[Line], float]], bands: list[list[str | None]], need: int,
                      heading_size: float | None) -> dict[tuple[int, int], str]:
    """(page index, line index) -> printed number of the band lines whose leading or trailing number follows
    the physical page number at the offset most such lines share, when that offset holds on ``need`` pages.
    Lines at heading size are left alone ("Section 12" opening page 12 is a heading)."""
    found: list[tuple[int, int, int]] = []
    for pi, (lines, _) in enumerate(pages):
        for li, (ln, b) in enumerate(zip(lines, bands[pi], strict=True)):
            big = heading_size is not None and ln.size >= heading_size
            m = _END_NO.match(ln.text.strip()) if b and not big else None
            if m:
                found.append((pi, li, int(m.group(1) or m.group(2))))
    pages_at: dict[int, set[int]] = defaultdict(set)  # offset -> pages with such a line
    for pi, _, num in found:
        pages_at[pi + 1 - num].add(pi)
    if not pages_at:
        return {}
    off = max(pages_at, key=lambda o: len(pages_at[o]))
    if len(pages_at[off]) < need:
        return {}
    return {(pi, li): str(num) for pi, li, num in found if pi + 1 - num == off}


def find_furniture(
    pages: list[tuple[list[Line], float]], *, band: float = 0.1, min_share: float = 0.3, edge_lines: int = 2,
    heading_size: float | None = None, run_pages: int = 3,
) -> tuple[list[set[int]], dict[int, str]]:
    """Find header/footer lines and printed page labels.

    Args:
        pages: per physical page (in order), its lines and its height in points.
        band: fraction of the page height at the top and at the bottom searched for furniture.
        min_share: fraction of pages a header/footer text must recur on.
        edge_lines: this many top-most and bottom-most lines of each page are candidates wherever they sit.
        heading_size: font size (points) from which a recurring line whose text varies between pages is
            kept as a heading (None: no exception).
        run_pages: a line recurring at the same place on this many consecutive pages is furniture too.

    Returns:
        For each page, the indices (into that page's list) of furniture lines; and the printed page
        label per physical page number (1-based) where one was found.
    """
    n = len(pages)
    seen: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    texts: dict[tuple[str, str], set[str]] = defaultdict(set)
    big: dict[tuple[str, str], bool] = defaultdict(lambda: True)
    bands = [_bands(lines, height, band, edge_lines) for lines, height in pages]
    for pi, (lines, _) in enumerate(pages):
        for ln, b in zip(lines, bands[pi], strict=True):
            if b:
                k = (b, _key(ln.text))
                seen[k].setdefault(pi, ln.bbox[1])
                texts[k].add(ln.text.strip())
                big[k] = big[k] and heading_size is not None and ln.size >= heading_size
    need = max(2, int(min_share * n + 0.999))
    repeated: dict[tuple[str, str], set[int] | None] = {}  # key -> the pages it is furniture on (None: all)
    for k, where in (seen.items() if n >= 2 else ()):
        if big[k] and len(texts[k]) > 1:
            continue
        if len(where) >= need:
            repeated[k] = None
        elif n >= run_pages and len(texts[k]) == 1 and (run := _runs(where, run_pages)):
            repeated[k] = run
    footers = _numbered_footers(pages, bands, max(3, need), heading_size) if n >= 3 else {}
    drop: list[set[int]] = []
    labels: dict[int, str] = {}
    for pi, (lines, _) in enumerate(pages):
        idx: set[int] = set()
        for li, ln in enumerate(lines):
            b = bands[pi][li]
            if not b:
                continue
            label = footers.get((pi, li)) or page_label(ln.text)
            lone_number = label is not None and _PAGE_NO.match(ln.text.strip()) is not None
            k = (b, _key(ln.text))
            recurring = k in repeated and (repeated[k] is None or pi in repeated[k])  # type: ignore[operator]
            if recurring or (lone_number and n >= 3) or (pi, li) in footers:
                idx.add(li)
                if label is not None and pi + 1 not in labels:
                    labels[pi + 1] = label
        drop.append(idx)
    return drop, labels
