"""Paper-style result tables in Markdown, CSV and LaTeX, with the run behind every cell.

Layout (as the HtmlRAG paper's Tables 1-3): one row per system, optionally in row groups (one per reader
model, as the paper prints Llama-3.1-8B and -70B), column groups (a dataset, or one run's settings) with
metrics under them. Scores in [0, 1] are printed x100.

Marks, in every column and within each row group:

- the best value is **bold** and the second best underlined (by the metric's direction);
- † (the paper's rule, Table 1's caption, with a correction for multiple comparisons): on the system under
  test's cell, when its paired two-sided t-test against *every* other system of the row group that has a value
  in that column gives an *adjusted* p < alpha *and* the system under test has the better mean (by the
  metric's direction). The family is every comparison of the table (``correction``: ``holm`` by default,
  ``none`` is the paper's uncorrected rule; :mod:`htmlrag.evaluation.intervals`). It is never put on a
  baseline. The CSV keeps every p-value, raw and adjusted.

Each cell prints its 95% bootstrap interval over questions where the run recorded one
(``metrics.json["systems"][s]["intervals"]``), and under the table a line states n, the test, the correction
and the smallest difference the table could detect at that n (:func:`htmlrag.evaluation.intervals.detectable_difference`).

Where a cell comes from is part of the table: :attr:`Table.provenance` names the run (or runs, for cells
averaged over runs) behind each cell, and :meth:`Table.provenance_csv` writes it. A column group is one key:
two column groups with the same label are an error (this is what keeps two runs on one dataset from
silently overwriting each other's numbers).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.evaluation.intervals import IntervalSettings, adjust, detectable_difference, per_test_alpha
from htmlrag.evaluation.scoring.budgets import split_name
from htmlrag.evaluation.shapes import system_order

#: A row key: (row group, system). The row group is "" when the table has none.
RowKey = tuple[str, str]


@dataclass(frozen=True)
class Column:
    """One table column: a metric of one column group.

    Attributes:
        dataset: column-group label (a dataset, or a dataset with the settings that tell its runs apart).
        metric: key into the cell values.
        label: header text (default: the metric name).
        higher_is_better: direction for best/second marks and the dagger.
        scale: factor applied before printing (100 for scores in [0, 1]).
        digits: decimals printed.
        rank: mark best/second in this column.
    """

    dataset: str
    metric: str
    label: str = ""
    higher_is_better: bool = True
    scale: float = 100.0
    digits: int = 2
    rank: bool = True

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset, self.metric)

    def format(self, value: float) -> str:
        """``value`` as this column prints it (x ``scale``, ``digits`` decimals): ``0.8333...`` -> ``83.33``."""
        return f"{value * self.scale:.{self.digits}f}"


#: Metrics the run tables print unscaled, as whole numbers (mean context tokens); every other metric is a
#: score in [0, 1] printed x100 with two decimals.
UNSCALED: tuple[str, ...] = ("tokens",)


def metric_column(metric: str, dataset: str = "", **kw: object) -> Column:
    """The column a run table prints ``metric`` in (:data:`UNSCALED` metrics x1, 0 decimals; others x100, 2)."""
    scale = 1.0 if metric in UNSCALED else 100.0
    return Column(dataset, metric, scale=scale, digits=0 if scale == 1 else 2, **kw)  # type: ignore[arg-type]


def printed(metric: str, value: float | None) -> str:
    """``value`` of ``metric`` as the run tables print it (``83.33``, ``115``); ``""`` for no value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return metric_column(metric).format(float(value))


@dataclass
class Table:
    """Values, tests and provenance for a set of systems.

    Attributes:
        columns: the columns in order.
        rows: row keys ``(row group, system)`` in order (a plain system name means row group "").
        values: ``values[(column group, metric)][row key]`` (missing cells print "-").
        tests: ``tests[(column group, metric)][row key]``: the paired t-test of the system under test of that
            row group against this row's system (``{"p", "mean_a", "mean_b"}``, a = the system under test).
        ours: the system under test (its cells may get the dagger).
        caption: LaTeX caption / Markdown heading.
        alpha: significance level of the dagger.
        notes: sentences printed under the table (and appended to the LaTeX caption).
        provenance: ``provenance[(column group, metric)][row key]``: the runs the cell was read from.
        intervals: ``intervals[(column group, metric)][row key] = (low, high)``: the cell's interval (same
            scale as the value).
        correction: the multiple-comparison correction over the table's comparisons (``holm``, ``bonferroni``,
            ``fdr_bh``, ``none``).
        power: the power of the smallest detectable difference printed under the table.
        legacy: the runs were written before intervals and corrections were recorded
            (:func:`recorded_correction`): the table is printed as it was then (the paper's uncorrected rule, no
            line of n, test and detectable difference), so ``htmlrag-paper verify`` still checks their tables.
    """

    columns: list[Column]
    rows: list[RowKey | str]
    values: dict[tuple[str, str], dict]
    tests: dict[tuple[str, str], dict] = field(default_factory=dict)
    ours: str | None = None
    caption: str = ""
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    provenance: dict[tuple[str, str], dict] = field(default_factory=dict)
    intervals: dict[tuple[str, str], dict] = field(default_factory=dict)
    correction: str = "holm"
    power: float = 0.8
    confidence: float = 0.95  # of the bracketed intervals (the run's recorded bootstrap setting)
    legacy: bool = False

    def __post_init__(self) -> None:
        self.rows = [r if isinstance(r, tuple) else ("", r) for r in self.rows]
        if self.legacy:
            self.correction = "none"
        keys = [c.key for c in self.columns]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"two columns share the key {dup[0]}: each column group must be one run's (or one "
                             "setting's); label the column groups apart")
        if len(set(self.rows)) != len(self.rows):
            raise ValueError("a row key appears twice")
        self._adjusted: dict[tuple[tuple[str, str], RowKey], float] | None = None
        for store in (self.values, self.tests, self.provenance, self.intervals):
            for k in list(store):
                store[k] = {(r if isinstance(r, tuple) else ("", r)): v for r, v in store[k].items()}

    # ------------------------------------------------------------------ cells
    def value(self, col: Column, row: RowKey) -> float | None:
        v = self.values.get(col.key, {}).get(row)
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    def _ranks(self, col: Column) -> dict[RowKey, int]:
        if not col.rank:
            return {}
        out: dict[RowKey, int] = {}
        for group in self.row_groups():
            vals = {r: v for r in self.rows if r[0] == group and (v := self.value(col, r)) is not None}
            distinct = sorted({round(v * col.scale, col.digits) for v in vals.values()}, reverse=col.higher_is_better)
            out.update({r: distinct.index(round(v * col.scale, col.digits)) for r, v in vals.items()})
        return out

    def dagger(self, col: Column, row: RowKey) -> bool:
        """The paper's † (module doc): ``row`` is the system under test and beats every other system of its row
        group with a value in ``col`` with p < alpha."""
        if row[1] != self.ours or self.value(col, row) is None:
            return False
        others = [r for r in self.rows if r[0] == row[0] and r != row and self.value(col, r) is not None]
        if not others:
            return False
        tests = self.tests.get(col.key, {})
        adjusted = self.adjusted()
        for r in others:
            t = tests.get(r) or {}
            p, a, b = adjusted.get((col.key, r)), t.get("mean_a"), t.get("mean_b")
            if p is None or a is None or b is None or not p < self.alpha:
                return False
            if not (a > b if col.higher_is_better else a < b):
                return False
        return True

    def comparisons(self) -> list[tuple[Column, RowKey]]:
        """The table's family of comparisons: per column, the system under test of each row group against every
        other system of its row group with a value and a test p-value."""
        out = []
        for col in self.columns:
            tests = self.tests.get(col.key, {})
            for row in self.rows:
                if row[1] == self.ours or self.value(col, row) is None:
                    continue
                if self.value(col, (row[0], self.ours or "")) is None:
                    continue
                if (tests.get(row) or {}).get("p") is not None:
                    out.append((col, row))
        return out

    def adjusted(self) -> dict[tuple[tuple[str, str], RowKey], float]:
        """Adjusted p-value of each comparison (:meth:`comparisons`), by ``(column key, row)``."""
        if self._adjusted is None:
            family = self.comparisons()
            raw = [float(self.tests[c.key][r]["p"]) for c, r in family]
            adj = adjust(raw, self.correction, self.alpha)
            self._adjusted = {(c.key, r): float(p) for (c, r), p in zip(family, adj, strict=True) if p is not None}
        return self._adjusted

    def interval_text(self, col: Column, row: RowKey, latex: bool = False) -> str:
        """`` [low, high]`` of the cell (scaled as its value), or ``""``."""
        ci = self.intervals.get(col.key, {}).get(row)
        if not ci or ci[0] is None or ci[1] is None:
            return ""
        lo, hi = (f"{float(x) * col.scale:.{col.digits}f}" for x in ci)
        return f"\\,{{\\scriptsize [{lo}, {hi}]}}" if latex else f" [{lo}, {hi}]"

    def stats_note(self) -> str:
        """n, the test, the correction and the smallest detectable difference (power, alpha) of the table."""
        family = self.comparisons()
        if not family or self.legacy:
            return ""
        ns = sorted({int(self.tests[c.key][r].get("n") or 0) for c, r in family} - {0})
        level = per_test_alpha(self.alpha, self.correction, len(family))
        mdes = []
        for c, r in family:
            t = self.tests[c.key][r]
            d = detectable_difference(t.get("sd_diff"), int(t.get("n") or 0), level, self.power)
            if d:  # None (undefined) or 0 (two systems equal on every question) say nothing about the table
                mdes.append(d * c.scale)
        n_text = (f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}" if ns else "n unrecorded")
        corr = "no correction" if self.correction == "none" else f"{self.correction} correction"
        note = (f"{n_text} questions per comparison; paired two-sided t-test; {corr} over the table's "
                f"{len(family)} comparisons (alpha {self.alpha}).")
        if mdes:
            mdes.sort()
            mid = statistics.median(mdes)
            note += (f" Smallest detectable difference (power {self.power}, paired t-test at alpha {level:.3g}, "
                     f"observed SD of the per-question differences): {mid:.2f} points (median over comparisons; "
                     f"range {mdes[0]:.2f}-{mdes[-1]:.2f}).")
        if any(self.intervals.values()):
            note += f" Brackets: {percent(self.confidence)} bootstrap interval over questions."
        return note

    def cells(self) -> list[list[tuple[str, int | None, bool]]]:
        """Per row and column: (formatted number, rank 0/1 or None, dagger)."""
        ranks = [self._ranks(c) for c in self.columns]
        out = []
        for row in self.rows:
            line = []
            for col, rk in zip(self.columns, ranks, strict=True):
                v = self.value(col, row)
                if v is None:
                    line.append(("-", None, False))
                    continue
                r = rk.get(row)
                line.append((col.format(v), r if r in (0, 1) else None, self.dagger(col, row)))
            out.append(line)
        return out

    def row_groups(self) -> list[str]:
        groups: list[str] = []
        for g, _ in self.rows:
            if g not in groups:
                groups.append(g)
        return groups

    def _groups(self) -> list[tuple[str, int]]:
        groups: list[tuple[str, int]] = []
        for c in self.columns:
            if groups and groups[-1][0] == c.dataset:
                groups[-1] = (c.dataset, groups[-1][1] + 1)
            else:
                groups.append((c.dataset, 1))
        return groups

    def legend(self, latex: bool = False) -> str:
        """The marks' rules in words (printed under every table)."""
        best = "Best in bold, second underlined" if latex else "Best **bold**, second <u>underlined</u>"
        corr = "" if self.correction == "none" else f", {self.correction}-adjusted over the table"
        return (f"{best} (per column{' and row group' if self._grouped() else ''}); "
                f"† on {self.ours or 'the system under test'}: its paired two-sided t-test (p < {self.alpha}{corr}) "
                f"against every other system{' of its row group' if self._grouped() else ''} with a value in that "
                f"column shows it better.")

    def _grouped(self) -> bool:
        return any(g for g, _ in self.rows)

    # ------------------------------------------------------------------ output
    def to_markdown(self) -> str:
        """GitHub Markdown: a header row "group metric", row-group lines, bold best, <u>second</u>, †."""
        head = ["system", *[f"{c.dataset} {c.label or c.metric}" for c in self.columns]]
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(self.columns)]
        grouped = self._grouped()
        last = None
        for (group, sys), row in zip(self.rows, self.cells(), strict=True):
            if grouped and group != last:
                lines.append(f"| *{group or '-'}* |" + " |" * len(self.columns))
                last = group
            out = []
            for col, (text, rank, dagger) in zip(self.columns, row, strict=True):
                t = f"**{text}**" if rank == 0 else f"<u>{text}</u>" if rank == 1 else text
                out.append(t + ("†" if dagger else "") + self.interval_text(col, (group, sys)))
            lines.append("| " + " | ".join([sys, *out]) + " |")
        notes = "\n".join(x for x in [self.legend(), self.stats_note(), *self.notes] if x)
        return (f"**{self.caption}**\n\n" if self.caption else "") + "\n".join(lines) + "\n\n" + notes + "\n"

    def to_csv(self) -> str:
        """CSV with plain numbers (unscaled), the p-value of the system under test against each row, the rank
        and the dagger."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        extra = [] if self.legacy else ["ci_low", "ci_high", "p_adjusted", "correction"]  # legacy: as then
        w.writerow(["row_group", "system", "dataset", "metric", "value", "p_vs_ours", "rank", "dagger", *extra])
        ranks = [self._ranks(c) for c in self.columns]
        adjusted = self.adjusted()
        for row in self.rows:
            for col, rk in zip(self.columns, ranks, strict=True):
                v = self.value(col, row)
                p = (self.tests.get(col.key, {}).get(row) or {}).get("p")
                ci = self.intervals.get(col.key, {}).get(row) or (None, None)
                pa = adjusted.get((col.key, row))
                more = [*("" if x is None else repr(float(x)) for x in ci), "" if pa is None else repr(pa),
                        self.correction if pa is not None else ""]
                w.writerow([row[0], row[1], col.dataset, col.metric, "" if v is None else repr(float(v)),
                            "" if p is None else repr(float(p)), "" if row not in rk else rk[row] + 1,
                            int(self.dagger(col, row)), *([] if self.legacy else more)])
        return buf.getvalue()

    def provenance_csv(self) -> str:
        """One line per filled cell: its value as the table prints it, and the run(s) it was read from
        (``;``-separated when averaged), as given in :attr:`provenance` (the harness gives
        :func:`htmlrag.evaluation.runs.run_name`: relative to the results root)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["row_group", "system", "dataset", "metric", "value", "runs"])
        for row in self.rows:
            for col in self.columns:
                v = self.value(col, row)
                if v is None:
                    continue
                runs = self.provenance.get(col.key, {}).get(row) or []
                runs = [runs] if isinstance(runs, str) else list(runs)
                w.writerow([row[0], row[1], col.dataset, col.metric, col.format(v), ";".join(map(str, runs))])
        return buf.getvalue()

    def to_latex(self) -> str:
        """A ``booktabs`` tabular: column groups with ``\\cmidrule``, row groups as italic lines, ``\\textbf``
        best, ``\\underline`` second, ``$^\\dagger$``; the marks' rule and the notes in the caption."""
        def esc(s: str) -> str:
            return s.replace("\\", "\\textbackslash{}").replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")

        lines = ["\\begin{table}[t]", "\\centering", "\\small",
                 "\\begin{tabular}{l" + "c" * len(self.columns) + "}", "\\toprule"]
        groups, start, rules = [], 2, []
        for name, span in self._groups():
            groups.append(f"\\multicolumn{{{span}}}{{c}}{{{esc(name)}}}")
            rules.append(f"\\cmidrule(lr){{{start}-{start + span - 1}}}")
            start += span
        lines.append(" & " + " & ".join(groups) + " \\\\")
        lines.append(" ".join(rules))
        lines.append("System & " + " & ".join(esc(c.label or c.metric) for c in self.columns) + " \\\\")
        lines.append("\\midrule")
        last = None
        for (group, sys), row in zip(self.rows, self.cells(), strict=True):
            if self._grouped() and group != last:
                lines.append(f"\\multicolumn{{{len(self.columns) + 1}}}{{l}}{{\\textit{{{esc(group or '-')}}}}} \\\\")
                last = group
            out = []
            for col, (text, rank, dagger) in zip(self.columns, row, strict=True):
                t = f"\\textbf{{{text}}}" if rank == 0 else f"\\underline{{{text}}}" if rank == 1 else text
                out.append(t + ("$^\\dagger$" if dagger else "") + self.interval_text(col, (group, sys), latex=True))
            lines.append(esc(sys) + " & " + " & ".join(out) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        text = " ".join(esc(x) for x in [self.caption, self.legend(latex=True), self.stats_note(), *self.notes] if x)
        lines.append("\\caption{" + text.replace("†", "$^\\dagger$").replace(" < ", " $<$ ") + "}")
        lines.append("\\end{table}")
        return "\n".join(lines) + "\n"


def build_table(
    runs: Sequence[Mapping],
    metrics: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    directions: Mapping[str, bool] | None = None,
    scales: Mapping[str, float] | None = None,
    unranked: Sequence[str] = (),
    caption: str = "",
    alpha: float = 0.05,
    notes: Sequence[str] = (),
) -> Table:
    """Build a table from ``metrics.json`` contents of one or more runs (one column group per run).

    Args:
        runs: parsed ``metrics.json`` objects (see :mod:`htmlrag.evaluation.store`).
        metrics: metric keys to show under each column group (a system's ``metrics``).
        labels: the column-group label of each run (default: its dataset). Two runs with one label raise
            ``ValueError`` (their numbers would share cells).
        sources: the run folder (or id) of each run, for the provenance (default: its ``run_id``).
        directions: higher-is-better per metric (default True).
        scales: print scale per metric (default 100; token counts should use 1).
        unranked: metrics whose columns get no best/second marks (e.g. token counts).
        notes: sentences printed under the table.
    """
    directions = directions or {}
    scales = scales or {}
    labels = list(labels) if labels is not None else [str(r.get("dataset", r.get("experiment", ""))) for r in runs]
    if len(labels) != len(runs):
        raise ValueError(f"{len(labels)} labels for {len(runs)} runs")
    seen = [lb for lb in labels if labels.count(lb) > 1]
    if seen:
        raise ValueError(f"two runs would fill the column group {seen[0]!r}: give each run its own label "
                         "(e.g. by the settings that differ: htmlrag-bench-table does this)")
    sources = list(sources) if sources is not None else [str(r.get("run_id", "?")) for r in runs]
    columns, rows, values, tests, prov, intervals = [], [], {}, {}, {}, {}
    ours = None
    for run, label, src in zip(runs, labels, sources, strict=True):
        key = _row_key(run)
        ours = ours or key(run.get("ours") or "")[1] or None
        for sys in system_order(run):
            if key(sys) not in rows:
                rows.append(key(sys))
        for m in metrics:
            col = Column(label, m, higher_is_better=directions.get(m, True), scale=scales.get(m, 100.0),
                         digits=0 if scales.get(m, 100.0) == 1 else 2, rank=m not in unranked)
            columns.append(col)
            values[col.key] = {key(s): v["metrics"].get(m) for s, v in run["systems"].items()}
            tests[col.key] = {key(s): t for s, t in run.get("tests", {}).get(m, {}).items()}
            prov[col.key] = {key(s): [src] for s in run["systems"]}
            intervals[col.key] = {key(s): tuple(v["intervals"][m]) for s, v in run["systems"].items()
                                  if (v.get("intervals") or {}).get(m)}
    rows = _order_rows(rows, ours)
    correction, power = recorded_correction(runs)
    return Table(columns, rows, values, tests, ours=ours, caption=caption, alpha=alpha, notes=list(notes),
                 provenance=prov, intervals=intervals, correction=correction, power=power,
                 confidence=recorded_confidence(runs),
                 legacy=not any(r.get("intervals") for r in runs))


def _row_key(run: Mapping) -> Any:
    """``name -> (row group, system)``: a budget-frontier run (systems ``name@budget``, a ``frontier`` section)
    gets one row group per budget (``"1024 tokens"``), every other run the plain system name."""
    if not run.get("frontier"):
        return lambda name: ("", name)

    def key(name: str) -> RowKey:
        base, budget = split_name(name)
        return (f"{budget} tokens", base) if budget is not None else ("", name)

    return key


def _order_rows(rows: list[RowKey], ours: str | None) -> list[RowKey]:
    """Row groups in order of appearance (budgets ascending), the system under test last in each."""
    def budget(g: str) -> int:
        head = g.split(" ", 1)[0]
        return int(head) if head.isdigit() else -1

    groups = sorted(dict.fromkeys(g for g, _ in rows), key=budget)
    out = []
    for g in groups:
        names = [r for r in rows if r[0] == g]
        out += [r for r in names if r[1] != ours] + [r for r in names if r[1] == ours]
    return out


def percent(confidence: float) -> str:
    """An interval's level as printed: ``95%``, ``97.5%``."""
    return f"{100 * float(confidence):g}%"


def recorded_confidence(runs: Sequence[Mapping]) -> float:
    """The level of the bootstrap intervals the first run recorded (``metrics.json["intervals"]``), else the
    default of :class:`htmlrag.evaluation.intervals.IntervalSettings`."""
    rec = (runs[0].get("intervals") or {}) if runs else {}
    return float(rec.get("confidence", IntervalSettings().confidence))


def recorded_correction(runs: Sequence[Mapping]) -> tuple[str, float]:
    """The correction and power the runs recorded (``metrics.json["intervals"]``; the first run's when they
    differ, which is logged), else the defaults of :class:`htmlrag.evaluation.intervals.IntervalSettings`."""
    default = IntervalSettings()
    recs = [r.get("intervals") or {} for r in runs]
    methods = [str(x.get("correction", default.correction)) for x in recs]
    if len(set(methods)) > 1:
        import logging

        logging.getLogger(__name__).warning("runs recorded different corrections %s; the table uses %s",
                                            sorted(set(methods)), methods[0])
    return (methods[0] if methods else default.correction,
            float(recs[0].get("power", default.power)) if recs else default.power)
