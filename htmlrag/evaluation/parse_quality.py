"""Parser quality against a reference (the SuperRAG paper's Table 1 kind of measures).

* **NID** (normalised insertion/deletion similarity) of two reading-order texts: both are cut into word tokens
  (NFKC, lower case, runs of letters and digits); with ``L`` the length of their longest common subsequence,
  ``NID = 1 - (|a| + |b| - 2L) / (|a| + |b|) = 2L / (|a| + |b|)``: 1.0 for the same words in the same order,
  lower for missing, extra or misplaced words (a paragraph read out of order costs its words twice).
* **TEDS** (tree-edit-distance similarity, Zhong et al. 2020) of two tables given as rows of cell strings:
  each is a tree ``table -> tr -> td(text)``; ``TEDS = 1 - APTED(a, b) / max(|a|, |b|)`` with unit insert and
  delete costs and, for two cells, a rename cost equal to the normalised Levenshtein distance of their texts
  (whitespace-collapsed). **TEDS-S** scores the structure only (every cell text equal). Needs ``apted``.
* Tables of a document are matched one-to-one, greedily by TEDS; a reference table without a match scores 0.
* **Headings**: a predicted heading matches an unmatched reference heading when their normalised texts
  (letters and digits, lower case) are equal, hold the same characters in another order, or have a difflib
  ratio >= 0.9; greedy, one-to-one. recall = matched / reference, precision = matched / predicted.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Word tokens for NID (see the module docstring)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (bit-parallel, Allison-Dix / Hyyrö)."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, t in enumerate(a):
        masks[t] = masks.get(t, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for t in b:
        u = v & masks.get(t, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def nid(reference: str, predicted: str) -> float:
    """NID similarity of two reading-order texts (see the module docstring); 1.0 when both are empty."""
    a, b = tokens(reference), tokens(predicted)
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


@dataclass
class _Node:
    name: str
    text: str = ""
    children: list[_Node] = field(default_factory=list)


def _tree(rows: Sequence[Sequence[str]], structure_only: bool) -> _Node:
    norm = (lambda c: "") if structure_only else (lambda c: " ".join(str(c).split()))
    return _Node("table", children=[_Node("tr", children=[_Node("td", norm(c)) for c in r]) for r in rows])


def _size(n: _Node) -> int:
    return 1 + sum(_size(c) for c in n.children)


@functools.lru_cache(maxsize=65536)
def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def teds(reference: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], *,
         structure_only: bool = False) -> float:
    """TEDS (or TEDS-S) of two tables given as rows of cells (see the module docstring)."""
    from apted import APTED, Config

    class _Cost(Config):
        valuecls = float

        def rename(self, n1: Any, n2: Any) -> float:
            if n1.name != n2.name:
                return 1.0
            if n1.name != "td" or n1.text == n2.text:
                return 0.0
            return _levenshtein(n1.text, n2.text) / max(len(n1.text), len(n2.text), 1)

        def children(self, n: Any) -> list[Any]:
            return n.children

    ta, tb = _tree(reference, structure_only), _tree(predicted, structure_only)
    dist = APTED(ta, tb, _Cost()).compute_edit_distance()
    return max(0.0, 1.0 - float(dist) / max(_size(ta), _size(tb)))


def match_tables(reference: Sequence[Sequence[Sequence[str]]], predicted: Sequence[Sequence[Sequence[str]]], *,
                 structure_only: bool = False) -> list[float]:
    """For each reference table, the TEDS of its predicted table under a greedy one-to-one matching (0.0 when
    none is left)."""
    pairs = sorted(((teds(r, p, structure_only=structure_only), i, j) for i, r in enumerate(reference)
                    for j, p in enumerate(predicted)), reverse=True)
    best = [0.0] * len(reference)
    used_r: set[int] = set()
    used_p: set[int] = set()
    for score, i, j in pairs:
        if i not in used_r and j not in used_p:
            best[i] = score
            used_r.add(i)
            used_p.add(j)
    return best


def _norm(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


def heading_match(a: str, b: str) -> bool:
    """Whether two normalised heading texts are the same heading (see the module docstring)."""
    return a == b or sorted(a) == sorted(b) or difflib.SequenceMatcher(None, a, b).ratio() >= 0.9


def heading_scores(reference: Sequence[str], predicted: Sequence[str]) -> tuple[int, int, int]:
    """(matched, reference count, predicted count) of heading texts (see the module docstring)."""
    ref = [_norm(t) for t in reference]
    got = [_norm(t) for t in predicted]
    used: set[int] = set()
    for g in got:
        j = next((i for i, r in enumerate(ref) if i not in used and heading_match(g, r)), None)
        if j is not None:
            used.add(j)
    return len(used), len(ref), len(got)
