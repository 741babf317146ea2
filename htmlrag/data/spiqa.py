"""SPIQA (Pramanick et al. 2024): questions about figures and tables of scientific papers, test-A/B/C, in the
released format of the hub dataset ``google/spiqa``, with the papers' PDFs.

Files: ``<root>/test-A/SPIQA_testA.json`` (likewise ``test-B``/``testB``, ``test-C``/``testC``), or the
JSON file itself as ``root``. One object per paper id:

- test-A: ``{"paper_id", "all_figures": {name: {"caption", "content_type": "figure"|"table", "figure_type"}},
  "qa": [{"question", "answer", "explanation", "reference": name}]}``
- test-B (QASA): ``{"question": [...], "composition": [...] (answers), "referred_figures_tables": [[name]],
  "all_figures_tables": {name: caption}}``
- test-C (QASPER): ``{"question": [...], "answer": [{"free_form_answer", "yes_no", ...}],
  "referred_figures_tables": [[name]], "figures_and_tables": [{"file", "caption"}], "arxiv_id"}``

SPIQA ships figure images, not PDFs: the PDFs are read from ``pdf_dir`` (default ``<root>/<split>/pdfs``) as
``<paper id>.pdf`` (also without the ``vN`` version suffix). :func:`download_spiqa` fetches the JSON from the hub
and the PDFs from arXiv where those are reachable. Metadata: ``split``, ``paper_id``, ``referenced`` (figure
and table names), ``type`` (``figure``, ``table`` or ``figure+table``: what the referenced items are; test-B/C
names tell it by ``Table``/``Figure`` in the file name), ``evidence`` (the referenced captions, for the judge).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.data.pdfqa import PdfExample, pdf_example
from htmlrag.data.schema import check_unique_ids, sample_examples

log = logging.getLogger(__name__)

HUB = "google/spiqa"
SPLITS = {"test-A": "SPIQA_testA.json", "test-B": "SPIQA_testB.json", "test-C": "SPIQA_testC.json"}


def _json_path(root: Path, split: str) -> Path:
    if root.is_file():
        return root
    if split not in SPLITS:
        raise InputError(f"unknown SPIQA split {split!r}; choose one of {', '.join(SPLITS)}")
    for p in (root / split / SPLITS[split], root / SPLITS[split]):
        if p.exists():
            return p
    raise InputError(f"{root}: no {split}/{SPLITS[split]}; download it from the hub {HUB} "
                     "(htmlrag.data.spiqa.download_spiqa) and set dataset.loader.root")


def _kind(name: str, content_type: str | None = None) -> str:
    if content_type in ("figure", "table"):
        return content_type
    return "table" if re.search(r"table", name, re.I) else "figure"


def _answer_c(a: Any) -> str:
    if isinstance(a, str):
        return a
    if isinstance(a, dict):
        if str(a.get("free_form_answer") or "").strip():
            return str(a["free_form_answer"])
        if a.get("yes_no") is not None:
            return "Yes" if a["yes_no"] else "No"
        spans = a.get("extractive_spans") or []
        if spans:
            return "; ".join(map(str, spans))
    return ""


def _records(split: str, pid: str, paper: dict[str, Any]) -> list[dict[str, Any]]:
    """``{question, answer, referenced, captions, kinds}`` per question of one paper."""
    out = []
    if "qa" in paper:  # test-A
        figs = paper.get("all_figures") or {}
        for qa in paper["qa"]:
            refs = qa.get("reference") or []
            refs = [refs] if isinstance(refs, str) else list(refs)
            out.append({"question": qa.get("question", ""), "answer": qa.get("answer", ""), "referenced": refs,
                        "captions": [str((figs.get(r) or {}).get("caption", "")) for r in refs],
                        "kinds": [_kind(r, (figs.get(r) or {}).get("content_type")) for r in refs]})
        return out
    questions = paper.get("question") or []
    refs_all = paper.get("referred_figures_tables") or [[] for _ in questions]
    if "composition" in paper:  # test-B
        caps = paper.get("all_figures_tables") or {}
        answers = [str(a) for a in paper["composition"]]
    else:  # test-C
        caps = {f.get("file", ""): f.get("caption", "") for f in paper.get("figures_and_tables") or []}
        answers = [_answer_c(a) for a in paper.get("answer") or []]
    if len(answers) != len(questions):
        raise InputError(f"SPIQA {split} paper {pid}: {len(questions)} questions but {len(answers)} answers")
    for q, a, refs in zip(questions, answers, refs_all, strict=False):
        refs = list(dict.fromkeys(refs or []))
        cap = [str(caps.get(r, "")) if isinstance(caps.get(r, ""), str) else str((caps.get(r) or {}).get("caption", ""))
               for r in refs]
        out.append({"question": q, "answer": a, "referenced": refs, "captions": cap, "kinds": [_kind(r) for r in refs]})
    return out


def _pdf_for(pdf_dir: Path, pid: str) -> Path | None:
    for name in (pid, re.sub(r"v\d+$", "", pid)):
        p = pdf_dir / f"{name}.pdf"
        if p.exists():
            return p
    return None


def load_spiqa(root: str | Path, *, split: str = "test-A", pdf_dir: str | None = None, missing_pdfs: str = "error",
               docs: list[str] | None = None, sample_size: int | None = None, seed: int = 0, parse_cache: str | None = None) -> list[PdfExample]:
    """Load a SPIQA test split with its papers' PDFs (see the module docstring).

    Args:
        root: the downloaded dataset folder (or the split's JSON file).
        split: ``test-A``, ``test-B`` or ``test-C``.
        pdf_dir: folder of ``<paper id>.pdf`` (default ``<root>/<split>/pdfs``).
        missing_pdfs: ``error`` (default: stop and say how many are missing) or ``skip`` (drop those
            questions, with a warning naming the count).
        docs: keep only papers with these PDF file names.
        sample_size / seed: a deterministic sample.
        parse_cache: on-disk parse cache folder.
    """
    base = Path(root)
    path = _json_path(base, split)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected an object keyed by paper id")
    pdfs = Path(pdf_dir) if pdf_dir else (path.parent / "pdfs")
    out: list[PdfExample] = []
    missing: list[str] = []
    for pid, paper in data.items():
        pdf = _pdf_for(pdfs, str(pid))
        recs = _records(split, str(pid), paper)
        if docs is not None and (pdf is None or pdf.name not in docs):
            continue
        if pdf is None:
            missing.append(str(pid))
            continue
        for j, r in enumerate(recs):
            kinds = sorted(set(r["kinds"])) or ["?"]
            meta = {"dataset": "spiqa", "split": split, "paper_id": str(pid), "referenced": r["referenced"],
                    "type": "+".join(kinds), "domain": "cs", "evidence": "\n".join(c for c in r["captions"] if c),
                    "docs": [pdf.name]}
            out.append(pdf_example(f"spiqa-{split}-{pid}-{j}", str(r["question"]).strip(),
                                   str(r["answer"]).strip(), [pdf], meta, parse_cache))
    if missing:
        msg = (f"{path}: {len(missing)} of {len(data)} papers have no PDF in {pdfs} (first: {missing[0]}.pdf); "
               "fetch them with htmlrag.data.spiqa.download_spiqa or set dataset.loader.missing_pdfs=skip")
        if missing_pdfs != "skip":
            raise InputError(msg)
        log.warning("%s", msg.split("; fetch")[0] + "; their questions are skipped")
    check_unique_ids(out, str(path))
    return sample_examples(out, sample_size, seed)


def download_spiqa(dest: str | Path, split: str = "test-A", *, pdfs: bool = True, timeout: float = 60.0) -> Path:
    """Fetch a split's JSON from the hub (``huggingface_hub``) and its papers' PDFs from arXiv.

    Raises:
        InputError: the hub or arXiv cannot be reached (offline: ``HF_HUB_OFFLINE=1``, no network), naming
            what failed.
    """
    if split not in SPLITS:
        raise InputError(f"unknown SPIQA split {split!r}; choose one of {', '.join(SPLITS)}")
    target = Path(dest)
    try:
        from huggingface_hub import hf_hub_download

        path = Path(hf_hub_download(repo_id=HUB, filename=f"{split}/{SPLITS[split]}", repo_type="dataset",
                                    local_dir=str(target)))
    except Exception as exc:
        raise InputError(f"could not download {split}/{SPLITS[split]} from the hub dataset {HUB} "
                         f"({type(exc).__name__}: {exc}); place the file at {target}/{split}/ by hand") from exc
    if not pdfs:
        return target
    import httpx

    ids = list(json.loads(path.read_text(encoding="utf-8")))
    out = path.parent / "pdfs"
    out.mkdir(exist_ok=True)
    for pid in ids:
        dst = out / f"{pid}.pdf"
        if dst.exists():
            continue
        url = f"https://arxiv.org/pdf/{pid}"
        try:
            r = httpx.get(url, timeout=timeout, follow_redirects=True)
            r.raise_for_status()
        except Exception as exc:
            raise InputError(f"could not download {url} ({type(exc).__name__}: {exc}); {len(ids)} papers are "
                             f"needed in {out}") from exc
        if not r.content.startswith(b"%PDF"):
            raise InputError(f"{url}: the reply is not a PDF")
        dst.write_bytes(r.content)
    return target
