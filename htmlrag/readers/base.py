"""The reader protocol, the shared behaviour of readers (cut the context to the window, cache responses),
and the two readers that need no model: ``none`` (evaluate the context only) and ``fake`` (deterministic).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, runtime_checkable

from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.clock import Clock
from htmlrag.core.errors import BudgetError
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.readers.prompts import SYSTEM, chat_messages

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerationConfig:
    """Decoding settings. ``temperature == 0`` is greedy decoding (the default); anything else samples,
    and sampled generations are never cached.

    Attributes:
        max_new_tokens: answer length limit in tokens (also reserved out of the window).
        temperature: 0 for greedy.
        top_p: nucleus sampling mass (sampling only).
        seed: sampling seed (sampling only).
    """

    max_new_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    @property
    def sampled(self) -> bool:
        """True when decoding samples (temperature > 0)."""
        return self.temperature > 0


@dataclass(frozen=True)
class ReadRequest:
    """One question for a reader.

    Attributes:
        question: the question.
        context: the context from the pipeline (in ``fmt``); cut to fit by :meth:`BaseReader.fit`.
        fmt: ``html``, ``text`` or ``markdown`` (selects the prompt).
        short_answer: append the short-answer instruction (short-answer datasets).
    """

    question: str
    context: str
    fmt: str = "html"
    short_answer: bool = True


@dataclass
class ReaderOutput:
    """A reader's answer. ``context`` is the context actually shown (after cutting), ``context_tokens`` its
    length and ``prompt_tokens`` the prompt's length in the reader's tokens, ``cached`` whether the answer
    came from the response cache. ``seconds`` / ``gpu_seconds``: the generation's wall and GPU time (a call's
    time shared evenly among its prompts; ``gpu_seconds`` ``None`` without CUDA), as measured when the answer
    was generated (kept in the response cache with it)."""

    text: str
    context: str
    prompt_tokens: int = 0
    cached: bool = False
    context_tokens: int = 0
    seconds: float = 0.0
    gpu_seconds: float | None = None


@runtime_checkable
class Reader(Protocol):
    """Answers questions from contexts. ``name`` identifies the model (it keys the response cache)."""

    name: str

    def read(self, requests: Sequence[ReadRequest]) -> list[ReaderOutput]:
        """Answer every request, in order; contexts are cut to the reader's window first."""
        ...


class ResponseCache(SqliteCache):
    """Reader responses keyed by model + prompt hash + generation parameters."""

    def __init__(self, path: str, table: str = "responses") -> None:
        super().__init__(path, table)


class BaseReader:
    """Shared reader behaviour: prompts, cutting the context to the window, the response cache.

    Args:
        name: model id (and revision, if pinned) — part of every cache key.
        window: tokens the model accepts, prompt plus answer (4096 for "4K", 131072 for "128K"); ``None``
            or 0: derived by :func:`ensure_window` from the contexts it must show (until then nothing is cut).
        generation: decoding settings.
        tokenizer: a :class:`htmlrag.pruning.tokens.TokenCounter` with the reader's tokenizer.
        cache: response cache (``None``: no caching).
        system: system message (``None``: none).
        prompt_margin: tokens reserved for the chat template's special tokens.
    """

    def __init__(self, name: str, window: int | None, generation: GenerationConfig | None = None,
                 tokenizer: Any = None, cache: ResponseCache | None = None, system: str | None = SYSTEM,
                 prompt_margin: int = 16) -> None:
        self.name = name
        self.window = int(window or 0)
        if isinstance(generation, dict) or (generation is not None and not isinstance(generation, GenerationConfig)):
            generation = GenerationConfig(**dict(generation))
        self.generation = generation or GenerationConfig()
        self._tokenizer = tokenizer
        self.cache = cache
        self.system = system
        self.prompt_margin = prompt_margin

    @property
    def tokenizer(self) -> Any:
        """The token counter (loaded on first use: a name is loaded with :func:`htmlrag.pruning.tokens.load_tokenizer`;
        ``None`` is the offline default)."""
        if self._tokenizer is None or isinstance(self._tokenizer, str):
            self._tokenizer = load_tokenizer(self._tokenizer)
        return self._tokenizer

    def messages(self, req: ReadRequest) -> list[dict[str, str]]:
        """Chat messages for ``req`` (context as given)."""
        return chat_messages(req.question, req.context, req.fmt, req.short_answer, self.system)

    def prompt_overhead(self, req: ReadRequest) -> int:
        """Tokens of ``req``'s prompt without its context, plus the margin for the chat template."""
        empty = self.messages(replace(req, context=""))
        return sum(self.tokenizer.count(m["content"]) for m in empty) + self.prompt_margin

    def required_window(self, budget: int, req: ReadRequest) -> int:
        """The window that shows a context of ``budget`` tokens for ``req`` whole: context + prompt + answer."""
        return budget + self.prompt_overhead(req) + self.generation.max_new_tokens

    def set_window(self, window: int) -> None:
        """Set the derived window (readers whose engine takes it at start override this)."""
        self.window = int(window)

    def context_budget(self, req: ReadRequest) -> int:
        """Tokens left for the context: window - answer tokens - prompt without context - margin
        (unbounded while the window is not set)."""
        if not self.window:
            return 1 << 40
        return self.window - self.generation.max_new_tokens - self.prompt_overhead(req)

    def fit(self, req: ReadRequest) -> ReadRequest:
        """``req`` with its context cut (on token boundaries, keeping the start) to fit the window.

        Raises:
            BudgetError: the window cannot hold even the prompt without context.
        """
        budget = self.context_budget(req)
        if budget <= 0:
            raise BudgetError(f"reader {self.name}: window {self.window} leaves no room for a context "
                              f"(max_new_tokens {self.generation.max_new_tokens}, question {req.question[:60]!r})")
        return replace(req, context=self.tokenizer.truncate(req.context, budget))

    def cache_identity(self) -> str:
        """What identifies the model beyond its name in cache keys (dtype, endpoint, ...); overridden."""
        return ""

    def cache_key(self, messages: list[dict[str, str]]) -> str:
        """Key of a response: model name (+ :meth:`cache_identity`), prompt hash, generation parameters."""
        return content_key("reader", self.name, self.cache_identity(), content_key(messages), asdict(self.generation))

    #: Prompts generated between two stores to the response cache; ``None``: the whole call at once (readers
    #: that run a call's prompts concurrently: vLLM, HTTP endpoints). Sequential readers set a slice, so that
    #: a run killed in the middle of a chunk of slow CPU generations keeps the answers it already has.
    store_every: int | None = None

    def read(self, requests: Sequence[ReadRequest]) -> list[ReaderOutput]:
        """Fit, look up the cache (greedy only), generate what is missing (``store_every`` at a time), store it."""
        fitted = [self.fit(r) for r in requests]
        msgs = [self.messages(r) for r in fitted]
        outs: list[ReaderOutput | None] = [None] * len(fitted)
        use_cache = self.cache is not None and not self.generation.sampled
        todo = []
        for i, m in enumerate(msgs):
            hit = self.cache.get(self.cache_key(m)) if use_cache else None  # type: ignore[union-attr]
            if _usable_answer(hit):
                outs[i] = ReaderOutput(hit["text"], fitted[i].context, hit.get("prompt_tokens", 0), cached=True,
                                       seconds=float(hit.get("seconds", 0.0)), gpu_seconds=hit.get("gpu_seconds"))
            else:
                todo.append(i)
        step = self.store_every or len(todo) or 1
        for start in range(0, len(todo), step):  # stored as they come: a killed run keeps what was answered
            part = todo[start : start + step]
            with Clock() as clock:
                results = self._generate([msgs[i] for i in part])
            secs = clock.seconds / len(part)
            gpu = None if clock.gpu_seconds is None else clock.gpu_seconds / len(part)
            for i, (text, ptoks) in zip(part, results, strict=True):
                outs[i] = ReaderOutput(text, fitted[i].context, ptoks, seconds=secs, gpu_seconds=gpu)
                if use_cache:
                    self.cache.put(self.cache_key(msgs[i]), {"text": text, "prompt_tokens": ptoks,  # type: ignore[union-attr]
                                                             "seconds": secs, "gpu_seconds": gpu})
        done = [o for o in outs if o is not None]
        for o in done:
            o.context_tokens = self.tokenizer.count(o.context)
        return done

    def _generate(self, batch: list[list[dict[str, str]]]) -> list[tuple[str, int]]:
        """Generate answers for chat-message lists: ``(text, prompt_tokens)`` each."""
        raise NotImplementedError


class NoneReader(BaseReader):
    """No model: the response is empty; only context metrics (reference-text EM, tokens) are meaningful.

    The context is cut to ``window`` tokens (no prompt, no answer reserved), so ``window=4096`` evaluates
    the 4K context a reader would get.
    """

    def __init__(self, window: int | None = None, tokenizer: Any = None, **_: Any) -> None:
        super().__init__("none", window, GenerationConfig(max_new_tokens=0), tokenizer, cache=None)

    def required_window(self, budget: int, req: ReadRequest) -> int:
        return budget  # no prompt, no answer: the window is the context

    def context_budget(self, req: ReadRequest) -> int:
        return self.window or 1 << 40

    def read(self, requests: Sequence[ReadRequest]) -> list[ReaderOutput]:
        out = []
        for r in requests:
            ctx = self.fit(r).context
            out.append(ReaderOutput("", ctx, 0, context_tokens=self.tokenizer.count(ctx)))
        return out


_SENT = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_WORD = re.compile(r"\w+", re.UNICODE)


class FakeReader(BaseReader):
    """A deterministic extractive reader for tests: answers with the context sentence that shares the most
    words with the question (ties: the earliest), cut to ``max_words`` words. Tags are stripped first.

    It can also fail on purpose (a question containing ``fail_on`` raises, to test error rows) and be slow
    (``delay`` seconds per answer, to test killing a run).
    """

    def __init__(self, window: int | None = None, tokenizer: Any = None, cache: ResponseCache | None = None,
                 max_words: int = 30, fail_on: str | None = None, delay: float = 0.0, store_every: int | None = None,
                 **_: Any) -> None:
        super().__init__(f"fake-{max_words}w", window, GenerationConfig(max_new_tokens=32), tokenizer, cache)
        self.max_words = max_words
        self.store_every = store_every
        self.fail_on = fail_on
        self.delay = delay
        self.calls = 0

    def _generate(self, batch: list[list[dict[str, str]]]) -> list[tuple[str, int]]:
        out = []
        for msgs in batch:
            self.calls += 1
            if self.delay:
                time.sleep(self.delay)
            user = msgs[-1]["content"]
            context, _, rest = user.partition("``` Please refer")
            context = re.sub(r"<[^>]+>", " ", context.lstrip("`"))
            question = rest.split("and answer the question.", 1)[-1]
            if self.fail_on and self.fail_on in question:
                raise RuntimeError(f"fake reader fails on purpose for {question.strip()[:40]!r}")
            q = {w.lower() for w in _WORD.findall(question)}
            best, best_score = "", -1
            for sent in _SENT.split(context):
                score = len(q & {w.lower() for w in _WORD.findall(sent)})
                if score > best_score:
                    best, best_score = sent, score
            out.append((" ".join(best.split()[: self.max_words]), len(user.split())))
        return out


def ensure_window(reader: BaseReader, needs: Sequence[tuple[str, int, ReadRequest]]) -> int:
    """Make the reader's window show every system's context whole, or refuse.

    Args:
        reader: the run's reader. A window of 0/``None`` is derived: the largest need below (readers whose
            window is the model's own, hf and vllm, know it after loading and are checked like a set one).
        needs: ``(system name, context budget in tokens, a request with the longest question and the
            system's format)`` per system.

    Returns:
        The window in use.

    Raises:
        BudgetError: a set window is smaller than a system needs (naming the system, its budget, what the
            prompt and the answer take, and the two ways out), so no context is ever cut below its budget
            without a word.
    """
    if not needs:
        return reader.window
    rows = [(name, budget, reader.required_window(budget, req)) for name, budget, req in needs]
    name, budget, need = max(rows, key=lambda r: r[2])
    derived = not reader.window
    if derived:
        reader.set_window(need)  # hf and vllm: the model's own window, checked below like a set one
        log.info("reader %s: window %d tokens (system %s needs %d: %s)", reader.name, reader.window, name, need,
                 "its context budget" if need == budget else f"context {budget} + prompt + answer")
    if reader.window < need:
        answer = reader.generation.max_new_tokens
        what = f"the model's window ({reader.window} tokens)" if derived else f"reader.window={reader.window}"
        raise BudgetError(
            f"{what} cannot show the {budget}-token context of system {name!r} whole: it needs {need} tokens "
            f"(context {budget} + prompt {need - budget - answer} + answer {answer}); "
            + ("use a smaller budget or a model with a longer window" if derived else
               f"set reader.window={need} or more, reader.window=null to derive it, or a smaller budget"))
    return reader.window


def _usable_answer(hit: Any) -> bool:
    """A cached answer of the shape :meth:`Reader.read` stores (a damaged or foreign entry is a miss)."""
    if not isinstance(hit, dict) or not isinstance(hit.get("text"), str):
        return False
    num = (int, float)
    return ((hit.get("prompt_tokens") is None or type(hit.get("prompt_tokens")) is int) and isinstance(hit.get("seconds", 0.0), num)
            and not isinstance(hit.get("seconds", 0.0), bool)
            and (hit.get("gpu_seconds") is None or isinstance(hit.get("gpu_seconds"), num)))
