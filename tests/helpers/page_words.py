"""Words of a generated page, as ``page.get_text("words")`` gives them, for the table finders' tests."""

from __future__ import annotations

from htmlrag.superrag.parse.tables import Word


def words_at(y: float, *cells: tuple[float, str], w: float = 5.0) -> list[Word]:
    """The words of one row at top ``y`` (9 points high): each cell's text from its left edge ``x``, a word ``w``
    points per character wide and 2.5 points apart."""
    out: list[Word] = []
    for x, text in cells:
        for word in text.split():
            out.append((x, y, x + w * len(word), y + 9.0, word))
            x += w * len(word) + 2.5
    return out
