"""Small synthetic QA items over HTML pages for the training tests (short, so tiny models train fast on CPU).

Each item has two pages, one holding the answer in a single block (a paragraph, a list item or a table cell,
by item) and one distractor; the answer page comes first or second by item. Built with ``max_words=16``,
every page splits into several blocks, so the target paths differ across items.
"""

from __future__ import annotations

from htmlrag.data import Example

_FACTS = [
    ("Who built the old mill?", "Anna Berg", "The old mill was built by Anna Berg in the spring of 1881."),
    ("How tall is the north tower?", "74 metres", "The north tower is 74 metres tall and has nine bells."),
    ("Which river feeds the lake?", "the Orla", "The lake is fed by the Orla, a cold river from the hills."),
    ("When did the bridge open?", "1932", "The stone bridge opened to traffic in 1932 after four years."),
    ("What is the town's main export?", "wool", "Sheep farms made wool the town's main export for decades."),
    ("Who wrote the town charter?", "Peter Voss", "The town charter was written by Peter Voss, a judge."),
]
_FILLER = [
    "Visitors walk along the harbour wall at dusk and buy bread from the market stalls.",
    "The museum keeps maps, coins and letters from the first families of the valley.",
    "In winter the roads close for a week and the school holds lessons in the church hall.",
]


def page(i: int, fact: str) -> str:
    """A page with a title, a list, a table and a paragraph; ``fact`` goes into the paragraph, the second list
    item or the second table cell (by ``i``)."""
    f = [_FILLER[i % 3], _FILLER[(i + 1) % 3], _FILLER[(i + 2) % 3]]
    where = i % 3
    li = fact if where == 1 else f[1]
    td = fact if where == 2 else f"Founded {1800 + i}"
    p = fact if where == 0 else f[2]
    return (f"<html><head><title>Town notes {i}</title></head><body><h1>Notes {i}</h1>"
            f"<ul><li>{f[0]}</li><li>{li}</li></ul><table><tr><td>Year</td><td>{td}</td></tr></table>"
            f"<div><p>{p}</p></div></body></html>")


def distractor(i: int) -> str:
    """A page without any of the answers."""
    return (f"<html><body><h2>Elsewhere {i}</h2><p>{_FILLER[i % 3]}</p><div><p>{_FILLER[(i + 2) % 3]}</p>"
            "</div></body></html>")


def synthetic_items() -> list[Example]:
    """Six items, each with one answer page and one distractor page (answer page first for even items)."""
    items = []
    for i, (q, a, fact) in enumerate(_FACTS):
        pages = [page(i, fact), distractor(i)] if i % 2 == 0 else [distractor(i), page(i, fact)]
        items.append(Example(id=f"syn-{i}", question=q, answers=[a], pages=pages))
    return items
