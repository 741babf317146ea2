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
    example_id,
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


def _common(row: dict, where: str, index: int) -> tuple[str, list[str], str]:
    """A row's question, answers and id, each checked (the error names ``where``: file and line)."""
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: 'question' must be a non-empty string, got {question!r:.60}")
    answers = as_str_list(row.get("answers"), where)
    if not answers:
        raise InputError(f"{where}: the row has no answers ('answers': a string or a list of strings)")
    return question.strip(), answers, example_id(row.get("id", index), where)


def _names(value: object, where: str, field: str) -> list[str]:
    """A list of page file names (a string is not walked letter by letter: it is an error naming the field)."""
    if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
        shown = value[0] if field == "page" and isinstance(value, list) and len(value) == 1 else value
        kind = "a page file name" if field == "page" else "a list of page file names"
        raise InputError(f"{where}: '{field}' must be {kind}, got {shown!r:.60}")
    return list(value)


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
    for i, (line, row) in enumerate(numbered_records(qfile)):
        where = f"{qfile}:{line}"
        question, answers, ident = _common(row, where, i)
        (page,) = _names([row.get("page")], where, "page")
        pages = [_resolve(root, page, where)]
        pages += [_resolve(root, d, where) for d in _names(row.get("distractors") or [], where, "distractors")]
        gold = 0
        if order == "shuffled":
            rng = random.Random(int(hashlib.sha256(ident.encode()).hexdigest()[:8], 16))
            gold = rng.randrange(len(pages))
            pages.insert(gold, pages.pop(0))
        examples.append(Example(id=ident, question=question, answers=answers,
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
        question, answers, ident = _common(row, where, i)
        pages = [_resolve(qfile.parent, name, where) for name in _names(row.get("pages") or [], where, "pages")]
        examples.append(Example(id=ident, question=question, answers=answers,
                                long_answers=as_str_list(row.get("long_answers"), where, "long_answers"), pages=list(pages),
                                metadata={"dataset": qfile.parent.name}))
    check_unique_ids(examples, str(qfile))
    return sample_examples(examples, sample_size, seed)
