"""A tiny DOCBENCH-layout dataset made in the test (two generated PDFs, five questions), and the overrides
that point PDF-dataset experiments at it (the analogue of "hub datasets -> the sample pages")."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

from htmlrag.testing import pdfs as mk

QUESTIONS = {
    0: [
        {"question": "Which region had revenue of 7,890?", "answer": "The South region had revenue of 7,890.",
         "type": "multimodal-t", "evidence": "Table 1: Revenue by region. North 1,234; South 7,890."},
        {"question": "What does the company expect for the trend?", "answer": "It expects the trend to continue next year.",
         "type": "text-only", "evidence": "the company expects the trend to continue next year"},
        {"question": "What does Figure 1 show?", "answer": "Widget sales chart", "type": "multimodal-f",
         "evidence": "Figure 1: Widget sales chart"},
        {"question": "How many units did the North region sell?", "answer": "56 units", "type": "multimodal-t",
         "evidence": "North 1,234 56"},
    ],
    50: [
        {"question": "Which chapter comes after Methods?", "answer": "Results", "type": "meta-data",
         "evidence": "Contents: Introduction, Methods, Results, Discussion"},
    ],
}


def tiny_docbench(root: Path) -> Path:
    """Write the dataset under ``root`` (folders ``0/`` and ``50/``) and return ``root``."""
    for n, qs in QUESTIONS.items():
        d = root / str(n)
        d.mkdir(parents=True, exist_ok=True)
        if n == 0:
            mk.report_pdf(d / "report.pdf")
        else:
            mk.toc_pdf(d / "contents.pdf")
        (d / f"{n}_qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    return root


def _session_folder(prefix: str) -> Path:
    """A temporary folder removed when the test process ends (one per xdist worker)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.lru_cache(maxsize=1)
def shared_tiny_docbench() -> Path:
    """One copy per test process (in a temporary folder)."""
    return tiny_docbench(_session_folder("tiny-docbench-"))


@functools.lru_cache(maxsize=1)
def shared_parse_cache() -> Path:
    return _session_folder("superrag-parse-")


def offline_pdf_overrides() -> list[str]:
    """Run a PDF-dataset experiment here in seconds: the tiny DOCBENCH set, the hashing embedder and numpy
    vectors for the graph corpus (the HtmlRAG systems keep their rankers)."""
    return ["dataset=docbench", f"dataset.loader.root={shared_tiny_docbench()}", "dataset.loader.docs=null",
            "docqa.corpus.embedding_model=hashing-256", "docqa.corpus.vector_backend=numpy", "judge=none",
            f"docqa.parse_cache={shared_parse_cache()}"]
