"""Tables found by PyMuPDF's ruling-line detector, cleaned into rows of cells and a plain HTML table.

Cleaning: ``None`` cells become empty strings; a cell holding only a currency sign or ``%`` is joined to its
neighbour (financial statements set ``$`` in a column of its own); columns and rows left empty are dropped.
A table needs at least 2 rows and 2 non-empty columns, otherwise it is ignored (its text stays in the flow).

Rows the detector leaves out: filings often rule or shade only part of a table, so the detected box starts
below the column headings ("Three Months Ended" / "July 1, 2023") and the first unshaded row, or ends above
the last. Each table is grown over the aligned text rows directly above and below it (:func:`grow`): a row
belongs to the table when it lies within the table's width, sits at most ``1.6`` row heights from the box,
and is split into cells by wide gaps (two or more phrases; a single phrase is taken only between such rows,
so a heading or a paragraph above a table ends the growth; a lone phrase of 8 or more words, or wider than 60%
of the table, is prose and ends it too, and so does such a phrase beside others none of which is an amount: a
heading set apart from its label, "Item 2." | "Management's Discussion and Analysis ..."). The new rows' phrases
go to the detector's columns by position. A lone phrase left at the top over the value columns ("Three Months
Ended" centred over the dates) is a column heading and stays, and so is a column heading wrapped over lines down to
the table, the table's units ("In millions") at its label column or over its values, and the first line of a label
wrapped onto the top row. Tables that then touch (same edges, same columns, at most a row apart) are joined
(:func:`join_touching`): some statements come out of the detector a row or two at a time. A detected table whose
cells fill one column (a shaded band over a label) is dropped before the others grow, so it takes none of their rows.

Statements with alternately shaded rows come out of the detector as a stack of one- or two-row tables of the
same width. Stacks of at least ``min_stack`` such strips, or of two with the same columns (same left/right
edges within 4 points, at most ``stack_gap`` points apart) are merged into one table whose rows are the visual
rows of words inside the stack's box (the strips hold only the shaded rows; the rows between them are plain
text), placed in the columns of the strip that fills the most columns (:func:`to_cells`); a stack whose strips
have fewer than two filled columns keeps one cell per text line.

Tables drawn with no ruling at all (aligned text only, or rows on fill-only strips the detector does not see)
are found from the text (:func:`aligned_tables`): a run of at least ``3`` consecutive rows of two or more
phrases, none of them prose, whose phrases line up into the same columns (the rows with the run's most
frequent phrase count define the columns; their phrases must not straddle two columns) and whose value cells
are mostly numbers (a statement, not a two-column list of words). Short lone phrases inside the run ("Net
sales:") are rows too; at the run's ends they are headings and stay in the text, except lone phrases just
above the run that lie over its value columns ("Three Months Ended" centred over the amounts): those are column
headings and head the table. A run that makes no table is cut where its rows' phrase count changes, and each part
that is a table by itself is kept (two tables of other column counts stacked a row apart). Amounts set tight in
adjacent columns, with no wide gap between, are split into one phrase each (:func:`_split_amounts`).

Long labels are rows of a statement, not prose, in both finders (:func:`statement_line`, :func:`_long_label`): a
label of any length with amounts after it, the first line of a label wrapped onto the row of its amounts (the next
row goes on in lower case), and a label between two rows of amounts ("Changes in other comprehensive income, net
of tax:"). A label wrapped over lines is then one cell (:func:`join_wrapped_labels`).

Grids that are not tables leave the list: a ruled box over running text whose rules cut words in two
(:func:`cuts_words`), a bulleted list set as a table of bullets and items (:func:`is_list`), and the lines of
a paragraph cut into a grid by the boxes a converter painted under its spans (:func:`runs_on`).
"""

from __future__ import annotations

import bisect
import html
import itertools
import logging
import re
from dataclasses import dataclass
from typing import Any

from htmlrag.superrag.parse.lines import clean_text, inside, rows, union
from htmlrag.superrag.parse.model import BBox, Line, TableItem

log = logging.getLogger(__name__)

_CURRENCY = {"$", "€", "£", "¥"}
_UNITS_BEFORE = {*_CURRENCY, "("}
_UNITS_AFTER = {"%", ")", "%)"}


def _merge_units(raw: list[list[Any]]) -> list[list[str]]:
    """Cells as stripped strings, a currency/percent-only cell joined to its neighbour (in place of a copy)."""
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
    return rows


def clean_rows(raw: list[list[Any]]) -> list[list[str]]:
    """Cells as stripped strings with currency/percent columns merged and empty rows/columns dropped."""
    rows = _merge_units(raw)
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


Word = tuple[float, float, float, float, str]


def _join_words(words: list[str]) -> str:
    """Words joined by spaces, none after a currency sign ("$ 51,728" -> "$51,728")."""
    out: list[str] = []
    for w in words:
        if out and out[-1] in {"$", "€", "£", "¥"}:
            out[-1] += w
        else:
            out.append(w)
    return " ".join(out)


@dataclass
class TextRow:
    """A visual row of words: its box and its phrases (runs of words without a wide gap), left to right."""

    bbox: BBox
    phrases: list[tuple[float, float, str]]  # (x0, x1, text)
    size: float = 0.0  # the largest font size of the text lines on the row (0: not known)


def text_rows(words: list[Word], tol: float = 2.5) -> list[TextRow]:
    """Words (``page.get_text("words")`` tuples) grouped into visual rows, top to bottom, each split into
    phrases at horizontal gaps wider than the row's height (a wide gap separates table cells; word spaces,
    even in justified prose, are far narrower). A currency sign or opening parenthesis just before a wide gap
    starts the next phrase (statements set ``$`` right after the amount of the column before), and a phrase of
    currency signs only joins the phrase after it (statements that set ``$`` alone at the column's left edge,
    on some rows only)."""
    groups: list[list[Word]] = []
    for w in sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        cy = (w[1] + w[3]) / 2
        if groups and abs((groups[-1][0][1] + groups[-1][0][3]) / 2 - cy) <= tol:
            groups[-1].append(w)
        else:
            groups.append([w])
    out: list[TextRow] = []
    for g in groups:
        g.sort(key=lambda w: w[0])
        box = union(w[:4] for w in g)
        height = max(box[3] - box[1], 1.0)
        phrases: list[list[Word]] = [[g[0]]]
        for w in g[1:]:
            if w[0] - phrases[-1][-1][2] > height:
                phrases.append([w])
            else:
                phrases[-1].append(w)
        for a, b in itertools.pairwise(phrases):  # "52,747 $ | 51,728": the sign belongs to the amount after the gap
            if len(a) > 1 and a[-1][4] in _UNITS_BEFORE:
                b.insert(0, a.pop())
        # "$ |     11,715": a sign set alone at the column's left edge is part of the amount after it, not a cell
        # of its own (else rows with and without a sign have different phrase counts and no columns line up)
        phrases = [q for p in _join_signs(phrases) if p for q in _split_amounts(p)]
        out.append(TextRow(box, [(p[0][0], p[-1][2], _join_words([w[4] for w in p])) for p in phrases]))
    return out


#: One amount of a statement's cell: an optional currency sign and parenthesis, digits grouped by commas, decimals,
#: closing parenthesis and percent; or a currency sign with a dash (nil). "31," (a date's day), "(1)" beside a year
#: (a footnote: one digit, no sign) and the dash of a range ("2028 - 2032") are not.
_ONE_AMOUNT = re.compile(r"[$€£¥]?\(?[$€£¥]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\)?%?\)?|[$€£¥][—–-]")


def _split_amounts(phrase: list[Word]) -> list[list[Word]]:
    """A phrase made only of two or more amounts set tight in adjacent columns, one phrase per amount: Nike's
    "$12,228 $7,388 $5,416 $4,111" (each sign at its column's left edge, the amount at its right, no wide gap
    between), Adobe's "55,739 45,676 45,550", a heading's "2016 2015 2014". Each amount needs two digits or a sign,
    so a year and its footnote ("2017 (1)") stay one cell. A currency sign alone joins the amount after it."""
    groups: list[list[Word]] = []
    for w in phrase:
        if groups and len(groups[-1]) == 1 and groups[-1][0][4] in _CURRENCY:
            groups[-1].append(w)
        else:
            groups.append([w])
    texts = ["".join(w[4] for w in g) for g in groups]
    if len(groups) < 2 or not all(_ONE_AMOUNT.fullmatch(t) and (sum(ch.isdigit() for ch in t) >= 2 or not
                                                               t.strip("()").isdigit()) for t in texts):
        return [phrase]
    return groups


def _join_signs(phrases: list[list[Word]]) -> list[list[Word]]:
    """Each phrase made only of currency signs joined to the phrase after it (the amount it belongs to)."""
    out: list[list[Word]] = []
    carry: list[Word] = []
    for p in phrases:
        if all(w[4] in _CURRENCY for w in p):
            carry += p
            continue
        out.append(carry + p)
        carry = []
    if carry:
        out.append(carry)
    return out


def grow(box: BBox, rows_: list[TextRow], taken: set[int], *, up: int = 6, down: int = 3,
         reach: float = 1.6, tol: float = 6.0, prose_words: int = 8) -> tuple[list[int], list[int]]:
    """Indices of the text rows (``rows_`` top to bottom) that extend ``box`` upwards and downwards, nearest
    first; rows in ``taken`` (inside this or another table) stop the growth. See the module docstring."""
    x0, x1 = box[0] - tol, box[2] + tol
    inner = [i for i, r in enumerate(rows_) if box[1] - 2 <= (r.bbox[1] + r.bbox[3]) / 2 <= box[3] + 2]

    def walk(order: list[int], edge: float, limit: int, sign: int) -> list[int]:
        got: list[int] = []
        for i in order:
            r = rows_[i]
            if len(got) >= limit or i in taken or r.bbox[0] < x0 or r.bbox[2] > x1:
                break
            height = max(r.bbox[3] - r.bbox[1], 1.0)
            gap = (edge - r.bbox[3]) if sign < 0 else (r.bbox[1] - edge)
            if gap > reach * height:
                break
            if len(r.phrases) < 2 and ((r.phrases[0][1] - r.phrases[0][0]) > 0.6 * (x1 - x0) or _larger(r, median)):
                break  # a line of prose, or a heading set larger than the table's rows
            if any(_is_prose(ph, 0.6 * (x1 - x0), prose_words) for ph in r.phrases) and not units_line(r) and \
                    not any(_numeric(ph[2]) for ph in r.phrases) and not statement_line(rows_, i, reach):
                # a short line of prose, or a heading set apart from its label ("Item 2." | "Management's Discussion
                # and ..."), no amount; but not a long label of the statement (:func:`statement_line`)
                break
            got.append(i)
            edge = r.bbox[1] if sign < 0 else r.bbox[3]
        while got and len(rows_[got[-1]].phrases) < 2:  # a lone phrase at the outer end: a heading, not a row,
            if sign < 0 and (_column_heading(rows_, got, inner, x0, x1) or _units_heading(rows_, got, inner, x0, x1)
                             or wraps_into(rows_, got[-1], reach)):
                break  # unless a column heading right above the table, its units, or a label wrapped onto its top row
            got.pop()
        return got

    first = min(inner, default=None)
    last = max(inner, default=None)
    median = _median_size(rows_, inner)
    above = [i for i in range(len(rows_) - 1, -1, -1) if rows_[i].bbox[3] <= box[1] + 2
             and (first is None or i < first)]
    below = [i for i in range(len(rows_)) if rows_[i].bbox[1] >= box[3] - 2 and (last is None or i > last)]
    return walk(above, box[1], up, -1), walk(below, box[3], down, 1)


def _column_heading(rows_: list[TextRow], got: list[int], inner: list[int], x0: float, x1: float) -> bool:
    """Whether the outermost row grown upwards (``got[-1]``, one phrase) is a column heading of the table: set
    tight (at most half a row height) over a row of two or more phrases, and over the value columns, its left edge
    no further left than where they begin (the second phrase, within the table's width ``x0``-``x1``, of the
    table's rows of two or more phrases: a page of two columns puts the other column's text in the rows): "Three
    Months Ended" centred over the dates. A column heading wrapped over lines is followed down its lone lines, each
    tight over the next and over the value columns, down to a row of two or more phrases or to the table's units
    over the values (NVIDIA's "Operating Lease" / "Obligations" / "(In millions)"); the last lines of a paragraph set
    in a column of the page, over a heading at the margin over the table (JPMorgan's two-column pages), do not get
    there. A title centred over the whole table starts further left; a heading over a sentence ("NOTE 10 — DEBT"
    over "The components of debt were as follows:") or ending in a colon ("Major Consumer Health Franchise
    Sales*:") heads no columns."""
    if rows_[got[-1]].phrases[0][2].rstrip().endswith(":"):
        return False
    values = _columns_at(rows_, inner + got, x0, x1)[1]
    for k in range(len(got) - 1, -1, -1):  # down the lone lines of a column heading wrapped over lines
        row = rows_[got[k]]
        below = rows_[got[k - 1]] if k > 0 else (rows_[min(inner)] if inner else None)
        height = max(row.bbox[3] - row.bbox[1], 1.0)
        if below is None or below.bbox[1] - row.bbox[3] > 0.5 * height or row.bbox[0] < values - 1.0:
            return False
        if len(below.phrases) >= 2 or (units_line(below) and below.bbox[0] >= values - 1.0):
            return True
    return False


def _columns_at(rows_: list[TextRow], ids: list[int], x0: float, x1: float) -> tuple[float, float]:
    """Where the label column and the value columns begin, from the rows ``ids`` of two or more phrases (their
    first and second phrases within ``x0``-``x1``: a page of two columns puts the other column's text in the rows)."""
    within = [[p for p in rows_[j].phrases if p[0] >= x0 and p[1] <= x1] for j in ids]
    return (min((ps[0][0] for ps in within if len(ps) >= 2), default=x0),
            min((ps[1][0] for ps in within if len(ps) >= 2), default=x1))


def _units_heading(rows_: list[TextRow], got: list[int], inner: list[int], x0: float, x1: float,
                   tol: float = 6.0) -> bool:
    """Whether the outermost row grown upwards (``got[-1]``) captions the table's units in one of its columns: at the
    label column's left edge ("In millions" over CVS Health's segment table) or over the value columns (Netflix's
    "(in thousands, except revenue per membership and percentages)"). Centred over the whole table, the units belong
    to the statement's title above them (NVIDIA's "(In millions, except per share data)" under "CONDENSED
    CONSOLIDATED STATEMENTS OF INCOME"), which is a heading of the text."""
    row = rows_[got[-1]]
    if not units_line(row):
        return False
    label, values = _columns_at(rows_, inner + got, x0, x1)
    return abs(row.bbox[0] - label) <= tol or row.bbox[0] >= values - 1.0


#: A lone line set this many points larger than the table's rows (their median font size) is a heading between two
#: tables, not a row of one (Verizon's "Balance Sheet Information", 10 pt bold between two tables of 9 pt rows): half
#: a point, the step at which the parser tells styles apart.
LARGER_PT = 0.5


def _median_size(rows_: list[TextRow], ids: list[int]) -> float:
    sizes = sorted(rows_[i].size for i in ids if len(rows_[i].phrases) >= 2 and rows_[i].size > 0)
    return sizes[len(sizes) // 2] if sizes else 0.0


def _larger(row: TextRow, median: float) -> bool:
    return median > 0 and len(row.phrases) == 1 and row.size > median + LARGER_PT


def _split_at_larger(rows_: list[TextRow], run: list[int]) -> list[list[int]]:
    """A run of aligned rows cut at each lone line set larger than its rows (:data:`LARGER_PT`); the line leaves."""
    median = _median_size(rows_, run)
    parts: list[list[int]] = [[]]
    for i in run:
        if _larger(rows_[i], median):
            parts.append([])
        else:
            parts[-1].append(i)
    return [p for p in parts if p]


def row_sizes(rows_: list[TextRow], lines: list[Line]) -> None:
    """Each row's :attr:`TextRow.size`: the largest size of the text lines whose middle lies on it."""
    by_middle = sorted(lines, key=lambda ln: ln.bbox[1] + ln.bbox[3])
    middles = [(ln.bbox[1] + ln.bbox[3]) / 2 for ln in by_middle]
    for r in rows_:
        lo, hi = bisect.bisect_left(middles, r.bbox[1] - 1), bisect.bisect_right(middles, r.bbox[3] + 1)
        r.size = max((ln.size for ln in by_middle[lo:hi] if ln.bbox[0] < r.bbox[2] and ln.bbox[2] > r.bbox[0]),
                     default=0.0)


#: A label ending in one of these is closed (a sentence, or a group's "Net sales:"): it wraps onto no next line.
_CLOSED = ".:;!?"


def wraps_into(rows_: list[TextRow], i: int, reach: float = 1.6) -> bool:
    """Whether row ``i`` (one phrase) is the first line of a row label wrapped onto the row below it: the label
    stops without a sentence's end, and the next row, at most ``reach`` row heights below and starting no further
    left, goes on in lower case and holds an amount ("Net loss on commodity positions reclassified from
    unallocated" over "corporate items to segment operating profit  35.6  10.0  11.3")."""
    if i + 1 >= len(rows_) or len(rows_[i].phrases) != 1:
        return False
    r, nxt = rows_[i], rows_[i + 1]
    text = r.phrases[0][2].rstrip()
    if not text or text[-1] in _CLOSED or not _near(r, nxt, reach) or nxt.bbox[0] < r.bbox[0] - 1.0:
        return False
    words = nxt.phrases[0][2].split()
    return _amounts(nxt) and bool(words) and words[0][:1].islower()


def statement_line(rows_: list[TextRow], i: int, reach: float = 1.6) -> bool:
    """Whether row ``i``, one phrase however long, is a line of a statement, not prose: the first line of a
    wrapped row label (:func:`wraps_into`), or a label (no sentence's end) between two rows of amounts, each at
    most ``reach`` row heights away ("Changes in other comprehensive income, net of tax:" between "Net income
    (loss)" and the rows of its changes)."""
    if len(rows_[i].phrases) != 1:
        return False
    if wraps_into(rows_, i, reach):
        return True
    if rows_[i].phrases[0][2].rstrip().endswith((".", "!", "?")) or not 0 < i < len(rows_) - 1:
        return False
    above, below = rows_[i - 1], rows_[i + 1]
    return _amounts(above) and _amounts(below) and _near(above, rows_[i], reach) and _near(rows_[i], below, reach)


#: A caption of a table's units: "In millions", "(Dollars in millions)", "Expense, in Millions", "(in thousands, except
#: revenue per membership and percentages)"; at most one word (with its comma) before them. A title that names its
#: units ("Revenue (in thousands, except for percentages)") is not one.
_UNITS = re.compile(r"\(?(?:[A-Za-z]+,\s+)?(?:(?:dollars|amounts|\$|[€£¥])\s+)?in\s+(?:millions|thousands|billions)\b"
                    r"|\(?(?:in\s+)?(?:millions|thousands|billions)\s+of\s+(?:dollars|euros|pounds|yen|shares)\b", re.I)


def units_line(row: TextRow) -> bool:
    """Whether ``row`` is one phrase that captions a table's units (:data:`_UNITS`): a cell of its column headings,
    neither prose nor a heading of the text, however many words follow ("except per share data")."""
    return len(row.phrases) == 1 and _UNITS.match(row.phrases[0][2].strip()) is not None


def _amounts(row: TextRow) -> bool:
    """A row of a label and amounts: two or more phrases, an amount among those after the first."""
    return len(row.phrases) >= 2 and any(_amount(t) for _, _, t in row.phrases[1:])


def _near(upper: TextRow, lower: TextRow, reach: float) -> bool:
    return lower.bbox[1] - upper.bbox[3] <= reach * max(upper.bbox[3] - upper.bbox[1], 1.0)


def _long_label(row: TextRow) -> bool:
    """A row of a label, however long, and amounts only after it: a statement's row, not prose ("Less:
    comprehensive income (loss) attributable to non-controlling interests  (10)  —")."""
    return _amounts(row) and all(_numeric(t) for _, _, t in row.phrases[1:])


def _is_prose(phrase: tuple[float, float, str], width: float, prose_words: int) -> bool:
    return len(phrase[2].split()) >= prose_words or (phrase[1] - phrase[0]) > width


def _numeric(text: str) -> bool:
    """An amount, a percentage, a year or a dash: mostly digits once signs and separators are set aside."""
    core = [ch for ch in text if ch not in " $€£¥,.()%+-—–"]
    return not core or sum(ch.isdigit() for ch in core) >= 0.6 * len(core)


def _amount(text: str) -> bool:
    """A cell that is an amount: :func:`_numeric` and holding a digit (a lone sign or dash is no amount)."""
    return _numeric(text) and any(ch.isdigit() for ch in text)


def aligned_tables(trows: list[TextRow], taken: set[int], page_no: int, page_width: float, *,
                   min_rows: int = 3, reach: float = 1.6, prose_words: int = 8, prose_width: float = 0.45,
                   value_width: float = 0.25, numeric_share: float = 0.5) -> list[TableItem]:
    """Tables of aligned text without ruling (see the module docstring) among ``trows`` (top to bottom); rows
    in ``taken`` (inside a detected table) are not used and end a run.

    Args:
        trows: the page's text rows (:func:`text_rows`).
        taken: indices of rows already inside a table.
        page_no: physical page number (1-based).
        page_width: the page's width in points (a phrase wider than ``prose_width`` of it is prose).
        min_rows: fewest rows with the run's most frequent phrase count (two or more).
        reach: largest gap between consecutive rows, in row heights.
        prose_words: a phrase of this many words is prose.
        prose_width: a phrase wider than this share of the page is prose.
        value_width: a value phrase (any but a row's first) wider than this share of the page is prose (the
            two columns of a two-column page are not a table).
        numeric_share: least share of value cells (all but the first column) of the rows with the run's most
            frequent phrase count that are amounts (:func:`_numeric`).
    """
    wide = prose_width * page_width
    runs: list[list[int]] = []
    cur: list[int] = []
    for i, r in enumerate(trows):
        ok = (i not in taken and (not any(_is_prose(p, wide, prose_words) for p in r.phrases)
                                  or _long_label(r) or units_line(r) or (r.phrases[0][1] - r.phrases[0][0] <= wide
                                                                         and statement_line(trows, i, reach)))
              and not any(b - a > value_width * page_width for a, b, _ in r.phrases[1:]))
        if ok and cur:
            prev = trows[cur[-1]]
            ok_gap = r.bbox[1] - prev.bbox[3] <= reach * max(prev.bbox[3] - prev.bbox[1], 1.0)
            if not ok_gap:
                runs.append(cur)
                cur = []
        if ok:
            cur.append(i)
        else:
            if cur:
                runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    runs = [part for run in runs for part in _split_at_larger(trows, run)]
    return [t for run in runs for t in _run_tables(trows, run, page_no, numeric_share, min_rows)]


def _run_tables(trows: list[TextRow], run: list[int], page_no: int, numeric_share: float, min_rows: int,
                depth: int = 2) -> list[TableItem]:
    """The table of one run of aligned rows (:func:`_aligned`), or, when its rows make none, the tables of its two
    parts cut where the rows' phrase count changes, when both parts make one (up to ``depth`` cuts deep): General
    Mills sets a table of four columns over one of three, a row's gap apart (2020 10-K, page 60); the second's dates
    straddle the first's columns, so the run made no table and both stayed text, their column headings sections."""
    table = _run_table(trows, run, page_no, numeric_share, min_rows)
    if table is not None or depth == 0:
        return [table] if table is not None else []
    best: list[TableItem] = []
    multi = [c for c, i in enumerate(run) if len(trows[i].phrases) >= 2]
    for a, c in itertools.pairwise(multi):
        if len(trows[run[a]].phrases) == len(trows[run[c]].phrases):
            continue
        top = _run_tables(trows, run[:c], page_no, numeric_share, min_rows, depth - 1)
        bottom = _run_tables(trows, run[c:], page_no, numeric_share, min_rows, depth - 1)
        if top and bottom and sum(len(t.rows) for t in top + bottom) > sum(len(t.rows) for t in best):
            best = top + bottom
    return best


def _run_table(trows: list[TextRow], run: list[int], page_no: int, numeric_share: float, min_rows: int
               ) -> TableItem | None:
    lead: list[int] = []
    while run and len(trows[run[0]].phrases) < 2:  # lone phrases at the ends: headings or captions
        lead.append(run[0])
        run = run[1:]
    while run and len(trows[run[-1]].phrases) < 2:
        run = run[:-1]
    multi = [i for i in run if len(trows[i].phrases) >= 2]
    if len(multi) < min_rows:
        return None
    return _aligned(trows, run, multi, page_no, numeric_share, min_rows, lead)


def _aligned(trows: list[TextRow], run: list[int], multi: list[int], page_no: int,
             numeric_share: float, min_rows: int, lead: list[int] = (), tol: float = 6.0) -> TableItem | None:
    counts: dict[int, int] = {}
    for i in multi:
        counts[len(trows[i].phrases)] = counts.get(len(trows[i].phrases), 0) + 1
    k = max((n for n, c in counts.items() if c >= 2), default=0)
    if k < 2:
        return None
    spans = sorted((a, b) for i in multi if len(trows[i].phrases) == k for a, b, _ in trows[i].phrases)
    columns: list[tuple[float, float]] = []
    for a, b in spans:
        if columns and a <= columns[-1][1]:
            columns[-1] = (columns[-1][0], max(columns[-1][1], b))
        else:
            columns.append((a, b))
    if len(columns) != k:  # the defining rows' phrases do not line up: not a table
        return None
    first = next(i for i in multi if len(trows[i].phrases) == k)
    for i in multi:  # below the headings, no phrase may straddle two columns (text that merely has gaps)
        if i < first:
            continue
        for a, b, _ in trows[i].phrases:
            if sum(1 for c0, c1 in columns if a < c1 and b > c0) > 1:
                return None
    # above them, a row whose phrases all lie left of the value columns is a heading set apart from its label ("ITEM
    # 6." | "Selected Financial Data" over Lockheed Martin's table), not a row of column headings: the table starts
    # below it (a row of headings has one over the values: Pfizer's "PRODUCT | PRIMARY INDICATION OR CLASS | 2021")
    titled = [i for i in multi if i < first and all(b <= columns[1][0] for _, b, _ in trows[i].phrases[1:])]
    if titled:
        run = [i for i in run if i > titled[-1]]
        multi = [i for i in multi if i > titled[-1]]
        lead = []
    body = [i for i in multi if len(trows[i].phrases) == k]
    values = [t for i in body for _, _, t in trows[i].phrases[1:]]
    if len(body) < min_rows or sum(map(_numeric, values)) < numeric_share * len(values):
        return None
    heads: list[int] = []  # lone phrases just above the run that sit over the value columns ("Three Months
    for i in reversed(lead):  # Ended" centred over the amounts) are column headings, not headings of the text
        if trows[i].bbox[0] < columns[1][0] - tol and not (units_line(trows[i])
                                                            and abs(trows[i].bbox[0] - columns[0][0]) <= tol):
            break  # (or the table's units at its label column: "In millions")
        heads.insert(0, i)
    run = heads + run
    cells = clean_rows([to_cells(trows[i], columns) for i in run])
    if len(cells) < 2:
        return None
    box = union(trows[i].bbox for i in run)
    return TableItem(page=page_no, bbox=box, rows=cells, html=rows_to_html(cells))


def _columns(tab: Any) -> list[tuple[float, float]]:
    """x-range of each column of a PyMuPDF table (union of its cells)."""
    spans: list[tuple[float, float]] = []
    for j in range(tab.col_count):
        xs = [(c[0], c[2]) for row in tab.rows for c in [row.cells[j] if j < len(row.cells) else None] if c]
        spans.append((min(a for a, _ in xs), max(b for _, b in xs)) if xs else (float("inf"), float("-inf")))
    return spans


def to_cells(row: TextRow, columns: list[tuple[float, float]], used: list[int] | None = None) -> list[str]:
    """A text row's phrases placed in ``columns`` (x-ranges) by their centre: in the column holding it, else
    the nearest; only columns in ``used`` (those the table's own rows fill) are candidates when given, so a
    heading centred over a ``$`` column and its amount lands on the amount."""
    cells = [""] * len(columns)
    cand = [k for k in (used if used else range(len(columns))) if columns[k][0] <= columns[k][1]]
    if not cand:  # no column with a cell: keep the row's text in the first column
        return [" ".join(t for _, _, t in row.phrases), *cells[1:]] if cells else []
    for a, b, text in row.phrases:
        cx = (a + b) / 2
        j = min(cand, key=lambda k: 0.0 if columns[k][0] <= cx <= columns[k][1]
                else min(abs(cx - columns[k][0]), abs(cx - columns[k][1])))
        glue = "" if cells[j] in _UNITS_BEFORE or not cells[j] else " "
        cells[j] = f"{cells[j]}{glue}{text}"
    return cells


def _used(body: list[list[str]], width: int) -> list[int]:
    """Columns (of ``width``) that some row of ``body`` fills."""
    return [j for j in range(width) if any(j < len(r) and r[j] for r in body)]


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
    min_stack: int = 3, stack_gap: float = 30.0, aligned: bool = True,
) -> list[TableItem]:
    """Tables of one PyMuPDF page (``strategy`` as ``Page.find_tables``); failures are logged, never raised.

    Args:
        page: the PyMuPDF page.
        page_no: its physical number (1-based).
        lines: the page's text lines, needed to rebuild stacks of strip tables (see the module docstring).
        strategy: ``find_tables`` strategy.
        min_stack: fewest strips that make a stacked table.
        stack_gap: largest vertical gap between strips of one stack, in points.
        aligned: also find tables of aligned text without ruling (:func:`aligned_tables`).
    """
    try:
        found = page.find_tables(strategy=strategy)
    except Exception as exc:  # a detector crash must not lose the page's text
        log.warning("page %d: table detection failed: %s", page_no, exc)
        return []
    raw: list[tuple[BBox, list[list[str]]]] = []
    columns: list[list[tuple[float, float]]] = []
    for tab in found.tables:
        try:
            item = (tuple(float(v) for v in tab.bbox), tab.extract())
            cols = _columns(tab)
        except Exception as exc:
            log.warning("page %d: table extraction failed: %s", page_no, exc)
            continue
        raw.append(item)  # type: ignore[arg-type]
        columns.append(cols)
    try:
        trows = text_rows([tuple(w[:5]) for w in page.get_text("words")]) if raw or aligned else []
        row_sizes(trows, lines or [])
    except Exception as exc:  # the words are only needed to grow tables
        log.warning("page %d: words for table rows failed: %s", page_no, exc)
        trows = []
    out: list[TableItem] = []
    boxes, stack_cols = _stack_boxes(raw, columns, stack_gap, min_stack) if lines else ([], {})
    try:
        ups, downs = _grow_all([b for b, _, _ in boxes], trows)
    except Exception as exc:  # growing is an improvement: never lose the detected tables over it
        log.warning("page %d: growing tables failed: %s", page_no, exc)
        ups = downs = [[] for _ in boxes]
    for b, ((box, cells_raw, cols), above, below) in enumerate(zip(boxes, ups, downs)):
        if above or below:
            box = union([box, *(trows[i].bbox for i in above + below)])
        if cells_raw is None:  # a stack: its rows are the rows of words inside the grown box
            cells = _stack_cells(box, *stack_cols[b], trows, lines or [])
            if len(cells) >= 2:
                out.append(TableItem(page=page_no, bbox=box, rows=cells, html=rows_to_html(cells)))
            continue
        assert cols is not None
        body = _merge_units(cells_raw)
        used = _used(body, len(cols))
        grown = [to_cells(trows[i], cols, used) for i in reversed(above)] + body + \
            [to_cells(trows[i], cols, used) for i in below]
        cells = clean_rows(grown)
        if len(cells) < 2 or max((sum(1 for c in r if c) for r in cells), default=0) < 2:
            continue
        out.append(TableItem(page=page_no, bbox=box, rows=cells, html=rows_to_html(cells)))
    out = join_touching(sorted(out, key=lambda t: (t.bbox[1], t.bbox[0])))
    if aligned and trows:
        try:
            taken = {i for i, r in enumerate(trows) for t in out if inside(r.bbox, t.bbox)}
            out += aligned_tables(trows, taken, page_no, float(page.rect.width))
        except Exception as exc:  # an extra: never lose the ruled tables over it
            log.warning("page %d: aligned-text tables failed: %s", page_no, exc)
    out = [t if (rows_ := join_wrapped_labels(t.rows)) == t.rows else
           TableItem(page=t.page, bbox=t.bbox, rows=rows_, html=rows_to_html(rows_)) for t in out]
    return sorted((t for t in out if not (cuts_words(t.rows) or is_list(t.rows) or runs_on(t.rows))), key=lambda t: (t.bbox[1], t.bbox[0]))


_LOWER_START = re.compile(r"[a-z][a-z'’-]*(?![A-Za-z])")


def join_wrapped_labels(rows: list[list[str]]) -> list[list[str]]:
    """Row labels wrapped over lines joined into the row of their amounts: a row of a label alone, ending without
    a sentence's end or a colon, followed by a row whose label goes on in lower case and that holds an amount, is
    one row ("Net loss on commodity positions reclassified from unallocated" over "corporate items to segment
    operating profit | 35.6 | 10.0 | 11.3"); a label wrapped over three lines joins likewise. A word that goes on
    in capitals ("iPhone") starts no continuation, and a label-only row with a colon ("Net sales:") heads a group."""
    out: list[list[str]] = []
    for r in rows:
        head = r[0] if r else ""
        if len(r) > 1 and _LOWER_START.match(head) and any(_amount(c) for c in r[1:]):
            while out and _label_only(out[-1]) and _LOWER_START.match(head):
                label = out.pop()[0]
                head = f"{label}{'' if label.endswith('-') else ' '}{head}"
            r = [head, *r[1:]]
        out.append(r)
    return out


def _label_only(row: list[str]) -> bool:
    return len(row) > 1 and bool(row[0]) and row[0][-1] not in _CLOSED and not any(row[1:])


def cuts_words(rows: list[list[str]], share: float = 0.3, least: int = 2) -> bool:
    """Whether the grid cuts words in two: a ruled or shaded box over running text (a graphic's text, a
    callout) read as a table splits words at its rules ("opportunit" | "ies"). True when at least ``least``
    pairs of neighbouring cells, and ``share`` of the neighbouring pairs that hold text, run one word on: the
    left cell is running text (3+ words) ending in a letter and the right one starts with a lower-case letter.
    A table's cells start with a capital, a digit or a sign, or are one-word headings ("simple" | "complex")."""
    pairs = cut = 0
    for r in rows:
        filled = [c.strip() for c in r if c.strip()]
        for a, b in itertools.pairwise(filled):
            if a[-1].isalpha() and b[0].isalpha():
                pairs += 1
                cut += b[0].islower() and len(a.split()) >= 3  # running text, not a one-word column heading
    return cut >= least and cut >= share * pairs


#: Words a line of running text does not end on when its sentence goes on.
_RUNS_ON = frozenset("a an and are as at be by for from in into is its of on or our than that the their these this "
                     "to was were which while with".split())


def runs_on(rows: list[list[str]], prose_words: int = 8) -> bool:
    """Whether a found grid is the lines of a paragraph: rows of running text whose sentences go on from row
    to row, and no cell that is an amount.

    HTML converters paint each span of a paragraph on a box of its own (white, unseen); where a link or an
    italic title breaks the boxes, the ruling detector finds a "table" whose rows are the paragraph's lines
    ("... impacted by the Q2 charge, which resulted in" | "decreases of $152 million, ..."), and the paragraph
    left the text. A row boundary runs on when the row ends in a letter or a comma and the next row starts in
    lower case or the row ends on a word a sentence does not end on ("the", "of", "our"); at least half of the
    boundaries must, and the rows must average ``prose_words`` words. A table of prose cells (definitions, one
    per row) ends its rows with full stops and stays a table."""
    texts = [" ".join(c.strip() for c in r if c.strip()) for r in rows]
    texts = [t for t in texts if t]
    if len(texts) < 2 or sum(len(t.split()) for t in texts) < prose_words * len(texts):
        return False
    if any(_amount(c) for r in rows for c in r):
        return False
    on = sum(1 for a, b in itertools.pairwise(texts)
             if (a[-1].isalpha() or a[-1] == ",") and (b[0].islower() or a.split()[-1].lower() in _RUNS_ON))
    return on >= 1 and 2 * on >= len(texts) - 1


#: Marks that open a list item: bullets of every common font, including the Symbol font's private-use bullet that
#: Word and EDGAR's converters emit. Dashes are not among them: in a table "—" is a nil amount.
BULLETS = frozenset("•●▪◦■□‣⁃∙·\uf0b7\uf0a7\uf076\uf0d8\uf0fc")


def is_list(rows: list[list[str]]) -> bool:
    """Whether a found grid is a bulleted list: every item row opens with a lone bullet and no cell is an amount.

    Filings converted from HTML set a bulleted list as a two-column table (the bullet, then the item), often
    on invisible white cell fills, and the ruling detector finds it: a risk-factor list of 26 items became 9
    "tables" of "• | Changes in consumer demand ..." (a 10-K by Skia/PDF). A list is running text: its lines
    stay in the text flow, in the section they belong to. Rows without a bullet are an item's wrapped lines
    (its first cell empty); a table whose label column merely starts with bullets keeps its amounts and stays
    a table."""
    items = 0
    for r in rows:
        filled = [c.strip() for c in r if c.strip()]
        if not filled:
            continue
        if any(_amount(c) for c in filled):
            return False
        first = filled[0]
        if first in BULLETS or (len(first) > 1 and first[0] in BULLETS and first[1].isspace()):
            items += 1
        elif r and r[0].strip():  # a row that starts with text in the bullets' column: not a list
            return False
    return items >= 2


def _stack_boxes(raw: list[tuple[BBox, list[list[str]]]], columns: list[list[tuple[float, float]]],
                 gap: float, min_stack: int) -> tuple[list[tuple[BBox, Any, Any]], dict[int, Any]]:
    """The page's tables as (box, cells or None, columns or None): each stack of ``min_stack``+ strips (or two with
    the same columns) one box (cells None; its fullest strip's columns and filled columns in the dict, by box index),
    then the tables in no stack. A table in no stack whose cells fill one column (a shaded band over a label,
    "Segment Revenues") is left out: never a table, its rows, taken by it, would stop the growth of the table below
    and hide them from the aligned-text finder."""
    merged: set[int] = set()
    boxes: list[tuple[BBox, Any, Any]] = []
    stack_cols: dict[int, tuple[list[tuple[float, float]], list[int]]] = {}
    filled = [_used(_merge_units(r), len(columns[i])) for i, (_, r) in enumerate(raw)]
    for group in _stacks([(b, len(clean_rows(r))) for b, r in raw], gap):  # rows with text
        if len(group) < min_stack and not (len(group) == 2 and _same_columns(*(columns[i] for i in group))):
            continue
        merged |= set(group)
        best = max(group, key=lambda i: (len(filled[i]), -i))  # the strip that fills the most columns
        stack_cols[len(boxes)] = (columns[best], filled[best])
        boxes.append((union(raw[i][0] for i in group), None, None))
    return boxes + [(b, r, columns[i]) for i, (b, r) in enumerate(raw)
                    if i not in merged and len(filled[i]) != 1], stack_cols


def _same_columns(a: list[tuple[float, float]], b: list[tuple[float, float]], tol: float = 4.0) -> bool:
    """Whether two strips have the same columns (as many, each edge within ``tol`` points): two shaded rows of one
    table (General Mills' "Targeted actions in global supply chain  $ 80.2" and "Total (a)  $ 77.6", the row between
    them unshaded), not two tables."""
    return len(a) == len(b) >= 2 and all(abs(p - q) <= tol for x, y in zip(a, b) for p, q in zip(x, y))


def _stack_cells(box: BBox, cols: list[tuple[float, float]], used: list[int], trows: list[TextRow],
                 lines: list[Line]) -> list[list[str]]:
    """A stack's rows: the rows of words inside its (grown) box placed in its fullest strip's columns; when no
    strip fills two columns, one cell per text line."""
    inner = [r for r in trows if inside(r.bbox, box)]
    if len(used) >= 2 and inner:
        return clean_rows([to_cells(r, cols, used) for r in inner])
    return [[ln.text for ln in r] for r in rows([ln for ln in lines if inside(ln.bbox, box)])]


def _grow_all(boxes: list[BBox], trows: list[TextRow]) -> tuple[list[list[int]], list[list[int]]]:
    """Rows grown above, then below, each table (:func:`grow`); upward first for all tables, so that the
    column headings of a table are not taken as the last rows of the table above it."""
    taken = {i for i, r in enumerate(trows) for b in boxes if inside(r.bbox, b)}
    ups: list[list[int]] = []
    for box in boxes:
        ups.append(grow(box, trows, taken, down=0)[0])
        taken |= set(ups[-1])
    downs: list[list[int]] = []
    for box in boxes:
        downs.append(grow(box, trows, taken, up=0)[1])
        taken |= set(downs[-1])
    return ups, downs


def join_touching(tables: list[TableItem], *, gap: float = 12.0, tol: float = 8.0) -> list[TableItem]:
    """Tables (top to bottom) that touch after growing are one table cut up by the detector: consecutive tables
    with the same left and right edges (within ``tol`` points), at most ``gap`` points apart and with the same
    number of columns are joined (statements whose rows the detector finds in groups of one or two)."""
    out: list[TableItem] = []
    for t in tables:
        last = out[-1] if out else None
        if (last is not None and abs(last.bbox[0] - t.bbox[0]) <= tol and abs(last.bbox[2] - t.bbox[2]) <= tol
                and -gap <= t.bbox[1] - last.bbox[3] <= gap and len(last.rows[0]) == len(t.rows[0])):
            rows_ = last.rows + t.rows
            out[-1] = TableItem(page=t.page, bbox=union([last.bbox, t.bbox]), rows=rows_, html=rows_to_html(rows_))
        else:
            out.append(t)
    return out
