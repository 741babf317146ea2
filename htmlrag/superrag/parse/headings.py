"""Headings and their levels from font statistics, numbering and the PDF outline.

A *text block* (lines of one PyMuPDF block) yields a heading from its leading lines when they are

* short (at most ``max_words`` words, at most 160 characters, with at least two letters),
* not a sentence fragment (no trailing ``,`` or ``;``), not a letter's address (:data:`ADDRESS`: "To the Board of
  Directors and Shareholders of ...", which opens every auditor's report),
* not a table's row or column heading that the table finder left in the text: no amount in it (a number with a
  currency sign, a percent sign, thousands separators or in parentheses, or two numbers of 3+ characters that
  are not years; a leading section number and dates do not count), not only dates ("October 29, 2023", "Apr 1, 2023 Apr 2, 2022"), not
  ending with the columns' years or dates side by side ("Fiscal Year In Millions 2020 2019 2018"), not
  only a reporting period (:func:`period_caption`: "Years ended December 31, 2018, 2017 and 2016"), and not
  wholly in parentheses (a unit or status line such as "(In millions)" or "(Unaudited)", also when the columns'
  dates follow it on its line: Intel's "(In Millions; Unaudited) Apr 1, 2023 Apr 2, 2022"), and not a cell of a
  row of headings (:func:`grid_cells`: a short line that shares its visual row with another short line of its
  style, side by side, as a table's column headings do, and the lines that wrap such a cell; a line that wraps a
  table's column heading above the table's top, :func:`heads_above_tables`),
* either set at least ``size_ratio`` x the body size, or wholly bold (or underlined: a drawn rule under the whole
  line, :func:`~htmlrag.superrag.parse.lines.mark_underlined`) at no less than the body size (when
  the bold run is followed by non-bold lines or stands alone), or wholly in capitals at no less than the body
  size and not ending with a period (:func:`capitals`; when followed by lines not in capitals or standing
  alone: filings set "OVERVIEW" and "NOTE 1 — ACCOUNTING POLICIES" in the body font), or numbered (``1.2``,
  ``A.``, ``(3)``, ``Item 2.``) and bold or larger.

Consecutive qualifying lines of the same size in one block form one heading, split before a line that opens
with a part, item or note label (:func:`opens_heading`: "PART II" over "ITEM 5. ..."). Levels: headings matching an
outline entry take the entry's level; in documents where most headings are numbered, a numbered heading's
level is its depth (``2.1.3`` -> 3); otherwise styles are ranked (bigger first; at the same size capitals
before mixed case, then bold before underlined before neither, then upright before italic; in one style by structural label, part
before item before note before none, :func:`label_kind`) and the rank is the level, put on the outline's scale
where the outline names headings of the same or nearby styles (:func:`_font_levels`; not above a style of its font whose
label ranks above its own, :func:`_in_label_order`), no style below a smaller one of its family
(:func:`_in_family_order`). An outline entry names its heading by its words, or by the point on its page it
leads to (:func:`outline_index`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

from htmlrag.superrag.parse.lines import rows, union
from htmlrag.superrag.parse.model import BBox, Heading, Line

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DATE = re.compile(rf"\b{_MONTH}\s+\d{{1,2}},?(?:\s+\d{{4}})?", re.I)
_FULL_DATE = rf"{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"  # "Apr 1, 2023", "December 31 2022"
_DATES = re.compile(rf"^(?:{_FULL_DATE}[\s,]*(?:and\s+)?)+$", re.I)
#: A reporting period alone, the subtitle of a statement or a table and the cover's period line, never a section's
#: title: "Years ended December 31, 2018, 2017 and 2016", "FOR THE THREE MONTHS ENDED APRIL 30, 2023 AND MAY 1,
#: 2022", "For the Fiscal Year Ended June 30, 2016", "Three Months Ended", "As of December 31, 2017". What may follow
#: the period is only dates, years, "and" and punctuation (:func:`period_caption`); "Three Months Ended September 30,
#: 2022 Compared with Three Months Ended September 30, 2021", a section of Microsoft's MD&A, is no caption.
_PERIOD = re.compile(r"^\(?\s*(?:for\s+the\s+)?(?:(?:(?:three|six|nine|twelve|thirteen|\d{1,2})[\s-]+(?:months?|weeks?)|"
                     r"(?:fifty|\d{2})[\s-]+(?:two|three)?[\s-]*weeks?|(?:fiscal\s+)?(?:years?|quarters?|periods?))"
                     rf"\s+(?:ended|ending)\b|(?:as\s+of|as\s+at|at)\s+(?={_MONTH}))", re.I)
_PERIOD_REST = re.compile(r"^[\s,;:.()\-–—]*(?:(?:and|&)[\s,;:.()\-–—]*|(?:19|20)\d\d[\s,;:.()\-–—]*)*$", re.I)
#: A table's column headings left on one line after a row heading: two or more years or dates side by side, with
#: nothing between them ("Location of Gains (Losses) Recognized in Income on Derivatives Apr 1, 2023 Apr 2, 2022",
#: "Fiscal Year In Millions 2020 2019 2018"). Years joined by "and" or commas are a title's words ("Summary of
#: Stock Repurchases for Fiscal 2016, 2015 and 2014").
_COLUMN_DATES = re.compile(rf"(?:\s(?:19|20)\d\d){{2,}}$|\b{_FULL_DATE}\s+{_FULL_DATE}$", re.I)
_AMOUNT = re.compile(r"^[(\[]?[$€£¥]?\(?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d+)(?:\.\d+)?\)?%?[)\]]?$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
NUMBERED = re.compile(r"^(?:(?:chapter|part|section|item)\s+)?(\d+(?:\.\d+)*|[A-Z]|[IVX]+|\(\d+\)|\d+\))[.:)]?\s+\S", re.I)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
#: A letter's address ("To the Board of Directors and Shareholders of Pfizer Inc.:", "Dear Stockholders,"): the
#: opening of an auditor's report or a letter, set bold like a heading, never a section's title.
ADDRESS = re.compile(r"^(?:to\s+the|dear)\s.*\b(?:share|stock|unit)holders?\b|^(?:to\s+the|dear)\s+(?:the\s+)?"
                     r"(?:board|directors|members|partners|trustees|owners)\b", re.I)


def normalise(text: str) -> str:
    """Lower-cased text with accents kept, punctuation and spacing removed (for comparing headings)."""
    t = unicodedata.normalize("NFKC", text).lower()
    return "".join(c for c in t if c.isalnum())


#: Structural labels by rank: a part or chapter holds items and sections, an item holds notes, a note holds
#: lettered sub-items. Each needs its number ("Part II", "Item 1A.", "Note 12", "a)"), so "Items 1 and 2"
#: in prose or a title that only begins with the word ("Section 302 of the Act" as a wrapped line) are no labels
#: unless numbered as one.
_LABELS = (
    re.compile(r"^(?:part|chapter|book|volume)\s+(?:(?-i:[IVXLC]+)|\d+|(?-i:[A-Z]))\b[.:\s\u2013\u2014-]", re.I),
    re.compile(r"^(?:item|section|article)\s+\d+[A-Z]?\b[.:\s\u2013\u2014-]", re.I),
    re.compile(r"^note\s+\d+[A-Z]?\b[.:\s\u2013\u2014-]", re.I),
    re.compile(r"^(?:[a-z]\)|\([a-z]\))\s"),
)


def label_kind(text: str) -> int | None:
    """Rank of a heading's structural label: 0 part/chapter, 1 item/section/article, 2 note, 3 a lettered
    sub-item ("a)", "(b)"); None without one. Filings set "Part I", "Item 2." and "Note 4 –" in one style, and
    print them at one indentation in their contents, so neither style nor indentation tells that an item sits
    in a part and a note in an item (issue 35: Apple's and Best Buy's 10-Qs had every heading at level 1)."""
    t = text.strip() + " "
    for k, pat in enumerate(_LABELS):
        m = pat.match(t)
        if m:
            return k if _titled(t, m) else None
    return None


def _titled(text: str, label: re.Match) -> bool:
    """Whether what follows a label's match in ``text`` is its title or nothing, not prose ("Section 302 of the
    Sarbanes-Oxley Act", "Exhibit 31.1 to this report")."""
    return not text[label.end():].lstrip(" .:\u2013\u2014-")[:1].islower()


#: An exhibit's label: "Exhibit 31.1", "EXHIBIT 10.4(5)", "Exhibit 13.1 Management's Discussion and Analysis".
_EXHIBIT = re.compile(r"^exhibit\s+\d+(?:\.\d+)*[A-Z]?(?:\([0-9a-z]{1,3}\))?(?=[.:\s\u2013\u2014-])", re.I)


def division(text: str) -> bool:
    """Whether a heading opens a division of the whole document: a part ("PART II", :func:`label_kind` 0) or an
    exhibit bound into a filing ("Exhibit 31.1", "EXHIBIT 13.1 Management's Discussion ..."), its label followed by
    its title or nothing (not by prose: "Exhibit 31.1 to this report" is none)."""
    if label_kind(text) == 0:
        return True
    t = text.strip() + " "
    m = _EXHIBIT.match(t)
    return m is not None and _titled(t, m)


def numbering_depth(text: str) -> int | None:
    """Depth of a leading section number: ``"2.1 Scope"`` -> 2, ``"3 Results"`` -> 1, none -> None."""
    m = re.match(r"^(\d+(?:\.\d+)*)\.?\s+\S", text)
    if m:
        return m.group(1).count(".") + 1
    return None


@dataclass
class Block:
    """Lines of one PyMuPDF block after furniture, tables and figures were taken out."""

    lines: list[Line]

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        return union(ln.bbox for ln in self.lines)

    @property
    def text(self) -> str:
        return " ".join(ln.text for ln in self.lines)

    @property
    def page(self) -> int:
        return self.lines[0].page


def capitals(text: str) -> bool:
    """Whether a line is set in capitals: at least 4 cased letters, none of them lower case (``"OVERVIEW"``,
    ``"NOTE 1 — ACCOUNTING POLICIES"``; not ``"Q1 2023"``, ``"N/A"`` or ``"SECTION 15(d)"``). Words holding a digit
    and no lower case letter ("COVID-19", "H100", "10-Q") are capitals whatever the style, and do not count: "COVID-19" in the bold body font of
    NVIDIA's MD&A sub-headings is one of them, not a heading of the rank above (issue 35)."""
    letters = [c for w in text.split() if not (any(d.isdigit() for d in w) and not any(d.islower() for d in w))
               for c in _LETTER.findall(w)]
    cased = [c for c in letters if c.lower() != c.upper()]
    return len(cased) >= 4 and not any(c.islower() for c in cased)


def period_caption(text: str) -> bool:
    """Whether a line names a reporting period and nothing else (:data:`_PERIOD`): a statement's or a table's subtitle,
    or the cover's period line, which is text under the title it follows, not a section that holds what comes after
    it (Boeing's "Years ended December 31, 2018, 2017 and 2016" held all its notes; issue 35)."""
    m = _PERIOD.match(text.strip())
    return m is not None and _PERIOD_REST.match(_DATE.sub(" ", text.strip()[m.end():])) is not None


def table_text(text: str) -> bool:
    """Whether a short line reads as a table's row or column heading rather than a section heading: it holds an
    amount (after any leading section number), is only dates, ends with the columns' years or dates side by side
    (:data:`_COLUMN_DATES`), or is wholly in parentheses (see the module docstring)."""
    t = text.strip()
    if (t.startswith("(") and t.endswith(")")) or _DATES.match(t) or _COLUMN_DATES.search(t):
        return True
    if t.startswith("(") and not _LETTER.search(re.sub(r"\([^()]*\)", " ", _DATE.sub(" ", t))):
        return True  # a unit before the columns' dates: "(In Millions; Unaudited) Apr 1, 2023 Apr 2, 2022"
    m = NUMBERED.match(t)
    rest = _DATE.sub(" ", t[m.end() - 1:] if m else t)  # the section number and dates are no amounts
    words = rest.split()
    if any(w in "$€£¥%" for w in words):
        return True
    nums = [w.rstrip(".,;:") for w in words if _AMOUNT.match(w.rstrip(".,;:"))]
    money = [w for w in nums if any(c in w for c in ",$€£¥%(")]
    return bool(money) or len([w for w in nums if len(w) >= 3 and not _YEAR.match(w)]) >= 2


def grid_cells(lines: Sequence[Line], max_words: int = 8) -> set[int]:
    """``id()`` of the lines that are cells of a row of column headings: at most ``max_words`` words, sharing
    their visual row with another such line of the same style (bold, italic, size within half a point) that
    does not overlap them horizontally. A section heading has its row to itself; on a two-column page the
    line beside a heading is body text of the other column, which differs in style.

    A line that wraps such a cell over more lines is a cell too (:func:`_stacked`)."""
    out: set[int] = set()
    found: list[Line] = []
    for row in rows(list(lines)):
        short = [ln for ln in row if len(ln.text.split()) <= max_words]
        for a in short:
            if any(b is not a and _same_style(a, b) and (b.bbox[0] >= a.bbox[2] or b.bbox[2] <= a.bbox[0])
                   for b in short):
                out.add(id(a))
                found.append(a)
    return out | _stacked(lines, found, max_words)


def heads_above_tables(lines: Sequence[Line], tables: Sequence[tuple[BBox, Sequence[Line]]], max_words: int = 8,
                       passes: int = 3) -> set[int]:
    """``id()`` of the lines that wrap a table's column heading above the table's top: a short line of the style of
    a line in the table's first row, set over a column (not the table's first, 5 % of its width), at most one and
    a half lines above that line, and aligned with it (left or right edges or centres within 1.5 pt).

    ``tables``: each table's box and the lines it covers. NVIDIA's segment note sets "Compute &" over the
    table's first row, "Networking  Graphics  All Other  Consolidated" (one line): the table begins at that row,
    and "Compute &", left above it, was a section heading holding the note's table. A title centred over a table
    lines up with no column heading, a heading at its left margin is over its first column; both stay what they
    were. Followed up to ``passes`` lines up (a column heading wrapped over four lines)."""
    out: set[int] = set()
    for box, covered in tables:
        if not covered:
            continue
        stub = box[0] + 0.05 * (box[2] - box[0])
        free = [ln for ln in lines if len(ln.text.split()) <= max_words and ln.bbox[0] > stub
                and ln.bbox[2] <= box[2] + 1.5 and id(ln) not in out]
        out |= _wrapping(free, rows(list(covered))[0], _over, passes)
    return out


def _same_style(a: Line, b: Line) -> bool:
    """Bold, italic and size (within half a point) alike: the lines of one column heading."""
    return a.bold == b.bold and a.italic == b.italic and abs(a.size - b.size) <= 0.5


def _over(ln: Line, a: Line) -> bool:
    """Whether ``ln`` is the line above ``a`` in one column heading: ``a``'s style, its top at most one and a half
    lines above ``a``'s, aligned with ``a`` (left or right edges or centres within 1.5 pt)."""
    if not _same_style(ln, a) or not 0 < a.bbox[1] - ln.bbox[1] <= 1.5 * max(a.size, 1.0):
        return False
    centres = abs((ln.bbox[0] + ln.bbox[2]) - (a.bbox[0] + a.bbox[2])) / 2
    return min(abs(ln.bbox[0] - a.bbox[0]), abs(ln.bbox[2] - a.bbox[2]), centres) <= 1.5


def _same_column(ln: Line, c: Line) -> bool:
    """Whether ``ln`` wraps cell ``c``: ``c``'s style, each covering at least 60 % of the other's width."""
    overlap = min(ln.bbox[2], c.bbox[2]) - max(ln.bbox[0], c.bbox[0])
    return _same_style(ln, c) and overlap > 0 and overlap >= 0.6 * max(ln.bbox[2] - ln.bbox[0], c.bbox[2] - c.bbox[0])


def _stacked(lines: Sequence[Line], cells: list[Line], max_words: int, passes: int = 3) -> set[int]:
    """``id()`` of the lines that wrap a column heading over more lines: a short line of a cell's style, within
    one and a half lines above or below it, over the same column (:func:`_same_column`). NVIDIA's segment note
    heads its table "Compute &" over "Networking", "Graphics", "All Other", "Consolidated"; when those cells are
    block lines, "Compute &" stacks on "Networking" (when the row is a table's first, :func:`heads_above_tables`).
    Amcor's equity-plan table wraps "Number of securities remaining available for" over its column. A title
    centred over a table is wider than any one column and stays a title. Up to ``passes`` lines are followed from
    a cell (a column heading wrapped over four lines)."""
    return _wrapping([ln for ln in lines if len(ln.text.split()) <= max_words], cells, _same_column, passes)


def _wrapping(lines: Sequence[Line], seeds: Sequence[Line], fits: Callable[[Line, Line], bool], passes: int
              ) -> set[int]:
    """``id()`` of the ``lines`` reached from ``seeds`` by ``fits(line, seed)``, a seed's tops within one and a half
    of its lines; what is reached seeds the next pass, up to ``passes``. Lines are found by their tops (sorted, then
    bisected), not pair by pair: a page of thousands of cells stays quick."""
    rest = sorted(lines, key=lambda x: x.bbox[1])
    tops = [ln.bbox[1] for ln in rest]
    taken = {id(c) for c in seeds}
    out: set[int] = set()
    todo = list(seeds)
    for _ in range(passes):
        new: list[Line] = []
        for c in todo:
            reach = 1.5 * max(c.size, 1.0)
            for k in range(bisect.bisect_left(tops, c.bbox[1] - reach), bisect.bisect_right(tops, c.bbox[1] + reach)):
                ln = rest[k]
                if id(ln) not in taken and fits(ln, c):
                    taken.add(id(ln))
                    out.add(id(ln))
                    new.append(ln)
        if not new:
            break
        todo = new
    return out


def _qualifies(ln: Line, body: float, size_ratio: float, max_words: int) -> bool:
    t = ln.text
    if len(t) > 160 or len(t.split()) > max_words or len(_LETTER.findall(t)) < 2 or t[-1] in ",;":
        return False
    if table_text(t) or period_caption(t) or t.lower().startswith("/s/"):  # a signature: drawn on a line, or bold
        return False
    big = ln.size >= body * size_ratio
    caps = capitals(t) and t[-1] != "."  # a line of capitals ending a sentence ("... U.S. GAAP.") is body text
    styled = (ln.bold or ln.italic or caps) and ln.size >= body * 0.95
    numbered = NUMBERED.match(t) is not None and (ln.bold or ln.size > body + 0.4)
    underlined = ln.underline and ln.size >= body * 0.95 and not lead_in(t) and not spread(ln)
    return big or styled or numbered or underlined


#: A line ending with a colon of more words than this leads into what follows ("The following table presents segment
#: net sales by reportable segment (in millions):"); "Derivatives Not Designated as Hedging Instruments:" is a title.
LEAD_IN_WORDS = 6


def lead_in(text: str) -> bool:
    """Whether a line is a sentence that leads into a table or a list: it ends with a colon and holds more than
    :data:`LEAD_IN_WORDS` words (Corning's underlined "The following table presents ... (in millions):" was a
    heading; issue 35, nineteenth round)."""
    t = text.strip()
    return t.endswith(":") and len(t.split()) > LEAD_IN_WORDS


#: A line's box wider than this many times the width its characters need (half the size per character) is set
#: over a table's columns (:func:`spread`).
SPREAD = 2.0


def spread(ln: Line) -> bool:
    """Whether a line is set over a table's columns: its box is :data:`SPREAD` times wider than its characters
    need at half its size each. A table row the table finder missed, ruled under it, read as an underlined
    heading: General Mills' "Foreign currency exchange impact Flat", Boeing's "Debt-to-equity ratio 4.9-to-1
    4.9-to-1" (issue 35, nineteenth round)."""
    return ln.bbox[2] - ln.bbox[0] > SPREAD * len(ln.text) * ln.size * 0.5


def style_of(ln: Line) -> tuple[float, bool, bool, bool, bool]:
    """A line's heading style: size to the half point, bold, italic, capitals, underlined (lines of one heading
    share it; an underlined heading differs from the body text after it in its own font)."""
    return (round(ln.size * 2) / 2, ln.bold, ln.italic, capitals(ln.text), ln.underline)


def segment_block(
    block: Block, body: float, *, size_ratio: float = 1.15, max_words: int = 16, cells: set[int] = frozenset()
) -> list[tuple[str, list[Line]]]:
    """Split a block into ``("head", lines)`` and ``("body", lines)`` runs, in order.

    A heading run is a maximal run of qualifying lines of one style (size, bold, italic) that starts the
    block or follows a line ending a sentence, holds at most ``max_words + 4`` words, and, unless it is set
    larger than ``size_ratio`` x body, is followed by body text in the block or is the whole (short) block.
    Italic-only runs must be followed by body text (a lone italic line is more often a quote or a caption).
    ``cells``: ``id()`` of lines that are cells of a row of headings (:func:`grid_cells`); they are never headings.
    """
    lines = block.lines
    out: list[tuple[str, list[Line]]] = []
    body_run: list[Line] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        starts = i == 0 or lines[i - 1].text.rstrip()[-1:] in ".:!?)" or style_of(lines[i - 1]) != style_of(ln)
        run: list[Line] = []
        ok = lambda x: id(x) not in cells and _qualifies(x, body, size_ratio, max_words)  # noqa: E731
        if starts and ok(ln):
            j = i
            while j < len(lines) and style_of(lines[j]) == style_of(ln) and ok(lines[j]):
                run.append(lines[j])
                j += 1
        if not (run and _accept(run, lines[i + len(run) :], body, size_ratio, max_words)) and starts:
            run = _headline(lines, i, body, max_words)
            run = [] if any(id(x) in cells for x in run) else run
        if run:
            if body_run:
                out.append(("body", body_run))
                body_run = []
            out.extend(("head", piece) for piece in _at_labels(run))
            i += len(run)
            continue
        body_run.append(ln)
        i += 1
    if body_run:
        out.append(("body", body_run))
    return out


#: The labels of :func:`label_kind` that open a heading of their own: a part, an item, a note. Not "Section" or
#: "Article": certification titles wrap at them ("CERTIFICATION PURSUANT TO 18 U.S.C. 1350, AS ADOPTED PURSUANT
#: TO" / "SECTION 906 OF THE SARBANES-OXLEY ACT OF 2002" is one heading); not "Chapter", "Book" or "Volume".
_OPENS = re.compile(r"^(?:part|item|note)\s", re.I)


def opens_heading(text: str) -> bool:
    """Whether a line begins with a part, item or note label followed by its title or nothing (:func:`label_kind`,
    :data:`_OPENS`)."""
    return label_kind(text) in (0, 1, 2) and _OPENS.match(text.strip()) is not None


def _at_labels(run: list[Line]) -> list[list[Line]]:
    """An accepted heading run split before each later line that opens with a part, item or note label
    (:func:`opens_heading`). Filings set "PART II" and "ITEM 5. MARKET FOR REGISTRANT'S COMMON EQUITY, ..." in one
    style, one line after the other in one block (MGM), or a notes title and its first note; a run of one style
    joined them into one heading, "PART II ITEM 5. ...", and the part's items after it hung under the joined
    section. Only a run accepted whole is split: a list of items in one style (a cross-reference index, Intel)
    is too long to be a heading and stays text."""
    cuts = [0] + [k for k in range(1, len(run)) if opens_heading(run[k].text)] + [len(run)]
    return [run[a:b] for a, b in pairwise(cuts)]


#: A risk factor's headline: one sentence wholly in bold at the body size, longer than a heading's ``max_words``
#: (:func:`_headline`), up to this many words and :data:`HEADLINE_LINES` lines.
HEADLINE_WORDS = 60
HEADLINE_LINES = 4
#: Each line of a headline but its last holds at least this many words: the sentence wraps.
HEADLINE_WRAP = 8
#: A sentence ends inside a text: a word of two or more lower-case letters, its stop, a capital ("U.S. Government"
#: does not end one).
_SENTENCE_END = re.compile(r"[a-z]{2}[.!?][\"”’]?\s+[A-Z]")


def _headline(lines: Sequence[Line], i: int, body: float, max_words: int) -> list[Line]:
    """The lines of a headline starting at ``lines[i]``, or none: bold lines of one style (not italic, not in
    capitals) at no less than the body size, more words than a heading holds (a line over ``max_words`` or the run
    over ``max_words + 4``) and at most :data:`HEADLINE_WORDS` in at most :data:`HEADLINE_LINES` lines, one sentence
    that begins with a capital and ends with its stop or a word (no ``,;:``), wrapped (each line but the last of
    :data:`HEADLINE_WRAP` words or more), no table text, followed in its block by lines not in its style or standing
    alone (a longer bold run is a bold paragraph). Filings set each risk factor's headline so, a sentence of 17 to
    60 words over the paragraphs that explain it ("Failure to estimate customer demand properly has led and could
    lead to mismatches between supply and demand.", NVIDIA); they were text, and NVIDIA's Item 1A held 32 to 59
    paragraphs in one to three sections (issue 35, nineteenth round)."""
    first = lines[i]
    if not first.bold or first.italic or first.size < body * 0.95:
        return []
    run = [first]  # one line past the limit is read, so that a longer bold run is told from a headline
    while i + len(run) < len(lines) and len(run) <= HEADLINE_LINES and style_of(lines[i + len(run)]) == style_of(first):
        run.append(lines[i + len(run)])
    text = " ".join(ln.text for ln in run).strip()
    words = len(text.split())
    if len(run) > HEADLINE_LINES or words > HEADLINE_WORDS or capitals(text) or not text[:1].isupper():
        return []
    if words <= max_words + 4 and all(len(ln.text.split()) <= max_words for ln in run):
        return []  # a heading's length: the heading rules say
    if text[-1] in ",;:" or _SENTENCE_END.search(text) or any(table_text(ln.text) for ln in run) or "$" in text:
        return []
    if any(len(ln.text.split()) < HEADLINE_WRAP for ln in run[:-1]):
        return []  # short lines one under the other are a list (American Express's values), not a wrapped sentence
    return run  # what follows in the block is in another style (or nothing): the run stopped there


def _accept(run: list[Line], after: list[Line], body: float, size_ratio: float, max_words: int) -> bool:
    if sum(len(ln.text.split()) for ln in run) > max_words + 4 or ADDRESS.match(run[0].text.strip()):
        return False
    big = run[0].size >= body * size_ratio
    if big:
        return True
    # capitals followed by mixed case too; a title followed by its period in its own style (:func:`period_caption`)
    followed = bool(after) and (style_of(after[0]) != style_of(run[0]) or period_caption(after[0].text))
    if run[0].italic and not run[0].bold:
        return followed and len(run) == 1 and run[0].text.rstrip()[-1:] != "."
    return followed or (not after and len(run) <= 2)


def _words(text: str) -> set[str]:
    """Lower-cased words of a heading, a plural ``s`` dropped (``"Statements of Income"`` -> statement, of, income)."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[^\W_]+", text.lower())}


def outline_index(heads: Sequence[tuple[list[Line], float]], outline: Sequence[tuple]) -> list[int | None]:
    """The outline entry each heading stands for (its index in ``outline``, entries ``(level, title[, page])``),
    or None. An entry stands for one heading at most. First the entries of the same text (:func:`normalise`): an
    entry takes the first heading of its text on its page; a heading left over takes the unused entry of its text
    nearest its page (an entry without a page last, in outline order), and none when they are all taken. A title
    comes back in other places: Pfizer's risk factor "Research and Development" took the entry of Item 1's
    sub-section of that name, and its parent with it; JPMorgan prints "Credit derivatives" in its MD&A and as a
    note, the note's page being the entry's; Verizon's outline names "Verizon Business Group" once, its text
    four times. Then, for a heading without an entry, the first unused entry on the heading's page
    whose words all occur in the heading (:func:`_words`), or that holds all the words of a heading of 3+ words
    and begins with its first three (after a label of at most 3 words such as "Item 2." or "Note 9 -"): outlines name headings in short form
    ("Statement of Income" for "Consolidated Condensed Statements of Income", "Borrowings" for "Note 9 :
    Borrowings") or in long form ("Management's Discussion and Analysis of Financial Condition and Results of
    Operations" for "Management's Discussion and Analysis"). A long form must begin as the heading does: a printed
    contents line "Condensed Consolidated Statements of Income for the Three Months Ended April 30, 2023" holds
    the words of the column heading "Three Months Ended" over the statement, which is no section heading (in
    NVIDIA's filings it took the entry's level and every note on the page hung under it). Last, a heading still
    without an entry takes the unused entry that points at it (:func:`_by_point`)."""
    same: dict[str, list[int]] = {}  # normalised title -> its entries, in outline order
    on_page: dict[int, list[tuple[int, set[str]]]] = {}  # page -> (entry, its words), in outline order
    for j, e in enumerate(outline):
        same.setdefault(normalise(e[1]), []).append(j)
        if _page(e) is not None and _words(e[1]):
            on_page.setdefault(_page(e), []).append((j, _words(e[1])))
    texts = [normalise(" ".join(ln.text for ln in lines)) for lines, _ in heads]
    pages = [lines[0].page for lines, _ in heads]
    exact: dict[int, int] = {}  # heading -> the entry of its text on its page
    used: set[int] = set()
    for i, (t, pg) in enumerate(zip(texts, pages, strict=True)):
        j = next((j for j in same.get(t, ()) if _page(outline[j]) == pg and j not in used), None)
        if j is not None:
            exact[i] = j
            used.add(j)
    out: list[int | None] = []
    for i, (lines, _) in enumerate(heads):
        text = " ".join(ln.text for ln in lines)
        j = exact.get(i)
        if j is None:
            free = [j for j in same.get(texts[i], ()) if j not in used]
            j = min(free, key=lambda j: (_page(outline[j]) is None, abs((_page(outline[j]) or 0) - pages[i]), j),
                    default=None)
        if j is None:
            mine = _words(text)
            seq = _sequence(text)
            j = next((k for k, theirs in on_page.get(pages[i], ()) if k not in used
                      and (theirs <= mine or (len(seq) >= 3 and mine <= theirs and _begins(_sequence(outline[k][1]), seq[:3])))),
                     None)
        if j is not None:
            used.add(j)
        out.append(j)
    return _by_point(heads, outline, out, used)


#: How far (points) a heading's top may lie above / below the point an outline entry names, to be its heading.
POINT_ABOVE, POINT_BELOW = 4.0, 12.0


def _by_point(heads: Sequence[tuple[list[Line], float]], outline: Sequence[tuple], out: list[int | None],
              used: set[int]) -> list[int | None]:
    """``out`` with each heading no entry names by its words given the unused entry that points at it: an outline
    entry names a point on its page (:func:`_top`), and the heading whose top is at that point (within
    :data:`POINT_ABOVE` above it and :data:`POINT_BELOW` below) is the one it stands for, whatever its words.
    Producers name headings in their outlines by working titles: Intel's "Overview & KPI" points at "A Quarter in
    Review", which its font then placed under "Forward-Looking Statements" (issue 35, thirteenth round)."""
    points: dict[int, list[tuple[float, int]]] = {}  # page -> (point, entry) of the entries left
    for j, e in enumerate(outline):
        if j not in used and _page(e) is not None and _top(e) is not None:
            points.setdefault(_page(e), []).append((_top(e), j))  # type: ignore[arg-type]
    if not points:
        return out
    out = list(out)
    for i, (lines, _) in enumerate(heads):
        if out[i] is not None:
            continue
        top = lines[0].bbox[1]
        near = [(abs(top - y), j) for y, j in points.get(lines[0].page, ())
                if j not in used and -POINT_ABOVE <= top - y <= POINT_BELOW]
        if near:
            out[i] = min(near)[1]
            used.add(out[i])  # type: ignore[arg-type]
    return out


def _page(entry: tuple) -> int | None:
    """An outline entry's page, or None (no third field, or None there)."""
    return entry[2] if len(entry) > 2 else None


def _top(entry: tuple) -> float | None:
    """Where on its page an outline entry points (points from the top), or None (no fourth field, or None)."""
    return entry[3] if len(entry) > 3 else None


def _sequence(text: str) -> list[str]:
    """The words of ``text`` in order, lower case, a plural ``s`` dropped (as :func:`_words`)."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[^\W_]+", text.lower())]


def _begins(entry: list[str], heading: list[str], label: int = 3) -> bool:
    """Whether ``entry`` begins with ``heading``, after at most ``label`` words ("item 2", "note 9")."""
    n = len(heading)
    return any(entry[k : k + n] == heading for k in range(min(label, len(entry) - n) + 1))


def outline_parents(outline: Sequence[tuple]) -> list[int | None]:
    """Index of each outline entry's parent: the nearest entry before it of a smaller level (None at the top)."""
    out: list[int | None] = []
    for j, e in enumerate(outline):
        out.append(next((i for i in range(j - 1, -1, -1) if outline[i][0] < e[0]), None))
    return out


def assign_levels(
    heads: Sequence[tuple[list[Line], float]], outline: Sequence[tuple] = ()
) -> list[tuple[int, str]]:
    """Level and deciding source for each heading given as (lines, size); see the module docstring. ``outline``:
    entries ``(level, title)`` or ``(level, title, page)`` (a page lets an entry name a heading in short form,
    :func:`outline_index`)."""
    texts = [" ".join(ln.text for ln in lines) for lines, _ in heads]
    index = outline_index(heads, outline)
    style = [level_style(lines, size) for lines, size in heads]
    styles = sorted(set(style), key=lambda s: (-s.size, not s.caps, -s.weight, s.italic, s.label))
    # a run-in heading takes its entry's level but sets no style's: it shares the bold body font of block headings
    # set apart from their text (Pfizer's "15(a)(1) Financial Statements." calibrated that font at level 3 under
    # Item 15, and lifted the MD&A's larger bold sections out of Item 7)
    font = _font_levels(styles, [(st, outline[j][0]) for st, j, (lines, _) in zip(style, index, heads, strict=True)
                                 if j is not None and not any(ln.run_in for ln in lines)])
    depths = [numbering_depth(t) for t in texts]
    numbered = sum(d is not None for d in depths) >= max(2, len(texts) / 2)
    out: list[tuple[int, str]] = []
    for st, j, depth in zip(style, index, depths, strict=True):
        if j is not None:
            out.append((outline[j][0], "outline"))
        elif numbered and depth is not None:
            out.append((depth, "numbering"))
        else:
            out.append((font[st], "font"))
    return out


class _Style(NamedTuple):
    """What a heading's level is given by (:func:`level_style`)."""

    size: float  # to the half point
    weight: int  # 2: wholly bold, 1: wholly underlined, 0: neither
    caps: bool  # wholly in capitals
    italic: bool  # wholly italic
    label: int  # the label's rank (:func:`label_rank`)

    @property
    def font(self) -> tuple:
        """The style without its label: headings that differ only by their labels share it."""
        return self[:4]

    @property
    def family(self) -> tuple:
        """The style without its size (:func:`_in_family_order`)."""
        return self[1:]


def level_style(lines: Sequence[Line], size: float) -> _Style:
    """What a heading's level is given by (:func:`assign_levels`): its size to the half point, its weight (2: wholly
    bold, 1: wholly underlined, 0: neither), whether it is wholly in capitals, wholly italic, and its label's rank
    (:func:`label_rank`). Headings of one style take one level; at one size and case an underlined heading ranks
    below a bold one and above one of neither."""
    text = " ".join(ln.text for ln in lines)
    weight = 2 if all(ln.bold for ln in lines) else 1 if all(ln.underline for ln in lines) else 0
    return _Style(round(size * 2) / 2, weight, all(capitals(ln.text) for ln in lines),
                  all(ln.italic for ln in lines), label_rank(text))


def label_rank(text: str) -> int:
    """Where a heading sorts among headings of its style: by its label (:func:`label_kind`), unlabelled last. A
    heading without a label set like "Item 2." is its sub-heading ("Available Information" in Apple's MD&A)."""
    k = label_kind(text)
    return len(_LABELS) if k is None else k


def nesting_rank(text: str) -> int:
    """:func:`label_rank`, an exhibit ranked with a part (:func:`division`): what a section holds by its label. A
    document bound into a filing holds its own sections; styles are still ranked by :func:`label_rank` alone."""
    return 0 if division(text) else label_rank(text)


def _font_levels(styles: Sequence[_Style], matched: Sequence[tuple[_Style, int]]
                 ) -> dict[_Style, int]:
    """Level of each heading style (``styles`` bigger first) for headings the outline does not name.

    Without outline matches a style's level is its rank. With them, the outline and the font ranks must share
    one scale, or a heading the outline misses (its text differs from the entry's) lands under an unrelated
    outline heading: a style that outline-named headings use takes their most common outline level (ties: the
    smaller); a style whose headings differ from calibrated ones only by their label (:func:`label_kind`) keeps
    its rank distance to the nearest of those; any other style keeps its rank distance to the nearest calibrated
    style above it (else below it).
    Capped at 6. Then a style is not placed below a smaller style of its family (:func:`_in_family_order`).
    A calibration that puts a style above one that differs from it only by a label ranked above its own is
    dropped (:func:`_in_label_order`).
    """
    rank = {s: i + 1 for i, s in enumerate(styles)}
    seen: dict[_Style, Counter[int]] = {}
    for st, lvl in matched:
        seen.setdefault(st, Counter())[lvl] += 1
    calib = _in_label_order({st: min(c, key=lambda lv: (-c[lv], lv)) for st, c in seen.items()}, seen)
    out: dict[_Style, int] = {}
    for st in styles:
        above = [b for b in styles if rank[b] < rank[st] and b in calib]
        below = [b for b in styles if rank[b] > rank[st] and b in calib]
        same = [b for b in styles if b.font == st.font and b in calib]  # the same style, other labels
        if st in calib:
            lvl = calib[st]
        elif same:  # labels keep their order in a style: "PART I." above the outline's "ITEM 2." (issue 35)
            near = min(same, key=lambda b: abs(rank[b] - rank[st]))
            lvl = calib[near] + rank[st] - rank[near]
        elif above:
            lvl = calib[above[-1]] + rank[st] - rank[above[-1]]
        elif below:
            lvl = calib[below[0]] - (rank[below[0]] - rank[st])
        else:
            lvl = rank[st]
        out[st] = min(max(lvl, 1), 6)
    return _in_family_order(out, set(calib))


def _in_label_order(calib: dict[_Style, int], seen: dict[_Style, Counter[int]]) -> dict[_Style, int]:
    """Calibrated levels without those that invert labels in one style: of two calibrated styles that differ only
    by their labels (:func:`label_rank`), the one whose label ranks lower may not take a level above the other's;
    when it does, the calibration named by fewer outline entries is dropped (on a tie, the lower label's), and the
    style is placed by its rank like any other. General Mills' outline lists "Signatures" at its top level beside
    the parts; the text sets it in the bold body font of its items ("ITEM 7 - ...", level 2) and of every
    sub-heading without a label ("Cash Flows from Operations"), which all took level 1 and hung in no section, out
    of their items (issue 35, seventeenth round)."""
    out = dict(calib)
    for st in sorted(calib, key=lambda s: s.label):
        if st not in out:
            continue
        for other in [b for b in out if b.font == st.font and b.label > st.label and out[b] < out[st]]:
            weak = other if sum(seen[other].values()) <= sum(seen[st].values()) else st
            out.pop(weak)
            if weak == st:
                break
    return out


def _in_family_order(levels: dict[_Style, int], calibrated: set[_Style]) -> dict[_Style, int]:
    """Levels with no style placed deeper than a smaller style of its family (same weight, case, italics, label).

    Rank distances are counted over every style, so two sizes of one family, each placed by its distance to a
    different calibrated style, can come out inverted: NVIDIA's MD&A sets its sections ("Results of Operations",
    "Liquidity and Capital Resources") in 9.9 pt bold and their sub-headings ("Revenue", "Income Taxes") in 9 pt
    bold; the larger style, counted from the capitals of the contents' statement titles, came out a level below
    the smaller, and each section hung under the sub-heading before it ("Liquidity and Capital Resources" under
    "Income Taxes"; issue 35, thirteenth round). A larger style the outline does not calibrate is lifted to one
    level above the smaller (smallest first, so a run of sizes keeps its order); a smaller uncalibrated style
    under a calibrated larger one goes one level below it. Two calibrated styles keep the outline's levels."""
    out = dict(levels)
    families: dict[tuple, list[_Style]] = {}
    for st in sorted(out, key=lambda s: -s.size):
        families.setdefault(st.family, []).append(st)
    for members in families.values():
        pairs = list(pairwise(members))
        for big, small in reversed(pairs):  # smallest first: a lift carries up a run of sizes
            if out[big] > out[small] and big not in calibrated:
                out[big] = max(out[small] - 1, 1)
        for big, small in pairs:  # largest first: a push carries down
            if out[big] > out[small] and small not in calibrated:
                out[small] = min(out[big] + 1, 6)
    return out


def make_heading(lines: list[Line], level: int, source: str) -> Heading:
    return Heading(page=lines[0].page, bbox=union(ln.bbox for ln in lines),
                   text=" ".join(ln.text for ln in lines), level=level, size=max(ln.size for ln in lines),
                   source=source)
