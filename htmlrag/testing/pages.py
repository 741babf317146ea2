"""Hostile HTML pages for tests and probes: deep nesting of several shapes (issue 38).

Each page holds the needle sentence ``"The tower was designed by Margaret Ellis."`` at the bottom of its nesting
and a few ordinary paragraphs beside it, so a pruned context can be checked for it. The HTML parser keeps at most
2,048 levels (libxml2) and flattens deeper pages to 1,024 (:mod:`htmlrag.html.parse`), so the deepest trees the
library meets are just under 2,048 levels: ``depth=2040`` is the worst case, 5,000 and 100,000 the flattened ones.
"""

from __future__ import annotations

NEEDLE = "The tower was designed by Margaret Ellis."

#: shape -> (opening markup of level i, closing markup of a level)
SHAPES: dict[str, tuple[str, str]] = {
    "div": ("<div>part {i} of the long story ", "</div>"),   # text at every level: survives cleaning
    "wrapper": ("<div>", "</div>"),                            # bare wrappers: cleaning merges them
    "list": ("<ul><li>item {i} ", "</li></ul>"),
    "inline": ("<b>w{i} ", "</b>"),                            # deep inline text
    "table": ("<table><tr><td>cell {i} ", "</td></tr></table>"),
    "section": ("<section><h2>Heading {i}</h2><p>Paragraph {i} text.</p>", "</section>"),
}


def deep_page(depth: int, shape: str = "div") -> str:
    """A page nesting ``depth`` levels of ``shape`` (:data:`SHAPES`) around :data:`NEEDLE`, with ordinary
    paragraphs before and after."""
    open_, close = SHAPES[shape]
    return ("<html><head><title>Deep page</title></head><body><p>The lighthouse stands on the headland.</p>"
            + "".join(open_.format(i=i) for i in range(depth)) + f"<p>{NEEDLE}</p>" + close * depth
            + "<p>It has 164 steps and a range of 22 nautical miles.</p></body></html>")
