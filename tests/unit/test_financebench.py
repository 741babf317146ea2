"""FinanceBench in the sec-10-q layout (``htmlrag.data.financebench``, ``htmlrag-data download financebench``):
the kept forms, the questions whose answer can be found on their own evidence pages, the files every reader of
the layout reads (the harness's loader, the SuperRAG bench), bad input named, and the download through a local
HTTP stub (never the network)."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.data import download as dl
from htmlrag.data.financebench import DOCUMENTS, QUESTIONS, build_financebench, financebench_pdfs
from tests.helpers.http_stub import Stub, StubFile

INCOME = "Net sales 1,234 1,100\nCost of sales 800 700\nOperating income 434 400"


def _pdf(path: Path, pages: list[str]) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_text((72, 72), text)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path.read_bytes()


def _question(i: int, doc: str, question: str, answer: str, page: int, page_text: str) -> dict:
    return {"financebench_id": f"financebench_id_{i:05d}", "company": doc.split("_")[0], "doc_name": doc,
            "question_type": "metrics-generated", "question": question, "answer": answer,
            "evidence": [{"evidence_text": page_text[:40], "evidence_doc_name": doc, "evidence_page_num": page,
                          "evidence_text_full_page": page_text}]}


def _fixture(root: Path) -> dict[str, bytes]:
    """Two 10-Q/10-K filings and an 8-K of ACME with four questions; returns {relative path: bytes}."""
    files = {
        "pdfs/ACME_2023Q2_10Q.pdf": _pdf(root / "pdfs/ACME_2023Q2_10Q.pdf", ["ACME Corp. Form 10-Q", INCOME]),
        "pdfs/ACME_2022_10K.pdf": _pdf(root / "pdfs/ACME_2022_10K.pdf", ["ACME Corp. Form 10-K", "Capital expenditure 57"]),
        "pdfs/ACME_2023_8K_dated-2023-05-30.pdf": _pdf(root / "pdfs/ACME_2023_8K_dated-2023-05-30.pdf", ["8-K"]),
    }
    questions = [
        _question(1, "ACME_2023Q2_10Q", "What were ACME's net sales in Q2 2023?", "$1,234 million", 1, INCOME),
        # computed: the ratio is on no page, so no retrieved text could hold it
        _question(2, "ACME_2023Q2_10Q", "What is ACME's operating margin in Q2 2023?", "35.2%", 1, INCOME),
        _question(3, "ACME_2022_10K", "What was ACME's FY2022 capital expenditure?", "$57", 1, "Capital expenditure 57"),
        _question(4, "ACME_2023_8K_dated-2023-05-30", "Did ACME file an 8-K?", "Yes", 0, "8-K"),
    ]
    docs = [{"doc_name": "ACME_2023Q2_10Q", "doc_type": "10q"}, {"doc_name": "ACME_2022_10K", "doc_type": "10k"},
            {"doc_name": "ACME_2023_8K_dated-2023-05-30", "doc_type": "8k"}]
    for rel, rows in ((QUESTIONS, questions), (DOCUMENTS, docs)):
        body = "".join(json.dumps(r) + "\n" for r in rows).encode()
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body)
        files[rel] = body
    return files


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_the_10k_and_10q_questions_in_the_sec10q_layout(tmp_path: Path) -> None:
    from htmlrag.data.pdfqa import load_sec10q
    from htmlrag.superrag.build.owners import owners

    _fixture(tmp_path / "dl")
    counts = build_financebench(tmp_path / "dl", tmp_path / "out")
    assert counts == {"questions": 3, "checkable": 2, "documents": 2}  # the 8-K is not a periodic filing
    assert sorted(p.name for p in (tmp_path / "out" / "docs").iterdir()) == ["ACME_2022_10K.pdf", "ACME_2023Q2_10Q.pdf"]
    rows = _rows(tmp_path / "out" / "qna_data.csv")
    assert [r["FinanceBench Id"] for r in rows] == ["financebench_id_00001", "financebench_id_00003"]
    assert rows[0]["Source Docs"] == "ACME_2023Q2_10Q.pdf" and rows[0]["Evidence Pages"] == "2"
    assert rows[0]["Answer"] == "$1,234 million" and rows[1]["Document Type"] == "10k"
    every = _rows(tmp_path / "out" / "qna_all.csv")
    assert [(r["FinanceBench Id"][-1], r["Answer In Evidence"]) for r in every] == [("1", "yes"), ("2", "no"), ("3", "yes")]
    # one company, whichever way each file writes its period
    assert set(owners(p.name for p in (tmp_path / "out" / "docs").iterdir()).values()) == {"ACME"}
    examples = load_sec10q(tmp_path / "out")
    assert [e.question for e in examples] == [r["Question"] for r in rows]
    assert all(len(e.pages) == 1 for e in examples)  # each question is scoped to its own filing
    # other forms when asked for
    assert build_financebench(tmp_path / "dl", tmp_path / "all", forms=("10k", "10q", "8k"))["questions"] == 4


def test_the_superrag_bench_reads_the_folder(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_superrag", Path(__file__).parents[2] / "scripts/bench_superrag.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    _fixture(tmp_path / "dl")
    build_financebench(tmp_path / "dl", tmp_path / "out")
    pdfs, rows = bench.load_sets([tmp_path / "out"])
    assert [r["_names"] for r in rows] == [["ACME_2023Q2_10Q.pdf"], ["ACME_2022_10K.pdf"]]
    assert len(pdfs) == 2


def test_bad_input_is_named(tmp_path: Path) -> None:
    _fixture(tmp_path / "dl")
    (tmp_path / "dl" / "pdfs" / "ACME_2022_10K.pdf").unlink()
    with pytest.raises(InputError, match=r"ACME_2022_10K\.pdf: missing \(question financebench_id_00003"):
        build_financebench(tmp_path / "dl", tmp_path / "out")
    q = tmp_path / "dl" / QUESTIONS
    q.write_text(q.read_text() + '{"financebench_id": "x", "doc_name": "NOPE_2020_10K", "question": "q", '
                 '"answer": "1", "evidence": []}\n')
    with pytest.raises(InputError, match="names document 'NOPE_2020_10K'"):
        build_financebench(tmp_path / "dl", tmp_path / "out")
    q.write_text(q.read_text() + "{not json\n")
    with pytest.raises(InputError, match=r"financebench_open_source\.jsonl: line 6 is not JSON"):
        build_financebench(tmp_path / "dl", tmp_path / "out")
    for bad in ("../../etc/passwd", "/abs", "a/b", ".hidden", "x.."):
        q.write_text(json.dumps({"financebench_id": "z", "doc_name": bad, "question": "q", "answer": "1",
                                 "evidence": []}) + "\n")
        with pytest.raises(InputError, match="not a plain file name"):
            build_financebench(tmp_path / "dl", tmp_path / "out")
    q.write_text('{"financebench_id": "y", "doc_name": "ACME_2022_10K"}\n')
    with pytest.raises(InputError, match=r"question y lacks \['question', 'answer', 'evidence'\]"):
        build_financebench(tmp_path / "dl", tmp_path / "out")


def _pinned(files: dict[str, bytes]) -> dl.Dataset:
    """The registry's FinanceBench entry with the question files pinned to the fixture's."""
    spec = dl.DATASETS["financebench"]
    return dataclasses.replace(spec, files=tuple(
        dataclasses.replace(r, sha256=hashlib.sha256(files[r.path]).hexdigest(), size=len(files[r.path]))
        for r in spec.files))


def _served(files: dict[str, bytes], delay: float = 0.0) -> dict[str, StubFile]:
    """The fixture's files at the paths the registry's URLs have on a mirror (``HTMLRAG_DATA_MIRROR``)."""
    base = dl.DATASETS["financebench"].files[0].url.rsplit("/data/", 1)[0]
    return {"/" + f"{base}/{rel}".split("://", 1)[1]: StubFile(body, delay=delay) for rel, body in files.items()}


def test_download_fetches_the_named_pdfs_builds_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _fixture(tmp_path / "src")
    served = _served(files)
    monkeypatch.setitem(dl.DATASETS, "financebench", _pinned(files))
    with Stub(served) as s:
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        root = dl.download("financebench", tmp_path / "data")
        fetched = sorted(p.rsplit("/", 1)[1] for p, _ in s.requests)
    assert fetched == ["ACME_2022_10K.pdf", "ACME_2023Q2_10Q.pdf", "financebench_document_information.jsonl",
                       "financebench_open_source.jsonl"]  # the 8-K's PDF is not fetched
    assert root == tmp_path / "data" / "pdf" / "financebench"
    assert len(_rows(root / "qna_data.csv")) == 2 and sorted(p.name for p in (root / "docs").iterdir()) == \
        ["ACME_2022_10K.pdf", "ACME_2023Q2_10Q.pdf"]
    assert dl.state(dl.DATASETS["financebench"], tmp_path / "data") == "verified"
    assert dl.verify(dl.DATASETS["financebench"], tmp_path / "data") == []
    assert [p for _, p in financebench_pdfs(tmp_path / "src")] == ["pdfs/ACME_2023Q2_10Q.pdf", "pdfs/ACME_2022_10K.pdf"]


def test_a_failed_build_keeps_the_fetched_files_and_the_rerun_fetches_nothing_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One filing arrives as an HTML error page: the build names it, installs nothing, and keeps every fetched
    file; once the page is replaced by the PDF, the rerun builds without a request."""
    files = _fixture(tmp_path / "src")
    good = files["pdfs/ACME_2022_10K.pdf"]
    files["pdfs/ACME_2022_10K.pdf"] = b"<!DOCTYPE html><html><body>rate limited</body></html>"
    served = _served(files)
    monkeypatch.setitem(dl.DATASETS, "financebench", _pinned(files))
    data = tmp_path / "data"
    fetched = data / ".downloads" / "financebench"
    with Stub(served) as s:
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        with pytest.raises(InputError, match=r"ACME_2022_10K\.pdf: not a PDF \(it starts b'<!DOCTYPE html>"):
            dl.download("financebench", data)
        assert len(s.requests) == 4
    assert not (data / "pdf" / "financebench").exists() and not list((data / "pdf").glob(".tmp-*"))
    assert sorted(p.relative_to(fetched).as_posix() for p in fetched.rglob("*") if p.is_file()) == \
        sorted([QUESTIONS, DOCUMENTS, "pdfs/ACME_2023Q2_10Q.pdf", "pdfs/ACME_2022_10K.pdf"])
    (fetched / "pdfs" / "ACME_2022_10K.pdf").write_bytes(good)  # as the message says: replace it
    with Stub(served) as s:
        monkeypatch.setenv("HTMLRAG_DATA_MIRROR", s.base)
        root = dl.download("financebench", data)
        assert s.requests == []
    assert (root / "docs" / "ACME_2022_10K.pdf").read_bytes() == good
    assert dl.verify(dl.DATASETS["financebench"], data) == [] and not fetched.exists()


_CHILD = """
import dataclasses, json, sys
from htmlrag.data import download as dl
pins = json.loads(sys.argv[1])
spec = dl.DATASETS["financebench"]
dl.DATASETS["financebench"] = dataclasses.replace(spec, files=tuple(
    dataclasses.replace(r, sha256=pins[r.path][0], size=pins[r.path][1]) for r in spec.files))
print(dl.download("financebench", sys.argv[2]))
"""


def test_two_processes_downloading_at_once_fetch_each_file_once_and_both_succeed(tmp_path: Path) -> None:
    """Two jobs sharing a data folder (a cluster array) download FinanceBench at once from a slow source: the
    second waits for the first and finds it installed; every file is fetched once, the folder verifies, and no
    staging folder is left (a killed run's is removed too)."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    files = _fixture(tmp_path / "src")
    pins = {r.path: (r.sha256, r.size) for r in _pinned(files).files}
    served = _served(files, delay=0.5)
    data = tmp_path / "data"
    (data / "pdf" / ".tmp-financebench-999999").mkdir(parents=True)  # a killed run's staging folder
    (data / "pdf" / ".tmp-financebench-more-1").mkdir()  # another dataset's name: not ours to remove
    with Stub(served) as s:
        env = {**os.environ, "HTMLRAG_DATA_MIRROR": s.base, "PYTHONPATH": str(ROOT)}
        procs = [subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(pins), str(data)], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        paths = sorted(p for p, _ in s.requests)
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert [o.strip() for o, _ in outs] == [str(data / "pdf" / "financebench")] * 2
    assert len(paths) == 4 and len(set(paths)) == 4, paths  # each file once
    assert dl.verify(dl.DATASETS["financebench"], data) == []
    assert sorted(p.name for p in (data / "pdf").iterdir()) == [".tmp-financebench-more-1", "financebench"]


def test_the_real_question_file_is_pinned() -> None:
    spec = dl.DATASETS["financebench"]
    assert all(r.sha256 and len(r.sha256) == 64 and r.size for r in spec.files)
    assert all("/cc39aeb4afdf33909ee1412188bf89035950c2eb/" in r.url for r in spec.files)
