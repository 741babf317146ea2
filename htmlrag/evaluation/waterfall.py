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
from typing import Any

from htmlrag.evaluation.scoring.stages import ORDER, RULES, StageCheck, example_stages, resolve_rule


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


__all__ = ["ORDER", "RULES", "StageCheck", "example_stages", "lost_at", "resolve_rule", "waterfall_summary"]
