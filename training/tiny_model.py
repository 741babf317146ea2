"""Tiny randomly initialised causal LMs and an offline BPE tokenizer, for ``train=tiny``, tests and CPU benchmarks.

    htmlrag-train-tiny-model --out results/train/tiny-model           # writes the folder, prints the next command
    htmlrag-train train=tiny train.model=results/train/tiny-model data.paths=[results/train/data/demo]

Nothing here touches a model hub. The tokenizer is a byte-level BPE trained in a few milliseconds on a small
corpus of English and HTML tag strings (``<html><body><div0><p>``), so block paths split into several tokens
and token trees have realistic depth. ``tiny_causal_lm`` builds float32 Llama, Phi-3 or Qwen2 models with
hidden size 64 and 2 layers from their transformers configs; ``save_tiny`` writes a folder that
``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` load.

Reused by the training tests (the pruner's prompt format needs a chat template, hence the Phi-3-style one);
``tests/helpers/tiny.py`` re-exports this module.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlrag.core.options import integer, run_writing

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

#: Architectures :func:`tiny_causal_lm` can build. ``gemma3`` (Gemma 3 text) alternates a sliding-window layer
#: (window :data:`TINY_SLIDING_WINDOW` tokens, shorter than test prompts) with a full-attention layer.
ARCHS = ("llama", "phi3", "qwen2", "gemma3")
TINY_SLIDING_WINDOW = 8

#: A Phi-3-style chat template: ``<s><|user|>\n{content}<|end|>\n<|assistant|>\n``.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]

_TAGS = ["html", "head", "title", "body", "div", "p", "span", "table", "tbody", "tr", "td", "th", "ul", "ol",
         "li", "a", "h1", "h2", "h3", "section", "article", "header", "footer", "nav", "main", "b", "i", "img"]

_TEXT = """The Bellagio is a luxury hotel and casino on the Las Vegas Strip. It was built in 1998.
Question answering over web pages keeps the structure of HTML: headings, tables and lists carry meaning.
Your task is to identify the most relevant text piece to the given question in the HTML document.
The population of the city was 12,345 in the census of 2010, and the mayor is elected every four years."""


def _corpus() -> list[str]:
    lines = _TEXT.splitlines()
    for i, tag in enumerate(_TAGS):
        lines.append(f"<{tag}>" + " ".join(lines[i % 4].split()[:6]) + f"</{tag}>")
        for k in range(0, 12, 3):
            lines.append(f"<html><body><{tag}{k}><p>")
    lines.append("<html><body><div0><p> <html1><body><div2><table><tbody><tr3><td> <html><title>")
    return lines


@functools.lru_cache(maxsize=4)
def _tokenizer_json(vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus() * 3, trainer=trainer)
    return tok.to_str()


def tiny_tokenizer(*, chat_template: bool = True, vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained offline (any text encodes; tags split into a few tokens).

    Args:
        chat_template: give it :data:`CHAT_TEMPLATE` (False: a tokenizer without one, to test fallbacks).
        vocab_size: BPE vocabulary size including the special tokens.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_tokenizer_json(vocab_size)),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>", "<|end|>"],
    )
    if chat_template:
        tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_config(arch: str, tokenizer: Any, *, max_position_embeddings: int = 4096, **overrides: Any) -> Any:
    """The transformers config of a tiny ``arch`` model (hidden 64, 2 layers, 4 heads, 2 KV heads).

    ``initializer_range`` is 0.2 (not the usual 0.02) so that random logits differ by whole nats and score
    comparisons in tests are not trivially satisfied by near-uniform distributions.
    """
    from transformers import Gemma3TextConfig, LlamaConfig, Phi3Config, Qwen2Config

    common: dict[str, Any] = dict(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
        initializer_range=0.2,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    common.update(overrides)
    if arch == "llama":
        return LlamaConfig(**common)
    if arch == "phi3":
        return Phi3Config(**common)
    if arch == "qwen2":
        return Qwen2Config(use_sliding_window=False, **common)
    if arch == "gemma3":
        common.setdefault("sliding_window", TINY_SLIDING_WINDOW)
        common.setdefault("layer_types", ["sliding_attention", "full_attention"][: common["num_hidden_layers"]])
        return Gemma3TextConfig(head_dim=16, query_pre_attn_scalar=16, **common)
    raise ValueError(f"unknown tiny architecture {arch!r}; expected one of {ARCHS}")


def tiny_causal_lm(arch: str, tokenizer: Any, *, seed: int = 0, **config_overrides: Any) -> PreTrainedModel:
    """A randomly initialised float32 causal LM of architecture ``arch`` (one of :data:`ARCHS`), in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    config = tiny_config(arch, tokenizer, **config_overrides)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def save_tiny(
    tmp_path: Path | str, arch: str = "llama", *, chat_template: bool = True, seed: int = 0, **config_overrides: Any
) -> Path:
    """Write a tiny model and its tokenizer to ``tmp_path/tiny-<arch>`` and return that folder."""
    out = Path(tmp_path) / f"tiny-{arch}"
    tok = tiny_tokenizer(chat_template=chat_template)
    model = tiny_causal_lm(arch, tok, seed=seed, **config_overrides)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Console entry point: :func:`_main`, an output that cannot be written reported in one line
    (:func:`htmlrag.core.options.run_writing`)."""
    return run_writing("htmlrag-train-tiny-model", lambda: _main(argv))


def _main(argv: list[str] | None = None) -> int:
    """``htmlrag-train-tiny-model``: write the tiny offline model for ``train=tiny`` and print how to train it."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="htmlrag-train-tiny-model", description=_main.__doc__)
    p.add_argument("--out", type=Path, default=Path("results/train/tiny-model"),
                   help="output folder (default results/train/tiny-model)")
    p.add_argument("--arch", choices=ARCHS, default="llama", help="architecture (default llama)")
    p.add_argument("--seed", type=integer(0, 2**32 - 1), default=0)
    p.add_argument("--max-position-embeddings", type=integer(1, 1_048_576), default=8192,
                   help="the model's window in tokens (default 8192, train=tiny's max_length)")
    args = p.parse_args(argv)
    tok = tiny_tokenizer()
    model = tiny_causal_lm(args.arch, tok, seed=args.seed, max_position_embeddings=args.max_position_embeddings)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    logging.getLogger("htmlrag-train-tiny-model").info(
        "tiny %s model (%d parameters, random weights) -> %s\nnext: htmlrag-train train=tiny train.model=%s "
        "data.paths=[<folder from htmlrag-train-data>]", args.arch, sum(x.numel() for x in model.parameters()),
        args.out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
