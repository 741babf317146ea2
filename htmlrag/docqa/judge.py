"""An LLM judge as in DOCBENCH: a strong model reads the question, the system's answer, the gold answer and
the gold evidence text, and answers 1 (correct) or 0 (wrong).

The prompt is a template with DOCBENCH's placeholders ``{{question}}``, ``{{sys_ans}}``, ``{{ref_ans}}``
and ``{{ref_text}}`` (the harness keeps it in ``conf/judge/*.yaml``). The model is any reader of
:mod:`htmlrag.readers` (an OpenAI-compatible endpoint, or a local Hugging Face model), called with the
judge's own messages; base URL and key come from the environment only, as for readers.

**Verdict parsing** (:func:`parse_verdict`, strict): markdown emphasis and a leading label
(``Correctness:``, ``Score:``, ``Verdict:``, ``- ``) are removed; the verdict is the standalone token ``0`` or
``1`` (not part of a longer number such as ``10``, ``1.5``, ``1/2``) when exactly one of the two occurs in the
reply's first line, or the one the reply starts with when the other does not occur there. Anything else
(no token, both tokens: "0 or 1") is **unparsable**. (DOCBENCH's notebook counts a reply as correct when ``"1"`` occurs among its first 20
characters, which silently scores "10/10" or "0 (1 point deducted)" as correct; we report such replies.)

A judged answer has a ``status``: ``ok`` (a verdict), ``unparsable`` (the reply has none) or ``failed``
(the request failed after the reader's retries). Scores: ``judge`` = the verdict, and 0 when there is none;
``judge_invalid`` = 1 when there is none. Nothing is dropped or averaged as NaN: the share of invalid
verdicts is a metric of its own, and the counts per status are reported.

Replies are cached (SQLite) by model, endpoint identity, messages and generation settings; failed requests
are not cached, sampled judges (temperature > 0) are never cached, and the repeated draws of
:meth:`LLMJudge.judge_draws` (``judge.draws`` > 1, the judge's self-agreement: :mod:`htmlrag.docqa.agreement`)
never read or write the cache, so no draw is a copy of another's cached reply. Error texts and log lines go through
:mod:`htmlrag.core.redact` (no key in ``judgments.jsonl`` or the log); a :class:`~htmlrag.core.errors.ServiceError`
(endpoint down, key refused) is not recorded per answer: it stops the judging at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from htmlrag.core import redact
from htmlrag.core.cache import SqliteCache, content_key
from htmlrag.core.errors import ServiceError

log = logging.getLogger(__name__)

DOCBENCH_SYSTEM = "You are a helpful evaluator."
_LABEL = re.compile(r"^\s*(?:[-*#>]\s*)*(?:(?:correctness|score|verdict|label|answer|rating)\s*[:=]\s*)?", re.I)
_TOKEN = re.compile(r"(?<![\w.,/])([01])(?![\w.,/%])")


def parse_verdict(reply: str) -> int | None:
    """1, 0, or None when the reply holds no unambiguous verdict (see the module docstring)."""
    if not isinstance(reply, str):
        return None
    text = reply.replace("**", "").replace("__", "").replace("`", "").strip()
    if not text:
        return None
    head = _LABEL.sub("", text, count=1).lstrip()
    first_line = head.splitlines()[0] if head else ""
    found = set(_TOKEN.findall(first_line))
    m = re.match(r"([01])(?![\w.,/%])", head)
    if m and found <= {m.group(1)}:
        return int(m.group(1))
    if not m and len(found) == 1:
        return int(found.pop())
    return None


@dataclass(frozen=True)
class JudgeItem:
    """What the judge sees for one answer."""

    question: str
    answer: str
    gold: str
    reference: str = ""


@dataclass
class Verdict:
    """One judgement: ``score`` 1/0 (None without a verdict), ``status`` ok/unparsable/failed, the raw reply
    (or the error message), and whether it came from the cache."""

    score: int | None
    status: str
    raw: str
    cached: bool = False

    @property
    def judge(self) -> float:
        return float(self.score or 0)

    @property
    def invalid(self) -> float:
        return float(self.score is None)


class ChatModel(Protocol):
    """Chat messages in, reply text out (one reply per message list; a failure raises)."""

    name: str

    def identity(self) -> str: ...

    def settings(self) -> dict[str, Any]: ...

    def chat(self, messages: list[dict[str, str]]) -> str: ...


class ReaderChat:
    """A :mod:`htmlrag.readers` reader used as a chat model (its prompts and context cutting are bypassed:
    the judge's messages are sent as they are, with the reader's generation settings and retries)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.name = reader.name

    def identity(self) -> str:
        return str(self.reader.cache_identity())

    def settings(self) -> dict[str, Any]:
        return asdict(self.reader.generation)

    @property
    def sampled(self) -> bool:
        return bool(self.reader.generation.sampled)

    def chat(self, messages: list[dict[str, str]]) -> str:
        # _generate is the readers' single "messages -> text" primitive (HF, vLLM and OpenAI readers all have it)
        ((text, _),) = self.reader._generate([messages])
        return text


def render(template: str, item: JudgeItem) -> str:
    """The prompt for ``item``: DOCBENCH's ``{{...}}`` placeholders replaced."""
    return (template.replace("{{question}}", item.question).replace("{{sys_ans}}", item.answer)
            .replace("{{ref_ans}}", item.gold).replace("{{ref_text}}", item.reference))


class LLMJudge:
    """Judge answers against gold answers with a chat model.

    Args:
        chat: the model (e.g. ``ReaderChat(OpenAIReader("gpt-4o"))``).
        prompt: the template (see :func:`render`).
        system: system message (DOCBENCH: "You are a helpful evaluator."; None for none).
        cache: reply cache (None: no caching).
        concurrency: parallel requests.
        max_reference_chars: the evidence text is cut to this many characters.
    """

    def __init__(self, chat: ChatModel, prompt: str, *, system: str | None = DOCBENCH_SYSTEM,
                 cache: SqliteCache | None = None, concurrency: int = 4, max_reference_chars: int = 4000) -> None:
        self.chat, self.prompt, self.system, self.cache = chat, prompt, system, cache
        self.concurrency, self.max_reference_chars = concurrency, max_reference_chars
        redact.install()

    def messages(self, item: JudgeItem) -> list[dict[str, str]]:
        item = JudgeItem(item.question, item.answer, item.gold, item.reference[: self.max_reference_chars])
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return [*msgs, {"role": "user", "content": render(self.prompt, item)}]

    def _key(self, msgs: list[dict[str, str]]) -> str:
        return content_key("judge", self.chat.name, self.chat.identity(), msgs, self.chat.settings())

    def _one(self, item: JudgeItem, cache: bool = True) -> Verdict:
        msgs = self.messages(item)
        use_cache = cache and self.cache is not None and not getattr(self.chat, "sampled", False)
        key = self._key(msgs) if use_cache else ""
        hit = self.cache.get(key) if use_cache else None  # type: ignore[union-attr]
        if isinstance(hit, dict) and isinstance(hit.get("reply"), str) and hit["reply"].strip():
            # (a damaged entry, or an empty reply stored by older code, is a miss: asked again)
            raw, cached = hit["reply"], True
        else:
            try:
                raw, cached = redact.redact(self.chat.chat(msgs), shapes=False), False
            except ServiceError:
                raise  # the judge's endpoint is down or refuses the key: stop, do not record N failures
            except Exception as exc:  # the reader already retried; record the failure, never drop the answer
                log.warning("judge %s: request failed: %s", self.chat.name, redact.error_text(exc))
                return Verdict(None, "failed", redact.error_text(exc))
            if use_cache and raw.strip():  # an empty reply is asked again next time, never kept
                self.cache.put(key, {"reply": raw})  # type: ignore[union-attr]
        score = parse_verdict(raw)
        return Verdict(score, "ok" if score is not None else "unparsable", raw, cached)

    def judge(self, items: Sequence[JudgeItem]) -> list[Verdict]:
        """One verdict per item, in order."""
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            out = list(pool.map(self._one, items))
        bad = sum(v.status != "ok" for v in out)
        if bad:
            log.warning("judge %s: %d of %d answers without a valid verdict (%d unparsable, %d failed)",
                        self.chat.name, bad, len(out), sum(v.status == "unparsable" for v in out),
                        sum(v.status == "failed" for v in out))
        return out


    def judge_draws(self, items: Sequence[JudgeItem], draws: int) -> list[list[Verdict]]:
        """``draws`` verdicts per item (``result[item][draw]``). With one draw this is :meth:`judge` (cached);
        with more, every draw is a fresh request: the cache is neither read nor written."""
        if draws < 1:
            raise ValueError(f"draws must be >= 1, got {draws}")
        if draws == 1:
            return [[v] for v in self.judge(items)]
        if not items:
            return []
        jobs = [(i, d) for i in range(len(items)) for d in range(draws)]
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            got = list(pool.map(lambda job: self._one(items[job[0]], cache=False), jobs))
        out: list[list[Verdict]] = [[] for _ in items]
        for (i, _), v in zip(jobs, got, strict=True):
            out[i].append(v)
        return out


def summarize_verdicts(verdicts: Sequence[Verdict]) -> dict[str, float | int]:
    """Counts per status, accuracy over all answers (invalid = 0), accuracy over valid verdicts, invalid rate."""
    n = len(verdicts)
    ok = [v for v in verdicts if v.score is not None]
    return {
        "n": n,
        "ok": len(ok),
        "unparsable": sum(v.status == "unparsable" for v in verdicts),
        "failed": sum(v.status == "failed" for v in verdicts),
        "cached": sum(v.cached for v in verdicts),
        "accuracy": sum(v.judge for v in verdicts) / n if n else 0.0,
        "accuracy_valid_only": sum(v.judge for v in ok) / len(ok) if ok else 0.0,
        "invalid_rate": (n - len(ok)) / n if n else 0.0,
    }


def judgment_record(rid: str, system: str, draws: Sequence[Verdict], second: Sequence[Verdict] | None) -> dict[str, Any]:
    """One line of a run's ``judgments.jsonl``: the first draw's verdict, every draw (when there are several)
    and the second judge model's draws."""
    rec: dict[str, Any] = {"id": rid, "system": system, "status": draws[0].status, "score": draws[0].score,
                           "reply": draws[0].raw, "cached": draws[0].cached}
    if len(draws) > 1:
        rec["draws"] = [{"score": v.score, "status": v.status, "reply": v.raw, "cached": v.cached} for v in draws]
    if second is not None:
        rec["second"] = [{"score": v.score, "status": v.status, "reply": v.raw, "cached": v.cached} for v in second]
    return rec


def _verdicts(rec: Mapping[str, Any], key: str) -> list[Verdict]:
    """The verdicts of one ``judgments.jsonl`` line: its ``draws`` (or ``second``), else its one verdict.
    Lines written before draws recorded ``cached`` count a draw after the first as not cached."""
    items = rec.get(key)
    if key == "draws" and not items:
        return [Verdict(rec.get("score"), str(rec.get("status")), str(rec.get("reply", "")), bool(rec.get("cached")))]
    out = []
    for i, d in enumerate(items or []):
        cached = d.get("cached", bool(rec.get("cached")) if i == 0 and key == "draws" else False)
        out.append(Verdict(d.get("score"), str(d.get("status")), str(d.get("reply", "")), bool(cached)))
    return out


def judge_report(records: Sequence[Mapping[str, Any]], *, judge: str, model: str, draws: int,
                 second_model: str | None = None) -> dict[str, Any]:
    """``judge.json`` from the lines of ``judgments.jsonl`` (:func:`judgment_record`): counts per status (all
    verdicts and per system), the agreement of the draws (and, with a second model, of the two models' draws
    together) and the flagged answers. The harness writes it, and ``htmlrag-paper verify`` recomputes it."""
    from htmlrag.docqa.agreement import agreement, disagreements

    first = [_verdicts(r, "draws") for r in records]
    per_system: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        per_system.setdefault(str(r["system"]), []).append(i)
    matrix = [[v.score for v in vs] for vs in first]
    report: dict[str, Any] = {
        "judge": judge, "model": model, "draws": int(draws),
        "overall": summarize_verdicts([v for vs in first for v in vs]),
        "systems": {s: summarize_verdicts([v for i in idx for v in first[i]]) for s, idx in per_system.items()},
        "agreement": {"draws": {"all": agreement(matrix),
                                **{s: agreement([matrix[i] for i in idx]) for s, idx in per_system.items()}}},
        "flagged": [{"id": records[i]["id"], "system": records[i]["system"], "verdicts": matrix[i]}
                    for i in disagreements(matrix)],
    }
    if second_model is not None:
        both = [m + [v.score for v in _verdicts(r, "second")] for m, r in zip(matrix, records, strict=True)]
        report["agreement"]["models"] = {"all": agreement(both),
                                         **{s: agreement([both[i] for i in idx]) for s, idx in per_system.items()}}
        report["second_model"] = second_model
    return report


def judgments_record(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``judge.json["judgments"]``: the number of ``judgments.jsonl`` lines and the SHA-256 over their canonical
    JSON, in order (``htmlrag-paper verify`` tells an edited verdict by it)."""
    import hashlib
    import json

    h = hashlib.sha256()
    for rec in records:
        h.update(json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
    return {"n": len(records), "sha256": h.hexdigest()}
