"""Text lines of a page with their font facts, and the document's font statistics.

A :class:`~htmlrag.superrag.parse.model.Line` is one PyMuPDF line (spans sharing a baseline in one block). Its size
is the size covering most of its characters; it is bold when every visible character is in a bold face
(font name with Bold/Black/Heavy/Semibold, or PyMuPDF's bold flag).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from htmlrag.superrag.parse.model import BBox, Line

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_ITALIC_NAME = re.compile(r"italic|oblique", re.I)
_ITALIC_FLAG = 2
_WS = re.compile(r"\s+")
_BOLD_FLAG = 16


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span.get("flags", 0) & _BOLD_FLAG) or bool(_BOLD_NAME.search(span.get("font", "")))


def _is_italic(span: dict[str, Any]) -> bool:
    return bool(span.get("flags", 0) & _ITALIC_FLAG) or bool(_ITALIC_NAME.search(span.get("font", "")))


def clean_text(text: str) -> str:
    """Collapse whitespace (including no-break spaces) and drop control characters."""
    text = "".join(c if c.isprintable() or c.isspace() else " " for c in text)
    return _WS.sub(" ", text).strip()


def _row_spans(block: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Spans of a block grouped by visual row (PyMuPDF may split one row into several lines)."""
    rows_: list[tuple[float, float, list[dict[str, Any]]]] = []
    for line in block.get("lines", []):
        spans = [s for s in line.get("spans", []) if s.get("text")]
        if not spans:
            continue
        y0, y1 = float(line["bbox"][1]), float(line["bbox"][3])
        cy = (y0 + y1) / 2
        if rows_ and abs(rows_[-1][0] - cy) <= max(2.0, 0.3 * (y1 - y0)):
            rows_[-1][2].extend(spans)
        else:
            rows_.append((cy, y1 - y0, list(spans)))
    return [sorted(r[2], key=lambda s: s["bbox"][0]) for r in rows_]


def _join_spans(spans: list[dict[str, Any]]) -> str:
    out = ""
    prev_x1: float | None = None
    for s in spans:
        t = s["text"]
        gap = 0.0 if prev_x1 is None else float(s["bbox"][0]) - prev_x1
        if out and not out[-1].isspace() and not t[:1].isspace() and gap > 0.15 * float(s["size"]):
            out += " "
        out += t
        prev_x1 = float(s["bbox"][2])
    return out


def page_lines(page_dict: dict[str, Any], page_no: int) -> list[Line]:
    """Lines of one page from ``page.get_text("dict")``, skipping empty ones; PyMuPDF's block index kept.

    Lines of one block that share a row (PyMuPDF splits "5.1" and "Results" when spaced apart) are joined
    left to right into one line. A line's box is that of its visible text: a span of spaces before it (a
    no-break space in an empty table cell left of the text) is no part of it. NVIDIA's contents rows "c) Condensed
    Consolidated Balance Sheets" began 58 points left of where they are printed, beside rows "a) ..." that did not,
    and the two read as two indentations (issue 35).
    """
    out: list[Line] = []
    for bi, block in enumerate(page_dict.get("blocks", [])):
        if block.get("type", 0) != 0:
            continue
        prev: Line | None = None
        for spans in _row_spans(block):
            parts = _run_in_end(spans, prev)
            for k, part in enumerate(parts):
                ln = _line(part, page_no, bi)
                if ln is not None:
                    ln.run_in = len(parts) > 1 and k == 0
                    out.append(ln)
                    prev = ln
    return out


def _line(spans: list[dict[str, Any]], page_no: int, block: int) -> Line | None:
    text = clean_text(_join_spans(spans))
    if not text:
        return None
    sizes: Counter[float] = Counter()
    bold = italic = True
    for s in spans:
        n = len(s["text"].strip())
        if n:
            sizes[round(float(s["size"]), 1)] += n
            bold = bold and _is_bold(s)
            italic = italic and _is_italic(s)
    size = sizes.most_common(1)[0][0] if sizes else 0.0
    inked = [s for s in spans if s["text"].strip()] or spans  # blank spans set no edge (see page_lines)
    x0 = min(float(s["bbox"][0]) for s in inked)
    y0 = min(float(s["bbox"][1]) for s in inked)
    x1 = max(float(s["bbox"][2]) for s in inked)
    y1 = max(float(s["bbox"][3]) for s in inked)
    return Line(page=page_no, bbox=(x0, y0, x1, y1), text=text, size=size, bold=bold, block=block, italic=italic)


def _run_in_end(spans: list[dict[str, Any]], prev: Line | None) -> list[list[dict[str, Any]]]:
    """A row's spans, or two parts where a bold sentence that began on the line above (wholly bold, upright, in
    the same block) ends and the body text runs on in the same row: Microsoft and MGM Resorts set a risk factor's
    headline so ("Laws and regulations relating to the handling of personal data may impede the adoption of our
    services or result in increased" / "costs, legal claims, fines against us, or reputational damage. The growth
    of our Internet-..."). Read as one line, the headline's end was body text and the headline no heading. The
    same where a block's first row begins with a bold sentence and runs on in the body font (a run-in heading:
    Microsoft's one-line headlines, MGM Resorts' "Share repurchases. Shares repurchased ...", 3M's plans'
    "Securities Law Information. The ..."), when the bold part ends with a word's stop (:data:`_RUN_IN_END`); a
    glossary's "CFO: Chief Financial Officer" and a signature's "Alan B. Graf, Jr. Director" stay one line
    (issue 35, nineteenth round)."""
    if prev is not None and (not prev.bold or prev.italic):
        return [spans]
    inked = [k for k, s in enumerate(spans) if s["text"].strip()]
    head = 0
    while head < len(inked) and _is_bold(spans[inked[head]]) and not _is_italic(spans[inked[head]]):
        head += 1
    if not 0 < head < len(inked):
        return [spans]
    words = clean_text(_join_spans(spans[: inked[head]])).split()
    last = words[-1] if words else ""
    if last[-1:] not in ".?!" or (prev is None and not _RUN_IN_END.match(last)):
        return [spans]
    cut = inked[head]
    return [spans[:cut], spans[cut:]]


#: The last word of a run-in heading that opens its block: a word of two or more letters and its stop, not a
#: name's abbreviation ("Inc.", "Jr.", "No."): "Share repurchases.", "Compliance with Law.", "Other."
_RUN_IN_END = re.compile(r"^(?!(?:Inc|Co|Corp|Ltd|Jr|Sr|No|Nos|vs|etc|St|Mr|Ms|Dr)\.$)[^\W\d_]{2,}[.?!]$")


#: A rule under a line lies between this share of the line's height above its box's bottom ...
UNDER_ABOVE = 0.35
#: ... and this many points below it; it covers at least :data:`UNDER_COVER` of the line's width and reaches at
#: most :data:`UNDER_BEYOND` points past either end (a table's column rule or a signature line runs on).
UNDER_BELOW = 3.0
UNDER_COVER = 0.9
UNDER_BEYOND = 5.0
#: Lines that may be underlined headings: at most this many words, not ending a sentence or a clause.
UNDER_WORDS = 16


def underline_candidate(ln: Line) -> bool:
    """Whether a line could be a heading set only by an underline: short, not bold (bold is a heading style of its
    own), with at least two letters, not ending with ``.``, ``,`` or ``;``."""
    t = ln.text.rstrip()
    return (not ln.bold and 0 < len(t.split()) <= UNDER_WORDS and t[-1] not in ".,;"
            and sum(c.isalpha() for c in t) >= 2)


def horizontal_rules(drawings: list[dict[str, Any]]) -> list[tuple[float, float, float]]:
    """The thin horizontal strokes among a page's vector paths (``page.get_drawings()``) as ``(x0, x1, y)``: drawn
    line segments and filled rectangles under 1.5 points high (how producers draw an underline)."""
    out: list[tuple[float, float, float]] = []
    for d in drawings:
        for item in d.get("items", ()):
            if item[0] == "l" and abs(item[1].y - item[2].y) < 0.6:
                out.append((min(item[1].x, item[2].x), max(item[1].x, item[2].x), float(item[1].y)))
            elif item[0] == "re" and item[1].height < 1.5 and item[1].width > 1.0:
                out.append((float(item[1].x0), float(item[1].x1), (item[1].y0 + item[1].y1) / 2))
    return out


def link_boxes(page: Any) -> list[BBox]:
    """The boxes of the page's links (where a click goes somewhere)."""
    try:
        return [(float(k["from"].x0), float(k["from"].y0), float(k["from"].x1), float(k["from"].y1))
                for k in page.get_links() if k.get("from") is not None]
    except Exception:  # pragma: no cover - broken annotations: no links
        return []


def mark_underlined(lines: list[Line], rules: list[tuple[float, float, float]], links: Sequence[BBox] = ()
                    ) -> list[Line]:
    """``lines`` with ``underline`` set on each :func:`underline_candidate` that ``rules`` underline: strokes in
    the band under its box (:data:`UNDER_ABOVE`, :data:`UNDER_BELOW`) that together cover :data:`UNDER_COVER` of
    its width and reach no more than :data:`UNDER_BEYOND` past its ends. A line whose centre lies in one of
    ``links`` is a link's text, underlined as links are (an exhibit index's "Current Report on Form 8-K ...", a
    contents entry, a "Table of Contents" back link), and is not marked.

    Some producers set sub-headings in the body font and mark them only by an underline: 3M's "Process for
    Disclosure and Recording of Liabilities Related to Legal Proceedings", Best Buy's critical estimates
    ("Inventory Markdown", "Vendor Allowances"), Microsoft's "Competition", Pfizer's "Acquisition of Arena". Read
    as body text, each note or item was one section of up to 164 paragraphs (issue 35, eighteenth round)."""
    out: list[Line] = []
    for ln in lines:
        if rules and underline_candidate(ln) and not any(inside(ln.bbox, k, tol=0.5) for k in links):
            x0, y0, x1, y1 = ln.bbox
            under = [(a, b) for a, b, y in rules
                     if y1 - UNDER_ABOVE * (y1 - y0) <= y <= y1 + UNDER_BELOW and min(b, x1) > max(a, x0)]
            cover = sum(min(b, x1) - max(a, x0) for a, b in under)
            if (under and cover >= UNDER_COVER * (x1 - x0) and min(a for a, _ in under) >= x0 - UNDER_BEYOND
                    and max(b for _, b in under) <= x1 + UNDER_BEYOND):
                ln = replace(ln, underline=True)
        out.append(ln)
    return out


def body_size(lines: Iterable[Line]) -> float:
    """The body font size: the size that covers the most characters (0.0 for no text)."""
    c: Counter[float] = Counter()
    for ln in lines:
        c[ln.size] += len(ln.text)
    return c.most_common(1)[0][0] if c else 0.0


def union(boxes: Iterable[BBox]) -> BBox:
    """Smallest box holding all boxes."""
    bs = list(boxes)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def inside(inner: BBox, outer: BBox, tol: float = 2.0) -> bool:
    """True when the centre of ``inner`` lies in ``outer`` grown by ``tol`` points."""
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] - tol <= cx <= outer[2] + tol and outer[1] - tol <= cy <= outer[3] + tol


def rows(lines: list[Line], tol: float = 2.5) -> list[list[Line]]:
    """Group lines into visual rows (same vertical centre within ``tol`` points), left to right."""
    out: list[list[Line]] = []
    for ln in sorted(lines, key=lambda x: ((x.bbox[1] + x.bbox[3]) / 2, x.bbox[0])):
        cy = (ln.bbox[1] + ln.bbox[3]) / 2
        if out:
            last = out[-1][0]
            if abs((last.bbox[1] + last.bbox[3]) / 2 - cy) <= tol:
                out[-1].append(ln)
                continue
        out.append([ln])
    for r in out:
        r.sort(key=lambda x: x.bbox[0])
    return out
