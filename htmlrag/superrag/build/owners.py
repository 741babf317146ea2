"""Which company (owner) a filing belongs to, read from its file name, with no list of companies.

Periodic filings are named by their period and their owner ("2023 Q3 AAPL.pdf", "NVDA_10-Q_2023-07-30.pdf",
"Northwind Traders FY2024 Q1.pdf", "PFIZER_2023Q2_10Q.pdf"). The owner is what is left of the name once the
period, the form and the marks of a copy are taken out, in this order:

1. form names, written apart or together and amended or not (``10-Q``, ``10Q``, ``10 K``, ``20-F``, ``8-K``,
   ``10-Q-A``, ``10-Q/A``), leave the name whole, before it is cut into words (so ``10-Q`` takes its ``Q``);
2. the name is cut into words at spaces, ``_``, ``-``, ``.``, ``,``, brackets and parentheses; a word that runs
   a period into letters (``AAPL2023Q1``, ``2023Q1AAPL``, ``intc20230401``) is cut there;
3. years, quarters and halves in either order and written apart or together (``Q3``, ``3Q``, ``H1``,
   ``FY2024``, ``FY24``, ``2023Q2``, ``Q2FY23``, ``2023H1``) and numbers go;
4. generic words go: ``form``, ``annual``, ``quarterly``, ``report``, ``filing``, ``interim``, ``dated``,
   ``fy``, and the marks of a variant of a file (``copy``, ``draft``, ``final``, ``amended``, ``amendment``,
   ``revised``, ``redacted``, ``version``, ``v2``, ``rev1``);
5. month names and the single letters ``Q``, ``K``, ``F`` and ``A`` go too, but only when some other word is
   left: a ticker such as ``F``, ``K``, ``MAR`` or ``DEC`` names its owner (``2023 Q1 F.pdf`` -> ``F``) while
   ``Acme Mar 2023.pdf`` is Acme's.

The remaining words, joined by one space, name the owner. A name with nothing left (``10-Q.pdf``,
``2023 Q1.pdf``, ``annual report.pdf``) names no owner: :func:`owner_of` returns ``""``, the company is
unknown, and callers say so rather than make a company of the file name. So a corpus of any companies'
filings groups itself without a list in the code, and the held-out benchmark leaves out each group in turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_MONTHS = {"jan", "january", "feb", "february", "mar", "march", "apr", "april", "may", "jun", "june", "jul",
           "july", "aug", "august", "sep", "sept", "september", "oct", "october", "nov", "november", "dec",
           "december"}
#: Words that never name an owner: generic words of filings' names and the marks of a variant of a file.
_GENERIC = {"form", "annual", "quarterly", "report", "filing", "interim", "dated", "fy", "copy", "draft", "final",
            "amended", "amendment", "revised", "redacted", "version"}
_VARIANT = re.compile(r"^(?:v|ver|rev)\d*$", re.I)
#: Words dropped only when another word is left: they are tickers when they are all there is (``2023 Q1 F.pdf``).
_WEAK = _MONTHS | {"q", "k", "f", "a"}
#: Form names, amended or not, taken out of the whole name before it is cut into words.
_FORM = re.compile(r"(?<![A-Za-z0-9])\d{1,2}[-_ ]?[QKF](?:[-/]?A)?(?![A-Za-z0-9])", re.I)
_PERIOD = re.compile(r"""^(?:
      \d+                              # years, days, numbers
    | (?:fy|cy)?\d{2,4}                # FY2024, FY24
    | (?:fy|cy)?q[1-4](?:fy|cy)?\d{0,4}   # Q3, Q3FY24, FYQ1
    | [1-4]q(?:fy|cy)?(?:\d{2,4})?     # 3Q, 3Q23, 3QFY23
    | h[12](?:fy|cy)?(?:\d{2,4})?      # H1, H123, H1FY23
    | (?:fy|cy)?\d{2,4}(?:q[1-4]|[1-4]q|h[12])   # 2023Q2, FY23Q2, 20233Q, 2023H1 (the year first)
    | \d{1,2}-?[qkf]                   # 10-Q, 10Q, 10-K, 20-F (after splitting, '10' and 'q' also drop)
    )$""", re.X)
#: A period written into a word with no separator (``AAPL2023Q1``, ``AAPLFY24``, ``2023Q1AAPL``, ``intc20230401``)
_RUN = (r"(?:(?:fy|cy)?(?:19|20)\d{2}(?:q[1-4]|[1-4]q|h[12])?|(?:fy|cy)?(?:q[1-4]|[1-4]q|h[12])(?:fy|cy)?"
        r"(?:(?:19|20)\d{2}|\d{2})?|(?:19|20)\d{6}|fy\d{2})")
_PERIOD_AFTER = re.compile(rf"^(.*?[^\W\d_])({_RUN})$", re.I)
_PERIOD_BEFORE = re.compile(rf"^({_RUN})([^\W\d_].*)$", re.I)


def _words(stem: str) -> list[str]:
    out: list[str] = []
    for w in re.split(r"[\s_\-.,()\[\]{}/]+", _FORM.sub(" ", stem)):
        if not w:
            continue
        if not _PERIOD.match(w.lower()):  # a period run into letters: keep the letters apart
            m = _PERIOD_AFTER.match(w) or _PERIOD_BEFORE.match(w)
            if m:
                out += [x for x in m.groups() if x]
                continue
        out.append(w)
    return out


def owner_of(name: str | Path) -> str:
    """The owner named by a filing's file name (see the module docstring for the rule); upper-case tickers keep
    their case; ``""`` when the name names no owner (``10-Q.pdf``).

    >>> owner_of("2023 Q3 AAPL.pdf"), owner_of("NVDA_10-Q_2023-07-30.pdf"), owner_of("Northwind FY2024 Q1.pdf")
    ('AAPL', 'NVDA', 'Northwind')
    >>> owner_of("2023 Q1 F.pdf"), owner_of("[draft] 2023 Q1 AAPL copy.PDF"), owner_of("10-Q.pdf")
    ('F', 'AAPL', '')
    """
    base = Path(str(name)).name
    stem = base[:-4] if base.lower().endswith(".pdf") else Path(base).stem
    words = [w for w in _words(stem) if not (_PERIOD.match(w.lower()) or w.lower() in _GENERIC or _VARIANT.match(w))]
    strong = [w for w in words if w.lower() not in _WEAK]
    return " ".join(strong or words)


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
