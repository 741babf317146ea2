"""The stage checks of the stage-loss waterfall, made while rows are built (:mod:`htmlrag.evaluation.waterfall`
defines the stages and summarises them): the containment rule, the texts every system of a question shares, and
each stage's check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring.metrics import MetricInput, get_metric
from htmlrag.html.formats import convert
from htmlrag.superrag.to_html import page_source

#: Containment metrics a waterfall can use (0/1, computable on any text).
RULES = ("ref_em", "evidence_hit")
#: Stage order across systems (others follow in order of appearance).
ORDER = ("pdf_text", "pages", "parsed", "raw", "cleaned", "chunks", "retrieved", "reranked", "step1", "step2",
         "context", "answer")


def resolve_rule(setting: str | None, metrics: Sequence[str]) -> str | None:
    """The containment metric of the waterfall: ``auto`` picks the first of :data:`RULES` among the run's
    ``metrics`` (none there: no waterfall); ``none``/``None`` turns it off; a name must be one of :data:`RULES`.

    Raises:
        HtmlRagError: an unknown rule.
    """
    if setting in (None, "none", ""):
        return None
    if setting == "auto":
        return next((m for m in metrics if m in RULES), None)
    if setting not in RULES:
        raise HtmlRagError(f"waterfall rule must be auto, none or one of {', '.join(RULES)}, got {setting!r}")
    return setting


def plain_text(text: str, fmt: str = "html") -> str:
    """``text`` as the containment metrics read a context: HTML converted to plain text, other formats as given."""
    if fmt != "html" or not text.strip():
        return text

    return convert(text, "text")


@dataclass
class StageCheck:
    """The containment rule for one question: :meth:`holds` says whether a stage's text holds its answer."""

    rule: str
    answers: Sequence[str] = ()
    long_answers: Sequence[str] = ()
    answer_groups: Sequence[Sequence[str]] = ()
    _memo: dict[tuple[str, str], bool] = field(default_factory=dict, repr=False)
    _plain: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)

    def plain(self, text: str, fmt: str = "html") -> str:
        """:func:`plain_text`, remembered (the reference-text metrics read the same conversion)."""
        key = (fmt, text)
        hit = self._plain.get(key)
        if hit is None:
            hit = self._plain[key] = plain_text(text, fmt)
        return hit

    def holds(self, text: str, fmt: str = "html") -> bool:
        """1 under the rule on ``text`` read as plain text (remembered per text: the shared stages of a budget
        frontier, and a last step equal to the context, are converted and checked once)."""
        key = (fmt, text)
        hit = self._memo.get(key)
        if hit is not None:
            return hit

        plain = self.plain(text, fmt)
        x = MetricInput(context=plain, context_text=plain, answers=self.answers, long_answers=self.long_answers,
                        answer_groups=self.answer_groups)
        self._memo[key] = out = get_metric(self.rule).fn(x) >= 1.0
        return out

    def identity(self) -> list[Any]:
        """What the checks depend on (part of cache keys)."""
        return [self.rule, list(self.answers), list(self.long_answers), [list(g) for g in self.answer_groups]]


_PDF_TEXT: dict[str, str] = {}
_PDF_TEXT_KEEP = 16


def pdf_text_layer(path: str) -> str:
    """The text layer of a PDF (PyMuPDF, page by page), remembered for the last few files."""
    hit = _PDF_TEXT.get(path)
    if hit is not None:
        return hit
    try:
        import pymupdf
    except ImportError as exc:
        raise HtmlRagError("the pdf_text stage needs PyMuPDF: pip install 'htmlrag-bench[graph]'") from exc
    with pymupdf.open(path) as doc:
        text = "\n".join(page.get_text() for page in doc)
    if len(_PDF_TEXT) >= _PDF_TEXT_KEEP:
        _PDF_TEXT.pop(next(iter(_PDF_TEXT)))
    _PDF_TEXT[path] = text
    return text


def example_stages(pages: Sequence[str]) -> list[tuple[str, str, str]]:
    """The stages every system of one question shares, as ``(stage, text, format)``: ``pages`` (the retrieved
    HTML pages), or for pages converted from PDFs (:func:`htmlrag.superrag.to_html.page_source`) ``pdf_text``
    (the PDFs' text layer) and ``parsed`` (the pages)."""
    joined = "\n".join(pages)

    sources = [page_source(p) for p in pages]
    if not pages or any(s is None for s in sources):
        return [("pages", joined, "html")]
    paths = list(dict.fromkeys(s[1] for s in sources if s and s[1]))
    out = [("pdf_text", "\n".join(pdf_text_layer(p) for p in paths), "text")] if paths else []
    return [*out, ("parsed", joined, "html")]
