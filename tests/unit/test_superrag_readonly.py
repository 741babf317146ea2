"""The read-only guard on model-written Cypher: an allowlist over a strict lexer.

The adversarial corpus (tests/helpers/cypher_corpus.py: write clauses, file access, procedures, comment and
string tricks, look-alike letters, glued keywords, several statements) must be refused entirely, by the whole
guard and by its grammar alone; the legitimate corpus must be accepted. The database side (nothing runs,
no file touched, rows returned) is in tests/integration/test_cypher_guard_kuzu.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import htmlrag.superrag.graph.readonly as ro
from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.cypher_lexer import tokenize
from htmlrag.superrag.graph.readonly import RefusedQueryError, WriteQueryError, check_read_only
from tests.helpers.cypher_corpus import LEGITIMATE, adversarial

ADVERSARIAL = adversarial(Path("/tmp/htmlrag-out"), Path("/tmp/htmlrag-canary.csv"))


def test_corpus_sizes() -> None:
    assert len(ADVERSARIAL) >= 150 and len(set(ADVERSARIAL)) == len(ADVERSARIAL)
    assert len(LEGITIMATE) >= 30


@pytest.mark.parametrize("q", ADVERSARIAL)
def test_adversarial_queries_are_refused(q: str) -> None:
    with pytest.raises(RefusedQueryError, match=r"^refused: "):
        check_read_only(q)


def test_the_grammar_alone_refuses_the_whole_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: without the list of denied words the allowlist grammar still refuses everything."""
    monkeypatch.setattr(ro, "DENIED", {})
    ro.check_read_only.cache_clear()
    try:
        accepted = []
        for q in ADVERSARIAL:
            try:
                check_read_only(q)
                accepted.append(q)
            except RefusedQueryError:
                pass
        assert accepted == []
    finally:
        ro.check_read_only.cache_clear()


@pytest.mark.parametrize("q", LEGITIMATE)
def test_legitimate_queries_are_accepted(q: str) -> None:
    out = check_read_only(q)
    assert "//" not in out.replace("'// not a comment'", "") and "/*" not in out
    assert check_read_only(out) == out  # the text that runs passes the guard again, unchanged


@pytest.mark.parametrize("name", [n for n in dir(cypher) if n.isupper() and not n.startswith("_")
                                  and isinstance(getattr(cypher, n), str) and n != "DELETE_DOC"])
def test_internal_queries_pass_unchanged(name: str) -> None:
    text = getattr(cypher, name)
    assert check_read_only(text) == text


@pytest.mark.parametrize(("q", "named"), [
    ("COPY (MATCH (n) RETURN n.id) TO '/tmp/x.csv'", "COPY"),
    ("EXPORT DATABASE '/tmp/x'", "EXPORT"),
    ("IMPORT DATABASE '/tmp/x'", "IMPORT"),
    ("LOAD FROM '/etc/passwd' RETURN *", "LOAD"),
    ("LOAD EXTENSION json", "LOAD"),
    ("INSTALL json", "INSTALL"),
    ("ATTACH '/tmp/o.kuzu' AS o (dbtype kuzu)", "ATTACH"),
    ("CALL show_tables() RETURN *", "CALL"),
    ("CREATE (n:Page {id: 'x'})", "CREATE"),
    ("MERGE (n:Page {id: 'x'})", "MERGE"),
    ("MATCH (n) SET n.text = 'x'", "SET"),
    ("MATCH (n) DELETE n", "DELETE"),
    ("MATCH (n) DETACH DELETE n", "DETACH"),
    ("MATCH (n) REMOVE n.text", "REMOVE"),
    ("DROP TABLE Page", "DROP"),
    ("ALTER TABLE Page ADD x STRING", "ALTER"),
    ("MATCH (n) RETURN n.id AS id; MATCH (m) RETURN m.id AS id", "more than one statement"),
    ("RETURN read_csv('/etc/passwd') AS x", "read_csv()"),
    ("MATCH (n) D\u0415LETE n", "U+0415"),
    ("MATCH (n) RETURN n.id AS id ORDER n.id", "expected BY"),
    ("MATCH (n) WITH n AS m", "the end of the query"),
])
def test_refusal_names_the_clause(q: str, named: str) -> None:
    with pytest.raises(WriteQueryError) as exc:  # the old name still catches every refusal
        check_read_only(q)
    assert named in str(exc.value)


def test_comments_are_dropped_from_the_text_that_runs() -> None:
    q = "MATCH (n) // note\nWHERE n.ord > 1 /* why */ RETURN n.id AS id;"
    assert check_read_only(q) == "MATCH (n) WHERE n.ord > 1 RETURN n.id AS id"
    # a string holding comment markers, quotes and a semicolon is one token, kept verbatim
    q2 = "MATCH (n) WHERE n.text = 'a // b /* c */ d; \\' e' RETURN n.id AS id"
    assert check_read_only(q2) == q2
    strings = [t.text for t in tokenize(q2) if t.kind == "string"]
    assert strings == ["'a // b /* c */ d; \\' e'"]


def test_lexer_names_and_escapes() -> None:
    toks = tokenize("MATCH (`a``b; DROP`) RETURN \"x\\\"y\" AS `c`, $p1, 1..3, 2.5e-3")
    kinds = [(t.kind, t.text) for t in toks]
    assert ("name", "`a``b; DROP`") in kinds and ("string", '"x\\"y"') in kinds
    assert ("param", "$p1") in kinds and ("op", "..") in kinds and ("number", "2.5e-3") in kinds
    assert [t.text for t in toks if t.kind == "word"] == ["MATCH", "RETURN", "AS"]
