"""Question answering over PDFs: the example type whose pages are PDF files, and the local DOCBENCH-style
loader for ``../shared/data/pdf/sec-10-q``.

A :class:`PdfExample` holds PDF paths in ``pages``; :meth:`PdfExample.load_pages` returns each PDF as one
HTML page (:func:`htmlrag.superrag.to_html.pdf_to_html`: headings as ``<h1>``-``<h4>``, tables as tables),
so the HtmlRAG systems (clean -> block tree -> prune) take PDFs unchanged, and the SuperRAG graph systems
find the source document in the page's ``<meta>`` tags. The dataset hash (``env.json``) covers the PDF bytes.

Every PDF dataset fills the one example schema the same way: ``answers`` and ``long_answers`` hold the gold
answer; ``metadata["answer_groups"]`` holds its key items, one group each (:func:`htmlrag.docqa.items.gold_items`:
numbers, else key phrases, with what the question already says left out), which the ``evidence_*`` and
``answer_*`` metrics look for; ``metadata`` also holds the fields tables are split by (``type``, ``domain``,
...) and ``evidence`` (gold reference text for the judge, may be empty).
"""

from __future__ import annotations

import csv
import fnmatch
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.core.io import read_page
from htmlrag.data.schema import Example, check_unique_ids, sample_examples
from htmlrag.docqa.items import gold_items
from htmlrag.superrag.build.owners import owners
from htmlrag.superrag.to_html import pdf_to_html

log = logging.getLogger(__name__)


@dataclass
class PdfExample(Example):
    """An example whose ``pages`` are PDF files (``Path``); ``parse_cache`` is the on-disk parse cache folder."""

    parse_cache: str | None = None

    def load_pages(self) -> list[str | bytes]:
        """Each PDF as one HTML page (parsed once per process, and once per machine with ``parse_cache``)."""
        out: list[str | bytes] = []
        for p in self.pages:
            if isinstance(p, Path) and p.suffix.lower() == ".pdf":
                out.append(pdf_to_html(p, cache_dir=self.parse_cache))
            else:
                out.append(read_page(p) if isinstance(p, Path) else p)
        return out


def pdf_example(id: str, question: str, answer: str, pdfs: list[Path], metadata: dict[str, Any],
                parse_cache: str | None) -> PdfExample:
    """A :class:`PdfExample` with the gold answer's key items in ``metadata["answer_groups"]``."""
    kind, items = gold_items(question, answer)
    meta = {**metadata, "items_kind": kind, "answer_groups": [[i] for i in items]}
    return PdfExample(id=id, question=question, answers=[answer], long_answers=[answer], pages=list(pdfs),
                      metadata=meta, parse_cache=parse_cache)


_SEC_TYPES = {"multi-doc rag": "multi-doc", "single-doc single-chunk rag": "single-doc single-chunk",
              "single-doc multi-chunk rag": "single-doc multi-chunk"}

#: Columns every ``qna_data.csv`` must have (the others are read when present).
QNA_COLUMNS = ("Question", "Answer")


def pdf_files(folder: str | Path) -> list[Path]:
    """The PDF files of a folder, whatever the case of their suffix (``.pdf``, ``.PDF``), sorted by name."""
    d = Path(folder)
    return sorted((p for p in d.iterdir() if p.suffix.lower() == ".pdf" and p.is_file()), key=lambda p: p.name) \
        if d.is_dir() else []


def read_qna(csv_path: str | Path, required: tuple[str, ...] = QNA_COLUMNS) -> list[dict[str, str]]:
    """The rows of a ``qna_data.csv`` (UTF-8, a BOM allowed), each with every column of the header.

    Raises:
        InputError: ``<file>: <problem>``: not UTF-8 text, no header, a ``required`` column missing, or a row
            with fewer or more fields than the header (rows are numbered as in a spreadsheet: the header is
            row 1).
    """
    path = Path(csv_path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            table = list(reader)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r}); "
                         "save it as UTF-8") from None
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV file: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    table = [r for r in table if any(c.strip() for c in r)]  # blank lines are no rows
    if not table:
        raise InputError(f"{path}: empty (expected a header with {', '.join(required)})")
    header = [h.strip() for h in table[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{path}: no {missing[0]!r} column (the header has {', '.join(map(repr, header))})")
    out: list[dict[str, str]] = []
    for i, r in enumerate(table[1:]):
        if len(r) != len(header):
            hint = " (a field with a comma must be quoted)" if len(r) > len(header) else ""
            raise InputError(f"{path}: row {i + 2}: {len(r)} fields, the header has {len(header)}{hint}")
        out.append(dict(zip(header, r, strict=True)))
    return out


def match_source_docs(field: str | None, names: list[str], where: str) -> list[str]:
    """The file names (of ``names``) a question's ``Source Docs`` field names, in the order of ``names``.

    The field holds one or more patterns separated by commas, each stripped of spaces (empty: every file). A
    pattern that is a file name, or a file name without ``.pdf`` (any case), names that file literally (so the
    brackets of ``[draft] 2023 Q1 AAPL.pdf`` are no character class); else it is a glob (:mod:`fnmatch`,
    case-insensitive: ``*aapl*`` names ``2023 Q1 AAPL.pdf``). Every pattern must name at least one file.

    Raises:
        InputError: ``<where>: Source Docs <pattern> matches no filing`` (``where``: the CSV file and row).
    """
    patterns = [p.strip() for p in (field or "").split(",") if p.strip()] or ["*"]
    folded = [(n, n.casefold()) for n in names]
    chosen: set[str] = set()
    for pattern in patterns:
        key = pattern.casefold()
        hits = [n for n, f in folded if key in (f, f.removesuffix(".pdf"))]
        hits = hits or [n for n, f in folded if fnmatch.fnmatchcase(f, key)]
        if not hits:
            raise InputError(f"{where}: Source Docs {pattern!r} matches no filing")
        chosen.update(hits)
    return [n for n in names if n in chosen]


def company_of_docs(docs: list[str], owner: dict[str, str]) -> str:
    """The company of a question: the owners (:func:`htmlrag.superrag.build.owners.owners`) of the filings it
    names, joined with ``+``; ``?`` when a filing's name names no owner (``10-Q.pdf``)."""
    who = {owner.get(n, "") for n in docs}
    return "?" if "" in who or not who else "+".join(sorted(who))


def load_sec10q(root: str | Path, *, docs: list[str] | None = None, sample_size: int | None = None, seed: int = 0,
                parse_cache: str | None = None) -> list[PdfExample]:
    """The sec-10-q set (8 10-Q filings, 80 questions) in DOCBENCH style.

    Args:
        root: the folder holding ``qna_data.csv`` and ``docs/*.pdf``.
        docs: keep only questions whose filings (the ``Source Docs`` patterns, e.g. ``*AAPL*``, read by
            :func:`match_source_docs`) are all among these file names (None: all questions).
        sample_size: a deterministic sample of this many questions (None: all).
        seed: sampling seed.
        parse_cache: on-disk parse cache folder.

    Metadata: ``type`` (``table``/``text``, the Source Chunk Type), ``question_type`` (``multi-doc``,
    ``single-doc single-chunk``, ``single-doc multi-chunk``), ``scope`` (``single-doc``/``multi-doc``),
    ``domain`` (the company, ``AAPL``/``MSFT``: the owner of the filings' names,
    :func:`htmlrag.superrag.build.owners.owner_of`, as the SuperRAG bench reads it; several joined with ``+``;
    ``?`` for a file name that names none), ``docs`` (file names), ``evidence`` (empty: the set has none).
    Ids: ``sec10q-<row>`` (row number in the CSV, from 0). PDFs are found whatever the case of ``.pdf``.

    Raises:
        InputError: no ``qna_data.csv`` or no PDF, a malformed CSV (:func:`read_qna`), a ``Source Docs``
            pattern that names no filing (:func:`match_source_docs`), or an unknown name in ``docs``.
    """
    folder = Path(root)
    csv_path = folder / "qna_data.csv"
    if not csv_path.exists():
        raise InputError(f"{folder}: no qna_data.csv (expected the sec-10-q folder with qna_data.csv and docs/)")
    pdfs = pdf_files(folder / "docs")
    if not pdfs:
        raise InputError(f"{folder}/docs: no PDF files")
    names = {p.name: p for p in pdfs}
    owner = owners(names)
    if docs is not None:
        unknown = sorted(set(docs) - set(names))
        if unknown:
            raise InputError(f"{folder}/docs: no such filing {unknown[0]!r}; have {', '.join(sorted(names))}")
    rows = read_qna(csv_path)
    out: list[PdfExample] = []
    for i, row in enumerate(rows):
        pattern = (row.get("Source Docs") or "*").strip()
        matched = match_source_docs(pattern, list(names), f"{csv_path}: row {i + 2}")
        if docs is not None and not set(matched) <= set(docs):
            continue
        qtype = _SEC_TYPES.get((row.get("Question Type") or "").strip().lower(), (row.get("Question Type") or "?").strip())
        meta = {"dataset": "sec10q", "type": (row.get("Source Chunk Type") or "?").strip().lower(),
                "question_type": qtype, "scope": "multi-doc" if qtype == "multi-doc" else "single-doc",
                "domain": company_of_docs(matched, owner), "docs": matched, "source_docs": pattern, "evidence": ""}
        out.append(pdf_example(f"sec10q-{i:03d}", row["Question"].strip(), row["Answer"].strip(),
                               [names[n] for n in matched], meta, parse_cache))
    check_unique_ids(out, str(csv_path))
    if not out:
        raise InputError(f"{csv_path}: no question uses only the filings {docs}")
    return sample_examples(out, sample_size, seed)
