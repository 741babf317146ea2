"""Document question answering (SuperRAG's DOCBENCH/SPIQA setting): gold key items, deterministic metrics and
an LLM judge.

Nothing heavy is imported here. :mod:`htmlrag.docqa.metrics` holds the metrics' per-example functions; the
registry that lists them is :data:`htmlrag.evaluation.scoring.metrics.METRICS`.
"""

from __future__ import annotations
