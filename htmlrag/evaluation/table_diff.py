"""Compare a stored table file with the one recomputed from the run, cell by cell (``htmlrag-paper verify``).

Markdown and LaTeX tables are compared as printed (a cell agrees when its text is the same: numbers to the
printed precision, marks included); CSV and JSON numbers to 9 significant digits (they hold full floats, whose
last digits may differ with another SciPy or summation order); any other line as text. Each difference names
the file, the row and the column (or the line) and both values.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

REL_TOL = 1e-9
KEY_COLUMNS = ("row_group", "system", "dataset", "metric", "group", "a", "b")


@dataclass(frozen=True)
class CellDiff:
    """One differing cell (or line) of a table file."""

    where: str
    stored: str
    recomputed: str


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def close(a: Any, b: Any) -> bool:
    """Equal, numbers to :data:`REL_TOL` (NaN equals NaN)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int | float) or not isinstance(b, int | float):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def _cells(line: str, sep: str) -> list[str]:
    body = line.strip()
    body = body.strip("|") if sep == "|" else body.removesuffix("\\\\").rstrip()
    return [c.strip() for c in body.split(sep)]


def _grid_lines(path: str, stored: str, new: str, sep: str, is_row: Any, is_head: Any) -> Iterator[CellDiff]:
    """Line by line; lines that are table rows in both are compared cell by cell, named by the row's first
    cell and the header cell above."""
    a, b = stored.splitlines(), new.splitlines()
    head: list[str] = []
    for n, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if is_head(y):
            head = _cells(y, sep)
        if x == y:
            continue
        if is_row(x) and is_row(y):
            cx, cy = _cells(x, sep), _cells(y, sep)
            if len(cx) == len(cy):
                name = " / ".join(cy[:2]) if head[:1] == ["run"] else cy[0]  # stage table: run and system
                for i, (u, v) in enumerate(zip(cx, cy, strict=True)):
                    if u != v:
                        col = head[i] if i < len(head) else f"column {i + 1}"
                        yield CellDiff(f"{path}: row {name!r}, column {col!r}", u, v)
                continue
        yield CellDiff(f"{path}: line {n}", x, y)
    if len(a) != len(b):
        yield CellDiff(f"{path}: number of lines", str(len(a)), str(len(b)))


def _md(path: str, stored: str, new: str) -> Iterator[CellDiff]:
    return _grid_lines(path, stored, new, "|", lambda s: s.startswith("|") and not s.startswith("|---"),
                       lambda s: s.startswith("| system |") or s.startswith("| run |") or s.startswith("| group |"))


def _tex(path: str, stored: str, new: str) -> Iterator[CellDiff]:
    return _grid_lines(path, stored, new, "&", lambda s: " & " in s and s.rstrip().endswith("\\\\"),
                       lambda s: s.startswith("System & "))


def _csv(path: str, stored: str, new: str) -> Iterator[CellDiff]:
    a, b = list(csv.reader(io.StringIO(stored))), list(csv.reader(io.StringIO(new)))
    if not a or not b or a[0] != b[0]:
        yield CellDiff(f"{path}: header", ",".join(a[0] if a else []), ",".join(b[0] if b else []))
        return
    head = b[0]
    keys = [i for i, h in enumerate(head) if h in KEY_COLUMNS]
    for n, (x, y) in enumerate(zip(a[1:], b[1:], strict=False), 2):
        name = " / ".join(y[i] for i in keys if i < len(y) and y[i]) or f"line {n}"
        for i, col in enumerate(head):
            u, v = (x[i] if i < len(x) else ""), (y[i] if i < len(y) else "")
            if u == v:
                continue
            nu, nv = _number(u), _number(v)
            if nu is not None and nv is not None and close(nu, nv):
                continue
            yield CellDiff(f"{path}: row {name!r}, column {col!r}", u, v)
        if len(x) != len(y):
            yield CellDiff(f"{path}: row {name!r}, number of cells", str(len(x)), str(len(y)))
    if len(a) != len(b):
        yield CellDiff(f"{path}: number of rows", str(len(a) - 1), str(len(b) - 1))


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(node, list):
        out = {}
        for i, v in enumerate(node):
            out.update(_flat(v, f"{prefix}[{i}]"))
        return out
    return {prefix: node}


def json_diff(path: str, stored: Any, new: Any) -> Iterator[CellDiff]:
    """Leaf by leaf (numbers to :data:`REL_TOL`); a leaf on one side only is a difference."""
    a, b = _flat(stored), _flat(new)
    for key in [*b, *(k for k in a if k not in b)]:
        if key not in a or key not in b or not close(a[key], b[key]):
            yield CellDiff(f"{path}: {key}", json.dumps(a.get(key, "(missing)")), json.dumps(b.get(key, "(missing)")))


def diff_table(path: str, stored: str, new: str) -> list[CellDiff]:
    """Every difference between a stored table file and the recomputed one (by the file's kind)."""
    if stored == new:
        return []
    if path.endswith(".json"):
        try:
            return list(json_diff(path, json.loads(stored), json.loads(new)))
        except ValueError as exc:
            return [CellDiff(f"{path}: JSON", f"not readable ({exc})", "(valid JSON)")]
    kind = {".md": _md, ".tex": _tex, ".csv": _csv}.get(path[path.rfind("."):])
    if kind is None:
        return [CellDiff(path, "(text differs)", "")]
    return list(kind(path, stored, new))
