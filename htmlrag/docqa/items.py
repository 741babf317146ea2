"""Key items of a gold answer (its numbers, else its key phrases) and how to find them in a text.

Long model-written gold answers (sec-10-q) cannot be matched as a whole. We reduce a gold answer to the items
a correct answer or a useful piece of evidence must contain:

* **numbers**: every number in the answer, normalised (``$``, ``,`` and ``%`` removed, a trailing ``.``
  dropped, printed with at most 2 decimals: ``$82,959`` -> ``82959``, ``4.50%`` -> ``4.5``). Integers below 10
  and years 1990-2035 are left out (they occur everywhere), and so are numbers that also occur in the question.
  Source markers (``SOURCE: x.pdf``) and dates are removed first: a date's day is not a figure of the answer
  ("As of October 30, 2022, inventory was $4,454 million" gives ``4454``, not ``30``), and the day of a period
  end is printed in every column heading and page header of a filing, so it is found in nearly any evidence.
  Dates are a month name (or its abbreviation) with a day (``October 30``, ``Oct. 30, 2022``, ``30 September``,
  ``June 1st``; "May" only capitalised, the verb "may" is no month) and numeric dates (``10/30/2022``, ``2022-10-30``).
* when the answer has no such number, **key phrases**: adjacent pairs of lower-cased content words (3+
  letters, not stop words; shorter words are skipped, so "weakness in foreign" gives "weakness foreign") that do
  not occur in the question;
* when there are none (a one-word answer), its content words; when there are none either, the whole
  answer, SQuAD-normalised (``"Yes"`` -> ``"yes"``, ``"2019"`` -> ``"2019"``).

An item is **found** in a text when: a number item equals a normalised number of the text; a pair item is a
pair of the text (same definition); a word item is a word of the text; any other item is contained in the
SQuAD-normalised text on word boundaries. These are the definitions of ``scripts/bench_superrag.py``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from htmlrag.core.answers import normalize_answer

NUM = re.compile(r"(?<![\w.])\$?\d[\d,]*(?:\.\d+)?%?")
WORD = re.compile(r"[a-z]{3,}")
_PAIR_ITEM = re.compile(r"[a-z]{3,} [a-z]{3,}")
_SOURCE = re.compile(r"\(?SOURCE(\(S\))?:[^\n)]*\)?")
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|(?-i:May)|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?(?![\d.,]\d|[\d%])"
#: A date written with a month name and a day, or in numbers (see the module docstring).
DATE = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+(?:19|20)\d\d\b)?|\b{_DAY}\s+{_MONTH}(?!\w)(?:,?\s+(?:19|20)\d\d\b)?"
                  r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(?:19|20)\d\d-\d{2}-\d{2}\b", re.IGNORECASE)
STOP = frozenset(
    "the and for are but not you all any can had her was one our out has have from with this that they "
    "which will would there their what when where who been into than then them these those such its "
    "also may might could about above after again against because before below between both during "
    "each more most other over same some through under until very while only own based provided "
    "documents document period ended quarter quarterly compared".split()
)


def norm_num(s: str) -> str | None:
    """A number's normal form (``"$1,234.50"`` -> ``"1234.5"``), or None for non-numbers, integers below 10
    and years 1990-2035."""
    t = s.replace("$", "").replace(",", "").replace("%", "").rstrip(".")
    try:
        v = float(t)
    except ValueError:
        return None
    if "." not in t and (v < 10 or 1990 <= v <= 2035):
        return None
    return f"{v:.2f}".rstrip("0").rstrip(".")


def numbers(text: str) -> set[str]:
    """Normal forms of the numbers in ``text``."""
    return {n for n in (norm_num(m) for m in NUM.findall(text)) if n}


def words(text: str) -> list[str]:
    """Lower-cased words of 3+ ASCII letters, in order."""
    return WORD.findall(text.lower())


def pairs(text: str) -> set[str]:
    """Adjacent pairs of content words (see the module docstring)."""
    return {f"{a} {b}" for a, b in itertools.pairwise(words(text)) if a not in STOP and b not in STOP}


def gold_items(question: str, answer: str) -> tuple[str, list[str]]:
    """The key items of ``answer`` for ``question``: ``(kind, items)`` with kind ``numbers``, ``phrases``,
    ``words`` or ``answer`` (see the module docstring); items sorted, never empty for a non-empty answer."""
    ans = _SOURCE.sub(" ", answer)
    nums = numbers(DATE.sub(" ", ans)) - numbers(DATE.sub(" ", question))
    if nums:
        return "numbers", sorted(nums)
    phrases = pairs(ans) - pairs(question)
    if phrases:
        return "phrases", sorted(phrases)
    content = {w for w in words(ans) if w not in STOP} - set(words(question))
    if content:
        return "words", sorted(content)
    whole = normalize_answer(ans)
    return ("answer", [whole]) if whole else ("answer", [])


class ItemMatcher:
    """Finds items in one text (the text's numbers, pairs and words are computed once)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._numbers = numbers(text)
        ws = words(text)
        self._words = set(ws)
        self._pairs = pairs(text)
        self._norm = f" {normalize_answer(text)} "

    def found(self, item: str) -> bool:
        """True when ``item`` occurs in the text (see the module docstring)."""
        if NUM.fullmatch(item.strip()):  # items are normal forms ("2.00%" -> "2"); raw numbers are normalised
            n = norm_num(item)
            return item in self._numbers or (n is not None and n in self._numbers)
        if _PAIR_ITEM.fullmatch(item):
            return item in self._pairs
        if WORD.fullmatch(item):
            return item in self._words
        norm = normalize_answer(item)
        return bool(norm) and f" {norm} " in self._norm


def item_recall(items: Sequence[str], text: str) -> float:
    """Share of ``items`` found in ``text`` (items must not be empty)."""
    m = ItemMatcher(text)
    return sum(m.found(i) for i in items) / len(items)
