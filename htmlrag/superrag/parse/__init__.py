"""The PDF layout parser: pages, lines, headings, furniture, reading order, tables, figures, the ToC.

:func:`parse_pdf` (and :class:`ParseOptions`) live in :mod:`htmlrag.superrag.parse.document`; they are
importable from here too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ParseOptions", "parse_pdf"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from htmlrag.superrag.parse import document

        return getattr(document, name)
    raise AttributeError(name)
