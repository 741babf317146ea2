"""Re-score saved rows with the current metric code (for ``htmlrag-paper verify``).

A metric is re-scored on a row only when the row holds every input the metric reads
(:attr:`htmlrag.evaluation.scoring.metrics.Metric.inputs`):

- ``response``: the system's saved answer; ``answers``: the row's gold answers (every row has them);
- ``long_answers`` / ``answer_groups``: saved in rows since these records existed (older rows: not re-scored,
  since an older row cannot tell "none" from "not saved");
- ``context``: only rows of runs with ``run.save_contexts=true`` hold it, with the context's format ``fmt``
  (older rows: the format from ``config.yaml``); reference-text EM and evidence recall of other runs are not
  re-scored;
- ``judge``: LLM verdicts are never re-scored: they are read back from the run's ``judgments.jsonl``.

Where a metric is not re-scored, its saved per-example scores are used as they are, and the aggregates are still
recomputed from them; :class:`Rescored` says which metrics were re-scored on how many rows, and why the others
were not.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring.loop import context_text
from htmlrag.evaluation.scoring.metrics import METRICS, MetricInput

#: Why a metric input is missing from a row.
MISSING = {
    "response": "the system has no saved answer",
    "long_answers": "the rows do not record long answers (written before rows kept every gold input)",
    "answer_groups": "the rows do not record answer groups (written before rows kept every gold input)",
    "context": "the rows do not hold the context (run.save_contexts=true keeps it)",
    "fmt": "the context's format is not recorded",
    "judge": "LLM judge verdicts are not re-scored (read from judgments.jsonl)",
}


@dataclass
class Difference:
    """A per-example score that the current code computes differently from the saved one."""

    id: str
    system: str
    metric: str
    stored: Any
    recomputed: Any


@dataclass
class Rescored:
    """The rows with their scores recomputed where possible.

    Attributes:
        rows: copies of the rows, each re-scored metric's score (and statistics) replaced by the recomputed one.
        differences: per-example scores (or BLEU statistics, metric ``bleu:stats``) that changed.
        rescored: metric -> number of (row, system) scores recomputed.
        skipped: metric -> why some scores were not recomputed (the saved score was kept), and how many.
        unscored: metrics the rows cannot be aggregated on (a scored record without the score, or a
            corpus-level metric without its saved statistics).
    """

    rows: list[dict[str, Any]]
    differences: list[Difference] = field(default_factory=list)
    rescored: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, tuple[str, int]] = field(default_factory=dict)
    unscored: list[str] = field(default_factory=list)

    def skip(self, metric: str, why: str) -> None:
        reason, n = self.skipped.get(metric, (why, 0))
        self.skipped[metric] = (reason, n + 1)


def judgments(run_dir: Path) -> dict[tuple[str, str], dict[str, float]] | None:
    """``{(id, system): {"judge", "judge_invalid"}}`` from ``judgments.jsonl`` (``None`` when there is none)."""
    path = run_dir / "judgments.jsonl"
    if not path.is_file():
        return None
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):  # (U+2028 may stand in a reply)
        if line.strip():
            rec = json.loads(line)
            # with judge.draws > 1 the score is the mean verdict over the draws, as the harness computes it
            scores = [d.get("score") for d in rec["draws"]] if isinstance(rec.get("draws"), list) and rec["draws"] \
                else [rec.get("score")]
            out[(str(rec["id"]), str(rec["system"]))] = {
                "judge": sum(float(x or 0) for x in scores) / len(scores),
                "judge_invalid": sum(float(x is None) for x in scores) / len(scores)}
    return out


def _input(row: Mapping[str, Any], rec: Mapping[str, Any], name: str, fmt: str | None) -> tuple[Any, str | None]:
    """The value of input ``name`` for one system's record, or ``(None, why it is missing)``."""
    if name == "response":
        return (rec["response"], None) if isinstance(rec.get("response"), str) else (None, MISSING["response"])
    if name == "answers":
        return list(row.get("answers") or []), None
    if name in ("long_answers", "answer_groups"):
        return (row[name], None) if isinstance(row.get(name), list) else (None, MISSING[name])
    if name == "context":
        if not isinstance(rec.get("context"), str):
            return None, MISSING["context"]
        return (rec["context"], None) if fmt else (None, MISSING["fmt"])
    return None, MISSING.get(name, f"unknown input {name!r}")


def metric_input(row: Mapping[str, Any], rec: Mapping[str, Any], inputs: Sequence[str], fmt: str | None
                 ) -> tuple[MetricInput | None, str | None]:
    """The :class:`MetricInput` of a saved record for a metric reading ``inputs``, or ``(None, why not)``."""
    values: dict[str, Any] = {}
    for name in inputs:
        value, why = _input(row, rec, name, fmt)
        if why:
            return None, why
        values[name] = value
    if "context" in values:
        values["context_text"] = context_text(values["context"], str(fmt))
    return MetricInput(**values), None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _rescore_one(row: dict[str, Any], system: str, rec: dict[str, Any], names: Sequence[str], fmt: str | None,
                 out: Rescored) -> None:
    """Re-score one system's record in place (``rec`` is a copy), noting differences and skips."""
    for name in names:
        metric = METRICS.get(name)
        if metric is None:
            out.skip(name, "the metric is not registered in this installation")
            continue
        x, why = metric_input(row, rec, metric.inputs, fmt)
        if x is None:
            out.skip(name, str(why))
            continue
        try:
            new = float(metric.fn(x))
            stats = [float(v) for v in metric.stats(x)] if metric.stats is not None else None
        except HtmlRagError as exc:
            out.skip(name, f"the metric fails on a saved row ({exc})")
            continue
        old = (rec.get("scores") or {}).get(name)
        if not _same(old, new):
            out.differences.append(Difference(str(row["id"]), system, name, old, new))
        rec.setdefault("scores", {})[name] = new
        if stats is not None:
            old_stats = (rec.get("metric_stats") or {}).get(name)
            if old_stats != stats:
                out.differences.append(Difference(str(row["id"]), system, f"{name}:stats", old_stats, stats))
            rec.setdefault("metric_stats", {})[name] = stats
        out.rescored[name] = out.rescored.get(name, 0) + 1


def rescore(rows: Sequence[Mapping[str, Any]], names: Sequence[str], fmt_of: Callable[[str], str | None],
            judged: Mapping[tuple[str, str], Mapping[str, float]] | None = None) -> Rescored:
    """Re-score ``rows`` on the metrics ``names`` (see the module docstring).

    Args:
        rows: the run's rows (not modified).
        names: the run's metric names (``metrics.json["metric_names"]``).
        fmt_of: the context format of a system for rows that do not record it (from ``config.yaml``).
        judged: the judge's scores per (id, system), attached to the rows (:func:`judgments`).
    """
    out = Rescored(rows=[])
    for row in rows:
        new = copy.deepcopy(dict(row))
        for system, rec in (new.get("systems") or {}).items():
            if rec.get("error") or new.get("error") or "scores" not in rec:
                continue
            if judged is not None and (str(new["id"]), system) in judged:
                rec["scores"].update(judged[(str(new["id"]), system)])
            fmt = rec.get("fmt") if isinstance(rec.get("fmt"), str) else fmt_of(system)
            _rescore_one(new, system, rec, names, fmt, out)
        out.rows.append(new)
    out.unscored = [m for m in names if not _aggregable(out.rows, m)]
    return out


def _aggregable(rows: Sequence[Mapping[str, Any]], metric: str) -> bool:
    """Every scored record holds a score of ``metric`` (and, for a corpus-level metric, its statistics)."""
    corpus = METRICS[metric].corpus is not None if metric in METRICS else False
    for r in rows:
        if r.get("error"):
            continue
        for rec in (r.get("systems") or {}).values():
            if rec.get("error") or "scores" not in rec:
                continue
            if metric not in rec["scores"] or (corpus and (rec.get("metric_stats") or {}).get(metric) is None):
                return False
    return True
