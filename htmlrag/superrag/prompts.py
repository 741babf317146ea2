"""The SuperRAG paper's prompts (its appendix), in English, with our graph's names filled in.

* :data:`TOC_SELECT_PROMPT`: the few-shot table-of-contents prompt (the paper's ``DEFAULT_TABLEOFCONTENTS_TEMPLATE``:
  "Assume you are reading a book ... return only the matching lines ... think step by step and give the answer
  at the last step", one worked example, then the document's contents and the query). Our example is our own.
* :data:`CYPHER_PROMPT`: the paper's Cypher-generation prompt (``CYPHER_QUERY_TEMPLATES``): the graph schema,
  guidelines (schema only, plain Cypher, pages by number, filter by document, return nothing when unsure, no
  generic queries), good and bad examples, the request and the document ids. The paper's property names
  (``pageIdx``, ``parentDocName``, ``S_IS_UNDER_P``) are replaced by ours (``page_start``, ``doc_id``,
  ``ON_PAGE``).
* :data:`FIGURE_PROMPT`: the figure-description request sent with a picture to a vision-language model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

TOC_EXAMPLE = """Item 1. Financial Statements .... p. 4
  Condensed Consolidated Statements of Operations .... p. 4
  Condensed Consolidated Balance Sheets .... p. 6
  Note 3 - Financial Instruments .... p. 10
Item 2. Management's Discussion and Analysis .... p. 17
  Gross Margin .... p. 20
  Liquidity and Capital Resources .... p. 22
Item 1A. Risk Factors .... p. 23"""
TOC_EXAMPLE_QUERY = "How did the gross margin percentage change, and why?"
TOC_EXAMPLE_ANSWER = """The question is about gross margin and its causes, discussed in the MD&A.
  Gross Margin .... p. 20"""

TOC_SELECT_PROMPT = """Assume you are reading a book. You have a query and need to find the relevant lines in the table of contents.
Only return the corresponding lines, without any explanation.
Think step by step and return the answer at the last step.
### Table of contents
{toc_example}
### Query
{query_example}
### Answer
{answer_example}


### Table of contents
{toc}
### Query
{query}
### Answer
"""

CYPHER_PROMPT = """You need to construct a Cypher query to retrieve the requested information from a graph database.
The graph schema is given below for reference.
{schema}

Guidelines for generating the Cypher query:
- Schema adherence:
  - Only use the relationship types and properties provided.
- Response guidelines:
  - Generate a plain-text Cypher query, without any extra formatting.
  - Include only the Cypher statement; no explanations, apologies or unrelated content.
- Query construction conditions:
  - Use page_start and page_end (physical page numbers, from 1) to identify pages.
  - Use the kind property to identify the type of a node.
  - If doc_ids are given, use them to filter nodes (n.doc_id IN [...]).
  - Return the matched nodes' ids as `id`, at most {k} rows.
- Handling uncertainty:
  - If you are unsure about the user's request, or no Cypher query applies, return nothing.
- Things to avoid:
  - Do not generate generic queries: if the request lacks specifics, return nothing.
  - Do not use or infer any other relationship types or properties.
  - Do not generate overly complex queries: keep the query simple and focused on the user's request.
  - Do not generate keyword queries unless explicitly asked.
  - Do not write queries that could return all Section, Table or Figure nodes of a document.
  - Only read: no CREATE, MERGE, SET, DELETE, REMOVE, DROP, LOAD, COPY or CALL.
Good examples:
- MATCH (t:`Table`)-[:ON_PAGE]->(p:Page) WHERE p.page_start IN [4, 5] AND t.doc_id IN ["doc-1"] RETURN t.id AS id LIMIT 10
- MATCH (c:SectionChunk)-[:IS_UNDER]->(s:Section) WHERE s.title CONTAINS "Gross Margin" AND c.doc_id IN ["doc-1"] RETURN c.id AS id LIMIT 10
Bad examples:
- MATCH (s:Section) WHERE s.doc_id IN ["doc-1"] RETURN s.id AS id
- MATCH (s:Section)-[:ON_PAGE]->(p:Page) WHERE s.doc_id IN ["doc-1"] RETURN s.id AS id
User request: {question}
doc_ids: {doc_ids}
Cypher query (plain text, no formatting):"""

FIGURE_PROMPT = """Describe this figure from a document for someone who cannot see it: what kind of figure it is, what it
shows, the labels, values and trends it contains, and what it concludes. Use plain sentences, at most 150 words.
Its caption: {caption}"""


def toc_prompt(toc: str, query: str) -> str:
    """The few-shot ToC-selection prompt for one document's contents listing."""
    return TOC_SELECT_PROMPT.format(toc_example=TOC_EXAMPLE, query_example=TOC_EXAMPLE_QUERY,
                                    answer_example=TOC_EXAMPLE_ANSWER, toc=toc, query=query)


def toc_line(title: str, level: int, page: int) -> str:
    """One line of a contents listing: indented by level, with its physical page."""
    return f"{'  ' * max(level - 1, 0)}{title} .... p. {page}"


def _key(text: str) -> str:
    t = re.sub(r"\.{2,}\s*p\.\s*\d+\s*$", "", text.strip())
    return "".join(c for c in unicodedata.normalize("NFKC", t).lower() if c.isalnum())


def chosen_lines(reply: str, lines: Sequence[str]) -> list[int]:
    """Indexes of the listing's ``lines`` that a ToC-selection reply returned, in the reply's order.

    The reply's lines are compared with the listing's lines with leading bullets, indentation, the page
    suffix, case, spacing and punctuation ignored; reply lines that match no listing line (the model's
    step-by-step reasoning) are ignored. A title listed twice: the first one not chosen yet."""
    keys = [_key(x) for x in lines]
    out: list[int] = []
    for raw in reply.splitlines():
        k = _key(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", raw))
        if not k:
            continue
        j = next((i for i, x in enumerate(keys) if x == k and i not in out), None)
        if j is not None:
            out.append(j)
    return out
