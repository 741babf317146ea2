"""Building and querying a corpus: batch with a bad file, restart, read-only Cypher, Neo4j protocol, CLI,
real docling structure and a sec-10-q retrieval smoke test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymupdf")
pytest.importorskip("kuzu")

from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus
from htmlrag.superrag.build.embed import HashingEmbedder
from htmlrag.superrag.graph import cypher
from htmlrag.superrag.graph.readonly import WriteQueryError
from htmlrag.superrag.retrieve.cypher_qa import FixedCypherWriter
from htmlrag.testing import pdfs as mk
from tests.conftest import shared_path

Q = "Which region had revenue of 7,890?"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("corpus")
    pdfs = [mk.report_pdf(d / "report.pdf"), mk.encrypted_pdf(d / "locked.pdf"), mk.toc_pdf(d / "toc.pdf")]
    results = build_corpus(pdfs, d / "db", config=CorpusConfig(vector_backend="numpy"), embedder=HashingEmbedder())
    return d / "db", results


def _counts(db: Path) -> tuple[int, int]:
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        return c.store.query(cypher.COUNT_NODES)[0]["n"], c.store.query(cypher.COUNT_EDGES)[0]["n"]


def test_batch_keeps_good_files_and_reports_the_bad_one(built) -> None:
    db, results = built
    assert [r.ok for r in results] == [True, False, True]
    assert "locked.pdf" in results[1].error and "encrypted" in results[1].error
    manifest = json.loads((db / "manifest.json").read_text())
    assert len(manifest["documents"]) == 2
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        assert len(c.documents()) == 2


def test_graph_structure(built) -> None:
    db, results = built
    doc = results[0].doc_id
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        q = c.store.query
        chain = q("MATCH (k:SectionChunk)-[:IS_UNDER]->(s:Section)-[:IS_UNDER]->(m:MainSection)-[:IS_UNDER]->"
                  "(t:TableOfContents)-[:IS_UNDER]->(d:Document) WHERE d.id = $d RETURN s.title AS s, m.title AS m",
                  {"d": doc})
        assert {"s": "2.1 Details of B", "m": "2 Chapter about topic B"} in chain
        tab = q("MATCH (c:TableChunk)-[:IS_UNDER]->(t:`Table`)-[:ON_PAGE]->(p:Page) WHERE t.doc_id = $d "
                "RETURN t.html AS html, p.page_start AS page", {"d": doc})
        assert tab[0]["page"] == 2 and "<td>7,890</td>" in tab[0]["html"]
        assert q("MATCH (a:SectionChunk)-[:HAS_NEXT]->(b:SectionChunk) WHERE a.doc_id = $d RETURN count(*) AS n",
                 {"d": doc})[0]["n"] >= 2
        sim = q("MATCH (a)-[e:IS_SIMILAR]->(b) WHERE a.id = $id RETURN count(e) AS n",
                {"id": f"{doc}:sectionchunk:1"})
        assert sim[0]["n"] == 3  # knn_k default
        assert q("MATCH (f:Figure) WHERE f.doc_id = $d RETURN f.title AS t", {"d": doc}) == [
            {"t": "Figure 1: Widget sales chart"}]


def test_title_depth_reaches_the_chunks_and_a_manifest_without_it_reads_as_3(built, tmp_path: Path) -> None:
    """``CorpusConfig.title_depth`` titles the chunks of the corpus built with it (1: no ancestor in any title,
    where the default's 3 names "2 Chapter about topic B > 2.1 Details of B"); a corpus whose manifest has no
    ``title_depth`` (built before the setting) opens with the depth it was built with, 3."""
    def titles(db: Path) -> list[str]:
        with open_corpus(db, embedder=HashingEmbedder()) as c:
            return [r["t"] for r in c.store.query("MATCH (k:SectionChunk) RETURN k.title AS t")]

    assert any(" > " in t for t in titles(built[0]))
    db = tmp_path / "db"
    (res,) = build_corpus([mk.report_pdf(tmp_path / "report.pdf")], db,
                          config=CorpusConfig(vector_backend="numpy", title_depth=1), embedder=HashingEmbedder())
    assert res.ok, res.error
    assert titles(db) and not any(" > " in t for t in titles(db))
    manifest = json.loads((db / "manifest.json").read_text())
    assert manifest["config"]["title_depth"] == 1
    del manifest["config"]["title_depth"]
    (db / "manifest.json").write_text(json.dumps(manifest))
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        assert c.config.title_depth == 3


@pytest.mark.parametrize("bad", [0, -1, True, "2"])
def test_a_title_depth_below_1_is_refused_naming_the_setting(bad: object) -> None:
    import re

    from htmlrag.core.errors import HtmlRagError

    with pytest.raises(HtmlRagError, match=re.escape(f"title_depth={bad!r}: expected a whole number >= 1")):
        CorpusConfig(title_depth=bad)


def test_has_stem_links_nodes_sharing_key_terms() -> None:
    from htmlrag.superrag.graph.build import GraphDoc
    from htmlrag.superrag.graph.links import add_stems

    g = GraphDoc("d")
    texts = ["turbines turbine blades", "turbine maintenance schedule", "quarterly dividends paid",
             "dividend policy", "weather today", "lunch menu", "parking rules", "office hours", "holiday list",
             "coffee machine"]
    ids = [("SectionChunk", f"d:c{i}") for i in range(len(texts))]
    add_stems(g, ids, texts, per_node=3)
    links = {(e["src"], e["dst"]) for e in g.edges[("HAS_STEM", "SectionChunk", "Stem")]}
    assert {("d:c0", "d:stem:turbin"), ("d:c1", "d:stem:turbin"), ("d:c2", "d:stem:dividend"),
            ("d:c3", "d:stem:dividend")} <= links
    assert not any(dst == "d:stem:lunch" for _, dst in links)  # a term of one node only is no link


def test_every_retriever_returns_evidence_with_ids_pages_scores(built) -> None:
    db, _ = built
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        for name in ("vector", "bm25", "hybrid", "toc", "tables", "reflect", "merge", "rerank", "full"):
            ev = c.retrieve(Q, retriever=name, k=5)
            assert ev, name
            assert all(e.node_id and e.pages and isinstance(e.score, float) for e in ev), name
        for name in ("rerank", "full"):  # the rerank modes through the corpus API (the benchmark's)
            fused = c.retrieve(Q, retriever=name, k=5, rerank=True, rerank_fuse=True)
            assert fused and all(e.retriever.endswith("+rerank") for e in fused[:5] if e.kind != "Table"), name
            replaced = c.retrieve(Q, retriever=name, k=5, rerank=True, rerank_fuse=False)
            assert [e.score for e in fused[:5]] != [e.score for e in replaced[:5]], name
            default = c.retrieve(Q, retriever=name, k=5)
            if name == "rerank":  # the rerank retriever always reranks, fused by default
                assert [e.score for e in default[:5]] == [e.score for e in fused[:5]]
            else:  # full (and nonlayout): no rerank stage by default
                assert default and not any(e.retriever.endswith("+rerank") for e in default), name
                assert [e.node_id for e in default] == [e.node_id for e in c.retrieve(Q, retriever=name, k=5,
                                                                                      rerank=False)], name
        tables = c.retrieve(Q, retriever="tables", k=3)
        assert any(e.kind == "Table" and "7,890" in e.text for e in tables)
        toc = c.retrieve("Methods", retriever="toc", k=3)
        # the sections are short (< min_chunk_words), so Introduction's chunk runs on into Methods: the chunk
        # hangs under both, and the ToC retriever reaches Methods' text (its heading kept in the text, page 3)
        assert "Methods" in toc[0].text and 3 in toc[0].pages


def test_section_content_walk_equals_the_variable_length_pattern(built) -> None:
    """The ToC retriever's level-by-level walk returns exactly what ``IS_UNDER*1..4`` returns (~100x faster)."""
    from htmlrag.superrag.graph.schema import CONTENT

    db, _ = built
    recursive = ("UNWIND $ids AS i MATCH (c)-[:IS_UNDER*1..4]->(s) WHERE s.id = i AND c.kind IN "
                 "['SectionChunk', 'TableChunk', 'Figure'] RETURN DISTINCT s.id AS section, c.id AS id")
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        secs = [r["id"] for r in c.store.query("MATCH (s) WHERE s.kind IN ['MainSection', 'Section', 'Document'] "
                                                "RETURN s.id AS id")]
        assert len(secs) > 3
        walked = cypher.section_content(c.store, secs, CONTENT)
        assert {(r["section"], r["id"]) for r in walked} == {
            (r["section"], r["id"]) for r in c.store.query(recursive, {"ids": secs})}
        assert any(r["kind"] == "TableChunk" for r in walked)  # reached through their Table
        order = [secs.index(r["section"]) for r in walked]
        assert order == sorted(order)


def test_related_tables_and_figures_one_hop_at_a_time_equal_the_two_hop_pattern(built) -> None:
    """The expansion's tables and figures (same parent or same page) are exactly what the two-hop pattern
    returns (the two-hop pattern took 71.5 s for 50 ids on 22 10-K/10-Q filings, the hops 0.49 s)."""
    db, _ = built
    two_hop = ("UNWIND $ids AS i MATCH (c)-[:IS_UNDER]->(s)<-[:IS_UNDER]-(t) WHERE c.id = i AND t.kind IN ['Table', 'Figure'] "
               "RETURN DISTINCT c.id AS source, t.id AS id, 'section' AS via UNION "
               "UNWIND $ids AS i MATCH (c)-[:ON_PAGE]->(p)<-[:ON_PAGE]-(t) WHERE c.id = i AND t.kind IN ['Table', 'Figure'] "
               "RETURN DISTINCT c.id AS source, t.id AS id, 'page' AS via")
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        ids = [r["id"] for r in c.store.query("MATCH (n) WHERE n.kind IN ['SectionChunk', 'TableChunk', 'Figure', "
                                               "'Table', 'Section', 'FlatChunk'] RETURN n.id AS id")]
        assert len(ids) > 10
        got = cypher.related_tables_figures(c.store, ids)
        want = {(r["source"], r["id"], r["via"]) for r in c.store.query(two_hop, {"ids": ids})}
        assert {(r["source"], r["id"], r["via"]) for r in got} == want and len(got) == len(want)
        assert {r["via"] for r in got} == {"section", "page"}
        assert [r["source"] for r in got] == sorted((r["source"] for r in got), key=ids.index)  # in the order asked
        assert cypher.related_tables_figures(c.store, []) == []


def test_graph_survives_restart(built) -> None:
    db, _ = built
    answers = []
    for _ in range(2):  # open, query, close; reopen, same query
        with open_corpus(db, embedder=HashingEmbedder()) as c:
            answers.append([(e.node_id, e.pages, round(e.score, 6)) for e in c.retrieve(Q, retriever="hybrid")])
    assert answers[0] and answers[0] == answers[1]


@pytest.mark.parametrize("bad", [
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:SectionChunk) SET n.text = 'pwned' RETURN n.id AS id",
    "CREATE (n:Page {id: 'evil'}) RETURN n.id AS id",
    "CALL dbms.security.createUser('eve', 'pw', false)",
])
def test_model_written_writes_are_refused_and_db_unchanged(built, bad: str) -> None:
    db, _ = built
    before = _counts(db)
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        with pytest.raises(WriteQueryError):
            c.retrieve("delete everything", retriever="cypher", cypher_writer=FixedCypherWriter(f"```cypher\n{bad}\n```"))
        # second lock: the connection itself is read-only, even past the guard
        with pytest.raises(RuntimeError, match="read-only"):
            c.store._run("MATCH (n:SectionChunk) DELETE n")
    assert _counts(db) == before


def test_model_written_read_query_runs(built) -> None:
    db, _ = built
    writer = FixedCypherWriter("MATCH (t:`Table`) WHERE t.text CONTAINS '7,890' RETURN t.id AS id")
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        ev = c.retrieve(Q, retriever="cypher", cypher_writer=writer)
    assert [e.kind for e in ev] == ["Table"] and ev[0].pages == (2,)
    assert "IS_UNDER" in writer.prompts[0] and Q in writer.prompts[0]


def test_neo4j_store_uses_read_sessions_and_the_same_cypher() -> None:
    from htmlrag.superrag.graph.neo4j_store import Neo4jStore

    calls: list[tuple[str, str]] = []

    class Tx:
        def run(self, text, params):
            calls.append(("run", text))
            return type("R", (), {"consume": lambda s: None, "__iter__": lambda s: iter([])})()

    class Session:
        def __init__(self, mode):
            self.mode = mode

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def execute_read(self, fn):
            calls.append(("read", self.mode))
            return fn(Tx())

        def execute_write(self, fn):
            calls.append(("write", self.mode))
            return fn(Tx())

    class Driver:
        def session(self, database=None, default_access_mode=None):
            return Session(default_access_mode)

        def close(self):
            pass

    s = Neo4jStore("neo4j://example.invalid", driver=Driver())
    s.write_nodes("Page", [{"id": "p"}])
    assert calls[:2] == [("write", "WRITE"), ("run", cypher.create_nodes("Page"))]
    calls.clear()
    assert s.query(cypher.DOCUMENTS) == []
    assert calls == [("read", "READ"), ("run", cypher.DOCUMENTS)]
    calls.clear()
    with pytest.raises(WriteQueryError):
        s.query("MATCH (n) DETACH DELETE n")
    assert calls == []  # refused before reaching the server


def test_milvus_lite_backend(tmp_path: Path) -> None:
    pytest.importorskip("milvus_lite")
    db = tmp_path / "db"
    res = build_corpus([mk.report_pdf(tmp_path / "r.pdf")], db, embedder=HashingEmbedder())
    assert res[0].ok and (db / "vectors.db").exists()
    with open_corpus(db, embedder=HashingEmbedder()) as c:
        ev = c.retrieve(Q, retriever="vector", k=3)
    assert ev and ev[0].doc_id == res[0].doc_id


def test_cli_build_and_query(tmp_path: Path) -> None:
    from htmlrag.cli.main import main

    pdf = mk.report_pdf(tmp_path / "r.pdf")
    db = tmp_path / "db"
    args = ["graph", "build", str(pdf), str(tmp_path / "missing.pdf"), "--db", str(db),
            "--embedding-model", "hashing-256", "--vector-backend", "numpy"]
    assert main(args) == 1  # one file missing: reported, the other built
    assert (db / "manifest.json").exists()
    out = subprocess.run([sys.executable, "-m", "htmlrag", "graph", "query", "--db", str(db), Q, "--json", "-k", "3"],
                         capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    ev = json.loads(out.stdout)
    assert len(ev) == 3 and all(e["node_id"] and e["pages"] for e in ev)
    for mode, reranked in (("off", False), ("fuse", True), ("replace", True)):  # full's rerank stage
        out = subprocess.run([sys.executable, "-m", "htmlrag", "graph", "query", "--db", str(db), Q, "--json",
                              "-k", "3", "--retriever", "full", "--rerank", mode],
                             capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        got = [e["retriever"].endswith("+rerank") for e in json.loads(out.stdout) if e["kind"] != "Table"]
        assert got and all(g == reranked for g in got), mode


@pytest.mark.shared_data
def test_docling_structure() -> None:
    from htmlrag.superrag.parse.document import parse_pdf

    folder = shared_path("pdf", "docling")
    multi = parse_pdf(folder / "multi_page.pdf")
    heads = [h.text for h in multi.headings]
    assert "The Rise of Personal Computers (1980s)" in heads and "A Glimpse Into the Future" in heads
    assert len(heads) == 11
    paper = parse_pdf(folder / "2305.03393v1-pg9.pdf")
    assert [h.text for h in paper.headings] == ["5.1 Hyper Parameter Optimization", "5.2 Quantitative Results"]
    (table,) = paper.tables
    assert "OTSL" in table.html and "<table>" in table.html
    redp = parse_pdf(folder / "redp5110_sampled.pdf")
    # 5 since issue 35: the ruled CREATE PERMISSION syntax box on page 10, whose rules cut words in two, is text
    # (docling's reference has no table there); the reference's 6 tables are scored by scripts/bench_parse.py
    assert redp.toc_source == "pages" and len(redp.tables) == 5 and 10 not in {t.page for t in redp.tables}
    assert any(h.text == "1.1 Security fundamentals" and h.page == 6 for h in redp.headings)


@pytest.mark.slow
@pytest.mark.shared_data
def test_sec_10q_retrieval_smoke(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from htmlrag.superrag.build.embed import SentenceTransformerEmbedder

    pdf = shared_path("pdf", "sec-10-q", "docs", "2022 Q3 AAPL.pdf")
    emb = SentenceTransformerEmbedder()
    res = build_corpus([pdf], tmp_path / "db", config=CorpusConfig(vector_backend="numpy"), embedder=emb)
    assert res[0].ok and res[0].pages == 28
    with open_corpus(tmp_path / "db", embedder=emb) as c:
        ev = c.retrieve("What were Apple's total net sales for the three months ended June 25, 2022?",
                        retriever="full", k=10)
    assert any("82,959" in e.text for e in ev)
