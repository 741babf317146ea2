"""Records of a parsed PDF: lines, paragraphs, headings, sections, tables, figures and the table of contents.

All coordinates are PDF points (1/72 inch) in the page's own space, origin top-left, as PyMuPDF reports them.
Page numbers are **physical** and 1-based (the first page of the file is page 1) unless a field says
``printed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BBox = tuple[float, float, float, float]


@dataclass
class Line:
    """One visual line of text: spans that share a baseline inside one PyMuPDF block.

    Attributes:
        page: physical page (1-based).
        bbox: (x0, y0, x1, y1) in points.
        text: the line's text, whitespace collapsed.
        size: dominant font size in points (the size that covers most characters).
        bold: every non-space character is set in a bold face.
        italic: every non-space character is set in an italic face.
        block: index of the PyMuPDF block on its page (lines of one block form a paragraph candidate).
        underline: a drawn rule runs under the whole line and no further
            (:func:`~htmlrag.superrag.parse.lines.mark_underlined`).
        run_in: the bold start of a row whose body text runs on after it in the same row, split from it
            (:func:`~htmlrag.superrag.parse.lines.page_lines`).
    """

    page: int
    bbox: BBox
    text: str
    size: float
    bold: bool
    block: int
    italic: bool = False
    underline: bool = False
    run_in: bool = False


@dataclass
class Paragraph:
    """Body text: consecutive lines of one block, in reading order."""

    page: int
    bbox: BBox
    text: str


@dataclass
class Heading:
    """A detected heading. ``level`` is 1 for the top level of this document, 2 below it, and so on."""

    page: int
    bbox: BBox
    text: str
    level: int
    size: float
    source: str = "font"  # "font", "numbering" or "outline": what decided the level


@dataclass
class TableItem:
    """A table as rows of cells; ``html`` is a plain ``<table>`` the HTML pruners can take."""

    page: int
    bbox: BBox
    rows: list[list[str]]
    html: str
    caption: str = ""
    index: int = 0  # order of the table in the document (0-based)


@dataclass
class FigureItem:
    """A picture region with its caption and the text printed inside it."""

    page: int
    bbox: BBox
    caption: str = ""
    text: str = ""
    index: int = 0


@dataclass
class TocEntry:
    """One entry of the table of contents.

    Attributes:
        level: 1 for top entries.
        title: entry text.
        printed_page: the page label printed in the ToC (``"12"``, ``"iv"``), empty for outline entries.
        page: physical page (1-based) it points to, or None if it could not be mapped.
        top: where on that page an outline entry points (points from the page's top), None when it names no
            point (printed contents, an outline entry without one).
    """

    level: int
    title: str
    printed_page: str
    page: int | None
    top: float | None = None


@dataclass
class Section:
    """A heading and the content that follows it up to the next heading of any level.

    ``items`` keeps paragraphs, tables and figures in reading order. ``parent`` is the index of the
    enclosing section in :attr:`ParsedDocument.sections` (None for top-level sections).
    """

    title: str
    level: int
    page: int
    heading: Heading | None
    items: list[Paragraph | TableItem | FigureItem] = field(default_factory=list)
    parent: int | None = None

    @property
    def paragraphs(self) -> list[Paragraph]:
        return [i for i in self.items if isinstance(i, Paragraph)]


@dataclass
class PageInfo:
    """Per-page facts. ``printed`` is the printed page label found in a header/footer (or the PDF's label)."""

    number: int
    width: float
    height: float
    chars: int
    scanned: bool = False
    printed: str = ""


@dataclass
class ParsedDocument:
    """Everything the layout parser recovered from one PDF."""

    path: str
    doc_id: str
    title: str
    pages: list[PageInfo]
    headings: list[Heading]
    sections: list[Section]
    tables: list[TableItem]
    figures: list[FigureItem]
    toc: list[TocEntry]
    toc_source: str  # "outline", "pages" or "none"
    warnings: list[str] = field(default_factory=list)
    page_texts: list[str] = field(default_factory=list)  # each page's plain text (no layout), for flat baselines
    metadata: dict[str, str] = field(default_factory=dict)  # the PDF's info dictionary (title, author, subject...)
    name: str = ""  # the document's name from its cover page or metadata (parse.names.document_name), '' if none

    @property
    def page_count(self) -> int:
        return len(self.pages)
