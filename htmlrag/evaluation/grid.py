"""A plain table (header, rows, notes) written as Markdown, CSV and LaTeX: the waterfall, cost and judge
tables. Each cell is a ``(text, value)`` pair: the text is printed in Markdown and LaTeX, the value (a number
unscaled, or the text) goes to the CSV, so the CSV holds what the run recorded and the other two what a reader
sees. (Tables with significance marks use :class:`htmlrag.evaluation.tables.Table`.)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.evaluation.store import atomic_write

Cell = tuple[str, Any]


def cell(value: Any, fmt: str = "{:.2f}", scale: float = 1.0) -> Cell:
    """A cell of a number (``None``: ``-``) printed with ``fmt`` after ``scale``; text as it is."""
    if value is None:
        return "-", ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt.format(value * scale if scale != 1.0 else value), value
    return str(value), value


@dataclass
class Grid:
    """A table: ``header`` names, ``rows`` of :data:`Cell`, a ``caption`` and ``notes`` printed under it."""

    header: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        """GitHub Markdown with the caption in bold and the notes under the table."""
        lines = ["| " + " | ".join(self.header) + " |", "|---|" + "---:|" * (len(self.header) - 1)]
        lines += ["| " + " | ".join(t.replace("|", "\\|") for t, _ in row) + " |" for row in self.rows]
        head = f"**{self.caption}**\n\n" if self.caption else ""
        return head + "\n".join(lines) + ("\n\n" + "\n".join(self.notes) if self.notes else "") + "\n"

    def to_csv(self) -> str:
        """The header, then the cells' values (numbers unscaled)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.header)
        for row in self.rows:
            w.writerow([repr(float(v)) if isinstance(v, float) else v for _, v in row])
        return buf.getvalue()

    def to_latex(self) -> str:
        """A ``booktabs`` tabular with the caption and notes in ``\\caption``."""
        def esc(s: str) -> str:
            return (s.replace("\\", "\\textbackslash{}").replace("_", "\\_").replace("&", "\\&")
                    .replace("%", "\\%").replace("#", "\\#").replace("$", "\\$"))

        lines = ["\\begin{table}[t]", "\\centering", "\\small", "\\begin{tabular}{l" + "r" * (len(self.header) - 1) + "}",
                 "\\toprule", " & ".join(esc(h) for h in self.header) + " \\\\", "\\midrule"]
        lines += [" & ".join(esc(t) for t, _ in row) + " \\\\" for row in self.rows]
        lines += ["\\bottomrule", "\\end{tabular}",
                  "\\caption{" + " ".join(esc(x) for x in [self.caption, *self.notes] if x) + "}", "\\end{table}"]
        return "\n".join(lines) + "\n"


def write_formats(obj: Any, out_dir: Path, stem: str) -> dict[str, Path]:
    """Write ``<stem>.md``, ``.csv`` and ``.tex`` of a :class:`Grid` or :class:`~htmlrag.evaluation.tables.Table`
    (and ``<stem>.provenance.csv`` for a table), atomically."""
    paths = {"md": out_dir / f"{stem}.md", "csv": out_dir / f"{stem}.csv", "tex": out_dir / f"{stem}.tex"}
    atomic_write(paths["md"], obj.to_markdown())
    atomic_write(paths["csv"], obj.to_csv())
    atomic_write(paths["tex"], obj.to_latex())
    if hasattr(obj, "provenance_csv"):
        paths["provenance"] = out_dir / f"{stem}.provenance.csv"
        atomic_write(paths["provenance"], obj.provenance_csv())
    return paths


def percent(part: float, whole: float) -> float | None:
    """``part / whole`` (``None`` when ``whole`` is 0)."""
    return part / whole if whole else None


def join_notes(notes: Sequence[str]) -> list[str]:
    """The non-empty notes."""
    return [n for n in notes if n]
