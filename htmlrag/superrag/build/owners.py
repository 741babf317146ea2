"""Which company (owner) a filing belongs to, read from its file name, with no list of companies.

Periodic filings are named by their period and their owner ("2023 Q3 AAPL.pdf", "NVDA_10-Q_2023-07-30.pdf",
"Northwind Traders FY2024 Q1.pdf", "PFIZER_2023Q2_10Q.pdf"). The owner is what is left of the name once the
period is taken out: years, quarters and halves in either order and written apart or together (``Q3``, ``3Q``,
``H1``, ``FY2024``, ``FY24``, ``2023Q2``, ``Q2FY23``, ``2023H1``), month names, form names
(``10-Q``, ``10-K``, ``20-F``, ``annual``, ``report``...), and numbers. The remaining words, joined by one space,
name the owner; a name with nothing left is its own owner (its stem). So a corpus of any companies' filings
groups itself without a list in the code, and the held-out benchmark leaves out each group in turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_MONTHS = {"jan", "january", "feb", "february", "mar", "march", "apr", "april", "may", "jun", "june", "jul",
           "july", "aug", "august", "sep", "sept", "september", "oct", "october", "nov", "november", "dec",
           "december"}
_FORM_WORDS = {"form", "annual", "quarterly", "report", "filing", "interim", "dated", "fy", "q", "k", "f"}
_PERIOD = re.compile(r"""^(?:
      \d+                              # years, days, numbers
    | (?:fy|cy)?\d{2,4}                # FY2024, FY24
    | (?:fy|cy)?q[1-4](?:fy|cy)?\d{0,4}   # Q3, Q3FY24, FYQ1
    | [1-4]q(?:fy|cy)?(?:\d{2,4})?     # 3Q, 3Q23, 3QFY23
    | h[12](?:fy|cy)?(?:\d{2,4})?      # H1, H123, H1FY23
    | (?:fy|cy)?\d{2,4}(?:q[1-4]|[1-4]q|h[12])   # 2023Q2, FY23Q2, 20233Q, 2023H1 (the year first)
    | \d{1,2}-?[qkf]                   # 10-Q, 10Q, 10-K, 20-F (after splitting, '10' and 'q' also drop)
    )$""", re.X)


def _words(stem: str) -> list[str]:
    return [w for w in re.split(r"[\s_\-.,()\[\]]+", stem) if w]


def owner_of(name: str | Path) -> str:
    """The owner named by a filing's file name (see the module docstring); upper-case tickers keep their case.

    >>> owner_of("2023 Q3 AAPL.pdf"), owner_of("NVDA_10-Q_2023-07-30.pdf"), owner_of("Northwind FY2024 Q1.pdf")
    ('AAPL', 'NVDA', 'Northwind')
    """
    stem = Path(str(name)).stem
    left = [w for w in _words(stem)
            if not (_PERIOD.match(w.lower()) or w.lower() in _MONTHS or w.lower() in _FORM_WORDS)]
    return " ".join(left) or stem


def owners(names: Iterable[str | Path]) -> dict[str, str]:
    """File name -> owner for every name (see :func:`owner_of`); owners that differ only in case are one
    (spelled as first seen: ``intc-20230401.pdf`` and ``2023 Q1 INTC.pdf`` are one owner)."""
    spelled: dict[str, str] = {}
    out: dict[str, str] = {}
    for n in names:
        who = owner_of(n)
        out[Path(str(n)).name] = spelled.setdefault(who.casefold(), who)
    return out


def owner_glob(name: str) -> str:
    """A glob that matches exactly this file name (``*``, ``?``, ``[`` escaped), for
    :attr:`~htmlrag.superrag.build.corpus.CorpusConfig.companies`."""
    return re.sub(r"([*?\[])", r"[\1]", name)


def document_label(doc: object) -> str:
    """The name a document goes by in chunk headers: the name it gives itself
    (:func:`~htmlrag.superrag.parse.names.document_name`, kept as ``ParsedDocument.name``), else the owner in its
    file name (:func:`owner_of`)."""
    name = str(getattr(doc, "name", "") or "").strip()
    return name or owner_of(str(getattr(doc, "path", "") or ""))
