"""Corpora for the read-only Cypher guard: adversarial queries (every one must be refused before execution) and
legitimate read queries over :func:`build_graph` (every one must be accepted and return rows).

``{out}`` is a folder that must never be created and ``{canary}`` a file outside the database that must never be
read; tests fill them in with :func:`fill`.
"""

from __future__ import annotations

from pathlib import Path

READ = "MATCH (n:SectionChunk) RETURN n.id AS id"

#: Dangerous statements, each tried as it is and through the disguises of :data:`DISGUISES`.
PAYLOADS = [
    "COPY (MATCH (n) RETURN n.id, n.text) TO '{out}/leak.csv'",
    "COPY (MATCH (n) RETURN n.*) TO '{out}/leak.parquet'",
    "EXPORT DATABASE '{out}/export'",
    "EXPORT DATABASE '{out}/export' (format=\"csv\")",
    "IMPORT DATABASE '{out}/export'",
    "LOAD FROM '{canary}' RETURN *",
    "LOAD WITH HEADERS (a STRING) FROM '{canary}' RETURN *",
    "LOAD EXTENSION '{out}/evil.so'",
    "INSTALL httpfs",
    "ATTACH '{out}/other.kuzu' AS other (dbtype kuzu)",
    "CREATE (n:Page {id: 'evil'}) RETURN n.id AS id",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:SectionChunk) SET n.text = 'pwned' RETURN n.id AS id",
    "DROP TABLE Stem",
    "CALL show_tables() RETURN *",
]

#: Ways to hide a payload ``{p}`` from a filter: after a read statement, behind comments or quotes, glued, ...
DISGUISES = [
    "{p}",
    READ + "; {p}",
    READ + ";{p}",
    "MATCH (n) WHERE n.text = '//' RETURN n.id AS id; {p}",
    "MATCH (n) WHERE n.text = '/*' RETURN n.id AS id; {p} // */",
    "MATCH (`/*`) RETURN 1 AS x; {p} //*/",
    "MATCH (n) WHERE n.text = 'it\\'s; ok' RETURN n.id AS id;\n{p}",
    "MATCH (n) RETURN n.id AS id /* **/ ; {p} //*/",
    "MATCH (`a``;`) RETURN 1 AS x;\t{p}",
    "/* harmless */ {p}",
]

#: Hand-written attacks: write clauses, file access, procedures, transactions, Neo4j admin, functions,
#: look-alike letters, Unicode spaces and dashes, glued keywords, several statements, broken literals.
HANDWRITTEN = [
    # writes (Kuzu and Neo4j)
    "MATCH (n:SectionChunk) DELETE n",
    "match (n) detach delete n",
    "MATCH (n) /* harmless */ dElEtE n",
    "MERGE (n:Stem {id: 'x'}) RETURN n.id AS id",
    "MATCH (n) REMOVE n.text",
    "CREATE NODE TABLE Evil(id STRING, PRIMARY KEY(id))",
    "CREATE REL TABLE EVIL_REL(FROM Page TO Page)",
    "ALTER TABLE Page ADD evil STRING",
    "ALTER TABLE Page RENAME TO Pages",
    "CREATE MACRO evil(x) AS x + 1",
    "CREATE SEQUENCE evil_seq",
    "COMMENT ON TABLE Page IS 'pwned'",
    "MATCH (n) FOREACH (x IN [1] | CREATE (:Page {id: 'z'}))",
    "UNWIND [1, 2] AS x CREATE (:Page {id: CAST(x AS STRING)})",
    "MATCH (n) WITH n SET n.title = 'x' RETURN n.id AS id",
    "MATCH (n) RETURN n.id AS id UNION CREATE (m:Page {id: 'u'}) RETURN m.id AS id",
    "MATCH (n:Page) WHERE n.id = 'p1' MERGE (n)-[:HAS_NEXT]->(n) RETURN n.id AS id",
    # files and other databases
    "COPY Page FROM '{canary}'",
    "COPY Page FROM '{canary}' (header=true)",
    "COPY Page FROM ['{canary}', '{canary}']",
    "COPY Page FROM (LOAD FROM '{canary}' RETURN *)",
    "COPY (RETURN 1) TO '/tmp/../{out}/x.csv'",
    "LOAD FROM '{canary}' (header=false) RETURN *",
    "LOAD FROM '{canary}' WHERE column0 <> '' RETURN column0",
    "LOAD CSV FROM 'file://{canary}' AS r RETURN r",
    "LOAD CSV WITH HEADERS FROM 'file://{canary}' AS r RETURN r",
    "LOAD json",
    "LOAD EXTENSION json",
    "INSTALL json FROM 'http://127.0.0.1:9/'",
    "FORCE INSTALL json",
    "UNINSTALL json",
    "ATTACH '{out}/x.sqlite' AS x (dbtype sqlite)",
    "DETACH other",
    "USE other",
    "EXPORT DATABASE '{out}/export2' (format='parquet')",
    "MATCH (n) RETURN n.id AS id; EXPORT DATABASE '{out}/export3'",
    # procedures and settings
    "CALL table_info('Page') RETURN *",
    "CALL current_setting('home_directory') RETURN *",
    "CALL threads=1",
    "CALL db_version() RETURN *",
    "CALL db.labels()",
    "CALL db.clearQueryCaches()",
    "CALL dbms.security.createUser('eve', 'pw', false)",
    "CALL apoc.load.json('file:///etc/passwd')",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})",
    "CALL { CREATE (n:Page {id: 'y'}) }",
    "MATCH (n) CALL { WITH n DETACH DELETE n } RETURN 1 AS x",
    "CALL show_tables() YIELD name RETURN name",
    # transactions and administration
    "BEGIN TRANSACTION",
    "BEGIN TRANSACTION READ ONLY",
    "COMMIT",
    "ROLLBACK",
    "CHECKPOINT",
    "EXPLAIN COPY (MATCH (n) RETURN n.id) TO '{out}/e.csv'",
    "PROFILE MATCH (n) RETURN n.id AS id",
    "SHOW DATABASES",
    "GRANT ALL ON DATABASE * TO eve",
    "TERMINATE TRANSACTIONS 'x'",
    "START DATABASE other",
    "CREATE USER eve SET PASSWORD 'pw'",
    # functions outside the allowlist, and calls that are not plain names
    "RETURN current_setting('home_directory') AS h",
    "RETURN db_version() AS v",
    "MATCH (n) RETURN apoc.text.join([n.id], ',') AS x",
    "RETURN `read_csv`('{canary}') AS x",
    "RETURN read_csv('{canary}') AS x",
    "RETURN read_parquet('{out}/x.parquet') AS x",
    "UNWIND read_json('{canary}') AS r RETURN r",
    "MATCH (n) RETURN gds.pageRank(n) AS x",
    "MATCH (n) WHERE file_exists('{canary}') RETURN n.id AS id",
    "RETURN list_transform([1], x -> x + 1) AS y",
    "RETURN n.text(1) AS y",
    # look-alike letters, Unicode spaces and dashes, control characters
    "MATCH (n) D\u0415LETE n",
    "\u0421OPY (MATCH (n) RETURN n.id) TO '{out}/c.csv'",
    "MATCH (n) RETURN n.id AS id; \uff23\uff2f\uff30\uff39 (RETURN 1) TO '{out}/f.csv'",
    "MATCH\u00a0(n) RETURN n.id AS id",
    "MATCH (n)\u2003RETURN n.id AS id",
    "MATCH (a)\u2010[:IS_UNDER]->(b) RETURN a.id AS id",
    "MATCH (a)-[:IS_UNDER]-\u27e9(b) RETURN a.id AS id",
    "MATCH (n) RETURN n.id AS id\x00; DROP TABLE Page",
    "MATCH (n)\x1cRETURN n.id AS id",
    "MATCH (n) RETURN n.id AS \u0456d",
    "MATCH (n\u200b) RETURN n.id AS id",
    # glued keywords
    "MATCH (n)DELETE n",
    "MATCH(n)SET n.text='x'",
    "RETURN 1 AS x;COPY (RETURN 1) TO '{out}/g.csv'",
    "MATCH (n) WHERE 1=1DETACH DELETE n",
    "MATCH (n) RETURN n.id AS id;DROP TABLE Page",
    "UNWIND [1]AS x CREATE (:Page {id: 'g'})",
    # several statements, statement tricks
    "MATCH (n) RETURN n.id AS id; MATCH (m) RETURN m.id AS id",
    "MATCH (n) RETURN n.id AS id;;",
    "; MATCH (n) RETURN n.id AS id",
    "RETURN 1 AS x; RETURN 2 AS y",
    "MATCH (n) RETURN n.id AS id\n;\nCHECKPOINT",
    "MATCH (n) RETURN n.id AS id // ; DROP TABLE Page\r DROP TABLE Page",
    # broken or ambiguous literals and comments
    "MATCH (n) WHERE n.text = 'open RETURN n.id AS id",
    "MATCH (n) WHERE n.text = 'bad \\q escape' RETURN n.id AS id",
    "MATCH (n) WHERE n.text = 'x\\' RETURN n.id AS id; DROP TABLE Page //'",
    "MATCH (n) WHERE n.text = \"a\" \"b\" RETURN n.id AS id",
    "MATCH (n) WHERE n.text = 'it''s' RETURN n.id AS id",
    "MATCH (`open) RETURN 1 AS x",
    "MATCH (``) RETURN 1 AS x",
    "MATCH (n) /* not closed RETURN n.id AS id",
    "MATCH (n) RETURN n.id AS id /* a */ */ DROP TABLE Page",
    "MATCH (n) RETURN $ AS x",
    "MATCH (n) RETURN n.id AS id ! DROP",
    "MATCH (n) WHERE n.ord & 1 = 1 RETURN n.id AS id",
    "MATCH (n) RETURN n.id AS id \\",
    "",
    "   \n\t ",
    "// only a comment",
    "/* only a comment */",
    # clauses in the wrong place
    "WHERE 1 = 1 RETURN 1 AS x",
    "MATCH (n)",
    "MATCH (n) RETURN n.id AS id MATCH (m) RETURN m.id AS id",
    "ORDER BY 1",
    "MATCH (n) RETURN n.id AS id HINT (n)",
    "(n) RETURN n",
    "RETURN " + "(" * 80 + "1" + ")" * 80 + " AS deep",
    "RETURN " + "[" * 3000 + "1" + "]" * 3000 + " AS deeper",
    "MATCH (n) RETURN n.id AS id /*" + "x" * 20_000 + "*/",
]


def adversarial(out: Path, canary: Path) -> list[str]:
    """Every adversarial query, ``{out}``/``{canary}`` filled in."""
    disguised = [d.replace("{p}", p) for p in PAYLOADS for d in DISGUISES]
    return list(dict.fromkeys(fill(q, out, canary) for q in [*PAYLOADS, *disguised, *HANDWRITTEN]))


def fill(query: str, out: Path, canary: Path) -> str:
    return query.replace("{out}", out.as_posix()).replace("{canary}", canary.as_posix())


#: Read queries a model might write over the SuperRAG schema; each returns at least one row on build_graph().
LEGITIMATE = [
    "MATCH (c:SectionChunk) RETURN c.id AS id",
    "match (c:SectionChunk) return c.id as id limit 2",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS 'turbine' RETURN c.id AS id",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS 'CREATE TABLE' RETURN c.id AS id",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS 'delete; drop' RETURN c.id AS id",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS '// not a comment' RETURN c.id AS id",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS \"it's\" RETURN c.id AS id",
    "MATCH (c:SectionChunk) WHERE c.text CONTAINS 'it\\'s' RETURN c.id AS id",
    "MATCH (c)-[:IS_UNDER]->(s:MainSection) WHERE s.title = 'Results' RETURN c.id AS id",
    "MATCH (c)-[:IS_UNDER*1..3]->(d:MainSection) RETURN DISTINCT c.id AS id",
    "MATCH (s:MainSection)<-[:IS_UNDER]-(c:SectionChunk) RETURN s.title AS title, count(c) AS n",
    "MATCH (t:`Table`)-[:ON_PAGE]->(p:Page) RETURN t.id AS id, p.page_start AS page",
    "MATCH (t:`Table`) WHERE t.text CONTAINS '7,890' RETURN t.id AS id",
    "MATCH (c:TableChunk)-[:IS_UNDER]->(t:`Table`) RETURN c.id AS id, t.title AS caption",
    "MATCH (f:Figure) WHERE lower(f.title) STARTS WITH 'figure' RETURN f.id AS id",
    "MATCH (a:SectionChunk)-[:HAS_NEXT]->(b:SectionChunk) RETURN a.id AS id, b.id AS next",
    "MATCH (n) WHERE n.page_start = $page RETURN n.id AS id ORDER BY id",
    "MATCH (n) WHERE n.kind IN ['SectionChunk', 'Table'] RETURN n.id AS id ORDER BY n.ord DESC SKIP 1 LIMIT 3",
    "MATCH (n:SectionChunk) WITH n.doc_id AS doc, count(*) AS c WHERE c > 1 RETURN doc, c",
    "UNWIND ['d:c1', 'd:c2'] AS i MATCH (n) WHERE n.id = i RETURN n.id AS id",
    "MATCH (n:SectionChunk) RETURN n.id AS id UNION MATCH (t:`Table`) RETURN t.id AS id",
    "MATCH (n:SectionChunk) RETURN n.id AS id UNION ALL MATCH (n:SectionChunk) RETURN n.id AS id",
    "OPTIONAL MATCH (f:Figure)-[:ON_PAGE]->(p:Page) RETURN f.id AS id, p.page_start AS page",
    "MATCH (n:SectionChunk) RETURN n.id AS id, CASE WHEN n.ord > 1 THEN 'late' ELSE 'early' END AS pos",
    "MATCH (n:SectionChunk) WHERE n.text =~ '.*blade.*' RETURN n.id AS id",
    "MATCH (n:SectionChunk) WHERE n.title IS NOT NULL AND NOT n.text ENDS WITH 'zzz' RETURN n.id AS id",
    "MATCH (n:SectionChunk) WHERE (n)-[:IS_UNDER]->(:MainSection) RETURN n.id AS id",
    "MATCH (n:SectionChunk) WHERE EXISTS { MATCH (n)-[:HAS_NEXT]->() } RETURN n.id AS id",
    "MATCH (n:SectionChunk) RETURN n.id AS id, COUNT { MATCH (n)-[:ON_PAGE]->() } AS pages",
    "MATCH p = (a:SectionChunk)-[:HAS_NEXT*1..2]->(b) RETURN a.id AS id, length(p) AS hops",
    "MATCH (n:SectionChunk) RETURN n.id AS id, size(n.text) AS chars, substring(n.text, 0, 5) AS head",
    "MATCH (n:SectionChunk) RETURN n.id AS id, label(n) AS lab, upper(n.kind) AS k, n.ord * 2 + 1 AS x",
    "MATCH (n:SectionChunk) RETURN collect(n.id)[1] AS id, list_sort(collect(n.ord)) AS ords",
    "MATCH (n:SectionChunk) RETURN n.id AS id, coalesce(n.title, 'none') AS t, CAST(n.ord AS STRING) AS o",
    "MATCH (n:SectionChunk) WHERE ANY(w IN ['blade', 'turbine'] WHERE n.text CONTAINS w) RETURN n.id AS id",
    "MATCH (n:SectionChunk) WITH n ORDER BY n.ord LIMIT 2 RETURN n.id AS id, {o: n.ord, k: n.kind} AS m",
    "MATCH (n:SectionChunk)\n// the model explains itself\nWHERE n.ord >= 0 /* and here */ RETURN n.id AS id;",
    "MATCH (`n`:SectionChunk) RETURN `n`.id AS `the id`",
    "MATCH (n:SectionChunk) WHERE n.text CONTAINS 'Ünïcödé ✓ 数据' OR n.ord = 1 RETURN n.id AS id",
    "MATCH (a:SectionChunk), (s:MainSection) WHERE (a)-[:IS_UNDER]->(s) RETURN a.id AS id, s.title AS title",
    "MATCH (n:SectionChunk) RETURN n.id AS id, n.ord % 2 AS parity, -n.ord AS neg, n.ord ^ 2 AS sq",
    "MATCH (n:SectionChunk) RETURN * LIMIT 1",
]


def build_graph(path: Path) -> None:
    """A small SuperRAG-shaped Kuzu graph (one document, sections, chunks, a table, a figure, pages)."""
    from htmlrag.superrag.graph.store import KuzuStore, node_row

    store = KuzuStore(path)
    try:
        store.create_schema()
        nodes = {
            "Document": [node_row(id="d", kind="Document", doc_id="d", title="Report", page_end=2)],
            "Page": [node_row(id=f"d:p{i}", kind="Page", doc_id="d", page_start=i, page_end=i) for i in (1, 2)],
            "MainSection": [node_row(id="d:s1", kind="MainSection", doc_id="d", title="Results", level=1,
                                     page_start=1, page_end=2)],
            "SectionChunk": [node_row(id=f"d:c{i}", kind="SectionChunk", doc_id="d", title="Results", ord=i,
                                      page_start=1, page_end=1, text=t) for i, t in enumerate([
                "The turbine blades were inspected; it's fine. CREATE TABLE is a phrase. delete; drop",
                "Blade wear was low. // not a comment. Ünïcödé ✓ 数据",
                "Turbine output rose in the third quarter."], start=1)],
            "Table": [node_row(id="d:t1", kind="Table", doc_id="d", title="Table 1: sales", text="widgets | 7,890",
                               ord=4, page_start=2, page_end=2)],
            "TableChunk": [node_row(id="d:t1:0", kind="TableChunk", doc_id="d", text="widgets | 7,890", ord=5)],
            "Figure": [node_row(id="d:f1", kind="Figure", doc_id="d", title="Figure 1: output", ord=6,
                                page_start=2, page_end=2)],
        }
        for label, rows in nodes.items():
            store.write_nodes(label, rows)
        for rel, src, dst, pairs in [
            ("IS_UNDER", "SectionChunk", "MainSection", [(f"d:c{i}", "d:s1") for i in (1, 2, 3)]),
            ("IS_UNDER", "Table", "MainSection", [("d:t1", "d:s1")]),
            ("IS_UNDER", "TableChunk", "Table", [("d:t1:0", "d:t1")]),
            ("HAS_NEXT", "SectionChunk", "SectionChunk", [("d:c1", "d:c2"), ("d:c2", "d:c3")]),
            ("ON_PAGE", "SectionChunk", "Page", [(f"d:c{i}", "d:p1") for i in (1, 2, 3)]),
            ("ON_PAGE", "Table", "Page", [("d:t1", "d:p2")]),
            ("ON_PAGE", "Figure", "Page", [("d:f1", "d:p2")]),
        ]:
            store.write_edges(rel, src, dst, [{"src": a, "dst": b, "score": 1.0} for a, b in pairs])
    finally:
        store.close()
