"""The few-shot completion prompt for base models and the reader's stop at the end of the answer line."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.readers.prompts import COMPLETION_INSTRUCTION, FEW_SHOT, completion_prompt


def test_completion_prompt_layout() -> None:
    text = completion_prompt("  Who won in 2001? ", "<table><tr><td>2001</td><td>Kim</td></tr></table>", "html")
    blocks = text.split("\n\n")
    assert blocks[0] == COMPLETION_INSTRUCTION
    assert len(blocks) == 2 + len(FEW_SHOT["html"])
    for block, (ctx, q, a) in zip(blocks[1:-1], FEW_SHOT["html"], strict=True):
        assert block == f"Context: ```{ctx}```\nQuestion: {q}\nAnswer: {a}"  # worked examples, answered
    assert blocks[-1] == ("Context: ```<table><tr><td>2001</td><td>Kim</td></tr></table>```\n"
                          "Question: Who won in 2001?\nAnswer:")  # the model continues after "Answer:"


def test_examples_follow_the_context_format() -> None:
    assert "<table>" in completion_prompt("q", "c", "html")
    assert "| Year | Winner |" in completion_prompt("q", "c", "markdown")
    text = completion_prompt("q", "c", "text")
    assert "<" not in text and "|" not in text
    with pytest.raises(InputError, match="pdf"):
        completion_prompt("q", "c", "pdf")


def test_first_line_is_the_answer() -> None:
    from htmlrag.readers.hf import first_line

    assert first_line(" Tom Reyes\n\nContext: ```more```") == "Tom Reyes"
    assert first_line("\n\n  1998  \nQuestion:") == "1998"
    assert first_line("\n \n") == ""


torch = pytest.importorskip("torch")


def test_stop_at_newline_flags_each_row() -> None:
    from htmlrag.readers.hf import StopAtNewline
    from tests.helpers.tiny import tiny_tokenizer

    tok = tiny_tokenizer()
    prompt = tok.encode("Answer:", add_special_tokens=False)
    gens = [tok.encode(" Paris\nQuestion", add_special_tokens=False),
            tok.encode(" Paris is", add_special_tokens=False),
            tok.encode("\n Paris", add_special_tokens=False)]  # a leading newline is not the end of the answer
    width = max(len(g) for g in gens)
    # as generate() holds them: the same prompt width, then the generated tokens (finished rows padded)
    batch = torch.tensor([prompt + g + [tok.pad_token_id] * (width - len(g)) for g in gens])
    done = StopAtNewline(tok, len(prompt))(batch, None)
    assert done.tolist() == [True, False, False]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("m"), "llama", max_position_embeddings=1024)


def test_completion_reader_prompt_window_and_cache_key(tiny: Path) -> None:
    from htmlrag.readers import GenerationConfig, ReadRequest
    from htmlrag.readers.hf import HFReader

    long = "<p>" + " ".join(f"Fact {i} about the mill." for i in range(500)) + "</p>"
    comp = HFReader(str(tiny), window=None, prompt="completion", generation=GenerationConfig(max_new_tokens=6))
    chat = HFReader(str(tiny), window=None, prompt="chat", generation=GenerationConfig(max_new_tokens=6))
    assert HFReader(str(tiny), window=512).prompt_style == "chat"  # auto: not a base-model alias
    req = ReadRequest("Who built the mill?", long, "html", True)
    fitted = comp.fit(req)
    text = comp.render(comp.messages(fitted))
    assert text.startswith("<s>" + COMPLETION_INSTRUCTION) and text.endswith("Question: Who built the mill?\nAnswer:")
    assert comp.cache_key(comp.messages(fitted)) != chat.cache_key(chat.messages(fitted))
    (out,) = comp.read([req])
    assert "\n" not in out.text
    assert out.prompt_tokens + 6 <= comp.window  # the few-shot overhead is counted against the window
    with pytest.raises(InputError, match="prompt"):
        HFReader(str(tiny), window=512, prompt="few-shot")
