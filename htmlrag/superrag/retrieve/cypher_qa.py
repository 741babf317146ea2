"""LLM-written Cypher over the graph schema, executed read-only.

The model gets the paper's Cypher prompt (:data:`~htmlrag.superrag.prompts.CYPHER_PROMPT`: the schema of
:func:`~htmlrag.superrag.graph.schema.schema_text`, guidelines, good and bad examples, the question and the
document ids in scope) and writes one Cypher query, or nothing when no query applies (then there is no
evidence and nothing runs). The query runs through the store's :meth:`query_untrusted`: checked by
:func:`~htmlrag.superrag.graph.readonly.check_read_only` (write clauses raise
:class:`~htmlrag.superrag.graph.readonly.WriteQueryError` before anything runs) and bounded by
:mod:`~htmlrag.superrag.graph.bounds` (hops, rows, result bytes, time, memory), on the read-only connection. Result rows with an ``id`` column become evidence of those nodes
(score = 1 / row rank); other rows become ``Row`` evidence whose text is the row as JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from htmlrag.superrag.graph.schema import schema_text
from htmlrag.superrag.prompts import CYPHER_PROMPT
from htmlrag.superrag.retrieve.evidence import Backend, Evidence, to_evidence
from htmlrag.superrag.retrieve.expand import Reader

_FENCE = re.compile(r"```(?:cypher)?\s*(.*?)```", re.S | re.I)


def extract_cypher(reply: str) -> str:
    """The query in a model reply: the first fenced block if any, else the whole reply, stripped."""
    m = _FENCE.search(reply)
    return (m.group(1) if m else reply).strip()


class FixedCypherWriter:
    """Deterministic fake writer: always answers with the given query (tests, and ``--cypher`` on the CLI)."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.query


class CypherRetriever:
    """Evidence from a model-written, read-only Cypher query (see the module docstring)."""

    name = "cypher"

    def __init__(self, corpus: Backend, writer: Reader) -> None:
        self.corpus, self.writer = corpus, writer
        self.last_query: str | None = None

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        scope = json.dumps(list(doc_ids)) if doc_ids else "(all documents)"
        prompt = CYPHER_PROMPT.format(k=k, schema=schema_text(), doc_ids=scope, question=question)
        query = extract_cypher(self.writer(prompt))
        self.last_query = query
        if not query or query.lower().strip(" .") in ("none", "empty", "null"):
            return []  # the prompt tells the model to return nothing when no query applies
        rows = self.corpus.store.query_untrusted(query)[: max(k, 1) * 5]
        ids = [str(r["id"]) for r in rows if r.get("id") is not None]
        nodes = self.corpus.nodes(ids)
        out: list[Evidence] = []
        for rank, r in enumerate(rows, start=1):
            nid = r.get("id")
            if nid is not None and str(nid) in nodes:
                out.append(to_evidence(nodes[str(nid)], 1.0 / rank, self.name))
            elif nid is None:
                out.append(Evidence(node_id="", kind="Row", doc_id="", pages=(), score=1.0 / rank,
                                    text=json.dumps(r, default=str, ensure_ascii=False), retriever=self.name))
            if len(out) >= k:
                break
        return out
