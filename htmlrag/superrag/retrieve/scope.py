"""The question as the searches of a scope see it: without the name of the company every document in scope belongs to.

Questions name the company ("How has Microsoft's total net sales evolved?"); retrieval is scoped to that
company's filings, so inside the scope the name tells no passage from another. In the searches it does harm:
BM25 weighs the rare word "Microsoft" highly and the embedding leans towards it, so the passages that say the
name most (cover page, certifications, stock plan exhibits, the "Apple Inc." line over every statement, the
name sections of the table of contents) outrank the statement that holds the numbers (issue 35). So each search
over documents that all go by one name drops that name from the question; a search over documents of several
names keeps every name (there it tells them apart), and the reader always gets the question as asked.

Which words are dropped: the name's distinctive words (legal forms such as "Inc.", "Corporation", "Ltd" and
"The" do not count) as one run, in the name's order, with a possessive ``'s``; the whole run ("Northwind
Widgets"), or, when it is written as a proper noun (capital first letter), its first word alone ("Northwind's").
A question left with fewer than two words is searched as asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Words of a company name that are its legal form, not its name.
LEGAL = frozenset(
    "the inc incorporated corp corporation co company companies ltd limited plc llc lp llp holdings holding group "
    "sa ag nv se bv gmbh spa ab asa oyj kk".split()
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


def name_words(name: str) -> list[str]:
    """The distinctive words of a company name, lower case, in order (``"Apple Inc."`` -> ``["apple"]``,
    ``"NVIDIA CORPORATION"`` -> ``["nvidia"]``, ``"Bank of America Corporation"`` -> ``["bank", "of", "america"]``)."""
    words = [w.lower() for w in _WORD.findall(name)]
    while words and words[-1] in LEGAL:
        words.pop()
    while words and words[0] in LEGAL:
        words.pop(0)
    return words


def _bare(token: str) -> str:
    t = token.lower()
    for s in ("'s", "’s"):
        if t.endswith(s):
            return t[: -len(s)]
    return t.rstrip("'’")


def without_name(question: str, name: str) -> str:
    """``question`` without the company ``name`` (see the module docstring); unchanged when the name is not in
    it or too little would be left."""
    target = name_words(name)
    if not target:
        return question
    tokens = list(_WORD.finditer(question))
    cut: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        n = 0
        while i + n < len(tokens) and n < len(target) and _bare(tokens[i + n].group()) == target[n]:
            n += 1
            if _bare(tokens[i + n - 1].group()) != tokens[i + n - 1].group().lower():
                break  # a possessive ends the name
        whole = n == len(target)
        proper = n >= 1 and tokens[i].group()[:1].isupper()
        if whole or proper:
            n = n if whole else 1
            cut.append((tokens[i].start(), tokens[i + n - 1].end()))
            i += n
        else:
            i += 1
    if not cut:
        return question
    out, last = [], 0
    for a, b in cut:
        out.append(question[last:a])
        last = b
    out.append(question[last:])
    left = " ".join("".join(out).split())
    return left if len(_WORD.findall(left)) >= 2 else question


def scoped_question(corpus: object, question: str, doc_ids: Sequence[str] | None) -> str:
    """The question for the searches over ``doc_ids`` (None: the whole corpus): without their company's name
    when every one of them goes by the same name (``corpus.document_names``), else as asked (several names,
    names unknown)."""
    names_of = getattr(corpus, "document_names", None)
    if not callable(names_of):
        return question
    names = list(names_of(doc_ids))
    if not names or len({" ".join(name_words(n)) for n in names}) != 1 or not name_words(names[0]):
        return question
    return without_name(question, names[0])
