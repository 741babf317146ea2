"""The read-only guard on model-written Cypher."""

from __future__ import annotations

import pytest

from htmlrag.superrag.graph.readonly import WriteQueryError, check_read_only


@pytest.mark.parametrize("q", [
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:SectionChunk) DELETE n",
    "MATCH (n) SET n.text = 'x' RETURN n",
    "CREATE (n:Page {id: 'x'})",
    "MERGE (n:Stem {id: 'x'})",
    "MATCH (n) REMOVE n.text",
    "DROP TABLE Page",
    "CALL dbms.security.createUser('eve', 'pw', false)",
    "CALL db.clearQueryCaches()",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
    "CALL { CREATE (n:Page {id: 'y'}) }",
    "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r",
    "COPY Page FROM 'pages.csv'",
    "MATCH (n) RETURN n; MATCH (m) DELETE m",
    "match (n) foreach (x in [1] | create (:Page {id: 'z'}))",
    "MATCH (n) /* harmless */ dElEtE n",
])
def test_write_queries_are_refused(q: str) -> None:
    with pytest.raises(WriteQueryError):
        check_read_only(q)


@pytest.mark.parametrize("q", [
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS 'CREATE TABLE' RETURN c.id AS id",
    "MATCH (c)-[:IS_UNDER]->(s:MainSection) WHERE s.title = 'Set of rules; delete nothing' RETURN c.id AS id",
    "MATCH (n) WHERE n.page_start = $set RETURN n.id AS id LIMIT 5;",
    "CALL db.labels()",
    "CALL show_tables() RETURN name",
])
def test_read_queries_pass(q: str) -> None:
    assert check_read_only(q) == q
