"""The read-only guard on graph queries: refuse, before anything runs, every query that is not one statement
made only of read clauses and allowed functions.

Model-written Cypher (the ``cypher`` retriever, ``htmlrag graph query --cypher``) and every internal query pass
through :func:`check_read_only`, which

1. splits the query with a strict lexer (:mod:`~htmlrag.superrag.graph.cypher_lexer`: strings with escapes,
   backtick names, both comment forms; a non-ASCII letter, a NUL or an unknown character outside a string or a
   quoted name is refused);
2. refuses any word of a write, file, procedure, transaction or administration clause anywhere outside strings
   and quoted names (``CREATE MERGE SET DELETE DETACH REMOVE DROP ALTER COPY LOAD EXPORT IMPORT INSTALL ATTACH
   USE CALL FOREACH BEGIN COMMIT ...``), naming it, even where a database would read it as a plain name;
3. parses the whole token list with an allowlist grammar (:mod:`~htmlrag.superrag.graph.cypher_grammar`): one
   statement of MATCH, OPTIONAL MATCH, WHERE, WITH, UNWIND, RETURN, ORDER BY, SKIP, LIMIT and UNION [ALL],
   calling only the functions in :data:`~htmlrag.superrag.graph.cypher_grammar.FUNCTIONS`;
4. returns the query **rebuilt from its tokens** (comments dropped), and that text is what the store runs: a
   comment or literal another lexer would read differently cannot smuggle text past the check.

Defence in depth: the stores run queries on read-only connections (Kuzu ``Database(path, read_only=True)``,
Neo4j ``READ_ACCESS`` sessions), and a database error becomes a :class:`GraphQueryError` with the database's
message (a misspelt property), never a traceback.
"""

from __future__ import annotations

import functools

from htmlrag.core.errors import HtmlRagError
from htmlrag.superrag.graph.cypher_grammar import FUNCTIONS, READ_CLAUSES, Recognizer
from htmlrag.superrag.graph.cypher_lexer import RefusedQueryError, canonical, tokenize

__all__ = [
    "DENIED",
    "FUNCTIONS",
    "READ_CLAUSES",
    "GraphQueryError",
    "RefusedQueryError",
    "WriteQueryError",
    "check_read_only",
]

#: Kept for callers of the first version: every refusal (writes, files, several statements) is this class.
WriteQueryError = RefusedQueryError

_WRITE = "writes to or changes the database"
_FILES = "reads or writes files, extensions or other databases"
#: Words refused wherever they occur outside strings and `quoted names`, with the reason given.
DENIED: dict[str, str] = {
    **dict.fromkeys("CREATE MERGE SET DELETE DETACH REMOVE DROP ALTER RENAME ADD FOREACH INSERT UPDATE COMMENT "
                    "MACRO SEQUENCE".split(), _WRITE),
    **dict.fromkeys("COPY LOAD EXPORT IMPORT INSTALL UNINSTALL EXTENSION ATTACH USE GLOB HEADERS".split(), _FILES),
    **dict.fromkeys("CALL YIELD".split(), "runs a procedure"),
    **dict.fromkeys("BEGIN COMMIT ROLLBACK CHECKPOINT TRANSACTION COMMIT_SKIP_CHECKPOINT "
                    "ROLLBACK_SKIP_CHECKPOINT".split(), "controls transactions"),
    **dict.fromkeys("GRANT DENY REVOKE SHOW TERMINATE START STOP ENABLE DATABASE USER ROLE PASSWORD "
                    "PRIVILEGE".split(), "administers the server"),
    **dict.fromkeys("EXPLAIN PROFILE HINT".split(), "is not a read clause"),
}


#: Longer queries are refused (a model's query is a few hundred characters).
MAX_QUERY_CHARS = 20_000


class GraphQueryError(HtmlRagError):
    """The database refused or failed an accepted query (a misspelt property, a type error): its message."""


@functools.lru_cache(maxsize=512)
def check_read_only(cypher: str) -> str:
    """Return the query as it must be run (rebuilt from its tokens, comments removed), or refuse it.

    Raises:
        RefusedQueryError: (alias ``WriteQueryError``) the query is empty, holds a character, word, clause or
            function outside the allowlist, or more than one statement; the message names it.
    """
    if not isinstance(cypher, str) or not cypher.strip():
        raise RefusedQueryError("refused: empty query")
    if len(cypher) > MAX_QUERY_CHARS:
        raise RefusedQueryError(f"refused: query of {len(cypher)} characters (at most {MAX_QUERY_CHARS})")
    tokens = tokenize(cypher)
    for t in tokens:
        if t.kind == "word" and t.upper in DENIED:
            raise RefusedQueryError(f"refused: {t.upper} at offset {t.pos} {DENIED[t.upper]}; read-only queries "
                                    f"may use only {', '.join(READ_CLAUSES)} and allowed functions")
    try:
        Recognizer(tokens).query()
    except RecursionError as exc:
        raise RefusedQueryError("refused: query nested too deeply") from exc
    if tokens and tokens[-1].kind == "op" and tokens[-1].text == ";":
        tokens = tokens[:-1]
    return canonical(tokens)


def database_error(exc: BaseException, query: str) -> GraphQueryError:
    """A clear error for a database's exception on ``query`` (its first line, without the driver's traceback)."""
    msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return GraphQueryError(f"graph query failed: {msg} (query: {query[:300]!r})")
