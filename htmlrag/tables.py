"""Paper-style result tables in Markdown, CSV and LaTeX.

Layout (as the HtmlRAG paper's Tables 1-3): one row per system, datasets as column groups, metrics under
them. In every column the best value is **bold** and the second best underlined (by the metric's
direction); a dagger (†) marks a baseline cell whose paired t-test against the system under test has
p < ``alpha``. Scores in [0, 1] are printed x100.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    """One table column: a metric of one dataset.

    Attributes:
        dataset: column-group label.
        metric: key into the cell values.
        label: header text (default: the metric name).
        higher_is_better: direction for best/second marks.
        scale: factor applied before printing (100 for scores in [0, 1]).
        digits: decimals printed.
    """

    dataset: str
    metric: str
    label: str = ""
    higher_is_better: bool = True
    scale: float = 100.0
    digits: int = 2
    rank: bool = True


@dataclass
class Table:
    """Values and significance for a set of systems.

    Attributes:
        columns: the columns in order.
        rows: system names in order.
        values: ``values[(dataset, metric)][system]`` (missing cells print "-").
        pvalues: ``pvalues[(dataset, metric)][system]``: p of ours vs that system (for daggers).
        ours: the system under test (never daggered).
        caption: LaTeX caption / Markdown heading.
        alpha: significance level for the dagger.
    """

    columns: list[Column]
    rows: list[str]
    values: dict[tuple[str, str], dict[str, float]]
    pvalues: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=dict)
    ours: str | None = None
    caption: str = ""
    alpha: float = 0.05

    def _ranks(self, col: Column) -> dict[str, int]:
        if not col.rank:
            return {}
        vals = {s: v for s, v in self.values.get((col.dataset, col.metric), {}).items()
                if v is not None and not math.isnan(v)}
        distinct = sorted(set(round(v * col.scale, col.digits) for v in vals.values()),
                          reverse=col.higher_is_better)
        return {s: distinct.index(round(v * col.scale, col.digits)) for s, v in vals.items()}

    def cells(self) -> list[list[tuple[str, int | None, bool]]]:
        """Per row and column: (formatted number, rank 0/1 or None, dagger)."""
        ranks = [self._ranks(c) for c in self.columns]
        out = []
        for sys in self.rows:
            row = []
            for col, rk in zip(self.columns, ranks, strict=True):
                v = self.values.get((col.dataset, col.metric), {}).get(sys)
                if v is None or math.isnan(v):
                    row.append(("-", None, False))
                    continue
                p = self.pvalues.get((col.dataset, col.metric), {}).get(sys)
                dagger = sys != self.ours and p is not None and p < self.alpha
                r = rk.get(sys)
                row.append((f"{v * col.scale:.{col.digits}f}", r if r in (0, 1) else None, dagger))
            out.append(row)
        return out

    def _groups(self) -> list[tuple[str, int]]:
        groups: list[tuple[str, int]] = []
        for c in self.columns:
            if groups and groups[-1][0] == c.dataset:
                groups[-1] = (c.dataset, groups[-1][1] + 1)
            else:
                groups.append((c.dataset, 1))
        return groups

    def to_markdown(self) -> str:
        """GitHub Markdown: a header row "dataset metric", bold best, <u>second</u>, † significant."""
        head = ["system", *[f"{c.dataset} {c.label or c.metric}" for c in self.columns]]
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(self.columns)]
        for sys, row in zip(self.rows, self.cells(), strict=True):
            out = []
            for text, rank, dagger in row:
                t = f"**{text}**" if rank == 0 else f"<u>{text}</u>" if rank == 1 else text
                out.append(t + ("†" if dagger else ""))
            lines.append("| " + " | ".join([sys, *out]) + " |")
        note = f"\nBest **bold**, second <u>underlined</u>; † p < {self.alpha} (paired t-test vs {self.ours})."
        return (f"**{self.caption}**\n\n" if self.caption else "") + "\n".join(lines) + "\n" + note + "\n"

    def to_csv(self) -> str:
        """CSV with plain numbers (unscaled) and a ``p_vs_ours`` column per cell."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["system", "dataset", "metric", "value", "p_vs_ours", "rank"])
        ranks = [self._ranks(c) for c in self.columns]
        for sys in self.rows:
            for col, rk in zip(self.columns, ranks, strict=True):
                v = self.values.get((col.dataset, col.metric), {}).get(sys)
                p = self.pvalues.get((col.dataset, col.metric), {}).get(sys)
                w.writerow([sys, col.dataset, col.metric, "" if v is None else repr(float(v)),
                            "" if p is None else repr(float(p)), "" if sys not in rk else rk[sys] + 1])
        return buf.getvalue()

    def to_latex(self) -> str:
        """A ``booktabs`` tabular: dataset groups with ``\\cmidrule``, ``\\textbf`` best, ``\\underline``
        second, ``$^\\dagger$`` significant."""
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
        for sys, row in zip(self.rows, self.cells(), strict=True):
            out = []
            for text, rank, dagger in row:
                t = f"\\textbf{{{text}}}" if rank == 0 else f"\\underline{{{text}}}" if rank == 1 else text
                out.append(t + ("$^\\dagger$" if dagger else ""))
            lines.append(esc(sys) + " & " + " & ".join(out) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        if self.caption:
            lines.append(f"\\caption{{{esc(self.caption)} Best in bold, second underlined; "
                         f"$^\\dagger$: $p<{self.alpha}$ (paired t-test vs {esc(self.ours or '')}).}}")
        lines.append("\\end{table}")
        return "\n".join(lines) + "\n"


def build_table(
    runs: Sequence[Mapping],
    metrics: Sequence[str],
    *,
    directions: Mapping[str, bool] | None = None,
    scales: Mapping[str, float] | None = None,
    unranked: Sequence[str] = (),
    caption: str = "",
    alpha: float = 0.05,
) -> Table:
    """Build a table from ``metrics.json`` contents of one or more runs (one column group per run).

    Args:
        runs: parsed ``metrics.json`` objects (see :mod:`htmlrag.results`).
        metrics: metric keys to show under each dataset (a system's ``metrics`` or ``tokens``).
        directions: higher-is-better per metric (default True).
        scales: print scale per metric (default 100; token counts should use 1).
        unranked: metrics whose columns get no best/second marks (e.g. token counts).
    """
    directions = directions or {}
    scales = scales or {}
    columns, rows, values, pvalues = [], [], {}, {}
    ours = None
    for run in runs:
        ds = str(run.get("dataset", run.get("experiment", "")))
        ours = ours or run.get("ours")
        for sys in run.get("system_order") or run["systems"]:
            if sys not in rows:
                rows.append(sys)
        for m in metrics:
            col = Column(ds, m, higher_is_better=directions.get(m, True), scale=scales.get(m, 100.0),
                         digits=0 if scales.get(m, 100.0) == 1 else 2, rank=m not in unranked)
            columns.append(col)
            values[(ds, m)] = {s: v["metrics"].get(m) for s, v in run["systems"].items()}
            pvalues[(ds, m)] = {b: t.get("p") for b, t in run.get("tests", {}).get(m, {}).items()}
    return Table(columns, rows, values, pvalues, ours=ours, caption=caption, alpha=alpha)
