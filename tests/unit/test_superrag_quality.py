"""Parser-quality measures: NID (LCS over word tokens), TEDS / TEDS-S of tables, table matching, headings."""

from __future__ import annotations

import pytest

from htmlrag.evaluation.parse_quality import heading_scores, lcs_length, match_tables, nid, teds


def test_lcs_and_nid() -> None:
    assert lcs_length("a b c d".split(), "a c d e".split()) == 3
    assert lcs_length([], ["x"]) == 0
    assert nid("Net sales rose 5%.", "net SALES rose 5") == 1.0  # tokens: case and punctuation ignored
    assert nid("a b c d", "c d a b") == pytest.approx(2 * 2 / 8)  # two paragraphs read in the wrong order
    assert nid("", "") == 1.0 and nid("a", "") == 0.0


def test_teds_cells_structure_and_matching() -> None:
    pytest.importorskip("apted")
    ref = [["Region", "Revenue"], ["North", "1,234"], ["South", "7,890"]]
    assert teds(ref, ref) == 1.0
    typo = [["Region", "Revenue"], ["North", "1,284"], ["South", "7,890"]]
    assert teds(ref, typo) == pytest.approx(1 - 0.2 / 10)  # one cell, 1 of 5 characters renamed; 10 nodes
    assert teds(ref, typo, structure_only=True) == 1.0
    short = ref[:2]
    assert teds(ref, short) == pytest.approx(1 - 3 / 10)  # a row (tr + 2 td) missing
    assert match_tables([ref, short], [short]) == [0.0, 1.0]  # greedy: the exact pair first


def test_heading_scores() -> None:
    assert heading_scores(["1 Introduction", "2 Methods", "Results"], ["Introduction 1", "2 Method", "Extra"]) == \
        (2, 3, 3)
