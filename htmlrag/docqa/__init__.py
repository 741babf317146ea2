"""Document question answering (SuperRAG's DOCBENCH/SPIQA setting): gold key items, deterministic metrics and
an LLM judge.

Nothing heavy is imported here; :mod:`htmlrag.docqa.metrics` registers its metrics on import.
"""

from __future__ import annotations
