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


def load_sec10q(root: str | Path, *, docs: list[str] | None = None, sample_size: int | None = None, seed: int = 0,
                parse_cache: str | None = None) -> list[PdfExample]:
    """The sec-10-q set (8 10-Q filings, 80 questions) in DOCBENCH style.

    Args:
        root: the folder holding ``qna_data.csv`` and ``docs/*.pdf``.
        docs: keep only questions whose filings (the ``Source Docs`` pattern, e.g. ``*AAPL*``) are all among
            these file names (None: all questions).
        sample_size: a deterministic sample of this many questions (None: all).
        seed: sampling seed.
        parse_cache: on-disk parse cache folder.

    Metadata: ``type`` (``table``/``text``, the Source Chunk Type), ``question_type`` (``multi-doc``,
    ``single-doc single-chunk``, ``single-doc multi-chunk``), ``scope`` (``single-doc``/``multi-doc``),
    ``domain`` (the company, ``AAPL``/``MSFT``), ``docs`` (file names), ``evidence`` (empty: the set has none).
    Ids: ``sec10q-<row>`` (row number in the CSV, from 0).
    """
    folder = Path(root)
    csv_path = folder / "qna_data.csv"
    if not csv_path.exists():
        raise InputError(f"{folder}: no qna_data.csv (expected the sec-10-q folder with qna_data.csv and docs/)")
    pdfs = sorted((folder / "docs").glob("*.pdf"))
    if not pdfs:
        raise InputError(f"{folder}/docs: no PDF files")
    names = {p.name: p for p in pdfs}
    if docs is not None:
        unknown = sorted(set(docs) - set(names))
        if unknown:
            raise InputError(f"{folder}/docs: no such filing {unknown[0]!r}; have {', '.join(sorted(names))}")
    with csv_path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out: list[PdfExample] = []
    for i, row in enumerate(rows):
        pattern = (row.get("Source Docs") or "*").strip()
        matched = [n for n in sorted(names) if fnmatch.fnmatch(n, pattern)]
        if not matched:
            raise InputError(f"{csv_path}: row {i + 2}: Source Docs {pattern!r} matches no filing")
        if docs is not None and not set(matched) <= set(docs):
            continue
        qtype = _SEC_TYPES.get((row.get("Question Type") or "").strip().lower(), (row.get("Question Type") or "?").strip())
        companies = sorted({n.split()[-1].removesuffix(".pdf") for n in matched})
        meta = {"dataset": "sec10q", "type": (row.get("Source Chunk Type") or "?").strip().lower(),
                "question_type": qtype, "scope": "multi-doc" if qtype == "multi-doc" else "single-doc",
                "domain": "+".join(companies), "docs": matched, "source_docs": pattern, "evidence": ""}
        out.append(pdf_example(f"sec10q-{i:03d}", row["Question"].strip(), row["Answer"].strip(),
                               [names[n] for n in matched], meta, parse_cache))
    check_unique_ids(out, str(csv_path))
    if not out:
        raise InputError(f"{csv_path}: no question uses only the filings {docs}")
    return sample_examples(out, sample_size, seed)
