"""The HtmlRAG paper's baselines as pipeline stages (plain arguments, no configuration framework).

Every refiner has the pipeline interface of :class:`htmlrag.pruning.pipeline.HtmlRagPipeline`:
``run(question, pages) -> PipelineResult`` with the context cut to ``budget`` tokens of the given token
counter, and a ``fmt`` attribute naming the context format (``html``, ``text`` or ``markdown``):

- :class:`~htmlrag.baselines.chunk_rerank.ChunkRerankRefiner`: LangChain ``HTMLSectionSplitter`` chunks
  (h1-h4), reranked by any ranker (BM25, BGE, E5-Mistral), filled to the budget, plain text.
- :class:`~htmlrag.baselines.page_formats.FormatRefiner`: vanilla HTML, plain text (BeautifulSoup
  ``get_text``) or Markdown (markdownify) of whole pages, cut to the budget.
- :class:`~htmlrag.baselines.longllmlingua.LongLLMLinguaRefiner`: LongLLMLingua (``llmlingua``), configured
  as in the HtmlRAG authors' code.
- :class:`~htmlrag.baselines.reader_lm.ReaderLMRefiner`: JinaAI Reader-LM (HTML -> Markdown by an LM).
- :class:`~htmlrag.baselines.costed.CostedPipeline`: HtmlRAG's own two-step pruning with per-example model
  cost counters (Table 4) and the DOM-tree ablation (one block per element, Table 3).

Refiners that hold a large model also have ``release()``, which frees it (and the CUDA cache) so that a
reader can load afterwards.

Cost counters (Table 4): refiners add ``cost:<role>.<counter>`` entries to ``PipelineResult.stage_tokens``,
one role per model they run (``rank``, ``compress``, ``convert``, ``step1``, ``step2``) and counters
``input_tokens`` (tokens the model reads, in its own tokenizer), ``output_tokens`` (tokens it generates or
is fed as answer paths), ``params``, ``storage_bytes`` and, for the generative pruner, ``nodes_total``,
``nodes_skipped``, ``forward_calls``. They are per-example counts, not context sizes; the harness averages
them like stage sizes.
"""

from __future__ import annotations

from htmlrag.baselines.base import COST_PREFIX, fit_to_budget, release_model

__all__ = ["COST_PREFIX", "fit_to_budget", "release_model"]
