"""No reader keeps an empty or failed answer in its response cache (the rule was the OpenAI reader's alone): the
transformers reader (a tiny random model whose next tokens are scripted), the vLLM reader (its engine stubbed:
vLLM is not installed here) and the fake reader all go through :meth:`BaseReader.read`, which stores only
non-empty answers and takes only non-empty ones from the cache, so a resumed or repeated run asks again. An
empty answer cut at ``max_new_tokens`` is an error (as with OpenAI's ``finish_reason`` ``length``), and so is a
vLLM request that did not finish; the call's good answers are stored first.

The helpers here (:func:`scripted_hf`, :func:`stub_vllm`) serve ``test_reader_rows_truncated.py`` as well."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.readers import FakeReader, GenerationConfig, ReadRequest, ResponseCache
from htmlrag.readers.vllm import VLLMReader

CONTEXT = "<p>The lighthouse was designed by Margaret Ellis in 1871.</p>"


def req(marker: str, context: str = CONTEXT) -> ReadRequest:
    """A request whose question carries ``marker`` (the scripted engines answer by it)."""
    return ReadRequest(f"Who designed the lighthouse {marker}?", context, "html", True)


# --------------------------------------------------------------------------- a transformers model, scripted
#: marker -> what the scripted model generates: text (then EOS), or ("tokens", ids) for special tokens only.
HF_SCRIPTS = {
    "ZQEMPTY": "",                                  # EOS at once: an empty answer that ended by itself
    "ZQSPECIAL": ("special", 40),                   # only special tokens to the limit: empty and cut
    "ZQANSWER": " Paris",                           # 5 tokens + EOS, within 8
    "ZQLONG": " Paris Paris Paris Paris",           # more than 8 tokens: cut
    "ZQEXACT": ("exact", 7),                        # 7 tokens of " Paris Paris" then EOS as the 8th: not cut
    "ZQLINE": " Paris\nQuestion: more",             # completion: the answer line ends before the limit
    "ZQNOLINE": " Paris Paris Paris Paris",         # completion: no end of line within the limit: cut
}


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    from tests.helpers.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("m"), "llama", max_position_embeddings=512)


def _script_ids(tok: Any, marker: str) -> list[int]:
    what = HF_SCRIPTS[marker]
    if what == ("special", 40):
        return [tok.convert_tokens_to_ids("<|end|>")] * 40
    if what == ("exact", 7):
        return [*tok.encode(" Paris Paris", add_special_tokens=False)[:7], tok.eos_token_id]
    return [*tok.encode(what, add_special_tokens=False), tok.eos_token_id]


def scripted_hf(path: Path, *, max_new_tokens: int = 8, prompt: str = "chat", cache: Any = None) -> Any:
    """An :class:`HFReader` on the tiny model whose ``generate`` is the real one with a logits processor that
    forces each row's tokens (chosen by the marker in its prompt); ``reader.generated`` counts prompts."""
    import torch
    from transformers import LogitsProcessorList

    from htmlrag.readers.hf import HFReader

    reader = HFReader(str(path), window=512, prompt=prompt, cache=cache,
                      generation=GenerationConfig(max_new_tokens=max_new_tokens))
    reader._load()
    model, tok = reader._model, reader._tok
    real = type(model).generate
    reader.generated = 0

    def generate(**kw: Any) -> Any:
        ids = kw["input_ids"]
        width = ids.shape[1]
        texts = [tok.decode(row) for row in ids]
        scripts = [_script_ids(tok, next(m for m in HF_SCRIPTS if m in t)) for t in texts]
        reader.generated += len(scripts)

        def force(input_ids: Any, scores: Any) -> Any:
            step = input_ids.shape[1] - width
            out = torch.full_like(scores, -1e9)
            for i, script in enumerate(scripts):
                out[i, script[step] if step < len(script) else tok.eos_token_id] = 0.0
            return out

        return real(model, **kw, logits_processor=LogitsProcessorList([force]))

    model.generate = generate
    return reader


# ------------------------------------------------------------------------------------ a vLLM engine, stubbed
class StubLLM:
    """``vllm.LLM.chat`` answering by the marker in each prompt: ``{marker: (text, finish_reason)}``."""

    def __init__(self, answers: dict[str, tuple[str, str | None]]) -> None:
        self.answers, self.prompts = answers, 0

    def chat(self, batch: list, params: Any, use_tqdm: bool = False) -> list:
        out = []
        for msgs in batch:
            self.prompts += 1
            text, finish = next(v for m, v in self.answers.items() if m in msgs[-1]["content"])
            out.append(SimpleNamespace(outputs=[SimpleNamespace(text=text, finish_reason=finish)],
                                       prompt_token_ids=[1] * 7))
        return out


def stub_vllm(monkeypatch: pytest.MonkeyPatch, answers: dict[str, tuple[str, str | None]],
              cache: Any = None) -> VLLMReader:
    """A :class:`VLLMReader` whose engine is :class:`StubLLM` (``vllm`` itself replaced by a stub module)."""
    mod = types.ModuleType("vllm")
    mod.SamplingParams = lambda **kw: kw  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    reader = VLLMReader("stub-model", window=4096, generation=GenerationConfig(max_new_tokens=8), cache=cache)
    reader._llm = StubLLM(answers)
    reader._tokenizer = load_tokenizer(None)
    return reader


VLLM_ANSWERS = {"ZQEMPTY": ("", "stop"), "ZQSPECIAL": ("  ", "length"), "ZQANSWER": (" Paris ", "stop"),
                "ZQLONG": (" Paris Paris", "length"), "ZQABORT": ("Par", "abort"), "ZQNONE": ("Par", None)}


def _calls(reader: Any) -> int:
    """How many prompts the reader's engine answered so far."""
    if isinstance(reader, VLLMReader):
        return reader._llm.prompts
    return reader.generated if hasattr(reader, "generated") else reader.calls


def _reader(kind: str, cache: ResponseCache, tiny_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    if kind == "hf":
        return scripted_hf(tiny_path, cache=cache)
    if kind == "vllm":
        return stub_vllm(monkeypatch, VLLM_ANSWERS, cache)
    return FakeReader(cache=cache)


def _tiny(kind: str, request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("tiny_path") if kind == "hf" else None


# ----------------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kind", ["hf", "vllm", "fake"])
def test_no_reader_caches_an_empty_answer_and_a_rerun_asks_again(kind: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                request: pytest.FixtureRequest) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    tiny = _tiny(kind, request)
    empty = req("ZQEMPTY", context="" if kind == "fake" else CONTEXT)  # the fake reader answers "" without text
    reader = _reader(kind, cache, tiny, monkeypatch)
    (out,) = reader.read([empty])
    assert out.text == "" and not out.cached and reader.empty == 1 and not out.truncated
    assert len(cache) == 0                                   # never stored
    again = _reader(kind, cache, tiny, monkeypatch)          # a resumed or repeated run
    (out2,) = again.read([empty])
    assert not out2.cached and _calls(again) == 1            # asked again, not "" from the cache
    good = req("ZQANSWER")                                   # a normal answer is cached as before
    first = again.read([good])[0]
    (hit,) = _reader(kind, cache, tiny, monkeypatch).read([good])
    assert first.text and hit.cached and hit.text == first.text and len(cache) == 1


@pytest.mark.parametrize("kind", ["hf", "vllm"])
def test_an_empty_answer_cut_at_the_limit_is_an_error_and_the_calls_good_answers_are_kept(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    tiny = _tiny(kind, request)
    reader = _reader(kind, cache, tiny, monkeypatch)
    with pytest.raises(HtmlRagError, match=r"empty answer cut at max_new_tokens=8 \(.*\): no answer to score"):
        reader.read([req("ZQANSWER"), req("ZQSPECIAL")])
    assert len(cache) == 1 and reader.truncated == 0 and reader.empty == 0   # only the good answer, stored first
    again = _reader(kind, cache, tiny, monkeypatch)
    (hit,) = again.read([req("ZQANSWER")])
    assert hit.cached and hit.text == "Paris" and _calls(again) == 0
    with pytest.raises(HtmlRagError, match="empty answer cut"):              # not from the cache either
        again.read([req("ZQSPECIAL")])
    assert _calls(again) == 1 and len(cache) == 1


def test_the_plain_generate_primitive_refuses_an_empty_cut_answer_too(tiny_path: Path) -> None:
    """The judge and the figure describer call ``_generate`` and cache its text themselves: an empty cut answer
    must fail there as well, not come back as ""."""
    reader = scripted_hf(tiny_path)
    msgs = reader.messages(reader.fit(req("ZQSPECIAL")))
    with pytest.raises(HtmlRagError, match="empty answer cut at max_new_tokens=8"):
        reader._generate([msgs])
    ((text, ptoks),) = reader._generate([reader.messages(reader.fit(req("ZQANSWER")))])
    assert text == "Paris" and ptoks > 0


@pytest.mark.parametrize(("marker", "finish"), [("ZQABORT", "'abort'"), ("ZQNONE", "None")])
def test_an_unfinished_vllm_request_is_an_error_never_cached(marker: str, finish: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = stub_vllm(monkeypatch, VLLM_ANSWERS, cache)
    with pytest.raises(HtmlRagError, match=rf"vLLM did not finish prompt 2 of 2 \(finish_reason {finish}\)"):
        reader.read([req("ZQANSWER"), req(marker)])
    assert len(cache) == 0  # the engine's call failed as a whole: nothing of it is stored


@pytest.mark.parametrize("entry", [{"text": ""}, {"text": "  \n"}, {"text": "Paris", "error": "boom"},
                                   {"text": "Paris", "truncated": "yes"}, {"text": "Paris", "truncated": 1}],
                         ids=["empty", "blank", "an error", "truncated a string", "truncated a number"])
def test_an_empty_or_failed_answer_cached_by_older_code_is_a_miss_for_every_reader(entry: dict,
                                                                                   tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = FakeReader(cache=cache)
    r = req("ZQANSWER")
    cache.put(reader.cache_key(reader.messages(reader.fit(r))),
              {"prompt_tokens": 3, "seconds": 0.1, "gpu_seconds": None, **entry})
    (out,) = reader.read([r])
    assert not out.cached and reader.calls == 1 and "Margaret Ellis" in out.text
    (hit,) = FakeReader(cache=cache).read([r])              # replaced by the real answer
    assert hit.cached and hit.text == out.text
