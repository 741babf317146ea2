"""Dataset loaders: every source becomes a list of :class:`Example` (one schema for all datasets).

Loaders take plain arguments (no configuration framework) and return examples in source order.
Sources without pages give question-only examples; a run that needs pages calls :func:`require_pages`.
"""

from __future__ import annotations

from htmlrag.data.crag import load_crag
from htmlrag.data.htmlrag_test import HTMLRAG_DATASETS, load_htmlrag_test
from htmlrag.data.local import load_page_questions, load_wtq_html
from htmlrag.data.schema import Example, Page, fingerprint, require_pages, sample_examples

__all__ = [
    "HTMLRAG_DATASETS",
    "Example",
    "Page",
    "fingerprint",
    "load_crag",
    "load_htmlrag_test",
    "load_page_questions",
    "load_wtq_html",
    "require_pages",
    "sample_examples",
]
