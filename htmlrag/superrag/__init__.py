"""SuperRAG: PDFs as layout-aware graphs (parse, build the graph, index, retrieve).

Nothing heavy is imported here: PyMuPDF, Kuzu, pymilvus, the Neo4j driver and sentence-transformers are
imported by the functions that need them (the ``[graph]`` and ``[embed]`` extras).

Typical use::

    from htmlrag.superrag import parse_pdf, build_corpus, open_corpus
    build_corpus(["a.pdf", "b.pdf"], "graphdb/")
    with open_corpus("graphdb/") as corpus:
        for ev in corpus.retrieve("What was total revenue?", retriever="hybrid"):
            print(ev.node_id, ev.pages, ev.score)
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_corpus", "open_corpus", "parse_pdf"]


def __getattr__(name: str) -> Any:
    # lazy: this __init__ runs for every superrag module; parse/build here would put numpy and the whole PDF
    # stack under `import htmlrag.superrag.graph.schema` (see the docstring above)
    if name == "parse_pdf":
        from htmlrag.superrag.parse.document import parse_pdf

        return parse_pdf
    if name in ("build_corpus", "open_corpus"):
        from htmlrag.superrag.build import corpus

        return getattr(corpus, name)
    raise AttributeError(name)
