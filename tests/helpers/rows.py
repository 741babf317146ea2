"""Checks on table rows in pruning results (shared by the unit and real-page tests)."""

from __future__ import annotations

from htmlrag.html.blocktree import BlockTree
from htmlrag.pruning.prune import PruneResult


def row_above(el):
    """The ``tr`` strictly above ``el`` (``None`` if none)."""
    node = el.getparent()
    while node is not None and node.tag != "tr":
        node = node.getparent()
    return node


def rows_torn(inputs: list[BlockTree], res: PruneResult) -> list[str]:
    """Text of each row that a block of the result's trees lies strictly inside, where the input trees had no
    block inside that row (the block tree divides only rows over its block size; a split must not)."""
    alive = [r for t in inputs for b in t.blocks for e in b.elements if (r := row_above(e)) is not None]
    divided = {id(r) for r in alive}  # lxml gives a live element the same proxy: its id() holds while alive
    out = []
    for t in res.trees:
        for b in t.blocks:
            for e in b.elements:
                row = row_above(e)
                if row is not None and id(row) not in divided:
                    out.append(" ".join("".join(row.itertext()).split()))
    return out
