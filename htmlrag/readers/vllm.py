"""A vLLM offline-engine reader (optional: ``pip install 'htmlrag-bench[gpu]'``; imported on first use).

Tensor parallelism is vLLM's own (``tensor_parallel_size``); the context is cut with the model's tokenizer.

Each answer's ``finish_reason`` says how it ended: ``stop`` (by itself), ``length`` (cut at ``max_tokens``: kept
and marked ``truncated`` in its row, or an error when it is empty), anything else (``abort``, none: the request
did not finish) fails the call, so that no answer of an unfinished generation is scored or cached
(:mod:`htmlrag.readers.base` for what is cached).
"""

from __future__ import annotations

from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.pruning.tokens import HFCounter
from htmlrag.readers.base import BaseReader, Completion, GenerationConfig, ResponseCache
from htmlrag.readers.prompts import SYSTEM


class VLLMReader(BaseReader):
    """Generate with ``vllm.LLM.chat``.

    Args:
        model: hub name or local folder; ``revision`` pins it.
        window: ``max_model_len`` (4096 or 131072 in the paper's settings; ``None``: the model's own).
        tensor_parallel_size: GPUs per model.
        gpu_memory_utilization: vLLM's memory fraction.
        dtype: vLLM dtype (``auto``).
        trust_remote_code: off unless configured.
    """

    def __init__(self, model: str, revision: str | None = None, window: int | None = None,
                 generation: GenerationConfig | None = None, tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float = 0.9, dtype: str = "auto", trust_remote_code: bool = False,
                 cache: ResponseCache | None = None, system: str | None = SYSTEM) -> None:
        name = model if revision is None else f"{model}@{revision}"
        super().__init__(name, window, generation, None, cache, system)
        self.model_name, self.revision = model, revision
        self.engine_args = {"tensor_parallel_size": tensor_parallel_size, "max_model_len": window or None,
                            "gpu_memory_utilization": gpu_memory_utilization, "dtype": dtype,
                            "trust_remote_code": trust_remote_code}
        self._llm: Any = None

    def _load(self) -> None:
        if self._llm is not None:
            return
        try:
            from vllm import LLM
        except ImportError as exc:
            raise HtmlRagError("reader=vllm needs vllm (pip install 'htmlrag-bench[gpu]')") from exc
        self._llm = LLM(model=self.model_name, revision=self.revision, **self.engine_args)

        self._tokenizer = HFCounter(self._llm.get_tokenizer(), self.model_name)
        if not self.window:  # the engine's own limit (the model's, unless max_model_len was set)
            self.window = int(self._llm.llm_engine.model_config.max_model_len)

    def set_window(self, window: int) -> None:
        self._load()  # the window is the engine's max_model_len, known once it runs

    cut_reason = "finish_reason length"

    def cache_identity(self) -> str:
        return f"vllm|dtype={self.engine_args['dtype']}"

    @property
    def tokenizer(self) -> Any:
        self._load()
        return self._tokenizer

    def _complete(self, batch: list[list[dict[str, str]]]) -> list[Completion]:
        """One answer per prompt, with its cut mark from ``finish_reason``.

        Raises:
            HtmlRagError: a request did not finish (``finish_reason`` neither ``stop`` nor ``length``, or no output),
                naming the prompt's place in the call and the reason.
        """
        from vllm import SamplingParams

        self._load()
        g = self.generation
        params = SamplingParams(max_tokens=g.max_new_tokens, temperature=g.temperature,
                                top_p=g.top_p if g.sampled else 1.0, seed=g.seed if g.sampled else None)
        outs = self._llm.chat(batch, params, use_tqdm=False)
        answers = []
        for n, o in enumerate(outs, 1):
            first = o.outputs[0] if getattr(o, "outputs", None) else None
            finish = getattr(first, "finish_reason", None)
            if first is None or finish not in ("stop", "length"):
                raise HtmlRagError(f"reader {self.name}: vLLM did not finish prompt {n} of {len(batch)} (finish_reason "
                                   f"{finish!r}{', no output' if first is None else ''}); its answer is not scored "
                                   "or cached")
            answers.append(Completion(first.text.strip(), len(o.prompt_token_ids or []), finish == "length"))
        return answers
