"""The name of a document, read from the document itself: its cover page, else its metadata title.

A chunk cut out of a filing rarely names the filer ("Net revenue 11,715 ..."), while questions do ("What was
Intel's net revenue ..."); the corpus puts this name in the text it embeds (see
:attr:`~htmlrag.superrag.build.corpus.CorpusConfig.doc_header`). The name comes from, in order:

1. **a labelled name on the first page**: the text line just above a parenthesised label that speaks of a name
   ("(Exact name of registrant as specified in its charter)", as SEC cover pages print it);
2. **the most prominent line of the first page**: the largest font size (ties: the higher line) among lines
   set at least 1.15 times the page's body size (:func:`~htmlrag.superrag.parse.lines.body_size`) that read as a name: 3+ letters, no more digits than letters, at most 12 words, not a form or report name
   ("FORM 10-Q", "Quarterly Report 2024 Q1"), not an agency line ("SECURITIES AND EXCHANGE COMMISSION",
   "Washington, D.C."), not "Table of Contents", not a check box;
3. **the PDF's metadata title** when it reads as a title (4+ letters, no more digits than letters: the SEC's
   accession numbers "0000320193-22-000070" and "04.01.2023 10Q Document" do not).

None of these: an empty name (the corpus then uses the owner read from the file name,
:func:`~htmlrag.superrag.build.owners.owner_of`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from htmlrag.superrag.parse.headings import normalise
from htmlrag.superrag.parse.lines import body_size
from htmlrag.superrag.parse.model import Line

_LABEL = re.compile(r"^\(.*\bname\b.*\)$", re.I)
_NOT_NAME = re.compile(r"""\b(?:form|report|filing|quarterly|annual|transition|contents|commission|washington|
    pursuant|securities\s+exchange\s+act|united\s+states)\b|^\W*\d{1,2}-?[qkf]\b""", re.I | re.X)
_MAX_WORDS = 12
_BIGGER = 1.15  # a prominent line is set at least this much larger than the page's body text


def _letters(text: str) -> int:
    return sum(c.isalpha() for c in text)


def reads_as_name(text: str) -> bool:
    """A line that can name a document (see the module docstring, rule 2)."""
    t = text.strip()
    letters = _letters(t)
    return (letters >= 3 and letters >= sum(c.isdigit() for c in t) and len(t.split()) <= _MAX_WORDS
            and not _NOT_NAME.search(t) and not _LABEL.match(t))


def labelled_name(lines: Sequence[Line]) -> str:
    """The line just above a parenthesised name label on the same page (rule 1), or ''."""
    for lab in sorted((ln for ln in lines if _LABEL.match(ln.text.strip())), key=lambda ln: (ln.page, ln.bbox[1])):
        height = max(lab.bbox[3] - lab.bbox[1], 1.0)
        above = [ln for ln in lines
                 if ln.page == lab.page and ln.bbox[3] <= lab.bbox[1] + 1 and lab.bbox[1] - ln.bbox[3] < 4 * height
                 and min(ln.bbox[2], lab.bbox[2]) > max(ln.bbox[0], lab.bbox[0]) and _letters(ln.text) >= 3]
        if above:
            return max(above, key=lambda ln: ln.bbox[3]).text.strip()
    return ""


def prominent_name(lines: Sequence[Line]) -> str:
    """The largest line that reads as a name and is set larger than the page's body text (rule 2; ties: the
    higher one), or ''."""
    body = body_size(lines) or 0.0
    names = [ln for ln in lines if ln.size >= body * _BIGGER and reads_as_name(ln.text)]
    if not names:
        return ""
    return min(names, key=lambda ln: (-round(ln.size, 1), ln.bbox[1])).text.strip()


def metadata_name(title: str) -> str:
    """The metadata title when it reads as one (rule 3), or ''."""
    t = title.strip()
    letters = _letters(t)
    return t if letters >= 4 and letters >= sum(c.isdigit() for c in t) else ""


def document_name(first_page: Sequence[Line], meta_title: str = "") -> str:
    """The document's name from its first page's lines and metadata title (see the module docstring)."""
    return labelled_name(first_page) or prominent_name(first_page) or metadata_name(meta_title)


def pdf_name(path: str) -> tuple[str, str]:
    """(metadata title, :func:`document_name`) of a PDF file, reading its first page the way
    :func:`~htmlrag.superrag.parse.document.parse_pdf` does (without parsing the rest)."""
    from htmlrag.superrag.parse.lines import page_lines
    from htmlrag.superrag.parse.pdfio import import_pymupdf, open_pdf

    pymupdf = import_pymupdf()
    doc, _ = open_pdf(path)
    try:
        meta = str((doc.metadata or {}).get("title") or "")
        flags = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_IMAGES
        first = page_lines(doc.load_page(0).get_text("dict", flags=flags), 1) if doc.page_count else []
    finally:
        doc.close()
    return meta, document_name(first, meta)


#: What a statement's running name adds to the company's: "GENERAL MILLS, INC. AND SUBSIDIARIES".
_GROUP = re.compile(r"\s+and\s+(?:its\s+)?(?:consolidated\s+)?subsidiaries$", re.I)


def name_key(text: str) -> str:
    """A name compared as headings are (:func:`~htmlrag.superrag.parse.headings.normalise`: without case, spacing
    or punctuation), without a leading "The" or a trailing "and (its) (consolidated) subsidiaries": "GENERAL
    MILLS, INC. AND SUBSIDIARIES" and "General Mills, Inc." are one name."""
    return normalise(re.sub(r"^\W*the\s+", "", _GROUP.sub("", " ".join(text.split())), flags=re.I))


def is_name(text: str, name: str) -> bool:
    """Whether ``text`` says nothing but the document's ``name`` (:func:`name_key`); never for an empty name."""
    key = name_key(name)
    return bool(key) and name_key(text) == key

