"""The run store: ``results/<experiment>/<run-id>/`` and everything written into it.

Layout of one run folder::

    config.yaml        the resolved configuration (what the run id hashes)
    overrides.yaml     the command-line overrides
    env.json           git commit, package versions, dataset hash, host (not part of the run id)
    predictions.jsonl  one row per example with every per-example score, appended as examples finish
    shards/            predictions.rank<r>-of-<w>.jsonl and done markers of a sharded run
    metrics.json       aggregates and t-tests computed from the saved rows; deterministic (no timings); with
                       ``rows`` (count and SHA-256 of the rows, :func:`rows_record`) and ``metric_code`` (the
                       fingerprint of the per-example metric code) for ``htmlrag-paper verify``
    rows.sha256        one line per row, ``<sha256 of the row>  <id>`` (:func:`row_digest`): names the row
                       that went missing or was edited
    timings.json       wall-clock figures (kept out of metrics.json so that it is byte-stable)
    tables/            results.md, results.csv, results.tex, provenance.csv

Nothing written here holds a location on the machine that ran it: runs are named relative to the results root
(:func:`htmlrag.evaluation.runs.run_name`), and the harness stores ``paths.*`` as placeholders
(``${paths.cache}/...``), so a run folder can be moved or copied to another results root.

Rows are appended with flush + fsync, one JSON line each, by the one process holding the file's lock
(:class:`RowWriter`). A run killed mid-write leaves at most one torn last line. **Only the lock holder repairs**:
:class:`RowWriter` cuts a torn tail off when it takes the lock (the example is recomputed), while every reader
(:meth:`RunStore.read_rows`, :meth:`RunStore.done_ids`, a notebook, a second process) skips an incomplete last
line without touching the file -- it may be a row being written right now. Duplicate ids are dropped on reading,
so a resumed run neither loses nor duplicates rows. Everything written goes through :func:`htmlrag.core.redact.redact`
(known secret values only), so no configured key reaches ``results/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import atomic_write as write_whole
from htmlrag.core.redact import redact
from htmlrag.evaluation.shapes import row_problem

log = logging.getLogger(__name__)

PREDICTIONS = "predictions.jsonl"
MANIFEST = "rows.sha256"


def run_id_for(config: Mapping[str, Any], length: int = 12) -> str:
    """The run id: the first ``length`` hex digits of SHA-256 over the canonical JSON of ``config``."""
    blob = json.dumps(config, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` (secrets redacted) to ``path`` through a temporary file of its own and a rename
    (:func:`htmlrag.core.io.atomic_write`: never a half-written file, nor two writers' text mixed)."""
    write_whole(path, redact(text, shapes=False))


def dump_json(obj: Any) -> str:
    """Canonical, deterministic JSON text (sorted keys, 2-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


#: Fields of a system's record that say how a row was computed, not what it holds (wall-clock seconds, a cache
#: hit): left out of :func:`row_digest`, so that a resumed or sharded run records the checksum of an
#: uninterrupted one and ``metrics.json`` stays byte-identical.
VOLATILE = ("seconds", "cached")
#: Clock readings of a record's cost ledger (``cost.seconds``, ``cost.gpu_seconds``): left out as well (its
#: token counts stay in).
VOLATILE_COST = ("seconds", "gpu_seconds")


def _stable(rec: Any) -> Any:
    if not isinstance(rec, Mapping):
        return rec
    out = {f: v for f, v in rec.items() if f not in VOLATILE}
    if isinstance(out.get("cost"), Mapping):
        out["cost"] = {f: v for f, v in out["cost"].items() if f not in VOLATILE_COST}
    return out


def row_digest(row: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of one row's canonical JSON (sorted keys, no spaces), :data:`VOLATILE` fields and the
    ledger's clock readings left out: what ``rows.sha256`` lists."""
    systems = row.get("systems")
    if isinstance(systems, Mapping):
        row = {**row, "systems": {k: _stable(rec) for k, rec in systems.items()}}
    blob = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def rows_record(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"n", "sha256"}``: the number of rows and the SHA-256 over their digests in order (recorded in
    ``metrics.json`` when a run finishes; ``htmlrag-paper verify`` compares it with the rows it reads)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(row_digest(row).encode("ascii") + b"\n")
    return {"n": len(rows), "sha256": h.hexdigest()}


def manifest_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The text of ``rows.sha256``: ``<digest>  <id>`` per row, in order."""
    return "".join(f"{row_digest(r)}  {r['id']}\n" for r in rows)


def read_manifest(path: Path) -> dict[str, str] | None:
    """``rows.sha256`` as ``{id: digest}`` (``None`` when the file is missing or unreadable)."""
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    out: dict[str, str] = {}
    for line in text.split("\n"):  # not splitlines(): an id may hold U+2028
        digest, sep, rid = line.rstrip("\r").partition("  ")
        if sep:
            out[rid] = digest
    return out


def has_error(row: Mapping[str, Any]) -> bool:
    """True when the row is an error row: the example, or one of its systems, failed -- a system with
    ``page_errors`` (a page that could not be cleaned) counts, also in rows written before that was an error."""
    systems = row.get("systems")
    entries = [s for s in systems.values() if isinstance(s, Mapping)] if isinstance(systems, Mapping) else []
    return bool(row.get("error")) or any(bool(s.get("error")) or bool(s.get("page_errors")) for s in entries)


class RowWriter:
    """Appends JSON rows to one file under an exclusive lock (one writer per file). Taking the lock, it cuts a
    torn last line (a killed writer's) off the file: only the lock holder ever changes existing bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():  # opening a FIFO to append blocks until someone reads it
            raise InputError(f"{path}: not a regular file (a folder, FIFO, socket or device)")
        self._fh = open(path, "a", encoding="utf-8")  # closed in close()
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._fh.close()
            raise HtmlRagError(f"{path}: another process is writing this run (lock held)") from exc
        try:
            self._repair()
        except BaseException:
            self.close()
            raise

    def _repair(self) -> None:
        fd = self._fh.fileno()
        size = os.fstat(fd).st_size
        if not size:
            return
        keep = _complete_length(self.path)
        if keep < size:
            log.warning("%s: cutting a torn last line of %d bytes (a killed writer's; its example is recomputed)",
                        self.path, size - keep)
            os.ftruncate(fd, keep)

    def append(self, row: Mapping[str, Any]) -> None:
        """Write one row as a line, flushed and fsynced before returning (known secrets redacted)."""
        self._fh.write(redact(json.dumps(row, ensure_ascii=False, sort_keys=True), shapes=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
        self._fh.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _complete_length(path: Path) -> int:
    """Bytes of ``path`` up to and including its last newline."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        block = 1 << 16
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return start + nl + 1
            end = start
    return 0


class RunStore:
    """One run folder.

    Args:
        results_root: the ``results/`` folder.
        experiment: experiment name (first path level).
        run_id: from :func:`run_id_for`.
    """

    def __init__(self, results_root: str | Path, experiment: str, run_id: str) -> None:
        self.dir = Path(results_root) / experiment / run_id
        self.experiment, self.run_id = experiment, run_id

    # -- metadata -------------------------------------------------------------------------------------
    def write_config(self, config_yaml: str, overrides: Sequence[str]) -> None:
        """Write ``config.yaml`` (the resolved configuration) and ``overrides.yaml``."""
        atomic_write(self.dir / "config.yaml", config_yaml)
        atomic_write(self.dir / "overrides.yaml", "".join(f"- {json.dumps(o)}\n" for o in overrides) or "[]\n")

    def write_manifest(self, rows: Sequence[Mapping[str, Any]]) -> Path:
        """Write ``rows.sha256`` (:func:`manifest_text`) for the finished run's rows."""
        path = self.dir / MANIFEST
        atomic_write(path, manifest_text(rows))
        return path

    def write_json(self, name: str, obj: Any) -> Path:
        """Atomically write ``obj`` as canonical JSON to ``name`` in the run folder."""
        path = self.dir / name
        atomic_write(path, dump_json(obj))
        return path

    # -- rows -----------------------------------------------------------------------------------------
    def shard_path(self, rank: int = 0, world: int = 1) -> Path:
        """Where rank ``rank`` of ``world`` appends its rows (``predictions.jsonl`` when unsharded)."""
        if world <= 1:
            return self.dir / PREDICTIONS
        return self.dir / "shards" / f"predictions.rank{rank}-of-{world}.jsonl"

    def row_files(self) -> list[Path]:
        """Every file holding rows of this run: the merged file and all shard files."""
        files = [self.dir / PREDICTIONS] if (self.dir / PREDICTIONS).exists() else []
        return files + sorted((self.dir / "shards").glob("predictions.rank*.jsonl"))

    @staticmethod
    def read_rows(path: Path) -> list[dict[str, Any]]:
        """Rows of one file. An incomplete last line (no newline yet: a row being written, or a killed writer's)
        is skipped, never cut: only :class:`RowWriter`, holding the lock, repairs. An unparsable complete line, or
        a row of the wrong shape (not an object, no id, a score that is not a number, ...:
        :func:`htmlrag.evaluation.shapes.row_problem`) raises :class:`InputError` naming the file, the line and the
        field. A score that is null, NaN or infinite has the shape of a number and is read as it is (the web app
        shows the row); the summary leaves it out explicitly (:func:`htmlrag.evaluation.summary.usable_scores`)."""
        if not path.exists():
            return []
        if not path.is_file():  # a FIFO would block here until someone writes to it
            raise InputError(f"{path}: not a regular file (a folder, FIFO, socket or device)")
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            log.debug("%s: skipping an incomplete last line of %d bytes", path, len(data) - end)
            data = data[:end]
        try:
            text = data.decode("utf-8-sig")  # (a byte-order mark an editor added is not part of the first row)
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise InputError(f"{path}:{line}: not UTF-8 text; fix or delete the line") from exc
        rows = []
        # "\n" only: rows are written with ensure_ascii=False, so a question may hold U+2028 or U+0085,
        # which splitlines() would split the row at
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{path}:{n}: corrupt row ({exc}); fix or delete the line") from exc
            problem = row_problem(row)  # every consumer reads rows through here: checked once
            if problem is not None:
                raise InputError(f"{path}:{n}: {problem}; fix or delete the line")
            rows.append(row)
        return rows

    def all_rows(self) -> list[dict[str, Any]]:
        """Rows of every row file, one per id, sorted by the example's index. Of several rows for one id the
        first wins, unless it holds an error and a later one (a retry) does not."""
        seen: dict[str, dict[str, Any]] = {}
        for f in self.row_files():
            for row in self.read_rows(f):
                old = seen.get(row["id"])
                if old is not None and not (has_error(old) and not has_error(row)):
                    log.debug("%s: duplicate row for id %s ignored", f, row["id"])
                    continue
                seen[row["id"]] = row
        return sorted(seen.values(), key=lambda r: (r.get("index", 0), r["id"]))

    def done_ids(self, include_failed: bool = True) -> set[str]:
        """Ids already saved (in any row file); with ``include_failed=False`` rows holding an error do not
        count (they are retried). Reads only: call it holding :meth:`writer` to see a repaired file."""
        return {r["id"] for r in self.all_rows() if include_failed or not has_error(r)}

    def writer(self, rank: int = 0, world: int = 1) -> RowWriter:
        """A locked appender for this process's row file."""
        return RowWriter(self.shard_path(rank, world))

    def mark_done(self, rank: int, world: int) -> None:
        """Signal that shard ``rank`` finished (for the merge step)."""
        atomic_write(self.dir / "shards" / f"done.rank{rank}-of-{world}", "done\n")

    def shards_done(self, world: int) -> bool:
        """True when every rank of ``world`` has called :meth:`mark_done`."""
        return all((self.dir / "shards" / f"done.rank{r}-of-{world}").exists() for r in range(world))

    def merge(self) -> list[dict[str, Any]]:
        """Merge shard files into ``predictions.jsonl`` (sorted, deduplicated; atomic) and return the rows.
        Holds the lock of ``predictions.jsonl`` meanwhile, so no writer appends to the file being replaced."""
        with RowWriter(self.dir / PREDICTIONS):
            rows = self.all_rows()
            text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
            atomic_write(self.dir / PREDICTIONS, text)
            for f in sorted((self.dir / "shards").glob("*.rank*")):
                f.unlink()
        return rows

    def iter_runs(self) -> Iterator[Path]:  # pragma: no cover - convenience for notebooks
        """Sibling run folders of the same experiment."""
        yield from sorted(p for p in self.dir.parent.iterdir() if (p / "metrics.json").exists())
