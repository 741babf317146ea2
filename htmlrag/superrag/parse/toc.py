"""The table of contents: from the PDF outline, else from detected ToC pages, mapped to physical pages.

A *ToC row* is a visual row of at most 400 characters whose last piece is a page label (1-3 digits or a valid
roman numeral), optionally after dot leaders, with a title before it that has at least two letters, at most half as many digits as letters and no ``$``. An entry wrapped over two rows (the label ends the second,
whose own text is no title: "... ended October 29, 2023 and October" / "30, 2022   3") is one ToC row of
both. Among the first ``search_pages`` pages, a page is a
ToC page when it has at least ``min_rows`` ToC rows (3 if the page says "contents" or "index") making up at
least 30% of the rows from its first ToC row to its last, and its arabic labels mostly (80%) do not decrease. Entry levels come from indentation (distinct left edges, 6-point buckets), then from structural labels
among entries of one indentation (:func:`entry_levels`). A row whose title ends with a label word ("Part",
"Item") is no entry: its "page label" is the label's number.

Printed page labels map to physical pages through the labels found in headers/footers: an exact match
first, else the most common offset between physical and printed arabic numbers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence, Set
from dataclasses import replace
from itertools import pairwise
from typing import Any

from htmlrag.superrag.parse.headings import division, label_kind
from htmlrag.superrag.parse.lines import rows
from htmlrag.superrag.parse.model import Line, TocEntry

_ROMAN = r"(?=[ivxlcdm]+\b)m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_LABEL = re.compile(rf"^(\d{{1,3}}|{_ROMAN})$", re.I)
#: Title, then dot leaders or a space, then the page label at the end of the row. The title's letters are
#: checked after the match (:func:`_entry`), not by the pattern: two lazy runs around a letter made a failed
#: match quadratic in the row's length (seconds on one long row of body text).
_LEADER = re.compile(rf"^(.*?)\s*(?:\.{{2,}}|…+|\s)\s*(\d{{1,3}}|{_ROMAN})$", re.I | re.UNICODE)
#: Longest row read as a ToC entry (characters): entries are a title and a page label, far shorter; a longer
#: row (a paragraph set on one line) is body text, and is not matched at all, so no row costs more than this.
_MAX_ENTRY = 400
_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)
#: A title ending with a label word: the "page label" after it is the label's number ("Part I", "Item 1",
#: "Schedule II"; a contents header glued before it, "Page PART" + "I"), a group line of the contents, not an
#: entry pointing to page i (Apple's "Part I" and "Part II" were entries "Part" on page i and ii, one level below
#: the items they hold). So is a cross-reference that ends a line of prose ("... and Note" + "5", "chapter" +
#: "11"), and Microsoft's running header "Item" + "1" on every page. Lost with them: an entry whose title ends
#: with such a word ("Explanatory Note 3").
_NUMBERED_BY = re.compile(r"\b(?:part|chapter|section|article|item|note|schedule|exhibit|appendix|annex|book|volume)$",
                          re.I)
_CONTENTS = re.compile(r"\b(table of )?contents\b|\bindex\b", re.I)


def outline_toc(doc: Any) -> list[TocEntry]:
    """Entries of the PDF outline (bookmarks); physical pages are 1-based, None when the entry has none; ``top``
    where on its page the entry points, when it names a point."""
    out: list[TocEntry] = []
    for item in doc.get_toc(simple=False):
        level, title, page = int(item[0]), str(item[1]).strip(), int(item[2])
        if title:
            out.append(TocEntry(level=level, title=title, printed_page="", page=page if page > 0 else None,
                                top=_point_top(item[3] if len(item) > 3 else None) if page > 0 else None))
    return _unrooted(out)


def _point_top(dest: Any) -> float | None:
    """The height an outline entry's destination names on its page (PyMuPDF gives it from the page's top), or
    None: no destination, no point, or no finite height (a destination that names only the page)."""
    to = dest.get("to") if isinstance(dest, dict) else None
    y = getattr(to, "y", None)
    return float(y) if isinstance(y, (int, float)) and math.isfinite(y) else None


def _unrooted(entries: list[TocEntry]) -> list[TocEntry]:
    """An outline whose first entry is its only top entry and holds the document's parts is the document's title
    over its contents: the entries under it move up a level, and the title holds nothing but what precedes the
    next. Verizon's producer roots its 10-K outline in the cover line "UNITED STATES SECURITIES AND EXCHANGE
    COMMISSION", and every section of the filing hung under it, the title taking a place in each section path
    (381 of 389 sections; issue 35, thirteenth round). An outline of one entry, of several top entries, or whose
    lone top entry holds no part (a report of one chapter) is kept as it is."""
    if len(entries) < 2 or any(e.level <= entries[0].level for e in entries[1:]) \
            or not any(division(e.title) for e in entries[1:]):
        return entries
    top = entries[0].level
    return entries[:1] + [replace(e, level=max(e.level - 1, top)) for e in entries[1:]]


def toc_rows(lines: Sequence[Line]) -> tuple[list[tuple[float, str, str]], int]:
    """(left edge, title, printed label) of each ToC row of a page, and the page's number of rows."""
    found, n, _ = _toc_rows(lines)
    return found, n


def _toc_rows(lines: Sequence[Line]) -> tuple[list[tuple[float, str, str]], int, list[list[Line]]]:
    found: list[tuple[float, str, str]] = []
    members: list[list[Line]] = []
    rs = rows(list(lines))
    prev: list[Line] | None = None  # the row before, when it is not a ToC row itself
    for r in rs:
        entry = _entry(r)
        if entry is None and prev is not None:  # an entry wrapped over two rows: its label ends the second
            entry = _entry(prev + r)
            if entry is not None:
                r = prev + r
        if entry is None:
            prev = r
            continue
        found.append((r[0].bbox[0], *entry))
        members.append(r)
        prev = None
    while len(found) > 1 and _behind(found):  # a page's own number after its contents is no entry
        found.pop()
        members.pop()
    return found, len(rs), members


def _behind(found: list[tuple[float, str, str]]) -> bool:
    """Whether the last entry's arabic label is below an earlier entry's."""
    *earlier, (_, _, last) = found
    nums = [int(lab) for _, _, lab in earlier if lab.isdigit()]
    return last.isdigit() and bool(nums) and int(last) < max(nums)


def _entry(r: list[Line]) -> tuple[str, str] | None:
    """(title, label) of a ToC row (or of two rows read as one wrapped entry), or None (see the module
    docstring)."""
    last = r[-1].text.strip().rstrip(".")
    if len(r) > 1 and _LABEL.match(last):
        title = " ".join(x.text for x in r[:-1]).rstrip(" .…")
        label = last
    else:
        text = " ".join(x.text for x in r)
        m = _LEADER.match(text) if len(text) <= _MAX_ENTRY else None
        if not m:
            return None
        title, label = m.group(1).rstrip(" .…"), m.group(2)
    letters, digits = len(_LETTERS.findall(title)), sum(c.isdigit() for c in title)
    if not (letters >= 2 and digits <= letters / 2 and "$" not in title and label.strip("0")) or _NUMBERED_BY.search(title):
        return None
    return title, label.lower()


def is_toc_page(lines: Sequence[Line], *, min_rows: int = 5, n_pages: int | None = None) -> bool:
    """Whether a page's non-furniture lines look like a table of contents (see the module docstring).

    ``n_pages``: the document's page count; on a page that does not say "contents"/"index", arabic labels
    beyond it point nowhere, so such a page (a table of small amounts, say) is not a ToC. A page that says
    "contents" may point past the end (an excerpt of a longer document). The share of ToC rows is taken over
    the rows from the first ToC row to the last, so a contents block on a page that goes on with other text
    (a cover page's notices, an introduction) still counts."""
    found, _, members = _toc_rows(lines)
    says = any(_CONTENTS.search(ln.text) for ln in lines[:40])
    need = 3 if says else min_rows
    nums = [int(lab) for _, _, lab in found if lab.isdigit()]
    steady = sum(b >= a for a, b in pairwise(nums)) >= 0.8 * (len(nums) - 1)
    in_range = says or n_pages is None or all(x <= n_pages for x in nums)  # an excerpt's "Contents" may point past it
    if not members:
        return False
    top, bottom = members[0][0].bbox[1], members[-1][-1].bbox[3]
    span = [r for r in rows(list(lines)) if r[0].bbox[1] >= top - 0.5 and r[-1].bbox[3] <= bottom + 0.5]
    return len(found) >= need and len(found) >= 0.3 * max(len(span), 1) and steady and in_range


def toc_line_ids(lines: Sequence[Line]) -> set[int]:
    """Indexes (into ``lines``) of the lines that make up the page's ToC rows."""
    members = {id(ln) for r in _toc_rows(lines)[2] for ln in r}
    return {i for i, ln in enumerate(lines) if id(ln) in members}


def toc_block_ids(lines: Sequence[Line], furniture: Set[int] = frozenset(), *, max_words: int = 12) -> set[int]:
    """Indexes (into ``lines``) of the lines of a contents page's contents block: its ToC rows
    (:func:`toc_line_ids`) and, on a page that names itself ("Table of Contents", "Index"), the short lines
    under its title down to the last row that carry no label -- the contents' group headings ("Part I –
    Financial information   Page", "Item 1.", "Part II – Other information"). Left in the text, those became
    sections on the contents page, and a document's whole body hung under "Part II – Other information" printed
    on page 2 (a 10-Q by Workiva). What stays: the title (a heading; the section it opens holds nothing after
    its page), the lines above it (a cover's notices) and below the last row (an introduction), prose among the
    rows (a line of more than ``max_words`` words, a sentence's end, a line that starts in lower case), and
    everything but the rows on a page that does not name itself (a statement whose row ends read as page
    numbers is taken for a contents page: its title and column headings are no contents lines).
    ``furniture``: indexes of the page's running headers and footers, never its title (Intel sets a "Table of
    Contents" link atop every page)."""
    members = _toc_rows(lines)[2]
    if not members:
        return set()
    ids = {id(ln) for r in members for ln in r}
    top, bottom = members[0][0].bbox[1], max(ln.bbox[3] for ln in members[-1])
    titles = _titles(lines, furniture, top)
    if not titles:
        return {i for i, ln in enumerate(lines) if id(ln) in ids}
    top = max(titles) + 0.5  # (the title stays a heading; the section it opens holds nothing after its page)

    def short(text: str) -> bool:  # a group line, not prose (a paragraph's lines run on in lower case)
        words = text.split()
        return 0 < len(words) <= max_words and not text.lstrip()[0].islower() and \
            (len(words) <= 3 or not text.rstrip().endswith("."))

    return {i for i, ln in enumerate(lines)
            if id(ln) in ids or (ln.bbox[1] >= top - 0.5 and ln.bbox[3] <= bottom + 0.5 and short(ln.text))}


def _titles(lines: Sequence[Line], furniture: Set[int], top: float) -> list[float]:
    """Bottom edges of the lines among a page's first 40 that name it a contents page ("Table of Contents",
    "Index") above ``top``, running headers and footers (``furniture``) left out."""
    return [ln.bbox[3] for i, ln in enumerate(lines[:40])
            if i not in furniture and _CONTENTS.search(ln.text) and ln.bbox[3] <= top + 0.5]


def names_itself(lines: Sequence[Line], furniture: Set[int] = frozenset()) -> bool:
    """Whether a contents page names itself above its first row (:func:`toc_block_ids`): a printed contents page,
    not a statement whose row ends read as page numbers under a running "Table of Contents" link."""
    members = _toc_rows(lines)[2]
    return bool(members) and bool(_titles(lines, furniture, members[0][0].bbox[1]))


def roman_to_int(s: str) -> int | None:
    vals = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}
    if not s or any(c not in vals for c in s.lower()):
        return None
    total = 0
    for a, b in zip(s.lower(), s.lower()[1:] + " ", strict=True):
        v = vals[a]
        total += -v if b != " " and vals[b] > v else v
    return total


def page_mapper(labels: dict[int, str], n_pages: int):
    """A function printed label -> physical page (1-based) or None, from the labels seen on pages."""
    exact: dict[str, int] = {}
    for phys, lab in sorted(labels.items()):
        exact.setdefault(lab, phys)
    offsets = Counter(phys - int(lab) for phys, lab in labels.items() if lab.isdigit())
    offset = offsets.most_common(1)[0][0] if offsets else None

    def to_physical(printed: str) -> int | None:
        p = printed.lower()
        if p in exact:
            return exact[p]
        if p.isdigit() and offset is not None and 1 <= int(p) + offset <= n_pages:
            return int(p) + offset
        return None

    return to_physical


def detected_toc(page_lines: dict[int, list[Line]], labels: dict[int, str], n_pages: int) -> list[TocEntry]:
    """Entries from ToC pages (given as physical page -> lines, furniture left out), with printed pages mapped;
    the contents' labelled group lines (:func:`contents_entries`) are entries without a page."""
    to_physical = page_mapper(labels, n_pages)
    entries: list[tuple[float, str, str]] = []
    for _, lines in sorted(page_lines.items()):
        entries += contents_entries(lines)
    return [TocEntry(level=lvl, title=t, printed_page=lab, page=to_physical(lab) if lab else None)
            for lvl, (_, t, lab) in zip(entry_levels([(x, t) for x, t, _ in entries]), entries, strict=True)]


def contents_entries(lines: Sequence[Line]) -> list[tuple[float, str, str]]:
    """(left edge, title, printed label) of a contents page's entries in reading order: its ToC rows and, on a page
    that names itself, its group lines that carry a structural label (:func:`~htmlrag.superrag.parse.headings.label_kind`:
    "PART I : FINANCIAL INFORMATION", "Item 1.  Financial Statements (Unaudited)" over the statements it lists)
    with label ``""``. Filings print a part or an item without a page number when entries under it follow; left
    out, the entries under it had no parent, and an item of the text sat beside its part (NVIDIA, issue 35). A row
    centred in the contents (its centre within 5% of the contents' width of their centre, reaching neither of
    their edges) is given the contents' left edge: centring is no indentation. A row that runs from its
    indentation to the page numbers at the right edge is not centred (Pfizer's indented entries, each one line
    with its dot leaders)."""
    found, _, members = _toc_rows(lines)
    if not members:
        return []
    ids = {id(ln) for r in members for ln in r}
    block = toc_block_ids(lines)
    group = [ln for i, ln in enumerate(lines) if i in block and id(ln) not in ids]
    items: list[tuple[float, float, str, str, float]] = []  # (top, left, title, label, right)
    for (x, title, lab), r in zip(found, members, strict=True):
        items.append((r[0].bbox[1], x, title, lab, max(ln.bbox[2] for ln in r)))
    for r in rows(group):
        text = " ".join(ln.text for ln in r).strip()
        if label_kind(text) is not None and not _NUMBERED_BY.search(text):
            items.append((r[0].bbox[1], r[0].bbox[0], text, "", r[-1].bbox[2]))
    items.sort(key=lambda it: it[0])
    left, right = min(it[1] for it in items), max(it[4] for it in items)
    mid, width = (left + right) / 2, max(right - left, 1.0)
    out = []
    for _, x, title, lab, x1 in items:
        centred = x > left + 6 and x1 < right - 6 and abs((x + x1) / 2 - mid) <= 0.05 * width
        out.append((left if centred else x, title, lab))
    return out


def entry_levels(entries: Sequence[tuple[float, str]]) -> list[int]:
    """Level of each contents entry given as (left edge, title): its indentation's rank (6-point buckets), then,
    among entries of one indentation, its structural label's rank (:func:`~htmlrag.superrag.parse.headings.label_kind`:
    part, item, note, lettered sub-item); an unlabelled entry takes the first rank present at its indentation
    ("Signatures" beside "Part II"). Contents printed without indentation gave every entry level 1: Best Buy's
    "Part I", "Item 1." and "a) Condensed Consolidated Balance Sheets" were siblings, and the items opened no
    section inside their part. Capped at 6."""
    kinds = [label_kind(t) for _, t in entries]
    indent = [round(x / 6) for x, _ in entries]
    first = {i: min((k for k, j in zip(kinds, indent, strict=True) if j == i and k is not None), default=0)
             for i in set(indent)}
    keys = [(i, first[i] if k is None else k) for i, k in zip(indent, kinds, strict=True)]
    rank = {v: n + 1 for n, v in enumerate(sorted(set(keys)))}
    return [min(rank[key], 6) for key in keys]
