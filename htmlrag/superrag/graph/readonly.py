"""Refuse Cypher that could change the database, before it reaches any backend.

This is the first of two locks on model-written queries; the second is that backends run them on a
read-only connection (Kuzu opened ``read_only=True``, Neo4j sessions in ``READ_ACCESS`` mode).

The check works on the query with string literals, quoted names and comments blanked out, and refuses:

* any write or admin clause as a whole word: CREATE, MERGE, DELETE, DETACH, SET, REMOVE, DROP, ALTER,
  FOREACH, LOAD (``LOAD CSV``, ``LOAD FROM``, ``LOAD EXTENSION``), COPY, IMPORT, EXPORT, INSTALL, ATTACH,
  DETACH, USE, GRANT, DENY, REVOKE, BEGIN, COMMIT, ROLLBACK, CHECKPOINT, TERMINATE, START, STOP;
* ``CALL`` of anything but a short list of read-only introspection procedures (``db.labels``,
  ``db.relationshipTypes``, ``db.propertyKeys``, ``db.schema.*``, Kuzu's ``show_tables``/``table_info``);
  ``CALL { ... }`` subqueries are refused too (they can hold writes);
* ``apoc.`` and ``dbms.`` anywhere, and more than one statement (``;`` before the end).
"""

from __future__ import annotations

import re

from htmlrag.errors import HtmlRagError

WRITE_WORDS = frozenset(
    "CREATE MERGE DELETE DETACH SET REMOVE DROP ALTER FOREACH LOAD COPY IMPORT EXPORT INSTALL ATTACH USE "
    "GRANT DENY REVOKE BEGIN COMMIT ROLLBACK CHECKPOINT TERMINATE START STOP".split()
)
READ_PROCEDURES = frozenset(
    {"db.labels", "db.relationshiptypes", "db.propertykeys", "db.schema.visualization",
     "db.schema.nodetypeproperties", "db.schema.reltypeproperties", "show_tables", "table_info"}
)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", re.S)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_WORD = re.compile(r"(?<![\w.$])[A-Za-z_][A-Za-z0-9_]*")  # not a property (n.x) or parameter ($x)
_CALL = re.compile(r"\bCALL\s*(\{|[A-Za-z_][\w.]*)", re.I)


class WriteQueryError(HtmlRagError, PermissionError):
    """A query was refused because it could modify the graph (the message names the offending clause)."""


def strip_literals(cypher: str) -> str:
    """The query with comments removed and string literals / quoted names replaced by ``''``."""
    return _STRING.sub("''", _COMMENT.sub(" ", cypher))


def check_read_only(cypher: str) -> str:
    """Return the query unchanged when it is read-only, else raise.

    Raises:
        WriteQueryError: the query holds a write/admin clause, a non-whitelisted ``CALL``, an
            ``apoc.``/``dbms.`` reference, or several statements.
    """
    if not cypher or not cypher.strip():
        raise WriteQueryError("empty query")
    bare = strip_literals(cypher)
    body = bare.strip().rstrip(";")
    if ";" in body:
        raise WriteQueryError("refused: more than one statement")
    low = bare.lower()
    for bad in ("apoc.", "dbms."):
        if bad in low:
            raise WriteQueryError(f"refused: {bad.rstrip('.')} procedures are not allowed")
    for m in _CALL.finditer(bare):
        target = m.group(1)
        if target == "{":
            raise WriteQueryError("refused: CALL { ... } subqueries are not allowed")
        if target.lower() not in READ_PROCEDURES:
            raise WriteQueryError(f"refused: CALL {target} is not a whitelisted read-only procedure")
    for w in _WORD.findall(bare):
        if w.upper() in WRITE_WORDS:
            raise WriteQueryError(f"refused: {w.upper()} clauses may modify the graph (read-only queries only)")
    return cypher
