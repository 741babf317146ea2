"""Loaders for page sets on disk: WTQ-style questions over Wikipedia pages, and the project's sample pages."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from htmlrag.core.errors import InputError
from htmlrag.data.schema import (
    Example,
    as_str_list,
    check_unique_ids,
    numbered_records,
    read_records,
    sample_examples,
)


def _resolve(root: Path, rel: str, source: str) -> Path:
    for cand in (root / rel, root / f"{rel}.gz"):
        if cand.is_file():
            return cand
        if cand.is_dir():
            raise InputError(f"{source}: page {rel!r} is a folder, not a file")
    raise InputError(f"{source}: page {rel!r} not found under {root} (tried .gz too)")


def load_wtq_html(
    root: str | Path,
    *,
    order: str = "shuffled",
    sample_size: int | None = None,
    seed: int = 0,
) -> list[Example]:
    """Load ``questions.jsonl`` of a WTQ-HTML folder: each question's own page plus its distractors.

    The retrieved set is the own page and the distractor pages. ``order="shuffled"`` (default) places the own
    page at a position drawn from the example id (deterministic, independent of ``seed``), so that plain
    truncation is not favoured by the gold page always coming first; ``"gold_first"`` keeps it first.
    ``metadata["gold_page"]`` is its index.

    Raises:
        InputError: missing folder/file or page, bad ``order``, duplicate ids.
    """
    root = Path(root).resolve()
    qfile = root / "questions.jsonl" if root.is_dir() else root
    root = qfile.parent
    if order not in ("shuffled", "gold_first"):
        raise InputError(f"order must be 'shuffled' or 'gold_first', got {order!r}")
    examples = []
    for i, row in enumerate(read_records(qfile)):
        if not row.get("question") or not row.get("page"):
            raise InputError(f"{qfile}: row {i} lacks question or page")
        pages = [_resolve(root, row["page"], str(qfile))]
        pages += [_resolve(root, d, str(qfile)) for d in row.get("distractors") or []]
        gold = 0
        if order == "shuffled":
            rng = random.Random(int(hashlib.sha256(str(row.get("id", i)).encode()).hexdigest()[:8], 16))
            gold = rng.randrange(len(pages))
            pages.insert(gold, pages.pop(0))
        answers = as_str_list(row.get("answers"))
        if not answers:
            raise InputError(f"{qfile}: row {i} has no answers")
        examples.append(Example(id=str(row.get("id", i)), question=row["question"].strip(), answers=answers,
                                pages=list(pages), metadata={"dataset": "wtq-html-qa", "gold_page": gold}))
    check_unique_ids(examples, str(qfile))
    return sample_examples(examples, sample_size, seed)


def load_page_questions(path: str | Path, *, sample_size: int | None = None, seed: int = 0) -> list[Example]:
    """Load the project's sample format: ``questions.jsonl`` rows ``{id, question, answers, pages}`` whose
    page names are files next to it (``data/pages``).

    Raises:
        InputError: missing file or page, a row without question/answers, duplicate ids.
    """
    p = Path(path).resolve()
    qfile = p / "questions.jsonl" if p.is_dir() else p
    examples = []
    rows = numbered_records(qfile) if not qfile.name.endswith((".json", ".json.gz", ".json.bz2")) else \
        list(enumerate(read_records(qfile), 1))
    for i, (line, row) in enumerate(rows):
        where = f"{qfile}:{line}"
        question, pages, ident = row.get("question"), row.get("pages") or [], row.get("id", i)
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"{where}: 'question' must be a non-empty string, got {question!r:.60}")
        answers = as_str_list(row.get("answers"))
        if not answers:
            raise InputError(f"{where}: the row has no answers ('answers': a string or a list of strings)")
        if not isinstance(pages, list) or not all(isinstance(x, str) and x.strip() for x in pages):
            raise InputError(f"{where}: 'pages' must be a list of page file names, got {pages!r:.60}")
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            raise InputError(f"{where}: 'id' must be a string or a whole number, got {ident!r:.60}")
        pages = [_resolve(qfile.parent, name, where) for name in pages]
        examples.append(Example(id=str(ident), question=question.strip(), answers=answers,
                                long_answers=as_str_list(row.get("long_answers")), pages=list(pages),
                                metadata={"dataset": qfile.parent.name}))
    check_unique_ids(examples, str(qfile))
    return sample_examples(examples, sample_size, seed)
