"""A cache entry of another shape (damaged, or written by other code: valid JSON, wrong fields) is a miss that
is computed again, never a crash and never a value built from it: the reader's answers, the judge's replies,
figure descriptions and SuperRAG's embeddings (the context cache: tests/unit/test_error_rows.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from htmlrag.readers import ReadRequest
from htmlrag.readers.base import FakeReader

DAMAGED = [5, "text", [1, 2], None, {}, {"text": 5}, {"reply": None}, {"text": "x", "prompt_tokens": "9"},
           {"text": "x", "seconds": "slow"}, {"text": "x", "gpu_seconds": [1]}]


class StubCache:
    """Answers every lookup with one stored value; records what is put."""

    def __init__(self, value: Any) -> None:
        self.value, self.puts = value, []

    def get(self, key: str) -> Any:
        return self.value

    def put(self, key: str, value: Any) -> None:
        self.puts.append(value)


@pytest.mark.parametrize("damaged", DAMAGED, ids=repr)
def test_a_damaged_answer_is_asked_again(damaged: Any) -> None:
    reqs = [ReadRequest("Which marker?", "<p>The marker is Stone4.</p>", "html", False)]
    cache = StubCache(damaged)
    reader = FakeReader(cache=cache)
    (out,) = reader.read(reqs)
    assert not out.cached and reader.calls == 1 and out.text == FakeReader().read(reqs)[0].text
    assert cache.puts and isinstance(cache.puts[0]["text"], str)


@pytest.mark.parametrize("damaged", [*DAMAGED, {"reply": 5}], ids=repr)
def test_a_damaged_judge_reply_is_asked_again(damaged: Any) -> None:
    from htmlrag.docqa.judge import JudgeItem, LLMJudge, ReaderChat

    cache = StubCache(damaged)
    judge = LLMJudge(ReaderChat(FakeReader()), "Q: {{question}} A: {{sys_ans}} Gold: {{ref_ans}} {{ref_text}}",
                     cache=cache)
    (verdict,) = judge.judge([JudgeItem("Which marker?", "Stone4", "Stone4")])
    assert not verdict.cached and isinstance(verdict.raw, str) and cache.puts


@pytest.mark.parametrize("damaged", [5, None, [1], {"a": 1}], ids=repr)
def test_a_damaged_figure_description_is_asked_again(damaged: Any) -> None:
    pytest.importorskip("pymupdf")
    from htmlrag.superrag.build.figdesc import FigureDescriber

    class Reader:
        name = "stub"

        def cache_identity(self) -> str:
            return "stub"

        def _generate(self, batch: list) -> list[tuple[str, int]]:
            return [("a bar chart of revenue", 3) for _ in batch]

    d = FigureDescriber(Reader())
    d.cache = StubCache(damaged)
    assert d._describe(b"\x89PNG...", "Figure 1") == "a bar chart of revenue" and d.requests == 1


@pytest.mark.parametrize("damaged", [5, "not base64 !!", "AAAA", "QUJD", [1], {"v": 1}], ids=repr)
def test_a_damaged_embedding_is_computed_again(tmp_path: Path, damaged: Any) -> None:
    from htmlrag.core.cache import content_key
    from htmlrag.superrag.build.embed import CachedEmbedder, HashingEmbedder

    inner = HashingEmbedder(16)
    emb = CachedEmbedder(inner, tmp_path / "e.sqlite")
    emb._cache.put(content_key("emb", inner.name, "revenue by region"), damaged)
    got = emb.encode(["revenue by region", "net income"])
    assert got.shape == (2, 16) and np.allclose(got, inner.encode(["revenue by region", "net income"]))
    assert np.allclose(CachedEmbedder(inner, tmp_path / "e.sqlite").encode(["revenue by region"]), got[:1])


class _Replies:
    """A chat / reader stub that answers with the replies given, in turn."""

    name = "stub"

    def __init__(self, *replies: str) -> None:
        self.replies, self.calls = list(replies), 0

    def cache_identity(self) -> str:
        return "stub"

    def identity(self) -> str:
        return "stub"

    def settings(self) -> dict:
        return {}

    def chat(self, msgs: list) -> str:
        self.calls += 1
        return self.replies.pop(0)

    def _generate(self, batch: list) -> list[tuple[str, int]]:
        return [(self.chat(m), 3) for m in batch]


@pytest.mark.parametrize("stored", ["", "   ", "\n"], ids=repr)
def test_an_empty_judge_reply_is_never_kept_nor_taken_from_the_cache(tmp_path: Path, stored: str) -> None:
    """An empty reply (an endpoint's glitch) was cached and read back by every later run as an unparsable verdict;
    it is asked again instead, and an empty reply stored by older code is a miss."""
    from htmlrag.core.cache import SqliteCache
    from htmlrag.docqa.judge import JudgeItem, LLMJudge

    cache = SqliteCache(tmp_path / "judge.sqlite", "judge")
    chat = _Replies(stored, "Score: 1")
    judge = LLMJudge(chat, "Q: {{question}} A: {{sys_ans}} Gold: {{ref_ans}} {{ref_text}}", cache=cache)
    item = JudgeItem("Which marker?", "Stone4", "Stone4")
    (first,) = judge.judge([item])
    assert first.status == "unparsable" and not first.cached
    (second,) = judge.judge([item])
    assert chat.calls == 2 and not second.cached and second.score is not None
    (third,) = judge.judge([item])
    assert chat.calls == 2 and third.cached  # a real reply is kept


@pytest.mark.parametrize("stored", ["", "  "], ids=repr)
def test_an_empty_figure_description_is_never_kept_nor_taken_from_the_cache(stored: str) -> None:
    pytest.importorskip("pymupdf")
    from htmlrag.superrag.build.figdesc import FigureDescriber

    d = FigureDescriber(_Replies("", "a bar chart of revenue"))
    d.cache = StubCache(stored)
    assert d._describe(b"\x89PNG...", "Figure 1") == "" and d.requests == 1
    assert d.cache.puts == []  # nothing kept
    assert d._describe(b"\x89PNG...", "Figure 1") == "a bar chart of revenue" and d.requests == 2
    assert d.cache.puts == ["a bar chart of revenue"]
