"""Resumable ``htmlrag prune --batch``: rows keyed by what made them, never mixed, one writer per output.

Every output row carries ``settings`` (a hash of every option that shapes a context -- budgets, rankers and
their models, dtypes and sequence lengths, tokenizer, format, block sizes, packing, splitting, cleaning
options -- and of the library code) and ``input`` (a hash of its input line). On a rerun, a saved row is reused
only when its id, ``settings`` and ``input`` all match an input line and it holds no error; everything else is
recomputed. Before any work the output is rewritten (atomically) to hold only reusable rows, so the file never
holds rows of two settings at once; new rows are appended as they finish (a killed run loses nothing), and the
finished file holds exactly one row per non-blank input line, in input order.

The output is locked (``.<name>.lock`` beside it) for the whole run: a second ``prune`` on the same ``--out``
stops with an error. ``--out`` may not be the input file (same file by name, symlink or hard link), a folder, nor a device, FIFO
or socket; the input must be UTF-8. Line numbers in messages count every line of the input, blank ones
included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from htmlrag.core.cache import content_key
from htmlrag.core.errors import InputError
from htmlrag.core.locks import hold_or_refuse
from htmlrag.core.options import check_output_file
from htmlrag.evaluation.scoring.loop import code_fingerprint
from htmlrag.evaluation.store import atomic_write

log = logging.getLogger(__name__)

#: Options that do not change a context (where files go, how fast, how much is printed).
NOT_FINGERPRINTED = frozenset({"batch", "out", "no_resume", "paths", "question", "func", "command", "embed_cache",
                               "embed_cpu_workers", "workers", "verbose", "quiet", "log_level", "progress"})


@dataclass(frozen=True)
class BatchLine:
    """One non-blank input line: its 1-based number in the file, its text and the hash of that text."""

    number: int
    text: str
    pages: str = ""  # the SHA-256 of the files its ``page_paths`` name (:func:`with_page_digests`)

    @property
    def digest(self) -> str:
        text = self.text.strip() + (f"\0{self.pages}" if self.pages else "")
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def with_page_digests(lines: Sequence[BatchLine], base: Path) -> list[BatchLine]:
    """``lines`` whose ``page_paths`` files are hashed into their digest: a saved row is reused only while the
    pages it was pruned from are the same bytes (an edited page file kept its old context, exit 0)."""
    out = []
    for ln in lines:
        try:
            item = json.loads(ln.text)
        except ValueError:
            item = None
        paths = item.get("page_paths") if isinstance(item, dict) else None
        if not isinstance(paths, list) or not paths:
            out.append(ln)
            continue
        h = hashlib.sha256()
        for p in paths:
            f = Path(p) if os.path.isabs(str(p)) else base / str(p)
            try:
                if f.is_file():
                    with f.open("rb") as fh:
                        h.update(b"file " + hashlib.file_digest(fh, "sha256").digest())
                else:
                    h.update(b"no file")
            except OSError:
                h.update(b"unreadable")
        out.append(replace(ln, pages=h.hexdigest()))
    return out


def duplicate_ids(lines: Sequence[BatchLine], ids: Sequence[Any]) -> None:
    """Refuse two input lines of one id: their output rows could not be told apart when joined by id.

    Raises:
        InputError: naming the id and both lines.
    """
    first: dict[str, int] = {}
    for ln, i in zip(lines, ids, strict=True):
        key = str(i)
        if key in first:
            raise InputError(f"lines {first[key]} and {ln.number}: both have id {i!r}; ids must be unique (an "
                             "output row is found by its id)")
        first[key] = ln.number


def settings_fingerprint(options: Mapping[str, Any]) -> str:
    """16 hex digits over every option but :data:`NOT_FINGERPRINTED`, plus the library's code fingerprint."""
    kept = {k: v for k, v in sorted(options.items()) if k not in NOT_FINGERPRINTED and not callable(v)}
    return content_key("prune-batch", kept, code_fingerprint())[:16]


def read_batch(src: Path) -> list[BatchLine]:
    """The non-blank lines of a JSONL batch file, numbered as in the file.

    Raises:
        InputError: the file cannot be read or is not UTF-8.
    """
    try:
        data = src.read_bytes()
    except OSError as exc:
        raise InputError(f"{src}: cannot read: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{src}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); a JSONL batch must "
                         "be UTF-8") from exc
    return [BatchLine(n, ln) for n, ln in enumerate(text.split("\n"), start=1) if ln.strip()]


def check_paths(src: Path, out: Path) -> None:
    """Refuse an output that is a folder, a device, FIFO or socket (it is replaced by a rename: ``/dev/null``
    would become a file), below a file, or the input itself (by name, symlink or hard link)."""
    if out.is_dir():
        raise InputError(f"--out {out}: is a folder; give a file name (e.g. {out / 'pruned.jsonl'})")
    check_output_file(out, "--out")
    if out.exists() and src.exists() and os.path.samefile(src, out):
        raise InputError(f"--out {out} is the input file {src}: writing it would destroy the input; choose "
                         "another --out")


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the output's lock file (``.<name>.lock`` beside it) for a run; refuse when another run holds it."""
    lock = out.with_name(f".{out.name}.lock")
    held = hold_or_refuse(lock, f"--out {out}: another htmlrag prune is writing it (lock {lock} held)", InputError)
    try:
        yield
    finally:
        held.release()


def row_key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return str(row.get("id")), str(row.get("settings")), str(row.get("input"))


def saved_rows(out: Path) -> list[dict[str, Any]]:
    """Complete, parsable rows of ``out`` (a torn or damaged line is left out: its item is recomputed)."""
    if not out.exists():
        return []
    rows = []
    for n, line in enumerate(out.read_bytes().split(b"\n")[:-1], start=1):  # the part after the last \n is torn
        try:
            row = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            log.warning("%s:%d: unreadable row skipped (its item is recomputed)", out, n)
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def write_rows(out: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Replace ``out`` atomically with ``rows`` (one JSON line each)."""
    atomic_write(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def plan(lines: Sequence[BatchLine], ids: Sequence[Any], settings: str, out: Path
         ) -> tuple[dict[tuple[str, str, str], dict[str, Any]], list[int]]:
    """Reusable rows by key, and the indexes of ``lines`` still to compute. ``out`` is rewritten to hold only
    the reusable rows (in input order) when it held anything else."""
    keys = [(str(i), settings, ln.digest) for i, ln in zip(ids, lines, strict=True)]
    wanted = set(keys)
    saved = saved_rows(out)
    reuse: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in saved:
        key = row_key(row)
        if key in wanted and "error" not in row and key not in reuse:
            reuse[key] = row
    ordered = [reuse[k] for k in dict.fromkeys(keys) if k in reuse]
    if [row_key(r) for r in saved] != [row_key(r) for r in ordered] or (out.exists() and not out.read_bytes().endswith(
            b"\n") and out.stat().st_size):
        if saved:
            log.warning("%s: %d saved rows kept, %d dropped (other settings, changed input, errors or torn)",
                        out, len(ordered), len(saved) - len(ordered))
        write_rows(out, ordered)
    return reuse, [n for n, k in enumerate(keys) if k not in reuse]


def item_id(line: BatchLine) -> Any:
    """The id of an input line: its ``id`` field, else its 0-based line index in the file."""
    try:
        item = json.loads(line.text)
    except ValueError:
        return line.number - 1
    if isinstance(item, dict) and item.get("id") is not None:
        return item["id"]
    return line.number - 1
