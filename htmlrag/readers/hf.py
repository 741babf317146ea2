"""A transformers reader: chat template (or a few-shot completion prompt for base models), greedy decoding by
default, the context cut with the model's own tokenizer so that prompt + answer fit the window.

Prompt styles (``prompt``):

- ``chat``: the user turn of :func:`htmlrag.readers.prompts.chat_messages` through the tokenizer's chat
  template (a plain rendering ending in ``"Answer:"`` when the tokenizer has none);
- ``completion``: :func:`htmlrag.readers.prompts.completion_prompt` (an instruction, two worked examples,
  then ``Context/Question/Answer:``) after the tokenizer's BOS token, for base models; generation stops at
  the end of the answer line and the answer is that line;
- ``auto`` (default): ``completion`` for a registered base-model alias (``gemma3-270m``), else ``chat``.

Model names may be aliases of :mod:`htmlrag.core.models.aliases` (``gemma3-270m``), converted once to a cached
folder on first load.

An answer is *cut* (:attr:`htmlrag.readers.base.Completion.truncated`) when ``generate`` ran the full
``max_new_tokens`` steps and the row neither produced an end-of-sequence token nor (``completion``) ended its
answer line; it is marked ``truncated`` in its row (:mod:`htmlrag.readers.base` for what is cached).
"""

from __future__ import annotations

import logging
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.models.aliases import is_base_model, resolve_model
from htmlrag.pruning.tokens import HFCounter
from htmlrag.readers.base import BaseReader, Completion, GenerationConfig, ResponseCache
from htmlrag.readers.prompts import SYSTEM, completion_prompt, render_plain

log = logging.getLogger(__name__)

PROMPT_STYLES = ("auto", "chat", "completion")


def ends_line(text: str) -> bool:
    """Whether a completion's generated text holds the end of its answer line (what :class:`StopAtNewline`
    stops at: a newline after the first non-newline character)."""
    return "\n" in text.lstrip("\n")


class StopAtNewline:
    """A ``transformers`` stopping criterion: a row is done once its generated text holds a newline.

    Generated text is decoded per row from ``prompt_width`` on (rows are left-padded to the same width), so
    a newline inside a multi-character token counts too. Returns one flag per row (transformers >= 4.39).
    """

    def __init__(self, tokenizer: Any, prompt_width: int) -> None:
        self.tokenizer, self.prompt_width = tokenizer, prompt_width

    def __call__(self, input_ids: Any, scores: Any, **_: Any) -> Any:
        import torch

        done = [ends_line(self.tokenizer.decode(row[self.prompt_width:], skip_special_tokens=True))
                for row in input_ids]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def first_line(text: str) -> str:
    """The answer of a completion: the first non-empty line, stripped (``""`` when there is none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


class HFReader(BaseReader):
    """Generate with ``transformers.AutoModelForCausalLM``; an answer that used all ``max_new_tokens`` without an
    end-of-sequence token (or, ``completion``, the end of its line) is cut (see the module docstring).

    Args:
        model: hub name or local folder.
        revision: hub revision (part of the cache key).
        window: context window in tokens (``None``: the model config's ``max_position_embeddings``, read when
            the window is first asked for: constructing the reader loads nothing).
        generation: decoding settings (greedy by default).
        device: ``cpu``, ``cuda``, ``cuda:1``, or ``auto`` (``device_map="auto"``).
        dtype: ``auto``, ``float32``, ``bfloat16``, ``float16``.
        batch_size: prompts per ``generate`` call (left padding).
        trust_remote_code: off unless a config asks for it.
        cache: response cache.
        system: system message (``None`` for models whose template rejects system turns; unused by
            ``completion``).
        prompt: ``auto``, ``chat`` or ``completion`` (see the module docstring).
    """

    def __init__(self, model: str, revision: str | None = None, window: int | None = None,
                 generation: GenerationConfig | None = None, device: str = "cpu", dtype: str = "auto",
                 batch_size: int = 4, trust_remote_code: bool = False, cache: ResponseCache | None = None,
                 system: str | None = SYSTEM, prompt: str = "auto") -> None:
        if prompt not in PROMPT_STYLES:
            raise InputError(f"hf reader: prompt must be one of {PROMPT_STYLES}, got {prompt!r}")
        self.prompt_style = ("completion" if is_base_model(model) else "chat") if prompt == "auto" else prompt
        self.model_name, self.revision, self.device, self.dtype = model, revision, device, dtype
        self.batch_size, self.trust_remote_code = batch_size, trust_remote_code
        self.store_every = max(1, int(batch_size))  # generation is sequential by batch: store each
        self._model: Any = None
        self._tok: Any = None
        name = model if revision is None else f"{model}@{revision}"
        super().__init__(name, window or 0, generation, None, cache, system)

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover
            raise HtmlRagError("the hf reader needs torch and transformers (pip install 'htmlrag-bench[gen]')") from exc

        path = resolve_model(self.model_name)  # an alias -> its converted folder
        try:
            tok = AutoTokenizer.from_pretrained(path, revision=self.revision,
                                                trust_remote_code=self.trust_remote_code)
            dtype = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
            kwargs: dict[str, Any] = {"revision": self.revision, "trust_remote_code": self.trust_remote_code,
                                      "dtype": dtype}
            if self.device == "auto":
                kwargs["device_map"] = "auto"
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        except Exception as exc:
            raise HtmlRagError(f"hf reader: model {self.model_name!r} could not be loaded: {exc}") from exc
        if self.device != "auto":
            model.to(self.device)
        model.eval()
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"
        self._model, self._tok = model, tok
        if not self.window:
            self.window = int(getattr(model.config, "max_position_embeddings", 4096))

        self._tokenizer = HFCounter(tok, self.model_name)

    cut_reason = "no end-of-sequence token within the limit"

    def cache_identity(self) -> str:
        return f"hf|dtype={self.dtype}" + ("|completion" if self.prompt_style == "completion" else "")

    def messages(self, req: Any) -> list[dict[str, str]]:
        """Chat messages (``chat``), or one user message holding the whole few-shot prompt (``completion``)."""
        if self.prompt_style == "completion":
            return [{"role": "user", "content": completion_prompt(req.question, req.context, req.fmt)}]
        return super().messages(req)

    @property
    def tokenizer(self) -> Any:
        self._load()
        return self._tokenizer

    @property
    def window(self) -> int:
        """The window in tokens; unset, the model's own (loading the model)."""
        if not self._window and getattr(self, "_model", None) is None and hasattr(self, "_tok"):
            self._load()
        return self._window

    @window.setter
    def window(self, value: int) -> None:
        self._window = int(value or 0)

    def set_window(self, window: int) -> None:
        self._load()  # the derived window is the model's own (max_position_embeddings)

    def context_budget(self, req: Any) -> int:
        self._load()
        return super().context_budget(req)

    def render(self, messages: list[dict[str, str]]) -> str:
        """The prompt string: ``completion``: BOS + the prompt; ``chat``: the tokenizer's chat template when it
        has one, else a plain rendering."""
        self._load()
        if self.prompt_style == "completion":
            return (self._tok.bos_token or "") + messages[-1]["content"]
        if getattr(self._tok, "chat_template", None):
            try:
                return self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            except Exception:  # templates that reject a system turn
                user = [m for m in messages if m["role"] != "system"]
                return self._tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
        return render_plain(messages)

    def _eos_ids(self) -> set[int]:
        """Token ids that end a generation: the model's generation config's ``eos_token_id`` (an id or a list)
        and the tokenizer's."""
        ids: set[int] = set()
        for src in (getattr(getattr(self._model, "generation_config", None), "eos_token_id", None),
                    getattr(self._model.config, "eos_token_id", None), self._tok.eos_token_id):
            if isinstance(src, int):
                ids.add(src)
            elif isinstance(src, (list, tuple)):
                ids.update(int(x) for x in src if isinstance(x, int))
        return ids

    def _complete(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        import torch

        self._load()
        g = self.generation
        eos = self._eos_ids()
        out: list[Completion] = []
        for start in range(0, len(batch), self.batch_size):
            prompts = [self.render(m) for m in batch[start : start + self.batch_size]]
            enc = self._tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            enc = {k: v.to(self._model.device) for k, v in enc.items()}
            kwargs: dict[str, Any] = {"max_new_tokens": g.max_new_tokens, "pad_token_id": self._tok.pad_token_id}
            completion = self.prompt_style == "completion"
            if completion:
                from transformers import StoppingCriteriaList

                kwargs["stopping_criteria"] = StoppingCriteriaList([StopAtNewline(self._tok, enc["input_ids"].shape[1])])
            if g.sampled:
                torch.manual_seed(g.seed)
                kwargs.update(do_sample=True, temperature=g.temperature, top_p=g.top_p)
            else:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with torch.no_grad():
                gen = self._model.generate(**enc, **kwargs)
            width = enc["input_ids"].shape[1]
            lengths = enc["attention_mask"].sum(dim=1).tolist()
            ran_out = gen.shape[1] - width >= g.max_new_tokens  # else every row ended before the limit
            for row, n in zip(gen, lengths, strict=True):
                text = self._tok.decode(row[width:], skip_special_tokens=True)
                # finished rows are padded after their end (EOS, or the newline of a completion): a row is cut
                # when the limit was reached and it has neither
                cut = ran_out and not eos.intersection(row[width:].tolist()) and not (completion and ends_line(text))
                out.append(Completion(first_line(text) if completion else text.strip(), int(n), cut))
        return out
