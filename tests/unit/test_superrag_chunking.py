"""Chunking of a parsed document into the graph: short sections run on, heading paths, table heading rows,
FlatChunks, HAS_NEXT between sections and the Company root (pure: documents built by hand, no PDF)."""

from __future__ import annotations

from htmlrag.superrag.graph.build import document_graph, flat_chunks, header_rows, pack_chunks, section_paths
from htmlrag.superrag.parse.model import Heading, PageInfo, Paragraph, ParsedDocument, Section, TableItem


def _para(page: int, n: int, word: str = "w") -> Paragraph:
    return Paragraph(page, (0, 0, 1, 1), " ".join(f"{word}{i}" for i in range(n)))


def _sec(title: str, level: int, parent: int | None, *items) -> Section:
    h = Heading(1, (0, 0, 1, 1), title, level, 12.0)
    return Section(title, level, items[0].page if items else 1, h, list(items), parent=parent)


def _doc(sections: list[Section], tables: list[TableItem] = (), pages: int = 3) -> ParsedDocument:
    return ParsedDocument(path="/x/2023 Q1 ACME.pdf", doc_id="acme-1", title="ACME",
                          pages=[PageInfo(i + 1, 600, 800, 100) for i in range(pages)], headings=[],
                          sections=sections, tables=list(tables), figures=[], toc=[], toc_source="none",
                          page_texts=["alpha beta gamma delta", "", "one two three four five"])


def test_short_sections_run_on_into_the_next_with_their_heading() -> None:
    doc = _doc([_sec("Item 2", 1, None, _para(1, 10, "a")), _sec("Revenue", 2, 0, _para(1, 10, "b")),
                _sec("Costs", 2, 0, _para(2, 100, "c")), _sec("Tax", 2, 0, _para(3, 5, "d"))])
    chunks = pack_chunks(doc, chunk_words=150, min_words=50)
    texts = [" ".join(c.words) for c in chunks]
    # 10 + heading + 10 words are too few to stand alone: they run on into "Costs" (heading kept in the text)
    assert texts[0].startswith("a0") and "Revenue b0" in texts[0] and "Costs c0" in texts[0]
    assert chunks[0].section == 0 and len(chunks[0].words) == 10 + 1 + 10 + 1 + 100
    # that chunk holds min_words, so the Tax boundary closes it; Tax's 5 words end the document alone
    assert chunks[0].more == [1, 2]  # it also holds the text of Revenue and Costs
    assert texts[1:] == ["d0 d1 d2 d3 d4"] and chunks[1].section == 3
    g = document_graph(doc, min_chunk_words=50)
    under = [(e["src"], e["dst"]) for (rel, a, b), es in g.edges.items() if rel == "IS_UNDER" and a == "SectionChunk"
             for e in es]
    assert under == [("acme-1:sectionchunk:1", "acme-1:mainsection:1"), ("acme-1:sectionchunk:1", "acme-1:section:1"),
                     ("acme-1:sectionchunk:1", "acme-1:section:2"), ("acme-1:sectionchunk:2", "acme-1:section:3")]
    # a section longer than a chunk is cut into equal chunks (10 + 1 + 10 + 1 + 100 = 122 words at 60: three of
    # 41, 41, 40, not 60 + 60 + a tail of 2 that ran on into "Tax"); the last, 40 < 50 words, takes Tax's
    # heading and 5 words
    small = pack_chunks(doc, chunk_words=60, min_words=50)
    assert [len(c.words) for c in small] == [41, 41, 40 + 1 + 5] and small[1].section == 2


def test_a_long_section_leaves_no_short_tail_and_a_chunk_is_named_by_most_of_its_words() -> None:
    """315 words at 150 are three chunks of 105 (no 15-word tail that runs on into the next section and names
    a chunk of that section's text); a chunk that does hold two sections' text is titled by the one holding
    most of its words (10 words of "Divestitures" then 120 of "Note 9: Borrowings": the borrowings)."""
    doc = _doc([_sec("Notes", 1, None), _sec("Divestitures", 2, 0, _para(1, 315, "d")),
                _sec("Note 9: Borrowings", 2, 0, _para(2, 120, "b"))])
    chunks = pack_chunks(doc, chunk_words=150, min_words=75)
    assert [len(c.words) for c in chunks] == [105, 105, 105, 120]
    g = document_graph(doc, chunk_words=150, min_chunk_words=75)
    assert [c["title"] for c in g.nodes["SectionChunk"]][-1] == "Notes > Note 9: Borrowings"
    doc = _doc([_sec("Notes", 1, None), _sec("Divestitures", 2, 0, _para(1, 10, "d")),
                _sec("Note 9: Borrowings", 2, 0, _para(2, 120, "b"))])
    g = document_graph(doc, chunk_words=150, min_chunk_words=75)
    assert [c["title"] for c in g.nodes["SectionChunk"]] == ["Notes > Note 9: Borrowings"]


def test_every_section_stands_alone_when_min_words_is_zero() -> None:
    doc = _doc([_sec("A", 1, None, _para(1, 3)), _sec("B", 1, None, _para(1, 3))])
    assert [len(c.words) for c in pack_chunks(doc, 150, 0)] == [3, 3]


def test_title_paths_and_chunk_titles() -> None:
    doc = _doc([_sec("Item 2. MD&A", 1, None, _para(1, 80)), _sec("Gross Margin", 2, 0, _para(2, 80))])
    assert section_paths(doc) == ["Item 2. MD&A", "Item 2. MD&A > Gross Margin"]
    g = document_graph(doc, min_chunk_words=50)
    assert [c["title"] for c in g.nodes["SectionChunk"]] == ["Item 2. MD&A", "Item 2. MD&A > Gross Margin"]


def test_title_depth_sets_how_many_titles_name_a_section_and_its_chunks() -> None:
    """``title_depth`` titles, innermost first, name a section (its node's text), its chunks and its tables'
    chunks; 1 = the section's own title; a depth beyond the tree is the whole path."""
    t = TableItem(2, (0, 0, 1, 1), [["Year", "Margin"], ["2023", "45%"]], "<table></table>", caption="Margins")
    doc = _doc([_sec("Item 2", 1, None, _para(1, 80, "a")), _sec("Results", 2, 0, _para(1, 80, "b")),
                _sec("Gross Margin", 3, 1, _para(2, 80, "c"), t)], [t])
    assert section_paths(doc, 1) == ["Item 2", "Results", "Gross Margin"]
    assert section_paths(doc, 2) == ["Item 2", "Item 2 > Results", "Results > Gross Margin"]
    assert section_paths(doc, 5) == section_paths(doc) == ["Item 2", "Item 2 > Results",
                                                           "Item 2 > Results > Gross Margin"]
    g = document_graph(doc, min_chunk_words=50, title_depth=1)
    assert [c["title"] for c in g.nodes["SectionChunk"]] == ["Item 2", "Results", "Gross Margin"]
    assert [s["text"] for s in g.nodes["Section"]] == ["Results", "Gross Margin"]
    assert [c["title"] for c in g.nodes["TableChunk"]] == ["Gross Margin > Margins"]
    deep = document_graph(doc, min_chunk_words=50)
    assert [c["title"] for c in deep.nodes["SectionChunk"]][-1] == "Item 2 > Results > Gross Margin"


def test_header_rows_repeat_in_every_table_chunk() -> None:
    rows = [["", "Three Months Ended", ""], ["", "July 1, 2023", "June 25, 2022"], ["", "2023", "2022"]]
    rows += [[f"line {i}", f"{i},000", f"({i})"] for i in range(40)]
    assert header_rows(rows) == 3
    assert header_rows([["Region", "Revenue"], ["North", "1,234"]]) == 1
    assert header_rows([["a", "1"], ["b", "2"]]) == 1  # at least one
    t = TableItem(1, (0, 0, 1, 1), rows, "<table></table>", caption="Statements of Operations")
    doc = _doc([_sec("Item 1", 1, None, _para(1, 5), t)], [t])
    chunks = document_graph(doc, table_rows=15)
    tc = chunks.nodes["TableChunk"]
    assert len(tc) == 3
    for c in tc:
        assert c["text"].startswith("Three Months Ended\nJuly 1, 2023 | June 25, 2022\n2023 | 2022\n")
    assert tc[0]["title"] == "Item 1 > Statements of Operations"


def test_flat_chunks_stay_on_their_page() -> None:
    doc = _doc([_sec("A", 1, None, _para(1, 3))])
    assert flat_chunks(doc, 3) == [("alpha beta gamma", 1), ("delta", 1), ("one two three", 3), ("four five", 3)]
    g = document_graph(doc, flat_words=3)
    assert [n["page_start"] for n in g.nodes["FlatChunk"]] == [1, 1, 3, 3]
    assert len(g.edges[("HAS_NEXT", "FlatChunk", "FlatChunk")]) == 3
    assert "FlatChunk" not in document_graph(doc).nodes


def test_sections_are_chained_by_has_next_and_documents_hang_under_their_company() -> None:
    doc = _doc([_sec("A", 1, None, _para(1, 3)), _sec("A.1", 2, 0, _para(1, 3)), _sec("B", 1, None, _para(2, 3))])
    g = document_graph(doc, company="ACME Corp.")
    nxt = g.edges[("HAS_NEXT", "MainSection", "Section")] + g.edges[("HAS_NEXT", "Section", "MainSection")]
    ids = [n["id"] for n in g.nodes["MainSection"] + g.nodes["Section"]]
    assert len(nxt) == 2 and {e["src"] for e in nxt} | {e["dst"] for e in nxt} == set(ids)
    assert g.edges[("IS_UNDER", "Document", "Company")] == [{"src": "acme-1", "dst": "company:acme_corp", "score": 1.0}]
    assert ("IS_UNDER", "Document", "Corpus") not in g.edges
    assert ("IS_UNDER", "Document", "Corpus") in document_graph(doc).edges


def test_cached_embedder_returns_the_inner_vectors_and_embeds_each_text_once(tmp_path) -> None:
    import numpy as np

    from htmlrag.superrag.build.embed import CachedEmbedder, HashingEmbedder

    class Counting(HashingEmbedder):
        calls: list[int] = []

        def encode(self, texts):
            self.calls.append(len(texts))
            return super().encode(texts)

    inner = Counting(64)
    emb = CachedEmbedder(inner, tmp_path / "e.sqlite")
    emb.STEP = 2
    texts = ["net sales", "gross margin", "net sales", "cash", "debt"]
    assert np.allclose(emb.encode(texts), HashingEmbedder(64).encode(texts))
    assert inner.calls == [2, 2]  # 4 distinct texts, stored 2 at a time
    again = CachedEmbedder(Counting(64), tmp_path / "e.sqlite")
    assert np.allclose(again.encode(["cash", "net sales"]), HashingEmbedder(64).encode(["cash", "net sales"]))
    assert inner.calls == [2, 2] and emb.name == "hashing-64" and emb.encode([]).shape == (0, 64)
