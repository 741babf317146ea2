"""Layout parsing of a PDF into pages, headings, sections, paragraphs, tables, figures and a ToC.

Two passes. The first walks the pages one at a time and keeps only text lines, table cells and figure boxes
(no page objects, no images), so memory grows with the text, not with the page count or the images. The
second removes repeated headers/footers, finds the body font size (a page's own where its running text is set
larger: :func:`_page_body`), reads each page in reading order, detects
headings and builds the section tree. See :mod:`~htmlrag.superrag.parse.headings`, :mod:`~htmlrag.superrag.parse.order`,
:mod:`~htmlrag.superrag.parse.furniture`, :mod:`~htmlrag.superrag.parse.toc` for the exact rules.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from htmlrag.core.errors import InputError
from htmlrag.superrag.parse import figures as fig
from htmlrag.superrag.parse import headings as hd
from htmlrag.superrag.parse.furniture import find_furniture
from htmlrag.superrag.parse.lines import (
    body_size,
    horizontal_rules,
    inside,
    link_boxes,
    mark_underlined,
    page_lines,
    underline_candidate,
)
from htmlrag.superrag.parse.model import (
    FigureItem,
    Heading,
    Line,
    PageInfo,
    Paragraph,
    ParsedDocument,
    Section,
    TableItem,
)
from htmlrag.superrag.parse.names import document_name, is_name
from htmlrag.superrag.parse.order import reading_order
from htmlrag.superrag.parse.pdfio import doc_id_for, open_pdf
from htmlrag.superrag.parse.tables import page_tables, rows_to_html
from htmlrag.superrag.parse.toc import (
    detected_toc,
    is_toc_page,
    names_itself,
    outline_toc,
    toc_block_ids,
    toc_line_ids,
)

log = logging.getLogger(__name__)


@dataclass
class ParseOptions:
    """Knobs of the layout parser (defaults suit reports, papers and filings).

    Attributes:
        table_strategy: PyMuPDF ``find_tables`` strategy (``"lines"``: ruled tables; ``"text"``: aligned text).
        aligned_tables: also find tables set as aligned text without ruling, from the page's words
            (:func:`~htmlrag.superrag.parse.tables.aligned_tables`; conservative: runs of 3+ aligned rows of amounts).
        furniture_band: fraction of the page height at top and bottom searched for headers/footers.
        size_ratio: a line at least this many times the body size may be a heading.
        max_heading_words: longest heading, in words.
        two_column_share: share of characters each column needs for column-wise reading.
        toc_search_pages: ToC pages are looked for among this many first pages.
        min_figure_side: smallest figure side, in points.
        scanned_cover: a page without text whose images cover at least this share of it is "scanned".
        ocr: ``"auto"``: read scanned pages with Tesseract when it is installed (:mod:`~htmlrag.superrag.parse.ocr`),
            else warn that their text is missing; ``"off"``: never; ``"require"``: raise when OCR is needed
            but not installed.
        ocr_dpi: rendering resolution for OCR.
        ocr_lang: Tesseract language(s), e.g. ``"eng"`` or ``"eng+deu"``.
    """

    table_strategy: str = "lines"
    aligned_tables: bool = True
    furniture_band: float = 0.1
    size_ratio: float = 1.15
    max_heading_words: int = 16
    two_column_share: float = 0.2
    toc_search_pages: int = 20
    min_figure_side: float = 30.0
    scanned_cover: float = 0.5
    ocr: str = "auto"
    ocr_dpi: int = 300
    ocr_lang: str = "eng"


@dataclass
class _Page:
    info: PageInfo
    lines: list[Line]
    tables: list[TableItem]
    figures: list[FigureItem]
    toc: bool = False
    label: str = ""
    drop: set[int] = field(default_factory=set)
    plain: str = ""
    #: indexes of the rows of a contents page past the first pages (:attr:`ParseOptions.toc_search_pages`): an
    #: exhibit's or a plan's contents, the index of the financial statements. They are text, never headings:
    #: Walmart 2018's plans gave 33 sections ("ARTICLE II. DEFINITIONS 2"), Nike 2018's index of its notes 17
    #: ("Note 2 Inventories 55"), CVS Health 2018's agreement 15 (issue 35, nineteenth round).
    listed: set[int] = field(default_factory=set)


def _join(lines: list[Line]) -> str:
    out = ""
    for ln in lines:
        t = ln.text
        hyphen = out.endswith("-") and t[:1].islower()
        out = out[:-1] + t if hyphen else (f"{out} {t}" if out else t)
    return out


def _read_pages(doc, opts: ParseOptions, name: str, warnings: list[str]) -> list[_Page]:
    from htmlrag.superrag.parse.pdfio import import_pymupdf

    pymupdf = import_pymupdf()
    flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_IMAGES
    pages: list[_Page] = []
    for i in range(doc.page_count):
        page = doc.load_page(i)
        pno = i + 1
        w, h = float(page.rect.width), float(page.rect.height)
        try:
            lines = page_lines(page.get_text("dict", flags=flags), pno)
        except Exception as exc:
            warnings.append(f"{name}: page {pno}: text extraction failed ({exc}); page skipped")
            lines = []
        paths = fig.page_drawings(page) if any(underline_candidate(ln) for ln in lines) else None
        if paths:
            lines = mark_underlined(lines, horizontal_rules(paths), link_boxes(page))
        chars = sum(len(ln.text) for ln in lines)
        boxes = fig.image_boxes(page)
        cover = sum((b[2] - b[0]) * (b[3] - b[1]) for b in boxes) / max(w * h, 1.0)
        scanned = chars == 0 and cover >= opts.scanned_cover
        if scanned:
            lines = _ocr(page, pno, opts, name, warnings)
            chars = sum(len(ln.text) for ln in lines)
        # a contents page past the first pages (an exhibit's, a plan's, the index of the financial statements) is
        # no ToC of the document; its rows stay text (or the table the table finder made of them) and are no
        # headings (``_Page.listed``); a table of amounts taken for such a page keeps its table
        toc = is_toc_page(lines, n_pages=doc.page_count)
        listed = toc_line_ids(lines) if toc and i >= opts.toc_search_pages else set()
        toc = toc and not listed
        tables = [] if (scanned or not lines) else page_tables(page, pno, lines, strategy=opts.table_strategy,
                                                                         aligned=opts.aligned_tables)
        if toc:  # a ruled contents page is a table too: it is the ToC, not content
            rows_in = toc_line_ids(lines)
            tables = [t for t in tables if sum(inside(lines[j].bbox, t.bbox) for j in rows_in) < 3]
        tables, charts = fig.split_charts(tables, fig.filled_rects(page, drawings=paths) if tables else [], pno)
        figures = [] if scanned else fig.page_figures(boxes, pno, min_side=opts.min_figure_side)
        figures += charts
        if not scanned and any(fig.CAPTION.match(ln.text) for ln in lines):
            figures += fig.captioned_drawings(page, pno, lines, [t.bbox for t in tables] + [f.bbox for f in figures],
                                              min_side=opts.min_figure_side)
        try:
            label = page.get_label() or ""
        except Exception:  # pragma: no cover - broken label trees
            label = ""
        pages.append(_Page(PageInfo(pno, w, h, chars, scanned), lines, tables, figures, toc, label,
                           plain="\n".join(ln.text for ln in lines) if scanned else _plain_text(page),
                           listed=listed))
        del page
    return pages


def _ocr(page, pno: int, opts: ParseOptions, name: str, warnings: list[str]) -> list[Line]:
    """Lines of a scanned page read by OCR, or none (with a warning naming the file and page)."""
    from htmlrag.superrag.parse.ocr import ocr_available, ocr_lines

    if opts.ocr not in ("auto", "off", "require"):
        raise InputError(f"ParseOptions.ocr must be 'auto', 'off' or 'require', not {opts.ocr!r}")
    if opts.ocr == "off" or not ocr_available():
        if opts.ocr == "require":
            raise InputError(f"{name}: page {pno} has no text layer and OCR is not installed "
                             "(apt-get install tesseract-ocr; pip install 'htmlrag-bench[ocr]')")
        why = "OCR is off" if opts.ocr == "off" else \
            "OCR is not installed: apt-get install tesseract-ocr; pip install 'htmlrag-bench[ocr]'"
        warnings.append(f"{name}: page {pno} has no text layer (scanned image); its text is missing ({why})")
        return []
    try:
        lines = ocr_lines(page, pno, dpi=opts.ocr_dpi, lang=opts.ocr_lang)
    except Exception as exc:  # a Tesseract failure loses this page's text, not the document
        warnings.append(f"{name}: page {pno} has no text layer and OCR failed ({exc}); its text is missing")
        return []
    if not lines:
        warnings.append(f"{name}: page {pno} has no text layer (scanned image) and OCR found no text")
    else:
        log.info("%s: page %d read by OCR (%d lines)", name, pno, len(lines))
    return lines


def _plain_text(page) -> str:
    """The page's plain text as PyMuPDF reads it (no layout analysis): the non-layout baseline's input."""
    try:
        return str(page.get_text("text"))
    except Exception:  # the layout pass already warned about this page
        return ""


def _caption(box, lines: list[Line], pattern, taken: set[int]) -> tuple[str, set[int]]:
    i = fig.find_caption(box, lines, pattern)
    if i is None or i in taken:
        return "", set()
    blk = lines[i].block
    idx = {j for j, ln in enumerate(lines) if ln.block == blk and j >= i}
    return _join([lines[j] for j in sorted(idx)]), idx


def parse_pdf(
    path: str | Path, *, options: ParseOptions | None = None, password: str | None = None, repair: bool = False
) -> ParsedDocument:
    """Parse one PDF into a :class:`~htmlrag.superrag.parse.model.ParsedDocument`.

    Args:
        path: the PDF file.
        options: parser settings (:class:`ParseOptions` defaults when None).
        password: user password for encrypted files.
        repair: accept truncated/damaged files MuPDF can repair (see :func:`~htmlrag.superrag.parse.pdfio.open_pdf`).

    Raises:
        InputError: the file cannot be parsed (the message names it and says why).
    """
    opts = options or ParseOptions()
    name = str(path)
    doc, data = open_pdf(path, password=password, repair=repair)
    warnings: list[str] = []
    try:
        pages = _read_pages(doc, opts, name, warnings)
        outline = outline_toc(doc)
        metadata = {k: str(v) for k, v in (doc.metadata or {}).items() if v and isinstance(v, str)}
        meta_title = metadata.get("title", "")
    finally:
        doc.close()
    if all(p.info.chars == 0 for p in pages):
        warnings.append(f"{name}: no page has a text layer or OCR text; nothing to index")
    for w in warnings:
        log.warning("%s", w)

    drops, labels = _mark_furniture(pages, opts)
    toc, toc_source = _table_of_contents(pages, drops, outline, labels)
    flow, tables, figures = _reading_flow(pages, opts, toc)
    doc_name = document_name(pages[0].lines if pages else [], meta_title)
    flow = _running_names(flow, doc_name)
    printed = [p.info.number for p, f in zip(pages, drops, strict=True) if p.toc and names_itself(p.lines, f)]
    headings, sections = _sections(flow, toc, {p.info.number for p in pages if p.toc}, min(printed, default=1))
    title = _title(meta_title, headings, Path(path).stem)
    return ParsedDocument(path=name, doc_id=doc_id_for(data, path), title=title, pages=[p.info for p in pages],
                          name=doc_name,
                          headings=headings, sections=sections, tables=tables, figures=figures, toc=toc,
                          toc_source=toc_source, warnings=warnings, page_texts=[p.plain for p in pages],
                          metadata=metadata)


def _running_names(flow: list[tuple[str, object]], name: str) -> list[tuple[str, object]]:
    """``flow`` with each heading past the first page that says only the document's name (:func:`is_name`) read
    as text. Filings set the company's name over each statement ("Apple Inc." over the Condensed Consolidated
    Statements of Operations; General Mills', AMD's, Netflix's, MGM Resorts') and over each exhibit's signature
    (Lockheed Martin's 12 to 15): each was a section of its own, empty, or holding the exhibits after it (issue
    35, nineteenth round). The cover's name stays a heading."""
    out: list[tuple[str, object]] = []
    for kind, obj in flow:
        text = _join(obj) if kind == "head" else ""  # type: ignore[arg-type]
        if text and obj[0].page > 1 and is_name(text, name):  # type: ignore[index]
            obj = Paragraph(obj[0].page, hd.Block(obj).bbox, text)  # type: ignore[index, arg-type]
            kind = "para"
        out.append((kind, obj))
    return out


def _mark_furniture(pages: list, opts: ParseOptions) -> tuple[list[set[int]], dict[int, str]]:
    """Mark each page's running headers/footers and ToC rows to drop (``page.drop``) and its printed page label;
    returns each page's furniture line ids and page number -> printed label."""
    rough_body = body_size(ln for p in pages for ln in p.lines)
    drops, labels = find_furniture([(p.lines, p.info.height) for p in pages], band=opts.furniture_band,
                                   heading_size=rough_body * opts.size_ratio if rough_body else None)
    if not labels:
        labels = {p.info.number: p.label for p in pages if p.label}
    for p, d in zip(pages, drops, strict=True):
        p.drop = d | (toc_block_ids(p.lines, d) if p.toc else set())  # the contents block leaves the text; the rest stays
        p.info.printed = labels.get(p.info.number, "")
    return drops, labels


def _table_of_contents(pages: list, drops: list[set[int]], outline: list, labels: dict[int, str]
                       ) -> tuple[list, str]:
    """The document's ToC and where it came from: the PDF outline, else the ToC pages' lines (furniture
    dropped, ToC rows kept) read as a ToC, else none."""
    if outline:
        return outline, "outline"
    toc_pages = {p.info.number: [ln for i, ln in enumerate(p.lines) if i not in d]
                 for p, d in zip(pages, drops, strict=True) if p.toc}
    toc = detected_toc(toc_pages, labels, len(pages)) if toc_pages else []
    return toc, "pages" if toc else "none"


def _reading_flow(pages: list, opts: ParseOptions, toc: list
                  ) -> tuple[list[tuple[str, object]], list[TableItem], list[FigureItem]]:
    """Every page's units in reading order as one flow of ``("head", [Line])``, ``("para", Paragraph)``,
    ``("table", TableItem)`` and ``("figure", FigureItem)``; also the tables and figures found."""
    tables: list[TableItem] = []
    figures: list[FigureItem] = []
    flow: list[tuple[str, object]] = []
    body = _report_body(pages, toc)
    known = {(e.page, hd.normalise(e.title)) for e in toc if e.page}
    page_body = body
    for p in pages:
        page_body = _page_body(p, body, page_body)
        units = _page_units(p, tables, figures)
        free = [ln for u in units if isinstance(u, hd.Block) for ln in u.lines]
        kept = [ln for i, ln in enumerate(p.lines) if i not in p.drop]
        cells = hd.grid_cells(free) | hd.heads_above_tables(
            free, [(t.bbox, [ln for ln in kept if inside(ln.bbox, t.bbox)]) for t in p.tables])
        cells |= {id(p.lines[i]) for i in p.listed}
        mine: list[tuple[str, object]] = []
        for u in reading_order(units, p.info.width, min_share=opts.two_column_share):
            if isinstance(u, hd.Block):
                mine += _segments(u, page_body, opts, known, cells)
            else:
                mine.append(("table" if isinstance(u, TableItem) else "figure", u))
        mine = _lower_case_runs(_join_wrapped(mine), p.info.number, known)
        heads_over = _column_headings(mine, cells) | _continued_titles(mine)
        for n, (kind, obj) in enumerate(mine):
            if kind == "head" and n not in heads_over:
                flow.append(("head", obj))
            elif kind in ("head", "body"):
                flow.append(("para", Paragraph(p.info.number, hd.Block(obj).bbox, _join(obj))))  # type: ignore[arg-type]
            else:
                flow.append((kind, obj))
    return flow, tables, figures


def _report_body(pages: list, toc: list) -> float:
    """The document's body size, read on the pages its contents cover (up to the last entry's page), or on all
    pages when no entry names a page.

    Exhibits bound after the report can outweigh it: Walmart 2018's 200 pages of plans at 10.8 pt after a report of
    94 pages at 8.8 pt, Apple's 2023 Q1 10-Q with 20 pages of award agreements at 9.0 pt after 25 pages at 8.1 pt.
    Told from the exhibits' size, the report's bold 8.8 pt headings were smaller than the body and none was read:
    Walmart's Item 8 was one section of 360 paragraphs and tables, Apple's notes and MD&A sections were text of
    Items 1 and 2 (issue 35, eighteenth round). The exhibits still get their own size (:func:`_page_body`)."""
    last = max((e.page for e in toc if e.page), default=0)
    covered = [ln for p in pages if p.info.number <= last for i, ln in enumerate(p.lines) if i not in p.drop]
    return body_size(covered) or body_size(ln for p in pages for i, ln in enumerate(p.lines) if i not in p.drop)


#: A page's running text set more than this many points larger than the document's body makes the page's own size
#: the body its headings are told from (:func:`_page_body`): half a point, the step at which styles differ.
PAGE_BODY_PT = 0.5
#: ... when the page holds at least this many characters of running text (outside furniture and tables) ...
PAGE_BODY_CHARS = 800
#: ... and its own size covers at least this share of them.
PAGE_BODY_SHARE = 0.5


def _page_body(p: _Page, body: float, before: float) -> float:
    """The body size a page's headings are told from: the document's ``body``, unless the page's own running text is
    set larger (more than :data:`PAGE_BODY_PT`, covering :data:`PAGE_BODY_SHARE` of at least
    :data:`PAGE_BODY_CHARS` characters outside furniture and tables), then the page's own. A page with too little
    running text to tell keeps the size of the page before it (``before``).

    Exhibits bound into a 10-K are often set in another, larger type than the report: a plan document at 10.8 pt
    after a report at 9 pt (American Express, MGM Resorts, Johnson & Johnson, Boeing, Corning, 3M, Nike in
    FinanceBench's filings). Told from the report's body, every line of such a page read as a heading set large,
    and every numbered clause ("(g) On November 19, 2007, the Compensation and Benefits Committee ...") as a
    numbered heading: hundreds of sections of one line each, the lines after them paragraphs of their own
    (issue 35, twelfth round). Pages set smaller than the body (statements, notes in small type) keep the
    document's size: there a line of the report's body size is not a heading, and would read as one."""
    lines = [ln for i, ln in enumerate(p.lines) if i not in p.drop and not any(inside(ln.bbox, t.bbox) for t in p.tables)]
    chars = sum(len(ln.text) for ln in lines)
    if chars < PAGE_BODY_CHARS:
        return before
    own = body_size(lines)
    share = sum(len(ln.text) for ln in lines if ln.size == own) / chars
    return own if own > body + PAGE_BODY_PT and share >= PAGE_BODY_SHARE else body


#: Words a title does not end with: a heading run ending with one (or with a comma or a dash) goes on in the next.
_OPEN_END = frozenset("""a an and as at between by for from in including into nor of on or per pursuant than the to
    under via with""".split())


def _open_ended(text: str) -> bool:
    """Whether a heading line stops mid-phrase: it ends with a comma, a hyphen or dash, or a word a title does not
    end with (:data:`_OPEN_END`: "... Officer Pursuant to", "... 18 U.S.C. Section 1350,")."""
    t = text.rstrip()
    if t[-1:] in ",-\u2013\u2014":
        return True
    words = t.split()
    return bool(words) and words[-1].lower() in _OPEN_END


def _join_wrapped(units: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """One heading run for a heading wrapped over lines that the PDF sets as separate blocks: a heading run right
    after another of the same size, weight and slant (capitals or not: "RULES 13a-14(a) ..."), starting within
    half a line's height below it, where the first stops mid-phrase (:func:`_open_ended`) or the second begins in
    lower case. Converters set each
    line of a centred title as a block of its own ("Certification by the Chief Executive Officer Pursuant to" /
    "Section 302 of the Sarbanes-Oxley Act of 2002", "CERTIFICATION PURSUANT TO" / "RULES 13a-14(a) ..."), and each
    line opened a section, the first empty (FinanceBench's filings, issue 35). Two complete headings set one under
    the other ("Note 1 – Summary of ..." / "Basis of Presentation") stay two."""
    out: list[tuple[str, object]] = []
    for kind, obj in units:
        if kind == "head" and out and out[-1][0] == "head":
            prev: list[Line] = out[-1][1]  # type: ignore[assignment]
            cur: list[Line] = obj  # type: ignore[assignment]
            a, b = prev[-1], cur[0]
            height = max(a.bbox[3] - a.bbox[1], 1.0)
            first = b.text.lstrip()[:1]
            if (hd.style_of(a)[:3] == hd.style_of(b)[:3] and -0.5 * height <= b.bbox[1] - a.bbox[3] <= 0.5 * height
                    and (_open_ended(a.text) or (first.isalpha() and first.islower()))):
                out[-1] = ("head", prev + cur)
                continue
        out.append((kind, obj))
    return out


_CONTINUED = re.compile(r"[(\[]?\s*\b(?:continued|cont['’]?d)\s*[)\]]?\s*$", re.IGNORECASE)


def _continued_titles(units: list[tuple[str, object]]) -> set[int]:
    """Indices of heading runs that repeat a title already open: a run ending with "(Continued)" ("NOTES TO
    CONDENSED CONSOLIDATED FINANCIAL STATEMENTS (Continued)") and the runs right before it that head the same
    title block ("NVIDIA CORPORATION AND SUBSIDIARIES"). They open no section: where the page header was not
    recognised as furniture, NVIDIA's notes 2-15 hung under a new "NVIDIA CORPORATION AND SUBSIDIARIES" section
    (issue 35)."""
    out: set[int] = set()
    for n, (kind, run) in enumerate(units):
        if kind == "head" and _CONTINUED.search(" ".join(ln.text for ln in run)):  # type: ignore[union-attr]
            out.add(n)
            m = n - 1
            while m >= 0 and units[m][0] == "head":
                out.add(m)
                m -= 1
    return out


#: A run that begins with a word in lower case ("could adversely affect ...", "and Chairman of the Board").
_LOWER_WORD = re.compile(r"^[a-z][a-z]")


def _lower_case_runs(units: list[tuple[str, object]], page: int, known: set[tuple[int, str]]
                     ) -> list[tuple[str, object]]:
    """A heading run that begins with a word in lower case and continues no heading before it (:func:`_join_wrapped`
    joins those) is text; text runs of one block that then meet are one. CVS sets a risk factor's sentence-long
    title in bold italics over two lines; the first line ends with a comma (no heading), and the second, "could
    adversely affect our brand and reputation, ...", was a section of its own. Of the 33 headings the parser placed
    by font that began with a lower-case word in 75 filings, none was one (lines wrapped from a title or a
    sentence, "and Chairman of the Board" under a signature, "or" on a cover). A word that begins with a lower-case
    letter and goes on in capitals ("iPhone", "eBay") is no lower-case word; a run the contents or the outline
    names (``known``) stays a heading."""
    out: list[tuple[str, object]] = []
    for kind, obj in units:
        if kind == "head" and _LOWER_WORD.match(obj[0].text.lstrip()) and (  # type: ignore[index]
                page, hd.normalise(" ".join(ln.text for ln in obj))) not in known:  # type: ignore[union-attr]
            kind = "body"
        if kind == "body" and out and out[-1][0] == "body" and out[-1][1][-1].block == obj[0].block:  # type: ignore[index]
            out[-1] = ("body", out[-1][1] + obj)  # type: ignore[operator]
            continue
        out.append((kind, obj))
    return out


def _column_headings(units: list[tuple[str, object]], cells: set[int] = frozenset()) -> set[int]:
    """Indices of heading runs that are column headings of the table right below them, not section headings:
    a run that ends within three of its lines' height above the table (or above another such run), starts
    over the table's value columns (its left edge past the first 30% of the table's width, its right edge
    within the table) and is not centred over the table (its centre more than 10% of the table's width off). "Three Months Ended", "Reported as" or "Fair Value at Pricing" over the amount columns
    of NVIDIA's notes are bold lines of the body font, styled as the notes' sub-headings, and were taken for
    sections that every note after them hung under (issue 35). A title over a table starts at its left edge or
    is centred over it (Microsoft's "INCOME STATEMENTS"), and stays a heading. Text of column-heading cells
    (``cells``: ``id()`` of lines, :func:`~htmlrag.superrag.parse.headings.grid_cells`,
    :func:`~htmlrag.superrag.parse.headings.heads_above_tables`) between such a run and the table is part of the
    column headings: the walk goes on over it (NVIDIA's "RSUs, PSUs, and Market-based PSUs Outstanding" over
    "Weighted Average Grant-Date", a cell, over the table)."""
    out: set[int] = set()
    for t, (kind, table) in enumerate(units):
        if kind != "table":
            continue
        x0, top, x1, _ = table.bbox  # type: ignore[attr-defined]
        n = t - 1
        while n >= 0 and units[n][0] in ("head", "body"):
            if units[n][0] == "body":
                if not all(id(ln) in cells for ln in units[n][1]):  # type: ignore[union-attr]
                    break
                top = min(top, hd.Block(units[n][1]).bbox[1])  # type: ignore[arg-type]
                n -= 1
                continue
            hx0, hy0, hx1, hy1 = hd.Block(units[n][1]).bbox  # type: ignore[arg-type]
            size = max(ln.size for ln in units[n][1])  # type: ignore[union-attr]
            centred = abs((hx0 + hx1) - (x0 + x1)) / 2 <= 0.1 * (x1 - x0)
            if centred or not (hx0 >= x0 + 0.3 * (x1 - x0) and hx1 <= x1 + size and -size <= top - hy1 <= 3 * size):
                break
            out.add(n)
            top = hy0
            n -= 1
    return out


def _sections(flow: list[tuple[str, object]], toc: list, toc_pages: set[int] = frozenset(), front: int = 1
              ) -> tuple[list[Heading], list[Section]]:
    """Headings with levels (from the ToC where it names them, else by size) and the section tree they open;
    content before the first heading goes to an untitled level-1 section. A heading the ToC names hangs under the
    section of its ToC parent, or at the top when that parent is not a heading of the text (Intel's outline puts
    "Notes to ... Financial Statements" under "Financial Statements", which the pages never print: nesting by
    level alone hung every note under the statement before it); other headings under the nearest section before
    them of a smaller level, except a section opened on a contents page (``toc_pages``) or on a page before
    ``front`` (the first printed contents page that names itself: the pages before it are a cover), which holds
    nothing after its page ("Form 10-Q Table of Contents" had every section of a Workiva 10-Q under it; a cover's
    company name, set larger than the body's headings, held everything up to the first heading of its size: the
    contents, "Where you can find more information", and with headings that rank under a part's label, more). A
    heading its font placed that opens a division of the document (a part, an exhibit:
    :func:`~htmlrag.superrag.parse.headings.division`) nests in no section: exhibits hung under the last heading of
    the exhibit before them ("Exhibit 31.2" under "CERTIFICATION", CVS's Exhibit 13.1, its MD&A and statements,
    under a plan's "EMPLOYEE COVENANTS"), and Corning's parts under its cover's name (issue 35, twelfth round).
    Any other heading the contents do not place is the sibling of an open section of its own style and level
    (:func:`_sibling`), in the section that one is in."""
    heads = [(x, max(ln.size for ln in x)) for k, x in flow if k == "head"]  # type: ignore[union-attr]
    entries = [(e.level, e.title, e.page, e.top) for e in toc]
    levels = iter(hd.assign_levels(heads, entries))
    named = iter(hd.outline_index(heads, entries))
    toc_parent = hd.outline_parents(entries)
    closed = set(toc_pages) | set(range(1, front))  # contents pages and the cover before the printed contents
    section_of: dict[int, int] = {}  # ToC entry -> the section its heading opened
    headings: list[Heading] = []
    sections: list[Section] = []
    styles: list[tuple | None] = []  # each section's heading style (hd.level_style)
    for kind, obj in flow:
        if kind == "head":
            lvl, src = next(levels)
            entry = next(named)
            h = hd.make_heading(obj, lvl, src)  # type: ignore[arg-type]
            headings.append(h)
            parent = next((j for j in range(len(sections) - 1, -1, -1) if sections[j].level < lvl
                           and (sections[j].page not in closed or sections[j].page == h.page)), None)
            if src == "outline" and entry is not None:
                above = toc_parent[entry]
                parent = section_of.get(above) if above is not None else None
                if parent is not None and sections[parent].level >= lvl:
                    parent = None
                section_of[entry] = len(sections)
            style = hd.level_style(obj, h.size)  # type: ignore[arg-type]
            # the ToC placed none of them (an unlabelled entry of its top stays there: "Signatures" beside a part)
            if src != "outline" and hd.division(h.text):
                parent = None  # a part, an exhibit: a division of the whole document, in no section of another
            elif src != "outline" or (parent is None and hd.label_kind(h.text) is not None):
                label = _label_parent(sections, h, closed, parent)
                if label is not None:  # (its level stays: the headings after it are placed by theirs)
                    parent = label
                sibling = _sibling(sections, styles, h, style, closed) if src != "outline" else None
                if sibling is not None:
                    parent = sections[sibling].parent
            styles.append(style)
            sections.append(Section(h.text, lvl, h.page, h, parent=parent))
            continue
        if not sections:
            sections.append(Section("", 1, obj.page, None))  # type: ignore[attr-defined]
            styles.append(None)
        sections[-1].items.append(obj)  # type: ignore[arg-type]
    return headings, sections


def _sibling(sections: list[Section], styles: list[tuple | None], h: Heading, style: tuple, closed: set[int]
             ) -> int | None:
    """The open section whose heading has ``h``'s style and level (:func:`~htmlrag.superrag.parse.headings.
    level_style`): ``h`` is its sibling, in the section it is in, whatever section the levels or the labels chose.
    A section the contents placed at the top is no such sibling: there its contents' parent may be no heading of
    the text, which says nothing of headings of its style that they do not name (Lockheed Martin's "ITEM 4(a).
    ...", the style of the officers' names under it; the officers followed it out of Part I). One the contents
    placed in a section is (JPMorgan's "Nonrecurring fair value changes" follows its sibling into Note 2).
    The open sections are the last one and those it lies in, searched up to one whose label ranks above ``h``'s
    (:func:`~htmlrag.superrag.parse.headings.nesting_rank`), which holds ``h`` by its label (Boeing's "Strategic
    Partnership with Embraer" stays in Note 3, though Note 3 lies in a section of its style), or one a contents
    page or the cover closed. Levels come one style at a time and the label rules nest a heading in a section of
    a deeper level (:func:`_label_parent`), so the next heading of that style, placed by its level, took the last
    sub-heading before it as its parent (Boeing 2018's Notes 4 to 24, a chain twenty notes deep; General Mills
    2020's notes under the last bold-italic sub-heading) or no section at all (General Mills 2019's Notes 2 to 19,
    its outline's items and their notes all at level 1; issue 35, seventeenth round)."""
    rank = hd.nesting_rank(h.text)
    j = len(sections) - 1 if sections else None
    while j is not None and hd.nesting_rank(sections[j].title) >= rank \
            and not (sections[j].page in closed and sections[j].page != h.page):
        if styles[j] == style and sections[j].level == h.level \
                and not (sections[j].heading.source == "outline" and sections[j].parent is None):
            return j
        j = sections[j].parent
    return None


#: Points within which a heading counts as set no larger than a section's heading.
SAME_SIZE_PT = 0.25


def _label_parent(sections: list[Section], h: Heading, closed: set[int], usual: int | None = None) -> int | None:
    """The section a heading nests in by its label, or None (keep the parent the levels or the ToC give).

    Scanning back to the nearest section of the heading's level or a smaller one: when that section's structural
    label ranks above the heading's (:func:`~htmlrag.superrag.parse.headings.label_kind`: part, item, note,
    lettered sub-item, then none), it, unless it is of the same level and the heading is set larger; when it is of
    the same level and set clearly larger (:func:`_set_above`), it; when it is a sibling of the same level nested
    so itself, the section it is in, if that one's label ranks above the heading's or it is set clearly larger,
    and it opened after ``usual`` (the parent the levels give); a section of a cover or contents page
    (``closed``, :func:`_sections`) holds nothing after its page. Passing sections of a deeper level on the way, the
    first whose label ranks above the heading's, the heading set no larger than it (:func:`_label_below`).

    Fonts and the ToC give headings levels one style or one entry at a time: NVIDIA sets "Note 1 - Summary of
    Significant Accounting Policies" in 9.9 pt and the note's "Basis of Presentation" in 9.0 pt, and the two
    styles, each placed by its distance to another style the contents name, came out siblings; a part's heading
    that the contents do not list (or list as "Part I", a title the text's "PART I — FINANCIAL INFORMATION" does
    not match) held none of the items they list (NVIDIA, Apple; issue 35). Levels stay as given (a part and its
    items may share one): raising the nested heading's level made the headings after it, placed by their own
    levels, its siblings (3M's MD&A sections left "Item 7." for the part). A sibling's parent from the ToC may be
    far back: Pfizer's risk factor "Research and Development" takes the ToC entry of Item 1's sub-section, and the
    risk factors after it followed it there until ``usual`` bounded the rule."""
    rank = hd.nesting_rank(h.text)
    for j in range(len(sections) - 1, -1, -1):
        s = sections[j]
        if s.level > h.level:
            if _label_below(s, h, rank) and not (s.page in closed and s.page != h.page):
                return j
            continue
        if s.heading is None or (s.page in closed and s.page != h.page):
            return None
        if hd.nesting_rank(s.title) < rank:
            return j if s.level < h.level or h.size <= s.heading.size + SAME_SIZE_PT else None
        if _set_above(s, h):
            return j
        if s.level == h.level and s.parent is not None and (hd.nesting_rank(sections[s.parent].title) < rank
                                                            or _set_above(sections[s.parent], h)) \
                and (usual is None or s.parent > usual):
            return s.parent  # a sibling nested by label or size: in the same section ("Item 2." after "Item 1.")
        return None
    return None


def _label_below(s: Section, h: Heading, rank: int) -> bool:
    """Whether ``h``, a heading its font placed at a level above section ``s`` (a smaller level number), nests in
    ``s`` all the same: ``s``'s label ranks above ``h``'s (``rank``,
    :func:`~htmlrag.superrag.parse.headings.nesting_rank`) and ``h`` is set no larger than ``s``'s heading (within
    :data:`SAME_SIZE_PT`). Levels from fonts are given one style at a time, by rank: a style of capitals can rank
    above the style of "Item 7." at the same size and weight, and Corning's MD&A sections ("OVERVIEW", "RESULTS OF
    OPERATIONS", set like the item) left the item for the part before it, the item holding nothing (issue 35,
    twelfth round)."""
    return (h.source == "font" and s.heading is not None and hd.nesting_rank(s.title) < rank
            and h.size <= s.heading.size + SAME_SIZE_PT)


#: How much larger (points) a section's heading is set than a heading of its level that then nests in it.
SET_ABOVE_PT = 1.0


def _set_above(s: Section, h: Heading) -> bool:
    """Whether ``h``, a heading its font placed (not the contents, not its numbering), is set at least
    :data:`SET_ABOVE_PT` smaller than the heading of ``s``, a section of its level: a smaller heading under a
    larger one is its sub-heading, whatever
    level the styles were given one at a time (JPMorgan's segment headings, 12 pt capitals, take the contents'
    level 4, and the 10 pt sub-headings under them came out at 4 by their distance to another style). A heading
    whose label ranks above that section's does not nest so: "PART I" stays out of a cover's larger company name
    (American Express, Johnson & Johnson)."""
    return (h.source == "font" and s.heading is not None and s.level == h.level
            and s.heading.size >= h.size + SET_ABOVE_PT and hd.nesting_rank(s.title) <= hd.nesting_rank(h.text))


def _title(meta_title: str, headings: list[Heading], stem: str) -> str:
    """The metadata title when it reads as one (>= 4 letters, more letters than digits), else the largest
    heading on the first heading's page, else the file name."""
    meta_title = meta_title.strip()
    letters = sum(c.isalpha() for c in meta_title)
    if letters >= 4 and letters >= sum(c.isdigit() for c in meta_title):
        return meta_title
    first = [h for h in headings if h.page == headings[0].page] if headings else []
    return max(first, key=lambda h: h.size).text if first else stem


def _segments(block: hd.Block, body: float, opts: ParseOptions, known: set[tuple[int, str]],
              cells: set[int] = frozenset()):
    """Heading/body runs of a block; leading lines matching a ToC/outline entry on this page are a heading, and
    the lines after them are read as any block's (Lockheed Martin's "ITEM 1. Business" under the outline's "PART
    I", in its block, was read as body text; issue 35, thirteenth round)."""
    out: list[tuple[str, list[Line]]] = []
    lines = block.lines
    while lines:
        k = next((k for k in range(min(3, len(lines)), 0, -1)
                  if (block.page, hd.normalise(" ".join(ln.text for ln in lines[:k]))) in known), 0)
        if not k:
            return out + hd.segment_block(hd.Block(lines), body, size_ratio=opts.size_ratio,
                                          max_words=opts.max_heading_words, cells=cells)
        out.append(("head", lines[:k]))
        lines = lines[k:]
    return out


def _page_units(p: _Page, tables: list[TableItem], figures: list[FigureItem]) -> list[object]:
    """Blocks, tables and figures of a page, with captions attached and covered lines removed."""
    lines = p.lines
    taken = set(p.drop)
    for t in p.tables:
        taken |= {i for i, ln in enumerate(lines) if inside(ln.bbox, t.bbox)}
    for f in p.figures:
        inner = {i for i, ln in enumerate(lines) if i not in taken and inside(ln.bbox, f.bbox)}
        f.text = _join([lines[i] for i in sorted(inner)])
        taken |= inner
    for t in p.tables:
        t.caption, used = _caption(t.bbox, lines, fig.TABLE_CAPTION, taken)
        taken |= used
        if t.caption:
            t.html = rows_to_html(t.rows, t.caption)
        t.index = len(tables)
        tables.append(t)
    for f in p.figures:
        f.caption, used = _caption(f.bbox, lines, fig.CAPTION, taken)
        taken |= used
        f.index = len(figures)
        figures.append(f)
    # a block is cut where a table or figure took lines from its middle: the lines above and below it are two
    # blocks (a heading over a table and the next heading under it, in one block of the producer, were one
    # heading run once the table's lines left; 3M's "Stock-Based Compensation Expense" and "Stock Option Program")
    covered = taken - set(p.drop)
    blocks: dict[tuple[int, int], list[Line]] = {}
    part: dict[int, int] = {}
    cut: set[int] = set()
    for i, ln in enumerate(lines):
        if i in covered:
            cut.add(ln.block)
        elif i not in taken:
            if ln.block in cut:
                cut.discard(ln.block)
                part[ln.block] = part.get(ln.block, 0) + 1
            blocks.setdefault((ln.block, part.get(ln.block, 0)), []).append(ln)
    units: list[object] = [hd.Block(sorted(b, key=lambda x: (round(x.bbox[1]), x.bbox[0]))) for b in blocks.values()]
    return units + list(p.tables) + list(p.figures)
