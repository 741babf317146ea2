"""The one example schema every dataset loader returns, and helpers shared by the loaders."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.core.io import read_page

#: A retrieved page: the HTML itself (``str`` or ``bytes``) or the path of an ``.html``/``.html.gz`` file.
Page = str | bytes | Path


@dataclass
class Example:
    """One question with its gold answers and retrieved pages.

    Attributes:
        id: unique within the dataset (stable across loads; used to pair systems in t-tests and to resume).
        question: the question text.
        answers: gold short answers (aliases, or every answer of a multi-answer question); for long-form sets
            (ELI5) the long answers.
        long_answers: gold long-form answers (ASQA, ELI5), else empty.
        pages: retrieved pages in retrieval order: HTML strings/bytes or file paths; empty when the source
            has questions only (see :func:`require_pages`).
        metadata: anything else the source holds that a metric or table needs (``dataset``,
            ``answer_groups`` for ASQA STR-EM, ``gold_page`` for WTQ, ...). JSON-serialisable.
    """

    id: str
    question: str
    answers: list[str]
    long_answers: list[str] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def load_pages(self) -> list[str | bytes]:
        """The pages' HTML: strings and bytes as they are, paths read from disk (``.gz`` decompressed)."""
        return [read_page(p) if isinstance(p, Path) else p for p in self.pages]


def open_text(path: Path) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (a byte-order mark is dropped) that may be gzip- or
    bzip2-compressed.

    Raises:
        InputError: missing, a folder, unreadable, broken compression, or not UTF-8 (naming the line).
    """
    opener = gzip.open if path.suffix == ".gz" else bz2.open if path.suffix == ".bz2" else open
    try:
        with opener(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):  # lines of bytes, each decoded: an error names its line
                try:
                    yield raw.decode("utf-8-sig" if n == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"{path}:{n}: not UTF-8 text ({exc.reason} at byte {exc.start} of the "
                                     f"line)") from exc
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path}: a folder, not a file") from exc
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from exc


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a ``.jsonl`` (optionally ``.gz``/``.bz2``) file, or a ``.json`` file holding a list of objects.

    Raises:
        InputError: the file is missing, or a line is not a JSON object (the message names file and line).
    """
    p = Path(path)
    name = p.name.removesuffix(".gz").removesuffix(".bz2")
    if name.endswith(".json"):
        try:
            data = json.loads("".join(open_text(p)))
        except ValueError as exc:
            raise InputError(f"{p}: not valid JSON: {exc}") from exc
        if isinstance(data, dict):
            data = data.get("data", data.get("examples", [data]))
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputError(f"{p}: expected a list of JSON objects")
        return data
    return [row for _, row in numbered_records(p)]


def numbered_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each line of a ``.jsonl`` file (blank lines skipped), so that a check of a
    row's fields can name its line.

    Raises:
        InputError: as :func:`read_records`.
    """
    p = Path(path)
    rows = []
    for n, line in enumerate(open_text(p), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{p}:{n}: not a JSON line: {exc}") from exc
        if not isinstance(row, dict):
            raise InputError(f"{p}:{n}: expected a JSON object, got {type(row).__name__}")
        rows.append((n, row))
    return rows


def example_id(value: Any, where: str) -> str:
    """An example id as text: a string or a whole number (``'id': {...}``, a list or a boolean is an input error
    naming ``where``, not an id such as ``"{'x': 1}"``)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{where}: 'id' must be a string or a whole number, got {value!r:.60}")
    return str(value)


def as_str_list(value: Any, where: str = "", field: str = "answers") -> list[str]:
    """Strings of a value that may be a string, a number, a list of those, or missing; empty strings dropped.
    Anything else (``{'text': ...}``, a list of lists, a boolean) is an :class:`InputError` naming ``where`` and
    ``field``: written as text it would be an answer no reader gives (``"{'text': 'Margaret Ellis'}"``), and
    every system would score 0 on the row without a word."""
    def text(v: Any) -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return str(v)
        raise InputError(f"{where + ': ' if where else ''}{field!r} must be a string or a list of strings, "
                         f"got {value!r:.80}")

    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [t for v in value if v is not None and (t := text(v)).strip()]
    t = text(value)
    return [t] if t.strip() else []


def sample_examples(examples: Sequence[Example], n: int | None, seed: int) -> list[Example]:
    """A deterministic sample of ``n`` examples for ``seed``, kept in source order (all when ``n`` is None
    or the dataset is not larger)."""
    if n is None or n <= 0 or n >= len(examples):
        return list(examples)
    picked = sorted(random.Random(seed).sample(range(len(examples)), n))
    return [examples[i] for i in picked]


def check_unique_ids(examples: Iterable[Example], source: str) -> None:
    """Raise InputError naming ``source`` when two examples share an id."""
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise InputError(f"{source}: duplicate example id {ex.id!r}")
        seen.add(ex.id)


def require_pages(examples: Sequence[Example], source: str) -> None:
    """Raise InputError when examples have no pages (a source with questions only, run with retrieval).

    Policy: loaders always return question-only examples when the pages are absent (closed-book runs and
    question statistics work); a run that cleans/prunes pages calls this first, so a missing page set fails
    before any work, with a message saying how many examples lack pages and how to proceed.
    """
    missing = [ex.id for ex in examples if not ex.pages]
    if missing:
        raise InputError(
            f"{source}: {len(missing)} of {len(examples)} examples have no retrieved pages (first: {missing[0]!r}); "
            "this source holds questions only. Point the dataset at a file with pages (e.g. the hub "
            "zstanjj/HtmlRAG-test) or set dataset.require_pages=false for a closed-book run"
        )


def _page_hash(path: Path) -> str:
    """SHA-256 of a page file's content (decompressed), or of its bytes as stored when they cannot be read as a
    page (a broken gzip stream): such a page fails its own examples as error rows, never the whole run here."""
    try:
        return hashlib.sha256(read_page(path)).hexdigest()
    except InputError:
        try:
            return "raw:" + hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            return "unreadable:" + hashlib.sha256(str(exc).encode()).hexdigest()


def fingerprint(examples: Sequence[Example]) -> str:
    """SHA-256 over ids, questions, answers and page contents: the dataset hash recorded in ``env.json``."""
    h = hashlib.sha256()
    file_hash: dict[Path, str] = {}
    for ex in examples:
        h.update(json.dumps([ex.id, ex.question, ex.answers, ex.long_answers], ensure_ascii=False).encode())
        for p in ex.pages:
            if isinstance(p, Path):
                if p not in file_hash:
                    file_hash[p] = _page_hash(p)
                h.update(file_hash[p].encode())
            else:
                h.update(hashlib.sha256(p.encode() if isinstance(p, str) else p).digest())
    return h.hexdigest()
