"""Splits never tear a table row: split-to-fill and the split of blocks larger than the budget take whole rows
at the smallest (a header cell without its value cell means nothing), in every context format."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htmlrag import build_block_tree, clean_html
from htmlrag.html.formats import FORMATS
from htmlrag.pruning.prune import _split_block, prune_to_budget
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.bm25 import BM25Ranker
from tests.helpers.rows import rows_torn

TOK = load_tokenizer()
_VOCAB = ["alpha", "beta", "gamma", "delta", "river", "bridge", "1932", "range", "speed", "engine"]


def _specs_page(value_words: int = 60) -> str:
    value = " ".join(f"km{i}" for i in range(value_words))
    rows = (f"<tr><th>Range</th><td>{value}</td></tr><tr><th>Speed</th><td>Mach 2 at altitude</td></tr>"
            "<tr><th>Engine</th><td>two turbofans</td></tr>")
    filler = "".join(f"<p>Paragraph {i} about the aircraft's history and its many operators.</p>" for i in range(6))
    return clean_html(f"<html><body><h2>Specifications</h2><table>{rows}</table>{filler}</body></html>")


def test_a_row_is_never_split_and_rows_in_a_split_block_stay_whole():
    tree = build_block_tree(_specs_page(), 200)  # the whole page is one block: its split re-splits at half
    table = next(e for e in tree.root.iter("table"))
    sub = build_block_tree(table, 1000)  # the table as one block
    assert len(sub.blocks) == 1
    parts = _split_block(sub.blocks[0])
    assert parts and {p.element.tag for p in parts} <= {"tr", "tbody"}
    assert any(p.words > sub.blocks[0].words // 2 for p in parts)  # the Range row is over half: still whole
    row = next(e for e in table.iter("tr"))
    assert _split_block(build_block_tree(row, 1000).blocks[0]) is None


def test_a_block_of_cells_is_not_divided_further_but_a_run_of_rows_is():
    cells = "".join(f"<td>{w} {w}</td>" for w in _VOCAB)
    big_row = build_block_tree(clean_html(f"<table><tr>{cells}</tr><tr><td>x</td></tr></table>"), 6,
                               pack_siblings=True)
    runs = [b for b in big_row.blocks if b.members]
    assert runs and all(m.tag == "td" for b in runs for m in b.members)  # the block tree divided the big row
    assert all(_split_block(b) is None for b in runs)
    rows = "".join(f"<tr><td>{w}</td><td>{w} {w}</td></tr>" for w in _VOCAB)
    table = build_block_tree(clean_html(f"<p>{' '.join(_VOCAB * 3)}</p><table>{rows}</table>"), 25,
                             pack_siblings=True)
    run = next(b for b in table.blocks if b.members and b.members[0].tag == "tr")
    assert [p.element.tag for p in _split_block(run)] == ["tr"] * len(run.members)


def test_split_to_fill_keeps_the_header_cell_with_its_value():
    """The reported case: ``--format compact_html`` with split-to-fill gave ``<tr><td>Range</table>``."""
    tree = build_block_tree(_specs_page(), 128, pack_siblings=True)
    ranker = BM25Ranker()
    scores = ranker.score("range", [tree])
    for fmt in FORMATS:
        for budget in range(40, 200, 8):
            res = prune_to_budget([tree], scores, budget, TOK, fmt=fmt, ranker=ranker, question="range",
                                  split_to_fill=4)
            assert not rows_torn([tree], res), (fmt, budget)
            assert ("Range" in res.context) == ("km59" in res.context), (fmt, budget, res.context)


@st.composite
def table_pages(draw):
    """Pages of tables (rows of 1-4 cells, some header cells, some empty) between paragraphs and lists."""
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["table", "table", "p", "ul"]))
        words = lambda lo, hi: " ".join(draw(st.lists(st.sampled_from(_VOCAB), min_size=lo, max_size=hi)))  # noqa: E731
        if kind == "table":
            rows = []
            for _ in range(draw(st.integers(1, 8))):
                cells = [f"<{draw(st.sampled_from(['td', 'th']))}>{words(0, 25)}</td>"
                         for _ in range(draw(st.integers(1, 4)))]
                rows.append("<tr>" + "".join(cells) + "</tr>")
            nested = f"<div>{''.join(rows)}</div>" if draw(st.booleans()) else "".join(rows)
            parts.append(f"<table>{nested}</table>" if "<div>" not in nested else f"<div><table>{''.join(rows)}"
                         "</table></div>")
        elif kind == "p":
            parts.append(f"<p>{words(1, 30)}</p>")
        else:
            parts.append("<ul>" + "".join(f"<li>{words(1, 8)}</li>" for _ in range(draw(st.integers(1, 5)))) + "</ul>")
    return clean_html("<html><body>" + "".join(parts) + "</body></html>")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(table_pages(), min_size=1, max_size=3), st.integers(8, 300), st.sampled_from([6, 20, 60, 128]),
       st.booleans(), st.sampled_from(FORMATS), st.randoms())
def test_property_splits_never_tear_a_row(htmls, budget, max_words, pack, fmt, rnd):
    trees = [build_block_tree(h, max_words, page=i, pack_siblings=pack) for i, h in enumerate(htmls)]
    scores = [np.array([rnd.random() for _ in t.blocks]) for t in trees]
    for split_to_fill in (0, 4):  # 0: only blocks over the budget are split (the oversize split)
        for split_min_room in (0.0, 0.5):
            res = prune_to_budget(trees, scores, budget, TOK, fmt=fmt, oversize="drop", split_to_fill=split_to_fill,
                                  split_min_room=split_min_room)
            assert res.tokens <= budget
            assert not rows_torn(trees, res)
