"""CRAG (Meta's Comprehensive RAG benchmark) rows: ``query, answer, alternative_answers, search_results``.

Each row's ``search_results[].page_result`` is the HTML of a retrieved page (kept in retrieval order);
``interaction_id`` is the id. Files are ``.jsonl`` optionally ``.gz``/``.bz2`` (the release ships bz2).
"""

from __future__ import annotations

from pathlib import Path

from htmlrag.core.errors import InputError
from htmlrag.data.schema import (
    Example,
    as_str_list,
    check_unique_ids,
    example_id,
    read_records,
    sample_examples,
)


def load_crag(path: str | Path, *, sample_size: int | None = None, seed: int = 0) -> list[Example]:
    """Load CRAG rows from ``path``; the gold answers are ``answer`` plus ``alternative_answers``.

    Raises:
        InputError: missing file, a row without ``query`` or ``answer``, duplicate ids.
    """
    rows = read_records(path)
    examples = []
    for i, row in enumerate(rows):
        query = row.get("query")
        where = f"{path}: row {i}"
        answers = as_str_list(row.get("answer"), where, "answer") + as_str_list(row.get("alternative_answers"), where,
                                                                               "alternative_answers")
        if not isinstance(query, str) or not query.strip() or not answers:
            raise InputError(f"{path}: row {i} lacks query or answer")
        pages = [r["page_result"] for r in row.get("search_results") or []
                 if isinstance(r, dict) and isinstance(r.get("page_result"), str) and r["page_result"].strip()]
        meta = {"dataset": "crag"}
        meta.update({k: row[k] for k in ("domain", "question_type", "static_or_dynamic", "query_time") if k in row})
        examples.append(Example(id=example_id(row.get("interaction_id", i), f"{path}: row {i}"), question=query.strip(),
                                answers=answers,
                                pages=pages, metadata=meta))
    check_unique_ids(examples, str(path))
    return sample_examples(examples, sample_size, seed)
