"""Table/figure expansion and the self-reflection step that lets a reader decide whether to use it.

Expansion: for the base evidence, the tables and figures under the same parent section or on the same page
(and the whole table of a retrieved table chunk) are candidates; the ``top`` candidates most similar to the
question (cosine of embeddings) are appended after the base evidence, with that cosine as score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from htmlrag.superrag.graph import cypher
from htmlrag.superrag.retrieve.evidence import Backend, Evidence, encode_texts, to_evidence

Retriever = Callable[..., list[Evidence]]


@runtime_checkable
class Reader(Protocol):
    """A text generator: prompt in, completion out (an HF, vLLM or OpenAI-compatible model behind it)."""

    def __call__(self, prompt: str) -> str: ...


REFLECT_PROMPT = """You are deciding which evidence helps answer a question.
Question: {question}

Tables and figures found near the retrieved passages:
{candidates}

Would these tables or figures help answer the question? Answer "yes" or "no"."""

_QUANT = re.compile(r"\b(how (much|many)|total|amount|number|percent(age)?|ratio|rate|revenue|sales|income|"
                    r"margin|cost|expenses?|cash|price|growth|increase|decrease|change|compare|compared|trend|"
                    r"table|figure|chart|graph|diagram|shown|breakdown)\b|[$%]|\d", re.I)


class KeywordReader:
    """Deterministic fake reader for self-reflection: "yes" when the question (the prompt's second line)
    asks for quantities or visuals (how much/many, totals, rates, money words, table/figure/chart, digits)."""

    def __call__(self, prompt: str) -> str:
        q = next((ln for ln in prompt.splitlines() if ln.startswith("Question:")), prompt)
        return "yes" if _QUANT.search(q) else "no"


def candidate_text(row: dict) -> str:
    """The text a table/figure candidate is embedded as (its title, then at most 2,000 characters of text)."""
    return f"{row.get('title') or ''}\n{(row.get('text') or '')[:2000]}"


class TableFigureExpansion:
    """Base retriever, then the ``top`` related tables/figures (see the module docstring)."""

    def __init__(self, corpus: Backend, base: Retriever, *, top: int = 3) -> None:
        self.corpus, self.base, self.top = corpus, base, top
        self.name = "tables"

    def candidates(self, question: str, evidence: Sequence[Evidence]) -> list[Evidence]:
        ids = [e.node_id for e in evidence]
        if not ids:
            return []
        found = [r["id"] for r in cypher.related_tables_figures(self.corpus.store, ids)]
        found += [r["id"] for r in self.corpus.store.query(cypher.PARENT_TABLE, {"ids": ids})]
        have = set(ids)
        cand = [i for i in dict.fromkeys(found) if i not in have]
        if not cand:
            return []
        rows = self.corpus.nodes(cand)
        texts = [candidate_text(rows[i]) for i in cand if i in rows]
        keep = [i for i in cand if i in rows]
        vecs = encode_texts(self.corpus, texts)
        sims = vecs @ self.corpus.embed_query(question)
        order = sorted(range(len(keep)), key=lambda j: -float(sims[j]))[: self.top]
        return [to_evidence(rows[keep[j]], float(sims[j]), self.name) for j in order]

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        base = self.base(question, k, doc_ids)
        return base + self.candidates(question, base)


class SelfReflection:
    """Base retrieval; then the reader sees the candidate tables/figures' titles and answers yes/no.

    Only on a reply starting with "yes" (case-insensitive) are the expansion's tables/figures appended.
    The last decision is kept in ``last_decision`` (True/False) for logging and tests.
    """

    def __init__(self, expansion: TableFigureExpansion, reader: Reader | None = None) -> None:
        self.expansion = expansion
        self.reader: Reader = reader or KeywordReader()
        self.name = "reflect"
        self.last_decision: bool | None = None

    def __call__(self, question: str, k: int = 10, doc_ids: Sequence[str] | None = None) -> list[Evidence]:
        base = self.expansion.base(question, k, doc_ids)
        cand = self.expansion.candidates(question, base)
        if not cand:
            self.last_decision = None
            return base
        listing = "\n".join(f"- {c.kind} p.{','.join(map(str, c.pages))}: {c.title or c.text[:80]}" for c in cand)
        reply = self.reader(REFLECT_PROMPT.format(question=question, candidates=listing))
        self.last_decision = reply.strip().lower().startswith("yes")
        return base + cand if self.last_decision else base
