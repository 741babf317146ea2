"""Searches inside one company's filings leave the company's name out of the question (issue 35): inside the scope
the name tells no passage from another, and BM25 weighed it so high that the cover page, the certifications and
the name line over every statement outranked the passage with the numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.superrag.retrieve.scope import name_words, scoped_question, without_name


def test_name_words_leave_out_the_legal_form() -> None:
    assert name_words("Apple Inc.") == ["apple"]
    assert name_words("NVIDIA CORPORATION") == ["nvidia"]
    assert name_words("The Bank of America Corporation") == ["bank", "of", "america"]
    assert name_words("Northwind Widgets, Inc.") == ["northwind", "widgets"]
    assert name_words("Inc.") == []


@pytest.mark.parametrize(("question", "name", "searched"), [
    ("How has Microsoft's total net sales evolved over time?", "MICROSOFT CORPORATION",
     "How has total net sales evolved over time?"),
    ("What was Intel’s R&D expenditure in Q1 2023?", "INTEL CORPORATION", "What was R&D expenditure in Q1 2023?"),
    ("Did Apple report share repurchases?", "Apple Inc.", "Did report share repurchases?"),
    ("How many widgets did Northwind Widgets sell?", "Northwind Widgets, Inc.", "How many widgets did sell?"),
    ("What was Northwind's revenue in Q1?", "Northwind Widgets, Inc.", "What was revenue in Q1?"),
    # not the name: a common noun in lower case, another word, a name that leaves too little
    ("How did bank deposits change?", "Bank of America Corporation", "How did bank deposits change?"),
    ("How many apples were sold?", "Apple Inc.", "How many apples were sold?"),
    ("Apple?", "Apple Inc.", "Apple?"),
])
def test_the_name_leaves_the_question(question: str, name: str, searched: str) -> None:
    assert without_name(question, name) == searched


class _Named:
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def document_names(self, doc_ids=None):
        return [self.names.get(d, "") for d in (doc_ids if doc_ids is not None else self.names)]


def test_only_a_scope_of_one_name_drops_it() -> None:
    corpus = _Named({"a1": "Apple Inc.", "a2": "APPLE INC", "m": "MICROSOFT CORPORATION", "x": ""})
    q = "Compare Apple's and Microsoft's revenue"
    assert scoped_question(corpus, q, ["a1", "a2"]) == "Compare and Microsoft's revenue"
    assert scoped_question(corpus, q, ["m"]) == "Compare Apple's and revenue"
    assert scoped_question(corpus, q, ["a1", "m"]) == q  # the names tell the documents apart
    assert scoped_question(corpus, q, ["x"]) == q  # a document without a known name
    assert scoped_question(corpus, q, None) == q  # the whole corpus: several names
    assert scoped_question(object(), q, ["a1"]) == q  # a backend that keeps no names


def test_bm25_finds_the_numbers_not_the_cover_that_repeats_the_name(tmp_path: Path) -> None:
    """A filing whose cover page names the company again and again: BM25 over the question as asked put the cover
    first for "What was Acme's revenue?"; without the name it finds the results passage. The corpus keeps
    each document's name in its manifest; the reader is never shown the rewritten question."""
    pytest.importorskip("kuzu")
    import pymupdf

    from htmlrag.superrag.build.corpus import CorpusConfig, build_corpus, open_corpus
    from htmlrag.superrag.build.embed import HashingEmbedder

    doc = pymupdf.open()
    cover = doc.new_page()
    cover.insert_text((72, 100), "FORM 10-Q", fontsize=18)
    cover.insert_text((72, 200), "ACME WIDGETS CORPORATION", fontsize=18)
    cover.insert_text((72, 215), "(Exact name of registrant as specified in its charter)", fontsize=8)
    cover.insert_textbox(pymupdf.Rect(72, 240, 520, 700), "Acme Widgets Corporation and Acme subsidiaries filed "
                         "the report of Acme. " * 14 + "Acme certifies its revenue statements.", fontsize=8)
    body = doc.new_page()
    body.insert_text((72, 72), "Results of Operations", fontsize=22)
    body.insert_textbox(pymupdf.Rect(72, 100, 520, 700), "Net revenue was 11,715 million for the quarter, down "
                        "from the prior year. " + "Demand weakened and inventory was reduced across the channel. " * 4,
                        fontsize=10)
    doc.save(str(tmp_path / "2023 Q1 ACME.pdf"))
    doc.close()
    (res,) = build_corpus([tmp_path / "2023 Q1 ACME.pdf"], tmp_path / "db",
                          config=CorpusConfig(vector_backend="numpy"), embedder=HashingEmbedder())
    assert res.ok, res.error
    with open_corpus(tmp_path / "db", embedder=HashingEmbedder()) as c:
        assert c.document_names() == ["ACME WIDGETS CORPORATION"]
        q = "What was Acme's revenue?"
        asked = c.fulltext.search(q, 1)
        assert "11,715" not in c.nodes([asked[0][0]])[asked[0][0]]["text"]  # what the name did to BM25
        (top,) = c.retrieve(q, retriever="bm25", k=1, doc_ids=[res.doc_id])
        assert "11,715" in top.text
