"""Neo4j backend (official ``neo4j`` driver), used when a URI is configured.

The Cypher is the same as Kuzu's (:mod:`~htmlrag.superrag.graph.cypher`); the schema becomes uniqueness
constraints on ``id``. Queries run in sessions opened with ``default_access_mode=READ_ACCESS`` through
``execute_read``, after :func:`~htmlrag.superrag.graph.readonly.check_read_only`; the server rejects writes
in a read transaction as well. Model-written and typed queries (:meth:`Neo4jStore.query_untrusted`) also get
the bounds of :mod:`~htmlrag.superrag.graph.bounds`: hops, ``range()``, rows and result bytes are checked here,
time by the transaction timeout (``limits.timeout_s``). Memory per transaction is the server's setting
(``db.memory.transaction.max``); set it on servers that answer model-written queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.bounds import QueryLimits, QueryTooCostly, bound_query, check_params, fetch_capped
from htmlrag.superrag.graph.readonly import check_read_only, database_error
from htmlrag.superrag.graph.schema import LABELS


class Neo4jStore:
    """A Neo4j database reached with the official driver.

    Args:
        uri: ``neo4j://host:7687`` or ``bolt://...``.
        auth: (user, password); None for servers without auth. Never stored in the corpus manifest.
        database: database name (None: the server's default).
        read_only: refuse the write methods; queries always use READ sessions.
        driver: an already built driver (tests pass a fake with the same ``session`` API).
        batch: rows per ``UNWIND`` write.
        limits: bounds on :meth:`query_untrusted`.
    """

    def __init__(self, uri: str, *, auth: tuple[str, str] | None = None, database: str | None = None,
                 read_only: bool = False, driver: Any = None, batch: int = 2000,
                 limits: QueryLimits | None = None) -> None:
        self.uri = uri
        self.limits = limits or QueryLimits()
        self.database = database
        self.read_only = read_only
        self.batch = batch
        if driver is None:
            try:
                import neo4j
            except ImportError as exc:  # pragma: no cover - optional extra
                raise HtmlRagError("the Neo4j store needs the neo4j driver: pip install neo4j") from exc
            driver = neo4j.GraphDatabase.driver(uri, auth=auth)
        self._driver = driver

    def _session(self, write: bool) -> Any:
        mode = "WRITE" if write else "READ"
        return self._driver.session(database=self.database, default_access_mode=mode)

    def _write(self, text: str, params: dict[str, Any] | None = None) -> None:
        if self.read_only:
            raise HtmlRagError(f"{self.uri}: store opened read-only")
        with self._session(write=True) as s:
            s.execute_write(lambda tx: tx.run(text, params or {}).consume())

    def create_schema(self) -> None:
        for lab in LABELS:
            self._write(f"CREATE CONSTRAINT {lab.lower()}_id IF NOT EXISTS FOR (n:{lab}) REQUIRE n.id IS UNIQUE")

    def write_nodes(self, label: str, rows: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(rows), self.batch):
            self._write(cypher.create_nodes(label), {"rows": list(rows[i : i + self.batch])})

    def write_edges(self, rel: str, src: str, dst: str, rows: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(rows), self.batch):
            self._write(cypher.create_edges(rel, src, dst), {"rows": list(rows[i : i + self.batch])})

    def delete_document(self, doc_id: str) -> None:
        self._write(cypher.DELETE_DOC, {"doc_id": doc_id})

    def query(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        text = check_read_only(cypher_text)
        check_params(text, params)
        try:
            with self._session(write=False) as s:
                return s.execute_read(lambda tx: [r.data() for r in tx.run(text, params or {})])
        except HtmlRagError:
            raise
        except Exception as exc:  # the driver's errors (syntax, unknown property, server refusal)
            raise database_error(exc, text) from exc

    def query_untrusted(self, cypher_text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        text = bound_query(cypher_text, params, self.limits)

        def read(tx: Any) -> list[dict[str, Any]]:
            return fetch_capped((r.data() for r in tx.run(text, params or {})), self.limits)

        read.timeout = self.limits.timeout_s  # type: ignore[attr-defined]  # what neo4j.unit_of_work(timeout=) sets
        try:
            with self._session(write=False) as s:
                return s.execute_read(read)
        except HtmlRagError:
            raise
        except Exception as exc:  # the driver's errors; a transaction over its timeout among them
            code = f"{getattr(exc, 'code', '')} {exc}"  # Neo.ClientError.Transaction.TransactionTimedOut...
            if "TransactionTimedOut" in code or "timeout" in type(exc).__name__.lower():
                raise QueryTooCostly(f"graph query stopped after {self.limits.timeout_s:g} s (the time limit for "
                                     f"typed or model-written queries): narrow it (query: {text[:300]!r})") from exc
            raise database_error(exc, text) from exc

    def close(self) -> None:
        self._driver.close()

