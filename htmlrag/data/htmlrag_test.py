"""HtmlRAG test sets (ASQA, HotpotQA, NQ, TriviaQA, MuSiQue, ELI5) in the authors' format.

Sources, in order: a local ``.jsonl``/``.jsonl.gz``/``.json`` file (or a folder holding
``<name>-test.jsonl[.gz]``), else the hub dataset ``zstanjj/HtmlRAG-test`` through ``datasets.load_dataset``.

Row formats understood (the authors' files and the question-only copies in ``../shared/data``):

- question: ``question`` (``Question`` in MuSiQue's file, ``query`` in some dumps);
- short answers, first present of: ``answers``, ``short_answers`` (ASQA), ``answer`` (str or list),
  ``output[].answer`` (KILT rows) — the same precedence as the authors' evaluation;
- long answers: ``long_answers``, else ``annotations[].long_answer`` (ASQA); for ELI5 the long answers are
  also the gold answers;
- ASQA ``qa_pairs[].short_answers`` become ``metadata["answer_groups"]`` (for STR-EM);
- pages: ``html`` (a string), ``htmls``/``pages`` (lists), or any ``<engine>_results``/``search_results`` list
  whose items hold ``html``/``page_result``/``page_content``.

Rows without pages give question-only examples (``pages == []``); see :func:`htmlrag.data.require_pages`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.data.schema import (
    Example,
    as_str_list,
    check_unique_ids,
    example_id,
    read_records,
    sample_examples,
)

log = logging.getLogger(__name__)

#: Dataset names of the HtmlRAG test suite, and which are long-form.
HTMLRAG_DATASETS = ("asqa", "hotpot-qa", "nq", "trivia-qa", "musique", "eli5")
LONG_FORM = ("eli5",)
HUB = "zstanjj/HtmlRAG-test"
#: The hub's file of one set with the retrieved HTML pages (the ``bing-...`` files hold the search results only).
HUB_FILE = "binghtml-slimplmqr-{dataset}-{split}.jsonl"

_PAGE_FIELDS = ("html", "page_result", "page_content", "content")


def _pages(row: dict[str, Any]) -> list[str]:
    if isinstance(row.get("html"), str):
        return [row["html"]]
    for key in ("htmls", "pages"):
        if isinstance(row.get(key), list):
            return [p for p in row[key] if isinstance(p, str) and p.strip()]
    for key, value in row.items():
        if (key.endswith("_results") or key == "search_results") and isinstance(value, list):
            pages = []
            for item in value:
                if isinstance(item, str):
                    pages.append(item)
                elif isinstance(item, dict):
                    html = next((item[f] for f in _PAGE_FIELDS if isinstance(item.get(f), str)), None)
                    if html and html.strip():
                        pages.append(html)
            return pages
    return []


def parse_row(row: dict[str, Any], dataset: str, source: str, index: int) -> Example:
    """Turn one row of the HtmlRAG format into an :class:`Example` (see the module doc for the fields).

    Raises:
        InputError: the row has no id/question, or no gold answer (naming ``source`` and the row index).
    """
    question = row.get("question", row.get("Question", row.get("query")))
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{source}: row {index} has no question")
    ex_id = row.get("id", row.get("_id"))
    if ex_id is None:
        raise InputError(f"{source}: row {index} has no id")
    ex_id = example_id(ex_id, f"{source}: row {index}")
    where = f"{source}: row {index}"
    long_answers = as_str_list(row.get("long_answers"), where, "long_answers")
    if not long_answers and isinstance(row.get("annotations"), list):
        long_answers = [a["long_answer"] for a in row["annotations"] if isinstance(a, dict) and a.get("long_answer")]
    if "answers" in row:
        answers = as_str_list(row["answers"], where, "answers")
    elif "short_answers" in row:
        answers = as_str_list(row["short_answers"], where, "short_answers")
    elif "answer" in row:
        answers = as_str_list(row["answer"], where, "answer")
    else:
        answers = [o["answer"] for o in row.get("output") or [] if isinstance(o, dict) and o.get("answer")]
    if dataset in LONG_FORM:
        long_answers = long_answers or answers
        answers = answers or long_answers
    if not answers:
        raise InputError(f"{source}: row {index} (id {ex_id}) has no gold answer")
    metadata: dict[str, Any] = {"dataset": dataset}
    if isinstance(row.get("qa_pairs"), list):
        metadata["answer_groups"] = [as_str_list(q.get("short_answers")) for q in row["qa_pairs"] if isinstance(q, dict)]
    return Example(id=str(ex_id), question=question.strip(), answers=answers, long_answers=long_answers,
                   pages=list(_pages(row)), metadata=metadata)


def _local_file(path: Path, dataset: str, split: str) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        for name in (f"{dataset}-{split}.jsonl", f"{dataset}-{split}.jsonl.gz", f"{dataset}.json", f"{dataset}.jsonl",
                     f"{HUB_FILE.format(dataset=dataset, split=split)}"):
            for cand in (path / name, path / dataset / name):
                if cand.is_file():
                    return cand
        raise InputError(f"{path}: no {dataset}-{split}.jsonl[.gz] or {HUB_FILE.format(dataset=dataset, split=split)} "
                         f"in this folder or its {dataset}/ folder (htmlrag-data download {dataset.replace('-', '_')})")
    raise InputError(f"{path}: no such file or folder")


def _hub_rows(dataset: str, split: str, hub: str, revision: str | None, data_files: str | None) -> list[dict]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - the [eval] extra brings it
        raise InputError("loading from the hub needs the package datasets (pip install 'htmlrag-bench[eval]')") from exc
    try:
        ds = datasets.load_dataset(hub, data_files=data_files or HUB_FILE.format(dataset=dataset, split=split),
                                   split="train", revision=revision)
    except Exception as exc:  # the hub raises many types (offline, missing files, auth)
        raise InputError(f"hub dataset {hub} ({dataset}, {split}) cannot be loaded: {exc}; "
                         "pass a local file with dataset.path=...") from exc
    return [dict(r) for r in ds]


def load_htmlrag_test(
    dataset: str,
    path: str | Path | None = None,
    *,
    split: str = "test",
    hub: str = HUB,
    revision: str | None = None,
    data_files: str | None = None,
    sample_size: int | None = 400,
    seed: int = 0,
) -> list[Example]:
    """Load one HtmlRAG test set into examples.

    Args:
        dataset: one of :data:`HTMLRAG_DATASETS`.
        path: a local file or folder; ``None`` loads ``hub`` with ``datasets``.
        split: file split name (``test``).
        hub: hub dataset id; ``revision`` pins its commit; ``data_files`` overrides the file pattern
            (default :data:`HUB_FILE`, ``binghtml-slimplmqr-<dataset>-<split>.jsonl``).
        sample_size: a deterministic sample of this many questions per ``seed`` (``None``: all).
        seed: sample seed.

    Raises:
        InputError: unknown dataset, missing/malformed file, unreachable hub, duplicate ids.
    """
    if dataset not in HTMLRAG_DATASETS:
        raise InputError(f"unknown HtmlRAG dataset {dataset!r}; known: {', '.join(HTMLRAG_DATASETS)}")
    if path is not None:
        file = _local_file(Path(path), dataset, split)
        rows, source = read_records(file), str(file)
    else:
        rows, source = _hub_rows(dataset, split, hub, revision, data_files), f"{hub}:{dataset}"
    examples = [parse_row(r, dataset, source, i) for i, r in enumerate(rows)]
    check_unique_ids(examples, source)
    if not any(ex.pages for ex in examples):
        log.info("%s: %d questions without pages (question-only source)", source, len(examples))
    return sample_examples(examples, sample_size, seed)
