"""Content-keyed caches in SQLite: one table of ``key -> JSON value`` per stage.

Keys are SHA-256 digests of everything that determines the value (model id and revision, the input's
content hash, the parameters), built with :func:`content_key`. Each ``put`` is its own transaction, so a
killed process leaves either the whole entry or none; WAL mode lets shard processes share one file.

A cache is disposable, so a cache file that is not a usable SQLite database (garbage bytes, a malformed page, a
foreign database with another layout) never fails the rows that use it: :func:`open_sqlite` and
:class:`SqliteCache` detect it (on opening, and on any later read or write), log a warning naming the file, set
it aside as ``<name>.corrupt-<time>-<pid>`` (with its ``-wal``/``-shm``) and carry on with a new, empty one.
Every other failure -- a folder or a file in the way, no permission, a read-only file, a full disk, a lock held
for too long -- raises :class:`~htmlrag.core.errors.CacheError` naming the file: the run stops at once (call
:meth:`SqliteCache.open` first to find out before any work), and nothing is computed around a cache that
does not work. Only values computed without an error are ever stored (the callers' rule).
Values are stored with known secrets redacted (:mod:`htmlrag.core.redact`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from htmlrag.core.errors import CacheError, HtmlRagError
from htmlrag.core.redact import redact

log = logging.getLogger(__name__)
SQLITE_HEADER = b"SQLite format 3\x00"


def content_key(*parts: Any) -> str:
    """SHA-256 hex digest of ``parts`` serialised as canonical JSON (bytes are hashed first)."""
    def enc(x: Any) -> Any:
        if isinstance(x, (bytes, bytearray)):
            return {"sha256": hashlib.sha256(x).hexdigest()}
        if isinstance(x, Path):
            return str(x)
        if isinstance(x, (list, tuple)):
            return [enc(v) for v in x]
        if isinstance(x, dict):
            return {str(k): enc(v) for k, v in x.items()}
        return x

    blob = json.dumps(enc(list(parts)), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _retry_locked(op: Any, path: Path, wait: float = 60.0) -> Any:
    """Run ``op()``, retrying for up to ``wait`` seconds while SQLite reports the file locked or busy."""
    deadline = time.monotonic() + wait
    delay = 0.005
    while True:
        try:
            return op()
        except sqlite3.OperationalError as e:
            msg = str(e).lower()
            if "locked" not in msg and "busy" not in msg:
                raise
            if time.monotonic() > deadline:
                raise CacheError(f"cache {path}: still locked by another process after {wait:.0f} s ({e})") from e
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def unusable(exc: BaseException) -> bool:
    """True when an SQLite error means the file is not (or no longer) a usable cache database."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    if isinstance(exc, sqlite3.OperationalError):  # locked, busy, cannot open, disk full: not the file's fault
        msg = str(exc).lower()
        return any(m in msg for m in ("malformed", "not a database", "no such table", "no such column",
                                      "has no column"))
    return True  # "file is not a database", "database disk image is malformed", ...


def _header_problem(path: Path) -> str | None:
    try:
        if path.stat().st_size == 0:
            return None
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return None
    return None if head == SQLITE_HEADER else "not an SQLite database (wrong header bytes)"


def _setup_and_check(conn: sqlite3.Connection, setup: Callable[[sqlite3.Connection], None]) -> None:
    setup(conn)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()


def set_aside(path: Path, problem: str) -> Path:
    """Rename a broken cache file (and its ``-wal``/``-shm``/``-journal``) out of the way; returns the new name."""
    dest = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        src = Path(f"{path}{suffix}")
        if src.exists():
            os.replace(src, Path(f"{dest}{suffix}"))
    log.warning("cache %s: %s; set aside as %s, continuing with a new empty cache", path, problem, dest.name)
    return dest


def open_sqlite(path: str | Path, setup: Callable[[sqlite3.Connection], None], *, autocommit: bool = True
                ) -> sqlite3.Connection:
    """Open (creating) a cache database and run ``setup`` on it (pragmas, ``CREATE TABLE IF NOT EXISTS``).

    A file that is not a usable SQLite database is set aside (:func:`set_aside`) and a new one created.

    Raises:
        CacheError: the file cannot be opened for another reason (a folder in the way, permissions, a read-only
            file), naming it.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise CacheError(f"cache {path}: not a file (a folder or a device is in the way); move it away or "
                         "point the cache elsewhere")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"cache {path}: cannot create its folder {path.parent} ({exc.strerror or exc})") from exc
    problem: str | None = None
    for attempt in range(2):
        try:
            problem = _header_problem(path)
        except OSError as exc:  # no permission to read it
            raise CacheError(f"cache {path}: cannot read ({exc.strerror or exc})") from exc
        if problem is None:
            try:
                conn = sqlite3.connect(path, timeout=60, check_same_thread=False,
                                       **({"isolation_level": None} if autocommit else {}))
            except sqlite3.Error as exc:
                raise CacheError(f"cache {path}: cannot open: {exc}") from exc
            try:
                # Switching a new file to WAL takes an exclusive lock without waiting on the busy handler, so
                # processes opening the same new cache at once can get "database is locked": retry (setup is
                # idempotent).
                _retry_locked(functools.partial(_setup_and_check, conn, setup), path)
                return conn
            except sqlite3.DatabaseError as exc:
                conn.close()
                if not unusable(exc):
                    raise CacheError(f"cache {path}: cannot open: {exc}") from exc
                problem = str(exc)
            except BaseException:
                conn.close()
                raise
        if attempt == 0:
            set_aside(path, problem)
    raise CacheError(f"cache {path}: {problem}, even after setting the broken file aside")


class SqliteCache:
    """A persistent key-value cache (thread-safe; several processes may share the file).

    Args:
        path: the SQLite file (parent folders are created).
        table: the stage's table name (letters, digits, underscore).
    """

    def __init__(self, path: str | Path, table: str = "cache") -> None:
        if not table.replace("_", "").isalnum():
            raise HtmlRagError(f"bad cache table name {table!r}")
        self.path = Path(path)
        self.table = table
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(f"SELECT key, value FROM {self.table} LIMIT 0")  # a foreign table of that name: unusable

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_sqlite(self.path, self._setup)
        return self._conn

    def _guarded(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``op(connection)`` (caller holds the lock); a broken file is set aside and ``op`` run once more."""
        for attempt in range(2):
            db = self._db()
            try:
                return _retry_locked(functools.partial(op, db), self.path)
            except sqlite3.DatabaseError as exc:
                if attempt or not unusable(exc):
                    raise CacheError(f"cache {self.path}: {exc}") from exc
                self._conn = None
                db.close()
                set_aside(self.path, str(exc))
        raise AssertionError("unreachable")  # pragma: no cover

    def open(self) -> SqliteCache:
        """Open the file now (it is otherwise opened on first use), so that a cache that cannot work fails
        before any work is done.

        Raises:
            CacheError: naming the file (see the module docstring).
        """
        with self._lock:
            self._db()
        return self

    def get(self, key: str) -> Any | None:
        """The cached value for ``key`` (decoded JSON), or ``None``."""
        with self._lock:
            row = self._guarded(lambda db: db.execute(f"SELECT value FROM {self.table} WHERE key = ?",
                                                      (key,)).fetchone())
        try:
            value = None if row is None else json.loads(row[0])
        except ValueError:  # a damaged entry is a miss (recomputed and replaced)
            log.debug("cache %s: unreadable entry %s ignored", self.path, key[:12])
            row = None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``, replacing an earlier value."""
        blob = redact(json.dumps(value, ensure_ascii=False), shapes=False)
        with self._lock:
            self._guarded(lambda db: db.execute(f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)",
                                                (key, blob)))

    def __len__(self) -> int:
        with self._lock:
            return int(self._guarded(lambda db: db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]))

    def close(self) -> None:
        """Close the connection (reopened on the next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __getstate__(self) -> dict[str, Any]:  # picklable for worker processes: reconnect there
        return {"path": self.path, "table": self.table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["table"])
