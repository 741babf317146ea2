"""Text helpers shared by cleaning, the block tree and the metrics: whitespace and CJK-aware word counts.

Definition of a *word* (used for ``max_words`` in the block tree): every CJK character (Han, Hiragana,
Katakana, Hangul, CJK punctuation and full-width forms) counts as one word; the remaining text is split on
whitespace and each piece counts as one word. For text without CJK this is ``len(text.split())``.
"""

from __future__ import annotations

import re

#: Unicode ranges of CJK characters (a regex character-class body), each of which is one token.
CJK_RANGES = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0002fa1f"
)
_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
_TOKEN = re.compile(f"[{CJK_RANGES}]|[^\\s{CJK_RANGES}]+")
_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace (including NBSP and other Unicode spaces) to one space and strip."""
    return " ".join(text.split())


def count_words(text: str) -> int:
    """Number of words in ``text`` per the module definition (CJK characters count one each)."""
    if not _CJK_CHAR.search(text):
        return len(text.split())
    return len(_TOKEN.findall(text))


def has_cjk(text: str) -> bool:
    """True if ``text`` contains at least one CJK character."""
    return _CJK_CHAR.search(text) is not None


class WordStats:
    """Word count of a text segment plus whether it starts/ends inside a non-CJK word.

    Adding two stats gives the count of the concatenated texts: a word split across the junction
    ("foo" + "bar" -> "foobar") is counted once. This lets the block tree count words bottom-up in one pass.
    """

    __slots__ = ("empty", "glue_end", "glue_start", "words")

    def __init__(self, words: int = 0, glue_start: bool = False, glue_end: bool = False, empty: bool = True):
        self.words = words
        self.glue_start = glue_start
        self.glue_end = glue_end
        self.empty = empty

    @classmethod
    def of(cls, text: str | None) -> WordStats:
        """Stats of one text segment (``None`` is empty)."""
        if not text:
            return cls()
        first, last = text[0], text[-1]
        return cls(
            count_words(text),
            not first.isspace() and _CJK_CHAR.match(first) is None,
            not last.isspace() and _CJK_CHAR.match(last) is None,
            False,
        )

    def add(self, other: WordStats) -> None:
        """In place: ``self`` becomes the stats of ``self`` text followed by ``other`` text."""
        if other.empty:
            return
        if self.empty:
            self.words, self.glue_start, self.glue_end, self.empty = (
                other.words, other.glue_start, other.glue_end, False)
            return
        self.words += other.words - (1 if self.glue_end and other.glue_start else 0)
        self.glue_end = other.glue_end
