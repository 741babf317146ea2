"""Token counting for budgets: any Hugging Face tokenizer, with an offline default that needs no hub.

The default (``None`` or ``"mistral-7b-v0.1"``) is Mistral-7B v0.1's real SentencePiece model, shipped inside
the PyPI package ``mistral-common`` as ``mistral_common/data/tokenizer.model.v1`` and run with the
``sentencepiece`` library (the same model ``transformers``' LlamaTokenizer loads). Any other string is
a Hugging Face tokenizer name or local path, loaded with ``AutoTokenizer`` (lazily imported).

Token counts never include special tokens (BOS/EOS): they measure the context text alone.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from htmlrag.core.errors import HtmlRagError
from htmlrag.core.models import MISTRAL_TOKENIZER, mistral_tokenizer_path
from htmlrag.core.models.aliases import resolve_model


@runtime_checkable
class TokenCounter(Protocol):
    """What the pruner needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (no special tokens)."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count` for many texts at once (batched where the backend can)."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` (on token boundaries) with at most ``max_tokens`` tokens."""
        ...


#: Segments of ASCII text that no token of a whitespace-, script- and digit-splitting tokenizer spans: a run
#: of letters, a run of punctuation, one digit. Spaces and control characters separate segments.
_SEGMENT = re.compile(rb"[A-Za-z]+|[0-9]|[!-/:-@\[-`{-~]+")


def segment_count(text: str) -> int:
    """Segments of ``text`` (see :data:`_SEGMENT`) after dropping every non-ASCII character (those may join
    anything, so dropping them only lowers the count).

    For a SentencePiece model trained with ``split_by_whitespace``, ``split_by_unicode_script`` and
    ``split_digits`` (Llama, Mistral), no vocabulary piece holds parts of two segments (a letter next to a
    punctuation mark, a digit next to anything, characters on both sides of a space). Each token then meets
    at most one segment and each segment at least one token, so this is a lower bound on the number of
    tokens (86% of the true count on cleaned Wikipedia HTML, where counting words gives ~20%).
    :class:`SentencePieceCounter` checks every piece of its vocabulary for this at load time
    (:func:`pieces_respect_segments`); a tokenizer that fails the check gets no such bound.
    """
    return len(_SEGMENT.findall(text.encode("ascii", "ignore")))


def pieces_respect_segments(pieces: Sequence[str]) -> bool:
    """True when no piece (``\u2581`` read as a space) spans two segments: :func:`segment_count` then
    bounds the token count of any text from below."""
    return all(segment_count(p.replace("\u2581", " ")) <= 1 for p in pieces)


class _RecentCounts:
    """The token counts of the last few long texts (a context is counted by the walk that verifies it, then by
    the reader that fits it to its window and by the stage counts: one tokenization instead of three)."""

    MIN_CHARS = 2048
    KEEP = 32

    def _recent(self) -> tuple[OrderedDict[str, int], threading.Lock]:
        memo = self.__dict__.get("_memo")
        if memo is None:
            memo = self.__dict__["_memo"] = (OrderedDict(), threading.Lock())
        return memo

    def __getstate__(self) -> dict[str, Any]:  # the lock does not pickle; a copy starts with an empty memo
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def _remembered(self, text: str) -> int | None:
        if len(text) < self.MIN_CHARS:
            return None
        table, lock = self._recent()
        with lock:
            n = table.get(text)
            if n is not None:
                table.move_to_end(text)
            return n

    def _remember(self, text: str, n: int) -> int:
        if len(text) >= self.MIN_CHARS:
            table, lock = self._recent()
            with lock:
                table[text] = n
                while len(table) > self.KEEP:
                    table.popitem(last=False)
        return n


@dataclass
class SentencePieceCounter(_RecentCounts):
    """A SentencePiece model file (the offline default)."""

    path: str
    name: str = MISTRAL_TOKENIZER
    #: Every whitespace-separated word is at least one token (SentencePiece splits on whitespace first).
    words_lower_bound: bool = True
    #: :meth:`lower_bound` counts segments (see :func:`segment_count`); checked on the vocabulary.
    segments_lower_bound: bool = False

    def __post_init__(self) -> None:
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(model_file=self.path)
        # A model trained without whitespace splitting can merge across spaces: no word bound then.
        self.words_lower_bound = len(self._sp.encode("a a a a a a a a")) >= 8
        sp = self._sp
        self.segments_lower_bound = pieces_respect_segments(
            [sp.id_to_piece(i) for i in range(sp.get_piece_size())
             if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i))])

    def lower_bound(self, text: str) -> int:
        """A lower bound on :meth:`count` that needs no tokenizing (0 when the model allows none)."""
        return segment_count(text) if self.segments_lower_bound else 0

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._remembered(text)
        return n if n is not None else self._remember(text, len(self._sp.EncodeAsIds(text)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # One text at a time, on this thread: SentencePiece's batch call spreads a list over a pool of every
        # core (unfair in single-core benchmarks), and with one thread it is slower than this loop.
        enc = self._sp.EncodeAsIds
        return [len(enc(t)) if t else 0 for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        known = self._remembered(text)
        if known is not None and known <= max_tokens:
            return text
        ids = self._sp.encode(text)
        if len(ids) <= max_tokens:
            return text
        out = self._sp.decode(ids[:max_tokens])
        while out and self.count(out) > max_tokens:  # decode/encode is not always a round trip
            out = out[:-1]
        return out


@dataclass
class HFCounter(_RecentCounts):
    """A Hugging Face tokenizer (``AutoTokenizer``)."""

    tokenizer: Any
    name: str
    #: Every whitespace-separated word is at least one token: true where the fast tokenizer has a
    #: pre-tokenizer (byte-level BPE, Metaspace, Whitespace all split on whitespace first).
    words_lower_bound: bool = False

    def __post_init__(self) -> None:
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        pre = getattr(backend, "pre_tokenizer", None) if backend is not None else None
        self.words_lower_bound = pre is not None and len(self.tokenizer.encode("a a a a a a a a",
                                                                               add_special_tokens=False)) >= 8

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._remembered(text)
        return n if n is not None else self._remember(text, len(self.tokenizer.encode(text, add_special_tokens=False)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in enc]

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        known = self._remembered(text)
        if known is not None and known <= max_tokens:
            return text
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) <= max_tokens:
            return text
        out = self.tokenizer.decode(ids[:max_tokens], skip_special_tokens=True)
        while out and self.count(out) > max_tokens:
            out = out[:-1]
        return out


@functools.lru_cache(maxsize=8)
def load_tokenizer(name_or_path: str | None = None, *, trust_remote_code: bool = False) -> TokenCounter:
    """Load a token counter (cached per name).

    Args:
        name_or_path: ``None``/``"mistral-7b-v0.1"`` for the offline default, a path to a ``.model``
            SentencePiece file, any Hugging Face tokenizer name or folder, or a model alias of
            :mod:`htmlrag.core.models.aliases` (``gemma3-270m``: that model's tokenizer).
        trust_remote_code: passed to ``AutoTokenizer`` (off unless a config asks for it).

    Raises:
        HtmlRagError: the tokenizer cannot be found or loaded (the message names it).
    """
    if name_or_path in (None, "", MISTRAL_TOKENIZER, "default"):
        return SentencePieceCounter(str(mistral_tokenizer_path()))
    if name_or_path.endswith(".model") or ".model." in name_or_path.rsplit("/", 1)[-1]:
        return SentencePieceCounter(name_or_path, name=name_or_path)

    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(resolve_model(name_or_path), trust_remote_code=trust_remote_code)
    except Exception as exc:  # hub unreachable, missing folder, bad files
        raise HtmlRagError(f"tokenizer {name_or_path!r} could not be loaded: {exc}") from exc
    return HFCounter(tok, name_or_path)
