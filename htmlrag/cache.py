"""Content-keyed caches in SQLite: one table of ``key -> JSON value`` per stage.

Keys are SHA-256 digests of everything that determines the value (model id and revision, the input's
content hash, the parameters), built with :func:`content_key`. Each ``put`` is its own transaction, so a
killed process leaves either the whole entry or none; WAL mode lets shard processes share one file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from htmlrag.errors import HtmlRagError


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
                raise HtmlRagError(f"cache {path}: still locked by another process after {wait:.0f} s ({e})") from e
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


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

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            def setup() -> None:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

            try:
                # Switching a new file to WAL takes an exclusive lock without waiting on the busy handler, so
                # shard processes opening the same new cache at once can get "database is locked": retry
                # (every statement is idempotent).
                _retry_locked(setup, self.path)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def get(self, key: str) -> Any | None:
        """The cached value for ``key`` (decoded JSON), or ``None``."""
        with self._lock:
            db = self._db()
            row = _retry_locked(lambda: db.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone(),
                                self.path)
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``, replacing an earlier value."""
        blob = json.dumps(value, ensure_ascii=False)
        with self._lock:
            db = self._db()
            _retry_locked(lambda: db.execute(f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)",
                                             (key, blob)), self.path)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])

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
