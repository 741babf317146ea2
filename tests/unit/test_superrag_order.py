"""Reading order: two-column pages read column by column wherever their gutter is."""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag.superrag.parse.order import column_split, reading_order


@dataclass
class B:
    bbox: tuple[float, float, float, float]
    text: str


TEXT = "x" * 300


def test_columns_right_of_centre_are_read_column_by_column() -> None:
    """The shared docling page amt_handbook_sample: columns at 72-312 and 321-561 on a 594-pt page, so the
    left column crosses the page's middle (297) by 15 pt; it was read as one column, left and right blocks
    interleaved by height."""
    left = [B((72, y, 312, y + 60), f"L{i} {TEXT}") for i, y in enumerate((44, 110, 190, 300))]
    right = [B((321, y, 561, y + 60), f"R{i} {TEXT}") for i, y in enumerate((44, 130, 250))]
    figure = B((71, 437, 594, 695), "figure caption " + TEXT)
    order = [b.text.split()[0] for b in reading_order([*right, figure, *left], 594)]
    assert column_split([*left, *right, figure], 594) is not None
    assert order == ["L0", "L1", "L2", "L3", "R0", "R1", "R2", "figure"]


def test_centred_columns_still_split_at_the_middle() -> None:
    left = [B((50, y, 290, y + 50), f"L{i} {TEXT}") for i, y in enumerate((100, 200))]
    right = [B((310, y, 550, y + 50), f"R{i} {TEXT}") for i, y in enumerate((100, 200))]
    assert [b.text[:2] for b in reading_order([*right, *left], 600)] == ["L0", "L1", "R0", "R1"]


def test_one_column_page_with_a_page_number_is_read_top_down() -> None:
    body = [B((72, y, 540, y + 40), f"P{i} {TEXT}") for i, y in enumerate((50, 100, 150))]
    number = B((520, 760, 540, 770), "7")
    short = B((72, 200, 250, 220), "S a short closing line")
    blocks = [number, short, *reversed(body)]
    assert column_split(blocks, 612) is None
    assert [b.text.split()[0] for b in reading_order(blocks, 612)] == ["P0", "P1", "P2", "S", "7"]
