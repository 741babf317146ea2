"""Graph-store protocol and the embedded Kuzu backend (the default).

Every read goes through :func:`~htmlrag.superrag.graph.readonly.check_read_only` (an allowlist of read clauses
and functions) and runs the text it returns; a store opened with ``read_only=True`` also holds a read-only
connection (Kuzu's ``Database(path, read_only=True)``). Builds open the store writable; queries open it
read-only. A database error on a query becomes a :class:`~htmlrag.superrag.graph.readonly.GraphQueryError`.

Model-written and typed queries go through :meth:`GraphStore.query_untrusted` instead, which adds the cost
bounds of :mod:`~htmlrag.superrag.graph.bounds` (hops, ``range()``, rows, result bytes, a wall-clock timeout;
Kuzu's read-only database has a buffer pool of ``limits.memory_mb``). Every ``$parameter`` must be given.

Each thread queries through its own Kuzu connection on the one shared database (Kuzu runs read queries of
several connections side by side; a connection is not shared between threads), so one slow query does not
hold up the questions of others.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.bounds import QueryLimits, QueryTooCostly, bound_query, check_params, fetch_capped
from htmlrag.superrag.graph.readonly import GraphQueryError, check_read_only, database_error
from htmlrag.superrag.graph.schema import LABELS, NODE_PROPS, RELS

log = logging.getLogger(__name__)


@runtime_checkable
class GraphStore(Protocol):
    """What the builder and the retrievers need from a graph database."""

    read_only: bool

    def create_schema(self) -> None:
        """Create node/relationship tables or constraints if missing (idempotent)."""
        ...

    def write_nodes(self, label: str, rows: Sequence[dict[str, Any]]) -> None:
        """Create nodes of one label; every row has all of NODE_PROPS."""
        ...

    def write_edges(self, rel: str, src: str, dst: str, rows: Sequence[dict[str, Any]]) -> None:
        """Create relationships from ``src``-labelled to ``dst``-labelled nodes; rows have src, dst, score."""
        ...

    def delete_document(self, doc_id: str) -> None:
        """Remove every node (and its relationships) of one document."""
        ...

    def query(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only query (refused before execution if it could write); rows as dicts."""
        ...

    def query_untrusted(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a model-written or typed query: read-only and within the store's ``limits``
        (:mod:`~htmlrag.superrag.graph.bounds`)."""
        ...

    def close(self) -> None: ...


def node_row(**kw: Any) -> dict[str, Any]:
    """A node row with every schema property (missing strings "", missing integers 0)."""
    row = {k: ("" if t == "STRING" else 0) for k, t in NODE_PROPS.items()}
    row.update({k: v for k, v in kw.items() if v is not None})
    return row


#: Kuzu's Python reader crashes the whole process (SIGSEGV, kuzu 0.11) converting a date or time outside
#: Python's years 1-9999 (``RETURN date('99999-01-01')``, ``date(...) + 3000000``, a cast to any TIMESTAMP type):
#: a typed or model-written query may not return such a type at all (the graph stores none: NODE_PROPS).
_TEMPORAL = re.compile(r"\b(DATE|TIMESTAMP\w*|INTERVAL)\b")


def _refuse_temporal(columns: Sequence[str], types: Sequence[str]) -> None:
    """Raise :class:`GraphQueryError` when a returned column holds dates, times or intervals (nested ones too)."""
    for name, kind in zip(columns, types, strict=False):
        if _TEMPORAL.search(str(kind)):
            raise GraphQueryError(f"the query returns {kind} values (column {name!r}), which a typed or "
                                  f"model-written query may not return (an out-of-range one crashes the database "
                                  f"reader); return to_string(...) of it instead")


class KuzuStore:
    """Kuzu, embedded and on disk (a single database file).

    Args:
        path: the database file (created when writable and missing; its folder must exist).
        read_only: open for queries only (several readers may share the file).
        batch: rows per ``UNWIND`` write.
        limits: bounds on :meth:`query_untrusted` (default :class:`~htmlrag.superrag.graph.bounds.QueryLimits`);
            a read-only database gets a buffer pool of ``limits.memory_mb``.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, batch: int = 2000,
                 limits: QueryLimits | None = None) -> None:
        try:
            import kuzu
        except ImportError as exc:  # pragma: no cover - optional extra
            raise HtmlRagError("the embedded graph store needs kuzu: pip install 'htmlrag-bench[graph]'") from exc
        self.path = Path(path)
        self.read_only = read_only
        self.batch = batch
        self.limits = limits or QueryLimits()
        self._local = threading.local()
        self._conns: list[Any] = []
        self._conns_lock = threading.Lock()
        self._in_flight = threading.Condition()
        self._running = 0
        self._db: Any = None
        self._bounded_db: Any = None
        if read_only and not self.path.exists():
            raise HtmlRagError(f"{self.path}: no graph database here (build it first: htmlrag graph build)")
        try:
            self._db = kuzu.Database(str(self.path), read_only=read_only)
            self._conn = self._connection()
        except RuntimeError as exc:
            raise HtmlRagError(f"{self.path}: cannot open Kuzu database: {exc}") from exc

    def _connection(self, bounded: bool = False) -> Any:
        """This thread's connection (``bounded``: the one with the query timeout), made on first use.

        One execution thread per connection: Kuzu 0.11.3's parallel plans return wrong rows now and then (a scan
        over every node table with ORDER BY ... SKIP ... LIMIT gave a row its WHERE excludes in 24 of 500 runs,
        0 of 500 with one thread: tests/integration/test_cypher_guard_kuzu.py). Per-document graphs are small;
        correct rows matter more than a second core.
        """
        import kuzu

        if self._db is None:
            raise HtmlRagError(f"{self.path}: the graph store is closed")
        key = "bounded" if bounded else "conn"
        conn = getattr(self._local, key, None)
        if conn is None:
            conn = kuzu.Connection(self._database(bounded), num_threads=1)
            if bounded:
                conn.set_query_timeout(max(1, int(self.limits.timeout_s * 1000)))
            setattr(self._local, key, conn)
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _database(self, bounded: bool) -> Any:
        """The database a connection runs on. Typed and model-written queries on a read-only store get a second
        read-only database of their own whose buffer pool is ``limits.memory_mb``: Kuzu caps memory per
        database, not per query, so the cap binds them without starving the library's own queries."""
        if not (bounded and self.read_only):
            return self._db
        with self._conns_lock:
            if self._bounded_db is None:
                import kuzu

                self._bounded_db = kuzu.Database(str(self.path), read_only=True,
                                                 buffer_pool_size=self.limits.memory_mb << 20)
            return self._bounded_db

    def _fetch(self, text: str, params: dict[str, Any] | None, limits: QueryLimits | None = None) -> list[dict[str, Any]]:
        """Run ``text`` and read its rows (``limits``: on the bounded connection, through :func:`fetch_capped`).
        Every query runs through here; :meth:`close` waits for the ones in flight (closing under one crashes
        Kuzu)."""
        with self._in_flight:
            if self._db is None:
                raise HtmlRagError(f"{self.path}: the graph store is closed")
            self._running += 1
        try:
            res = self._connection(bounded=limits is not None).execute(text, params or {})
            r = (res if isinstance(res, list) else [res])[-1]
            cols = r.get_column_names()
            if limits is not None:
                _refuse_temporal(cols, r.get_column_data_types())
            rows = (dict(zip(cols, r.get_next(), strict=True)) for _ in iter(r.has_next, False))
            return fetch_capped(rows, limits) if limits is not None else list(rows)
        finally:
            with self._in_flight:
                self._running -= 1
                self._in_flight.notify_all()

    def _run(self, text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._fetch(text, params)

    def _tables(self) -> set[str]:
        return {row["name"] for row in self._run("CALL show_tables() RETURN name")}

    def create_schema(self) -> None:
        have = self._tables()
        props = ", ".join(f"{k} {t}" for k, t in NODE_PROPS.items())
        for lab in LABELS:
            if lab not in have:
                self._run(f"CREATE NODE TABLE `{lab}`({props}, PRIMARY KEY(id))")
        for rel, pairs in RELS.items():
            if rel not in have:
                pair_text = ", ".join(f"FROM `{a}` TO `{b}`" for a, b in pairs)
                self._run(f"CREATE REL TABLE `{rel}`({pair_text}, score DOUBLE)")

    def write_nodes(self, label: str, rows: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(rows), self.batch):
            self._run(cypher.create_nodes(label), {"rows": list(rows[i : i + self.batch])})

    def write_edges(self, rel: str, src: str, dst: str, rows: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(rows), self.batch):
            self._run(cypher.create_edges(rel, src, dst), {"rows": list(rows[i : i + self.batch])})

    def delete_document(self, doc_id: str) -> None:
        self._run(cypher.DELETE_DOC, {"doc_id": doc_id})

    def query(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        text = check_read_only(cypher_text)
        check_params(text, params)
        try:
            return self._run(text, params)
        except RuntimeError as exc:
            raise database_error(exc, text) from exc

    def query_untrusted(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        text = bound_query(cypher_text, params, self.limits)
        try:
            return self._fetch(text, params, self.limits)
        except RuntimeError as exc:
            raise self._cost_error(exc, text) from exc
        except (UnicodeError, TypeError, ValueError, OverflowError) as exc:
            # the binding cannot take the text (a lone surrogate) or give back a value (a string split inside a
            # UTF-8 character, an interval beyond Python's): a refusal of this query, never a crash of the caller
            raise GraphQueryError(f"the query or its result cannot pass between Python and the database "
                                  f"({type(exc).__name__}: {str(exc)[:200]})") from exc

    def _cost_error(self, exc: RuntimeError, text: str) -> HtmlRagError:
        msg = str(exc)
        if msg.strip().startswith("Interrupted"):
            return QueryTooCostly(f"graph query stopped after {self.limits.timeout_s:g} s (the time limit for typed "
                                  f"or model-written queries): narrow it (query: {text[:300]!r})")
        if "buffer pool is full" in msg or "Buffer manager exception" in msg:
            return QueryTooCostly(f"graph query needed more than {self.limits.memory_mb} MB (the memory limit for "
                                  f"typed or model-written queries): narrow it (query: {text[:300]!r})")
        return database_error(exc, text)

    def close(self) -> None:
        """Close the database, after the queries in flight (new ones are refused from now on)."""
        with self._in_flight:
            db, self._db = getattr(self, "_db", None), None
            self._in_flight.wait_for(lambda: self._running == 0)
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local = threading.local()
        for d in (db, self._bounded_db):
            if d is not None:
                d.close()
        self._conn = self._bounded_db = None
