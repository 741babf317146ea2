"""An answer cut at ``max_new_tokens`` is marked in its row (``"truncated": true``) by every reader that can tell
-- transformers (the limit reached without an end-of-sequence token, or for completion prompts without the end
of the answer line), vLLM and OpenAI-compatible endpoints (``finish_reason`` ``length``) --, keeps its mark when
it comes from the response cache, and is counted by the summary (``n_truncated``, the tables' caption). Rows of
answers that were not cut are exactly as before (no new field), so committed runs keep their checksums."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from htmlrag.data.schema import Example
from htmlrag.evaluation.scoring.loop import EvalSettings, System, evaluate
from htmlrag.evaluation.store import RunStore, row_digest
from htmlrag.evaluation.summary import summarize, table_texts, truncated_caption
from htmlrag.factory import make_pipeline
from htmlrag.readers import Completion, FakeReader, GenerationConfig, ResponseCache
from htmlrag.readers.openai import OpenAIReader
from tests.conftest import SAMPLE_PAGES
from tests.unit.test_reader_deadline import Endpoint, serve
from tests.unit.test_reader_rows_cache import VLLM_ANSWERS, req, scripted_hf, stub_vllm


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    from tests.helpers.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("m"), "llama", max_position_embeddings=512)


# ------------------------------------------------------------------------------------------------ the readers
def test_hf_marks_an_answer_that_reached_max_new_tokens_without_eos(tiny_path: Path, tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = scripted_hf(tiny_path, cache=cache)
    reqs = [req("ZQANSWER"), req("ZQLONG"), req("ZQEXACT")]   # one batch: finished rows are padded
    outs = reader.read(reqs)
    assert [o.truncated for o in outs] == [False, True, False]  # EOS as the 8th token is not a cut
    assert all(o.text for o in outs) and reader.truncated == 1
    again = scripted_hf(tiny_path, cache=cache).read(reqs)   # the mark is kept in the cache with the answer
    assert [o.cached for o in again] == [True] * 3 and [o.truncated for o in again] == [False, True, False]


def test_hf_completion_prompt_is_cut_when_its_answer_line_does_not_end(tiny_path: Path) -> None:
    reader = scripted_hf(tiny_path, prompt="completion")
    line, cut = reader.read([req("ZQLINE"), req("ZQNOLINE")])
    assert (line.text, line.truncated) == ("Paris", False)    # stopped at the end of the line, before the limit
    assert cut.truncated is True and cut.text.startswith("Paris")


def test_vllm_marks_finish_reason_length(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = stub_vllm(monkeypatch, VLLM_ANSWERS, cache)
    done, cut = reader.read([req("ZQANSWER"), req("ZQLONG")])
    assert (done.text, done.truncated, cut.text, cut.truncated) == ("Paris", False, "Paris Paris", True)
    assert reader.truncated == 1
    hits = stub_vllm(monkeypatch, VLLM_ANSWERS, cache).read([req("ZQANSWER"), req("ZQLONG")])
    assert [(h.cached, h.truncated) for h in hits] == [(True, False), (True, True)]


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    ep = Endpoint("finish:length:Marg")
    with serve(ep) as url:
        monkeypatch.setenv("ROWS_BASE_URL", url)
        monkeypatch.delenv("ROWS_API_KEY", raising=False)
        yield ep


@pytest.mark.timeout(30)
def test_openai_marks_finish_reason_length(endpoint: Endpoint, tmp_path: Path) -> None:
    def reader() -> OpenAIReader:
        return OpenAIReader("stub-model", base_url_env="ROWS_BASE_URL", api_key_env="ROWS_API_KEY", max_retries=0,
                            timeout=5.0, generation=GenerationConfig(max_new_tokens=16),
                            cache=ResponseCache(str(tmp_path / "r.sqlite")))

    (cut,) = reader().read([req("ZQLONG")])
    assert (cut.text, cut.truncated) == ("Marg", True)
    endpoint.mode = "finish:stop:Margaret Ellis"
    (done,) = reader().read([req("ZQANSWER")])
    assert (done.text, done.truncated) == ("Margaret Ellis", False)
    (hit,) = reader().read([req("ZQLONG")])
    assert hit.cached and hit.truncated is True and endpoint.requests == 2


# ---------------------------------------------------------------------------------------- rows and summary
class CuttingReader(FakeReader):
    """The fake reader, its answers to "How many steps ..." marked cut (``cut=None``: cannot tell, as before)."""

    def __init__(self, cut: bool | None = True, **kw: Any) -> None:
        super().__init__(**kw)
        self.cut = cut

    def _complete(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        texts = self._generate(batch)
        return [Completion(t, p, (self.cut and "How many steps" in m[-1]["content"]) if self.cut is not None else None)
                for (t, p), m in zip(texts, batch, strict=True)]


PAGES = [(SAMPLE_PAGES / n).read_text() for n in ("lighthouse.html", "river-festival.html")]
EXAMPLES = [Example(id="q0", question="Who designed Harrow Point Lighthouse?", answers=["Margaret Ellis"], pages=PAGES),
            Example(id="q1", question="How many steps does the tower have?", answers=["164"], pages=PAGES)]
SYSTEMS = ["ours", "vanilla"]


def _run(root: Path, reader: Any) -> list[dict]:
    systems = [System("ours", make_pipeline("bm25", budget2=256, max_words1=32, clean=False), fingerprint="o"),
               System("vanilla", make_pipeline(None, budget2=256, clean=False), clean=False, fingerprint="v")]
    store = RunStore(root, "e", "r1")
    evaluate(EXAMPLES, systems, reader, store, EvalSettings(metrics=["em"], progress=False))
    return store.all_rows()


def _summary(rows: list[dict]) -> dict:
    return summarize(rows, SYSTEMS, ["em"], ours="ours", experiment="e", run_id="r1", dataset="d")


def test_a_cut_answer_is_marked_in_its_row_and_counted_and_other_rows_are_unchanged(tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    rows = _run(tmp_path / "a", CuttingReader(cache=cache))
    plain = _run(tmp_path / "b", FakeReader())             # a reader that cannot tell: rows as before
    uncut = _run(tmp_path / "c", CuttingReader(cut=False))  # a reader that tells "not cut": rows as before too
    assert [r["systems"][s].get("truncated") for r in rows for s in SYSTEMS] == [None, None, True, True]
    assert [row_digest(r) for r in uncut] == [row_digest(r) for r in plain]
    assert row_digest(rows[0]) == row_digest(plain[0])     # the uncut row of the marked run too
    assert all("truncated" not in rec for r in plain + uncut for rec in r["systems"].values())

    summary = _summary(rows)
    assert [summary["systems"][s]["n_truncated"] for s in SYSTEMS] == [1, 1]
    assert "n_truncated" not in json.dumps(_summary(plain))  # metrics.json of runs without cut answers: unchanged
    assert truncated_caption([summary]) == "Answers cut at max_new_tokens (scored as they are): vanilla 1, ours 1 of 2 examples."
    assert truncated_caption([_summary(plain)]) == ""
    assert "Answers cut at max_new_tokens" in table_texts([summary])["md"]

    resumed = _run(tmp_path / "d", CuttingReader(cache=cache))  # answers from the cache keep their mark
    assert [row_digest(r) for r in resumed] == [row_digest(r) for r in rows]


def test_error_rows_are_not_counted_as_cut() -> None:
    rows = [{"id": "q0", "index": 0, "error": None, "systems": {
        "ours": {"scores": {"em": 1.0}, "tokens": 5, "error": None, "truncated": True},
        "vanilla": {"error": "reader failed", "truncated": True}}}]
    summary = summarize(rows, SYSTEMS, ["em"], ours="ours", experiment="e", run_id="r", dataset="d")
    assert summary["systems"]["ours"]["n_truncated"] == 1 and "n_truncated" not in summary["systems"]["vanilla"]


def test_reader_output_keeps_its_positional_fields() -> None:
    """``ReaderOutput`` gained ``truncated`` at its end: positional construction of the older fields is unchanged."""
    from htmlrag.readers import ReaderOutput

    out = ReaderOutput("a", "ctx", 3, True, 4, 0.5, None)
    assert (out.text, out.prompt_tokens, out.cached, out.context_tokens, out.truncated) == ("a", 3, True, 4, None)
