"""Schema of the layout-aware graph (SuperRAG's Figure 2), shared by every backend and by the Cypher prompt.

Every node, whatever its label, has the same properties (:data:`NODE_PROPS`); ``kind`` repeats the label so
that one Cypher text works on Kuzu (``label(n)``) and Neo4j (``labels(n)``) alike. Pages are physical and
1-based. Every relationship has one property, ``score`` (similarity for ``IS_SIMILAR``, 1.0 otherwise).
"""

from __future__ import annotations

#: Property name -> Kuzu type; the same names are used on Neo4j.
NODE_PROPS: dict[str, str] = {
    "id": "STRING",
    "kind": "STRING",
    "doc_id": "STRING",
    "title": "STRING",
    "text": "STRING",
    "html": "STRING",
    "page_start": "INT64",
    "page_end": "INT64",
    "level": "INT64",
    "ord": "INT64",
}

LABELS: tuple[str, ...] = (
    "Corpus", "Company", "Document", "Page", "TableOfContents", "MainSection", "Section", "SectionChunk",
    "Table", "TableChunk", "Figure", "Stem", "FlatChunk",
)

#: Nodes that hold retrievable content (vector and full-text indexed).
CONTENT = ("SectionChunk", "TableChunk", "Figure")
#: The non-layout baseline's nodes: fixed-size chunks of the PDF's plain text (setting 1 of the paper).
FLAT = ("FlatChunk",)
#: Nodes whose titles the ToC retriever searches.
TITLED = ("MainSection", "Section")

_UNDER = [
    ("Document", "Corpus"), ("Company", "Corpus"), ("Document", "Company"), ("Page", "Document"), ("TableOfContents", "Document"),
    ("MainSection", "TableOfContents"), ("Section", "MainSection"), ("Section", "Section"),
    ("SectionChunk", "MainSection"), ("SectionChunk", "Section"), ("Table", "MainSection"), ("Table", "Section"),
    ("TableChunk", "Table"), ("Figure", "MainSection"), ("Figure", "Section"), ("FlatChunk", "Document"),
]
_SECTIONS = ("MainSection", "Section")
_NEXT = [("Page", "Page"), *((a, b) for a in _SECTIONS for b in _SECTIONS), ("SectionChunk", "SectionChunk"),
         ("TableChunk", "TableChunk"), ("Table", "Table"), ("FlatChunk", "FlatChunk")]
_ON_PAGE = [(x, "Page") for x in ("MainSection", "Section", "SectionChunk", "Table", "TableChunk", "Figure",
                                  "FlatChunk")]
_SIMILAR = [(a, b) for a in CONTENT for b in CONTENT]
_STEM = [(x, "Stem") for x in CONTENT]

#: Relationship type -> allowed (from label, to label) pairs.
RELS: dict[str, list[tuple[str, str]]] = {
    "IS_UNDER": _UNDER,
    "HAS_NEXT": _NEXT,
    "ON_PAGE": _ON_PAGE,
    "IS_SIMILAR": _SIMILAR,
    "HAS_STEM": _STEM,
}

_MEANING = {
    "Corpus": "the collection (one per database)",
    "Company": "the company (or other owner) the documents belong to, when the corpus names one; title = its name",
    "Document": "one PDF; title = document title, text = file path, page_end = number of pages; under its "
                "Company when known, else under the Corpus",
    "Page": "a physical page; page_start = page_end = its number, title = printed page label",
    "TableOfContents": "the document's ToC; text = its entries",
    "MainSection": "a top-level section; title = heading, text = title path, level = heading level",
    "Section": "a sub-section; title = heading, text = title path (outer > inner), level = heading level",
    "SectionChunk": "a passage of body text of a section (text), in reading order (ord)",
    "Table": "a table; html = <table> markup, text = rows as 'cell | cell' lines, title = caption",
    "TableChunk": "a group of rows of a table (html and text), header row repeated",
    "Figure": "a picture; title = caption, text = caption and text printed inside it",
    "Stem": "a stemmed key term; title = the stem",
    "FlatChunk": "non-layout baseline: a fixed-size window of a page's plain text (no headings, no tables)",
}
_REL_MEANING = {
    "IS_UNDER": "child -> parent in the layout hierarchy",
    "HAS_NEXT": "reading order: node -> the one that follows it (pages, sections, chunks, continued tables)",
    "ON_PAGE": "content -> a page it lies on",
    "IS_SIMILAR": "k nearest neighbours by embedding; score = similarity",
    "HAS_STEM": "content -> a key term it shares with other nodes",
}


def schema_text() -> str:
    """The schema as the text the Cypher-writing model is shown."""
    props = ", ".join(f"{k} {v}" for k, v in NODE_PROPS.items())
    lines = [f"Every node has the properties: {props}. `kind` equals the node label.",
             "Write the label Table in backticks: (t:`Table`). Node labels:"]
    lines += [f"- {lab}: {_MEANING[lab]}" for lab in LABELS]
    lines.append("Relationships (all have a DOUBLE property `score`):")
    for rel, pairs in RELS.items():
        shown = ", ".join(f"(:{a})-[:{rel}]->(:{b})" for a, b in pairs)
        lines.append(f"- {rel} ({_REL_MEANING[rel]}): {shown}")
    return "\n".join(lines)
