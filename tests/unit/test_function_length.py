"""House style (STYLE.md item 15): no function in ``htmlrag/`` over ~80 lines, so a newcomer can read each one.

A function's length is counted from its ``def`` (or first decorator) to its last line, docstring included;
nested functions and methods count on their own (and inside their parent). The allowlist names the functions
still over the limit, each with the reason; it may only shrink: an entry whose function is gone or now short
enough fails the test, so it is removed when the function is split.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "htmlrag"
LIMIT = 80

#: ``path::qualified name`` -> why it is still long (empty: every function is within the limit).
ALLOWED: dict[str, str] = {}


def function_lengths(package: Path = PACKAGE) -> dict[str, int]:
    """``path::qualified name`` -> lines, for every function and method of every module under ``package``."""
    out: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()

        def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    out[f"{rel}::{prefix}{child.name}"] = child.end_lineno - first + 1
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
                else:
                    visit(child, prefix)

        visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return out


def test_no_function_over_the_limit():
    lengths = function_lengths()
    assert len(lengths) > 300, "the walk missed the package's functions"
    long = {name: n for name, n in lengths.items() if n > LIMIT and name not in ALLOWED}
    assert not long, f"functions over {LIMIT} lines (split them into named steps, STYLE.md item 15): {long}"


def test_allowlist_only_shrinks():
    lengths = function_lengths()
    stale = {name: lengths.get(name) for name in ALLOWED if lengths.get(name, 0) <= LIMIT}
    assert not stale, f"remove these from ALLOWED (gone or now within {LIMIT} lines): {stale}"


def test_lengths_count_methods_nested_functions_and_decorators(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import functools\n"
        "class A:\n"
        "    @functools.cache\n"
        "    def method(self):\n"
        "        def inner():\n"
        "            return 1\n"
        "        return inner()\n"
        "if True:\n"
        "    def guarded():\n"
        "        pass\n",
        encoding="utf-8")
    assert function_lengths(pkg) == {"pkg/m.py::A.method": 5, "pkg/m.py::A.method.inner": 2,
                                     "pkg/m.py::guarded": 2}
