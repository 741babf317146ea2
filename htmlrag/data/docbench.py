"""DOCBENCH (Zou et al. 2024): 229 PDFs with 1,102 questions in five domains, in its released layout.

Layout: ``<root>/<n>/`` (or ``<root>/data/<n>/``) for n = 0..228, each holding the document's PDF and
``<n>_qa.jsonl``, one question per line: ``question``, ``answer``, ``type``, ``evidence``. Domains follow the
authors' evaluation notebook: folders 0-48 academia, 49-88 finance, 89-132 government, 133-178 laws,
179-228 news. Types: ``text-only`` -> ``text``; ``multimodal-f``, ``multimodal-t``, ``multimodal`` ->
``multimodal``; ``meta-data`` -> ``meta``; ``una`` -> ``unanswerable`` (the raw type stays in ``type_raw``).

The data lives in a Google Drive folder (:data:`DOCBENCH_URL`); :func:`download_docbench` fetches it with
``gdown`` where Google Drive is reachable, and otherwise says how to get it by hand.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.data.pdfqa import PdfExample, pdf_example
from htmlrag.data.schema import check_unique_ids, sample_examples

log = logging.getLogger(__name__)

DOCBENCH_URL = "https://drive.google.com/drive/folders/1yxhF1lFF2gKeTNc8Wh0EyBdMT3M4pDYr"
DOMAINS = (("academia", range(0, 49)), ("finance", range(49, 89)), ("government", range(89, 133)),
           ("laws", range(133, 179)), ("news", range(179, 229)))
TYPES = {"text-only": "text", "multimodal-f": "multimodal", "multimodal-t": "multimodal",
         "multimodal": "multimodal", "meta-data": "meta", "una": "unanswerable"}


def docbench_domain(folder: int) -> str:
    """The domain of folder number ``folder`` (``other`` outside 0-228)."""
    return next((name for name, r in DOMAINS if folder in r), "other")


def _folders(root: Path) -> list[Path]:
    base = root / "data" if (root / "data").is_dir() and not any(root.glob("*/*_qa.jsonl")) else root
    found = [d for d in base.iterdir() if d.is_dir() and d.name.isdigit()] if base.is_dir() else []
    return sorted(found, key=lambda d: int(d.name))


def load_docbench(root: str | Path, *, domains: list[str] | None = None, types: list[str] | None = None,
                  docs: list[str] | None = None, sample_size: int | None = None, seed: int = 0, parse_cache: str | None = None) -> list[PdfExample]:
    """Load DOCBENCH questions (see the module docstring).

    Args:
        root: the downloaded data folder.
        domains: keep these domains only (``academia``, ``finance``, ``government``, ``laws``, ``news``).
        types: keep these types only (mapped names: ``text``, ``multimodal``, ``meta``, ``unanswerable``).
        docs: keep only documents with these PDF file names.
        sample_size / seed: a deterministic sample.
        parse_cache: on-disk parse cache folder.

    Raises:
        InputError: the folder is missing or has no DOCBENCH folders, a folder has no PDF or no
            ``<n>_qa.jsonl``, or a line is not a JSON object with ``question`` and ``answer``.
    """
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"{base}: no DOCBENCH folder here; download it from {DOCBENCH_URL} "
                         "(htmlrag.data.docbench.download_docbench) and set dataset.loader.root")
    folders = _folders(base)
    if not folders:
        raise InputError(f"{base}: no numbered DOCBENCH folders (<n>/ with <n>_qa.jsonl and a PDF)")
    out: list[PdfExample] = []
    for d in folders:
        n = int(d.name)
        qa = d / f"{d.name}_qa.jsonl"
        if not qa.exists():
            alts = sorted(d.glob("*_qa.jsonl"))
            if not alts:
                raise InputError(f"{d}: no {d.name}_qa.jsonl")
            qa = alts[0]
        pdfs = sorted(d.glob("*.pdf"))
        if len(pdfs) != 1:
            raise InputError(f"{d}: expected one PDF, found {len(pdfs)}")
        domain = docbench_domain(n)
        if (domains and domain not in domains) or (docs is not None and pdfs[0].name not in docs):
            continue
        for j, line in enumerate(qa.read_text(encoding="utf-8").split("\n")):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{qa}:{j + 1}: not a JSON line: {exc}") from exc
            if not isinstance(rec, dict) or "question" not in rec or "answer" not in rec:
                raise InputError(f"{qa}:{j + 1}: expected an object with question and answer")
            raw = str(rec.get("type", "")).strip()
            qtype = TYPES.get(raw, raw or "?")
            if types and qtype not in types:
                continue
            meta = {"dataset": "docbench", "folder": n, "domain": domain, "type": qtype, "type_raw": raw,
                    "evidence": str(rec.get("evidence") or ""), "docs": [pdfs[0].name]}
            out.append(pdf_example(f"docbench-{n}-{j}", str(rec["question"]).strip(), str(rec["answer"]).strip(),
                                   [pdfs[0]], meta, parse_cache))
    check_unique_ids(out, str(base))
    if not out:
        raise InputError(f"{base}: no DOCBENCH question left after the filters (domains={domains}, types={types}, "
                         f"docs={docs})")
    return sample_examples(out, sample_size, seed)


def gdown_folder(gdown: Any, url: str, output: Path, *, quiet: bool = True) -> None:
    """``gdown.download_folder`` of ``url`` into ``output`` on gdown 5 and 6 alike: files already complete
    there are kept (``resume``), and gdown 5's 50-file stop is lifted (``remaining_ok``, an argument gdown 6
    no longer has: passing it there raises ``TypeError``)."""
    import inspect

    known = inspect.signature(gdown.download_folder).parameters
    extra = {k: True for k in ("remaining_ok", "resume") if k in known}
    gdown.download_folder(url=url, output=str(output), quiet=quiet, **extra)


def download_docbench(dest: str | Path) -> Path:
    """Download DOCBENCH's data folder into ``dest`` with ``gdown`` (``pip install gdown``).

    Raises:
        InputError: gdown is missing or Google Drive cannot be reached (the message says how to get the data
            by hand).
    """
    target = Path(dest)
    hint = (f"download the folder by hand from {DOCBENCH_URL} into {target} (one numbered folder per "
            "document: the PDF and <n>_qa.jsonl)")
    try:
        import gdown
    except ImportError as exc:
        raise InputError(f"downloading DOCBENCH needs gdown (pip install gdown); or {hint}") from exc
    target.mkdir(parents=True, exist_ok=True)
    try:
        gdown_folder(gdown, DOCBENCH_URL, target, quiet=False)
    except Exception as exc:
        raise InputError(f"could not download DOCBENCH from Google Drive ({type(exc).__name__}: {exc}); {hint}") from exc
    return target
