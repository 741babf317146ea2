"""Cypher texts used by every backend (the same strings run on Kuzu and Neo4j).

Labels are written in backticks where generated (``Table`` is a reserved word in Kuzu). Id lookups are ``UNWIND $ids AS i MATCH (n) WHERE n.id = i``: Kuzu 0.11.3 returns a node of the wrong table
for ``MATCH (n) WHERE n.id IN $ids`` over several node tables. Writes (only used
while building) are ``UNWIND $rows`` batches; reads take ``$ids``/``$doc_ids`` lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag.superrag.graph.schema import NODE_PROPS

_SET = ", ".join(f"{k}: r.{k}" for k in NODE_PROPS)
_RETURN = ", ".join(f"n.{k} AS {k}" for k in NODE_PROPS if k != "html") + ", n.html AS html"


def create_nodes(label: str) -> str:
    return f"UNWIND $rows AS r CREATE (n:`{label}` {{{_SET}}})"


def create_edges(rel: str, src: str, dst: str) -> str:
    return (f"UNWIND $rows AS r MATCH (a:`{src}` {{id: r.src}}), (b:`{dst}` {{id: r.dst}}) "
            f"CREATE (a)-[:`{rel}` {{score: r.score}}]->(b)")


DELETE_DOC = "MATCH (n) WHERE n.doc_id = $doc_id DETACH DELETE n"
COUNT_NODES = "MATCH (n) RETURN count(n) AS n"
COUNT_EDGES = "MATCH ()-[e]->() RETURN count(e) AS n"
DOCUMENTS = "MATCH (d:Document) RETURN d.id AS id, d.title AS title, d.page_end AS pages ORDER BY id"
NODES_BY_ID = f"UNWIND $ids AS i MATCH (n) WHERE n.id = i RETURN {_RETURN}"
#: Nodes one level under given nodes (:func:`section_content` walks it down, level by level: one-hop queries
#: are ~100x faster on Kuzu than a variable-length ``IS_UNDER*1..4`` pattern).
CHILDREN = ("UNWIND $ids AS i MATCH (c)-[:IS_UNDER]->(s) WHERE s.id = i "
            "RETURN i AS parent, c.id AS id, c.kind AS kind, c.ord AS ord")
#: One hop up from given nodes (their parents, their pages) and one hop down to the tables and figures there:
#: :func:`related_tables_figures` joins them. The two-hop pattern ``(c)-[:IS_UNDER]->(s)<-[:IS_UNDER]-(t)`` over
#: unlabelled nodes took 71.5 s for 50 ids on a corpus of 22 10-K/10-Q filings, one hop at a time 0.49 s (whole
#: processes, median of 3; ``scripts/bench_expand_query.py``).
PARENTS = "UNWIND $ids AS i MATCH (c)-[:IS_UNDER]->(s) WHERE c.id = i RETURN c.id AS source, s.id AS id"
PAGES = "UNWIND $ids AS i MATCH (c)-[:ON_PAGE]->(p) WHERE c.id = i RETURN c.id AS source, p.id AS id"
TABLES_FIGURES_UNDER = ("UNWIND $ids AS i MATCH (t)-[:IS_UNDER]->(s) WHERE s.id = i AND t.kind IN ['Table', 'Figure'] "
                        "RETURN s.id AS source, t.id AS id")
TABLES_FIGURES_ON = ("UNWIND $ids AS i MATCH (t)-[:ON_PAGE]->(p) WHERE p.id = i AND t.kind IN ['Table', 'Figure'] "
                     "RETURN p.id AS source, t.id AS id")
#: The table a table chunk belongs to.
PARENT_TABLE = "UNWIND $ids AS i MATCH (c:TableChunk)-[:IS_UNDER]->(t:`Table`) WHERE c.id = i RETURN c.id AS source, t.id AS id"
#: The node that follows each given node in reading order.
NEXT_OF = "UNWIND $ids AS i MATCH (a)-[:HAS_NEXT]->(b) WHERE a.id = i RETURN a.id AS source, b.id AS id"
#: The section title path of each given node.
PARENT_OF = "UNWIND $ids AS i MATCH (a)-[:IS_UNDER]->(b) WHERE a.id = i RETURN a.id AS source, b.id AS id, b.title AS title"


def section_content(store: Any, section_ids: Sequence[str], kinds: Sequence[str],
                    depth: int = 4) -> list[dict[str, Any]]:
    """Nodes of ``kinds`` up to ``depth`` levels under each of ``section_ids`` (through any node kind: a
    TableChunk sits under its Table), as rows ``{section, id, kind, ord}``, one per (section, node) pair,
    ordered by section then reading order."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    frontier = [(s, s) for s in dict.fromkeys(section_ids)]  # (node to expand, section it belongs to)
    for _ in range(depth):
        if not frontier:
            break
        owners: dict[str, list[str]] = {}
        for node, sec in frontier:
            owners.setdefault(node, []).append(sec)
        rows = store.query(CHILDREN, {"ids": list(owners)})
        frontier = []
        for r in rows:
            for sec in owners[r["parent"]]:
                if (sec, r["id"]) in pairs:
                    continue
                pairs[(sec, r["id"])] = {"section": sec, "id": r["id"], "kind": r["kind"], "ord": r["ord"]}
                frontier.append((r["id"], sec))
    rank = {s: n for n, s in enumerate(dict.fromkeys(section_ids))}
    out = [p for p in pairs.values() if p["kind"] in kinds]
    return sorted(out, key=lambda p: (rank[p["section"]], p["ord"] if p["ord"] is not None else -1))


def related_tables_figures(store: Any, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The tables and figures that sit under the same parent as one of ``ids`` (``via`` "section") or on the
    same page (``via`` "page"), as rows ``{source, id, via}``, once per (source, id, via), in the order of
    ``ids``; a source that is itself a table or figure finds itself too. One-hop queries only (see
    :data:`PARENTS`)."""
    ids = list(dict.fromkeys(ids))
    out: dict[tuple[str, str, str], None] = {}
    found: dict[str, list[tuple[str, str]]] = {i: [] for i in ids}
    for up, down, via in ((PARENTS, TABLES_FIGURES_UNDER, "section"), (PAGES, TABLES_FIGURES_ON, "page")):
        hop = store.query(up, {"ids": ids}) if ids else []
        mids = list(dict.fromkeys(r["id"] for r in hop))
        below: dict[str, list[str]] = {}
        for r in store.query(down, {"ids": mids}) if mids else []:
            below.setdefault(r["source"], []).append(r["id"])
        for r in hop:
            found[r["source"]] += [(t, via) for t in below.get(r["id"], [])]
    for i in ids:
        for t, via in found[i]:
            out.setdefault((i, t, via), None)
    return [{"source": s, "id": t, "via": v} for s, t, v in out]
