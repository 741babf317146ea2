"""The stage-loss waterfall: for every question and system, the last stage that still held the gold answer.

**Rule.** A stage *holds* the answer when the run's containment metric scores 1 on that stage's text, read as
plain text (HTML converted as the reader's context is for reference-text EM): ``ref_em`` (a normalised gold
answer is a substring; HTML pages) or ``evidence_hit`` (at least half of the gold key items; document QA). The
same rule is applied to every stage, the reader's answer included, so the context stage equals the run's
``ref_em`` / ``evidence_hit`` score.

**Stages**, in order (a system has the ones on its path):

- HTML path: ``pages`` (the retrieved pages as given) -> ``cleaned`` -> ``step1`` (coarse pruning) -> ``step2``
  (fine pruning) -> ``context`` (what the reader was shown, after its window) -> ``answer``.
- PDF path (SuperRAG, and HtmlRAG on PDFs): ``pdf_text`` (the PDFs' own text layer, PyMuPDF) -> ``parsed`` (the
  layout parse as HTML pages) -> ``chunks`` (every chunk of the question's documents) -> ``retrieved`` (first-stage
  hybrid/ToC search) -> ``reranked`` (after merging, reranking and table/figure expansion: the final evidence)
  -> ``context`` -> ``answer``. The non-layout setting chunks the text layer, so it has no ``parsed`` stage.

A row stores ``"waterfall": [[stage, 0|1], ...]`` per system. *Held through* stage i: every stage up to i holds
the answer; a question is *lost at* the first stage that does not. :func:`waterfall_summary` counts, per
system, the questions held through each stage and lost at each, and names the stage that loses most.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.errors import HtmlRagError

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
    from htmlrag.html.formats import convert

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
        from htmlrag.evaluation.scoring.metrics import MetricInput, get_metric

        plain = self.plain(text, fmt)
        x = MetricInput(context=plain, context_text=plain, answers=self.answers, long_answers=self.long_answers,
                        answer_groups=self.answer_groups)
        self._memo[key] = out = get_metric(self.rule).fn(x) >= 1.0
        return out

    def identity(self) -> list[Any]:
        """What the checks depend on (part of cache keys)."""
        return [self.rule, list(self.answers), list(self.long_answers), [list(g) for g in self.answer_groups]]


def lost_at(stages: Sequence[Sequence[Any]]) -> str | None:
    """The first stage of ``[[stage, hit], ...]`` that does not hold the answer (``None``: every stage does)."""
    return next((str(s) for s, hit in stages if not hit), None)


def _stage_order(names: Sequence[str]) -> list[str]:
    known = [s for s in ORDER if s in names]
    return known + [s for s in names if s not in known]


def waterfall_summary(rows: Sequence[Mapping[str, Any]], systems: Sequence[str]) -> dict[str, Any]:
    """The ``waterfall`` section of ``metrics.json`` (``{}`` when no row has stage checks): per system
    ``n`` (questions with checks), ``stages`` (in order), ``held`` (questions held through each stage),
    ``lost`` (questions lost at each stage), ``worst`` (the stage losing most; ties: the earliest) and
    ``answer_without_context`` (the answer holds the gold although the context did not)."""
    out: dict[str, Any] = {}
    for s in systems:
        recs = [e["waterfall"] for r in rows if not r.get("error")
                for e in [(r.get("systems") or {}).get(s) or {}] if not e.get("error") and e.get("waterfall")]
        if not recs:
            continue
        stages = _stage_order(list(dict.fromkeys(str(name) for rec in recs for name, _ in rec)))
        held = [0] * len(stages)
        lost = dict.fromkeys(stages, 0)
        guessed = 0
        for rec in recs:
            hits = {str(name): bool(h) for name, h in rec}
            first = lost_at([(name, hits[name]) for name in stages if name in hits])
            for i, name in enumerate(stages):
                if name in hits and (first is None or stages.index(first) > i):
                    held[i] += 1
            if first is not None:
                lost[first] += 1
            guessed += bool(hits.get("answer") and not hits.get("context", True))
        worst = max(stages, key=lambda x: (lost[x], -stages.index(x))) if any(lost.values()) else None
        out[s] = {"n": len(recs), "stages": stages, "held": held, "lost": [lost[x] for x in stages],
                  "worst": worst, "answer_without_context": guessed}
    return out


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
    from htmlrag.superrag.to_html import page_source

    sources = [page_source(p) for p in pages]
    if not pages or any(s is None for s in sources):
        return [("pages", joined, "html")]
    paths = list(dict.fromkeys(s[1] for s in sources if s and s[1]))
    out = [("pdf_text", "\n".join(pdf_text_layer(p) for p in paths), "text")] if paths else []
    return [*out, ("parsed", joined, "html")]
