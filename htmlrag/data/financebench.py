"""FinanceBench (Islam et al. 2023, arXiv 2311.11944), its open-source sample, in the sec-10-q layout.

The sample is 150 questions on 10-K, 10-Q, 8-K filings and earnings releases of some 40 US companies, each with
a human-written answer and its evidence (text, document, 0-based page number, the page's text), and the
filings as PDFs made by several producers (EDGAR's converter, wkhtmltopdf, the companies' own). The
repository (:data:`FB_REPO`) has no licence file; the paper releases the sample for research use and the PDFs are
public SEC filings.

:func:`build_financebench` writes it in the layout of ``sec-10-q`` (``docs/<doc_name>.pdf``,
``qna_data.csv``) so that everything that reads that layout (``scripts/bench_superrag.py --data``, the
``sec10q`` loader) reads it. The owner of each filing comes from its file name (``PFIZER_2023Q2_10Q.pdf`` ->
``PFIZER``, :func:`htmlrag.superrag.build.owners.owner_of`). Only the forms asked for are kept (default 10-K
and 10-Q: the periodic filings).

Our evidence metrics find a question's gold items (:func:`htmlrag.docqa.items.gold_items`: the numbers of its
answer, else its key phrases) in the retrieved text. Many FinanceBench answers are computed ("0.66", a ratio
of two figures of the statements) or judgements ("No, ..."), whose items no page holds, so no retriever could
score on them. ``qna_data.csv`` therefore holds the questions whose gold items are found (recall >= 0.5, the
benchmark's hit) in the full text of their own evidence pages, as FinanceBench gives them; ``qna_all.csv``
holds every question of the kept forms, with ``Answer In Evidence`` yes/no. The rule reads only the
dataset's own answer and evidence, never a retriever's output.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.core.io import place_file

#: The repository and the commit every file is read from.
FB_REPO = "patronus-ai/financebench"
FB_COMMIT = "cc39aeb4afdf33909ee1412188bf89035950c2eb"
FB_RAW = f"https://raw.githubusercontent.com/{FB_REPO}/{FB_COMMIT}"
QUESTIONS = "data/financebench_open_source.jsonl"
DOCUMENTS = "data/financebench_document_information.jsonl"
#: SHA-256 and size of the two JSONL files at :data:`FB_COMMIT` (pinned: the question set cannot change under us).
PINNED = {QUESTIONS: ("a5a2aa673e573e55675fc3c0f9aa38c1cf59d2abc91edb077534f71f10a71877", 929848),
          DOCUMENTS: ("1c69127783879de8cdadb159d2181f39bc3123b8e0ebf74031c3969d69189575", 88781)}
#: Document types kept by default (FinanceBench's ``doc_type``: 10k, 10q, 8k, Earnings).
FORMS = ("10k", "10q")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_. -]{0,200}(?<![. ])")
COLUMNS = ["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer", "FinanceBench Id",
           "Document Type", "Evidence Pages"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path}: missing (FinanceBench's {path.name} at {FB_RAW})")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}: line {n} is not JSON ({getattr(exc, 'msg', exc)})") from exc
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {n} is not a JSON object")
        rows.append(row)
    return rows


def _doc_types(downloads: Path) -> dict[str, str]:
    out = {}
    for row in _jsonl(downloads / DOCUMENTS):
        if "doc_name" not in row or "doc_type" not in row:
            raise InputError(f"{downloads / DOCUMENTS}: a line without doc_name/doc_type: {sorted(row)}")
        out[str(row["doc_name"])] = str(row["doc_type"]).lower()
    return out


def selected(downloads: Path, forms: tuple[str, ...] = FORMS) -> list[dict[str, Any]]:
    """The questions on documents of ``forms`` (in the file's order), each checked for the fields used."""
    types = _doc_types(downloads)
    keep = {f.lower() for f in forms}
    out = []
    for row in _jsonl(downloads / QUESTIONS):
        missing = [k for k in ("financebench_id", "doc_name", "question", "answer", "evidence") if k not in row]
        if missing:
            raise InputError(f"{downloads / QUESTIONS}: question {row.get('financebench_id', '?')} lacks {missing}")
        doc = str(row["doc_name"])
        if not _SAFE_NAME.fullmatch(doc):  # it names files written under the dataset folder
            raise InputError(f"{downloads / QUESTIONS}: question {row['financebench_id']} names document {doc!r}, "
                             "not a plain file name (letters, digits, '_', '-', '.', ' ')")
        if doc not in types:
            raise InputError(f"{downloads / QUESTIONS}: question {row['financebench_id']} names document {doc!r}, "
                             f"which {DOCUMENTS} does not list")
        if types[doc] in keep:
            out.append({**row, "_type": types[doc]})
    return out


def financebench_pdfs(downloads: Path, forms: tuple[str, ...] = FORMS) -> list[tuple[str, str]]:
    """The PDFs of the documents the kept questions name: ``(url, path under the downloads folder)`` each."""
    from urllib.parse import quote

    docs = dict.fromkeys(str(q["doc_name"]) for q in selected(downloads, forms))
    return [(f"{FB_RAW}/pdfs/{quote(d)}.pdf", f"pdfs/{d}.pdf") for d in docs]


def _evidence(row: dict[str, Any]) -> tuple[list[int], str]:
    """The 1-based pages of a question's evidence in its own document, and those pages' text."""
    pages, texts = [], []
    for ev in row["evidence"] or []:
        if str(ev.get("evidence_doc_name", row["doc_name"])) != str(row["doc_name"]):
            continue
        if isinstance(ev.get("evidence_page_num"), int):
            pages.append(ev["evidence_page_num"] + 1)
        texts.append(str(ev.get("evidence_text_full_page") or ev.get("evidence_text") or ""))
    return sorted(set(pages)), "\n".join(texts)


def build_financebench(downloads: Path, out: Path, *, forms: tuple[str, ...] = FORMS, link: bool = False) -> dict[str, int]:
    """Write ``out/docs/*.pdf``, ``out/qna_data.csv`` and ``out/qna_all.csv`` from the fetched files in
    ``downloads`` (``data/*.jsonl``, ``pdfs/<doc_name>.pdf``); see the module docstring. The PDFs are copied,
    or hard-linked with ``link`` (a copy where the file system cannot link); ``downloads`` is never emptied,
    so a build that stops keeps every fetched file.

    Returns:
        ``{"questions": kept questions, "checkable": rows of qna_data.csv, "documents": PDFs written}``.

    Raises:
        InputError: a file is missing or a line is malformed (named).
    """
    from htmlrag.docqa.items import gold_items, item_recall
    from htmlrag.superrag.build.owners import owner_glob

    rows = selected(downloads, forms)
    (out / "docs").mkdir(parents=True, exist_ok=True)
    docs: set[str] = set()
    table_all, table = [], []
    for row in rows:
        doc = str(row["doc_name"])
        pdf = downloads / "pdfs" / f"{doc}.pdf"
        if doc not in docs:  # each filing once (later questions on it find it written)
            if not pdf.is_file():
                raise InputError(f"{pdf}: missing (question {row['financebench_id']} is on {doc})")
            with pdf.open("rb") as f:
                head = f.read(1024)
            if b"%PDF-" not in head:  # an error page or a Git LFS pointer saved under the PDF's name
                raise InputError(f"{pdf}: not a PDF (it starts {head[:40]!r}; question {row['financebench_id']} "
                                 "is on it); delete it and run the download again")
            place_file(pdf, out / "docs" / pdf.name, link=link)
            docs.add(doc)
        pages, page_text = _evidence(row)
        question, answer = str(row["question"]).strip(), str(row["answer"]).strip()
        _, items = gold_items(question, answer)
        ok = bool(items) and bool(page_text) and item_recall(items, page_text) >= 0.5
        rec = {"Question": question, "Source Docs": owner_glob(pdf.name), "Question Type": row.get("question_type") or "",
               "Source Chunk Type": "", "Answer": answer, "FinanceBench Id": row["financebench_id"],
               "Document Type": row["_type"], "Evidence Pages": " ".join(map(str, pages))}
        table_all.append({**rec, "Answer In Evidence": "yes" if ok else "no"})
        if ok:
            table.append(rec)
    for name, data, cols in (("qna_data.csv", table, COLUMNS), ("qna_all.csv", table_all, [*COLUMNS, "Answer In Evidence"])):
        with (out / name).open("w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(data)
    return {"questions": len(rows), "checkable": len(table), "documents": len(docs)}
