"""The reader protocol, the shared behaviour of readers (cut the context to the window, cache responses),
and the two readers that need no model: ``none`` (evaluate the context only) and ``fake`` (deterministic).

**What is cached, for every reader.** Readers produce :class:`Completion` objects (text, prompt tokens, and whether
generation was cut at ``max_new_tokens``); :meth:`BaseReader.read` is the one place that caches them, and it never
stores an empty answer or an answer of a failed generation, and never takes one from the cache
(:func:`_usable_answer`): an empty completion may be a glitch of the endpoint or the engine, and a cached one
would be scored as "" by every later run instead of being asked again. An empty answer cut at ``max_new_tokens``
is no answer at all: it fails (an error row, retried by a resumed run). A non-empty cut answer is kept, counted
(:attr:`BaseReader.truncated`), logged, cached with its mark, and marked ``truncated`` in its row.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, runtime_checkable

from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.clock import Clock
from htmlrag.core.errors import BudgetError, HtmlRagError
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.readers.prompts import SYSTEM, chat_messages

log = logging.getLogger(__name__)
#: Guards the readers' :attr:`BaseReader.truncated` / :attr:`BaseReader.empty` counts (the judge calls a reader
#: from several threads); module-level so that a reader holds no lock of its own.
_COUNTS = threading.Lock()


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


@dataclass(frozen=True)
class Completion:
    """One answer as a reader's engine produced it.

    Attributes:
        text: the answer (stripped).
        prompt_tokens: the prompt's length in the reader's tokens.
        truncated: ``True`` when generation stopped at ``max_new_tokens`` rather than ending by itself (HF: the
            answer reached ``max_new_tokens`` tokens without an end-of-sequence token (or, for completion
            prompts, the end of its line); vLLM and OpenAI: ``finish_reason`` ``length``); ``False`` when it
            ended by itself; ``None`` when the reader cannot tell (the fake reader, answers cached by older code).
    """

    text: str
    prompt_tokens: int = 0
    truncated: bool | None = None


@dataclass
class ReaderOutput:
    """A reader's answer. ``context`` is the context actually shown (after cutting), ``context_tokens`` its
    length and ``prompt_tokens`` the prompt's length in the reader's tokens, ``cached`` whether the answer
    came from the response cache. ``seconds`` / ``gpu_seconds``: the generation's wall and GPU time (a call's
    time shared evenly among its prompts; ``gpu_seconds`` ``None`` without CUDA), as measured when the answer
    was generated (kept in the response cache with it). ``truncated``: the answer was cut at ``max_new_tokens``
    (:attr:`Completion.truncated`; kept in the response cache with it)."""

    text: str
    context: str
    prompt_tokens: int = 0
    cached: bool = False
    context_tokens: int = 0
    seconds: float = 0.0
    gpu_seconds: float | None = None
    truncated: bool | None = None


@runtime_checkable
class Reader(Protocol):
    """Answers questions from contexts. ``name`` identifies the model (it keys the response cache)."""

    name: str

    def read(self, requests: Sequence[ReadRequest]) -> list[ReaderOutput]:
        """Answer every request, in order; contexts are cut to the reader's window first."""
        ...


class ResponseCache(SqliteCache):
    """Reader responses keyed by model + prompt hash + generation parameters: ``{"text", "prompt_tokens",
    "seconds", "gpu_seconds", "truncated"}``. Only :meth:`BaseReader.read` writes it, and never an empty answer
    or a failed one (see the module docstring)."""

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

    Attributes:
        truncated: answers cut at ``max_new_tokens`` that were kept (non-empty), generated by this reader.
        empty: empty answers generated (scored as given, never cached).

    Subclasses implement :meth:`_complete` (answers with their cut mark) or, if they cannot tell a cut answer,
    :meth:`_generate` (``(text, prompt_tokens)`` pairs).
    """

    #: How the reader's engine names its answer-length limit and a cut (for messages).
    limit_name = "max_new_tokens"
    cut_reason = "generation stopped at the limit"
    truncated: int = 0  # (class defaults too, for subclasses that set up without BaseReader.__init__)
    empty: int = 0

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
        self.truncated = 0
        self.empty = 0

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
        """Fit, look up the cache (greedy only), generate what is missing (``store_every`` at a time), store it.

        Only non-empty answers are stored or taken from the cache (see the module docstring).

        Raises:
            HtmlRagError: an answer of the call is empty and was cut at ``max_new_tokens`` (the call's other
                answers are stored first, so a retry of the requests one by one finds them).
        """
        fitted = [self.fit(r) for r in requests]
        msgs = [self.messages(r) for r in fitted]
        outs: list[ReaderOutput | None] = [None] * len(fitted)
        use_cache = self.cache is not None and not self.generation.sampled
        todo = []
        for i, m in enumerate(msgs):
            hit = self.cache.get(self.cache_key(m)) if use_cache else None  # type: ignore[union-attr]
            if _usable_answer(hit):
                outs[i] = ReaderOutput(hit["text"], fitted[i].context, hit.get("prompt_tokens", 0), cached=True,
                                       seconds=float(hit.get("seconds", 0.0)), gpu_seconds=hit.get("gpu_seconds"),
                                       truncated=hit.get("truncated"))
            else:
                todo.append(i)
        step = self.store_every or len(todo) or 1
        for start in range(0, len(todo), step):  # stored as they come: a killed run keeps what was answered
            part = todo[start : start + step]
            with Clock() as clock:
                results = self._answers([msgs[i] for i in part])
            secs = clock.seconds / len(part)
            gpu = None if clock.gpu_seconds is None else clock.gpu_seconds / len(part)
            for i, c in zip(part, results, strict=True):
                outs[i] = ReaderOutput(c.text, fitted[i].context, c.prompt_tokens, seconds=secs, gpu_seconds=gpu,
                                       truncated=c.truncated)
                if use_cache and _cacheable(c):
                    self.cache.put(self.cache_key(msgs[i]), {  # type: ignore[union-attr]
                        "text": c.text, "prompt_tokens": c.prompt_tokens, "seconds": secs, "gpu_seconds": gpu,
                        "truncated": c.truncated})
            self._refuse(results)
        done = [o for o in outs if o is not None]
        for o in done:
            o.context_tokens = self.tokenizer.count(o.context)
        return done

    def _generate(self, batch: list[list[dict[str, str]]]) -> list[tuple[str, int]]:
        """Generate answers for chat-message lists: ``(text, prompt_tokens)`` each -- the readers' plain
        "messages -> text" primitive (the LLM judge and the figure describer call it).

        Readers that implement :meth:`_complete` get this from it, with the rules of :meth:`read`: an empty answer
        cut at ``max_new_tokens`` raises, cut and empty answers are counted and logged.

        Raises:
            HtmlRagError: an answer is empty and was cut at ``max_new_tokens``.
        """
        if type(self)._complete is BaseReader._complete:  # neither is implemented: no recursion
            raise NotImplementedError(f"reader {self.name}: implement _complete or _generate")
        results = self._answers(batch)
        self._refuse(results)
        return [(c.text, c.prompt_tokens) for c in results]

    def _complete(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        """Generate answers for chat-message lists, one :class:`Completion` each, in order (readers that can tell
        a cut answer override this; the default wraps :meth:`_generate`, cut unknown)."""
        return [Completion(text, ptoks) for text, ptoks in self._generate(batch)]

    def _answers(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        """:meth:`_complete`, checked (one answer per prompt) and noted: cut and empty answers are counted in
        :attr:`truncated` / :attr:`empty` and logged (an empty cut answer is not: :meth:`_refuse` fails it)."""
        results = list(self._complete(batch))
        if len(results) != len(batch):
            raise HtmlRagError(f"reader {self.name}: {len(results)} answers for {len(batch)} prompts")
        for c in results:
            if c.truncated and not c.text.strip():
                continue
            if c.truncated or not c.text.strip():
                with _COUNTS:
                    if c.truncated:
                        self.truncated += 1
                    else:
                        self.empty += 1
                    n = self.truncated if c.truncated else self.empty
                if c.truncated:
                    log.warning("reader %s: an answer was cut at %s=%d (%s; %d so far); it is scored as it is and "
                                "marked truncated in its row", self.name, self.limit_name,
                                self.generation.max_new_tokens, self.cut_reason, n)
                else:
                    log.warning("reader %s: an empty answer (%d so far); it is scored as it is and not cached",
                                self.name, n)
        return results

    def _refuse(self, results: Sequence[Completion]) -> None:
        """Raise for the first answer that is empty and was cut at ``max_new_tokens``: there is no answer to
        score (as with an answer withheld by a content filter), and the same prompt would be cut the same way."""
        for c in results:
            if c.truncated and not c.text.strip():
                raise HtmlRagError(
                    f"reader {self.name}: an empty answer cut at {self.limit_name}="
                    f"{self.generation.max_new_tokens} ({self.cut_reason}): no answer to score; raise "
                    "reader.generation.max_new_tokens")


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


def _cacheable(c: Completion) -> bool:
    """Whether :meth:`BaseReader.read` may store ``c``: a non-empty answer (an empty one is asked again by the
    next run; an empty cut one is an error)."""
    return isinstance(c.text, str) and bool(c.text.strip())


def _usable_answer(hit: Any) -> bool:
    """A cached answer of the shape :meth:`Reader.read` stores: a non-empty answer, no error (an empty answer or
    an error stored by older code, and a damaged or foreign entry, are a miss: the prompt is asked again)."""
    if not isinstance(hit, dict) or not isinstance(hit.get("text"), str) or not hit["text"].strip():
        return False
    if hit.get("error") or not (hit.get("truncated") is None or isinstance(hit.get("truncated"), bool)):
        return False
    num = (int, float)
    return ((hit.get("prompt_tokens") is None or type(hit.get("prompt_tokens")) is int) and isinstance(hit.get("seconds", 0.0), num)
            and not isinstance(hit.get("seconds", 0.0), bool)
            and (hit.get("gpu_seconds") is None or isinstance(hit.get("gpu_seconds"), num)))
