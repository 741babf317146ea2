"""Layout parsers from PyPI (no model downloads) and the docling ground truth, for ``scripts/bench_parse.py``.

Run with the Python of a SEPARATE virtual environment (never ours), e.g.::

    python3 -m venv .venv-parse-peers
    .venv-parse-peers/bin/pip install pymupdf4llm pdfplumber pypdf pdfminer.six pypdfium2 docling-core
    .venv-parse-peers/bin/python -P scripts/peers/parse_peers.py PARSER OUT.jsonl PDF...

``PARSER`` is one of ``pymupdf4llm``, ``pdfplumber``, ``pypdf``, ``pdfminer``, ``pypdfium2``, or ``truth``
(then the arguments are docling JSON files). One JSON line per input: ``{"path", "seconds", "text",
"headings", "tables", "error"}`` where ``text`` is the reading-order text, ``headings`` the heading texts the
parser marks (empty for parsers that mark none), ``tables`` a list of tables as rows of cell strings (empty
for parsers without table extraction). Errors are caught per file and reported.
"""

from __future__ import annotations

import json
import re
import sys
import time
import traceback

_MD_HEAD = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_MD_SEP = re.compile(r"^\s*\|?\s*:?-{3,}")


def _markdown(md: str) -> tuple[str, list[str], list[list[list[str]]]]:
    """Text, headings and pipe tables of a Markdown page (pymupdf4llm's output)."""
    text: list[str] = []
    heads: list[str] = []
    tables: list[list[list[str]]] = []
    cur: list[list[str]] | None = None
    for line in md.splitlines():
        row = _MD_ROW.match(line)
        if row:
            if _MD_SEP.match(line):
                continue
            cells = [re.sub(r"<br\s*/?>", " ", c).strip() for c in row.group(1).split("|")]
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(cells)
            text.append(" ".join(cells))
            continue
        cur = None
        h = _MD_HEAD.match(line)
        if h:
            t = re.sub(r"[*_`]+", "", h.group(2)).strip()
            heads.append(t)
            text.append(t)
        else:
            text.append(re.sub(r"[*_`#]+", "", line))
    return "\n".join(text), heads, tables


def _pymupdf4llm(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    import pymupdf4llm

    return _markdown(pymupdf4llm.to_markdown(path, show_progress=False))


def _pdfplumber(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    import pdfplumber

    texts, tables = [], []
    with pdfplumber.open(path) as pdf:
        for page in pdf.pages:
            texts.append(page.extract_text() or "")
            for t in page.extract_tables():
                tables.append([[c or "" for c in r] for r in t])
    return "\n".join(texts), [], tables


def _pypdf(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    from pypdf import PdfReader

    return "\n".join(p.extract_text() or "" for p in PdfReader(path).pages), [], []


def _pdfminer(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    from pdfminer.high_level import extract_text

    return extract_text(path), [], []


def _pypdfium2(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        return "\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf))), [], []
    finally:
        pdf.close()


def _truth(path: str) -> tuple[str, list[str], list[list[list[str]]]]:
    """The docling document's body in reading order (page furniture left out), its section headers and
    title, and its tables as grids of cell texts."""
    from docling_core.types.doc import DoclingDocument, SectionHeaderItem, TableItem, TextItem, TitleItem

    doc = DoclingDocument.load_from_json(path)
    text: list[str] = []
    heads: list[str] = []
    tables: list[list[list[str]]] = []
    for item, _level in doc.iterate_items():
        if isinstance(item, TableItem):
            grid = [[c.text for c in row] for row in item.data.grid]
            tables.append(grid)
            text += [" ".join(r) for r in grid]
        elif isinstance(item, TextItem):
            if isinstance(item, (SectionHeaderItem, TitleItem)):
                heads.append(item.text)
            text.append(item.text)
    return "\n".join(text), heads, tables


PARSERS = {"pymupdf4llm": _pymupdf4llm, "pdfplumber": _pdfplumber, "pypdf": _pypdf, "pdfminer": _pdfminer,
           "pypdfium2": _pypdfium2, "truth": _truth}


def main(argv: list[str]) -> int:
    name, out_file, paths = argv[0], argv[1], argv[2:]
    fn = PARSERS[name]
    with open(out_file, "w", encoding="utf-8") as out:
        for path in paths:
            row: dict = {"path": path, "parser": name}
            t0 = time.perf_counter()
            try:
                row["text"], row["headings"], row["tables"] = fn(path)
            except Exception as exc:  # one bad file must not stop the others
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["trace"] = traceback.format_exc(limit=3)
            row["seconds"] = time.perf_counter() - t0
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
