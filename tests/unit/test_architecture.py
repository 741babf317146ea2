"""The house shows its design (docs/architecture.md): no import circles, and each package imports only below it.

The walk reads every ``import`` of ``htmlrag/``, ``eval/`` (installed as ``htmlrag_bench.eval``) and
``training/`` (``htmlrag_bench.training``) from the source (AST), at module level and inside functions alike (a
function-local import that runs back up is still a circle, only a later one), and checks:

(a) no import cycle between modules;
(b) the layering, lowest first: ``core < html < rankers < pruning < readers < factory < baselines < docqa <
    superrag < data < evaluation < testing < app < cli < htmlrag`` (the front door), then the harness,
    ``htmlrag_bench.eval < htmlrag_bench.training``; a package imports only packages below it or itself;
(c) ``htmlrag/`` top level holds packages and at most a handful of modules;
(d) no product code (``htmlrag``, ``eval``, ``training``, ``scripts``) imports ``tests``;
(e) no Python source under ``results/``;
(f) no module (scripts included) imports a private name (``_x``) from another package: what another package
    needs is public, with a docstring.

An edge is an explicit import only: importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``, but
those are not counted (every package's ``__init__`` would otherwise close a circle with its own modules).
Imports under ``if TYPE_CHECKING:`` never run and are left out of the cycle check; they still obey the layering.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: source folder -> the package name it installs as
SOURCES: dict[str, str] = {"htmlrag": "htmlrag", "eval": "htmlrag_bench.eval", "training": "htmlrag_bench.training"}

#: The layers, lowest first; a package imports only packages of a lower layer or itself (packages sharing a
#: layer would not import each other). The faces sit on top: the command line above the app because
#: ``htmlrag serve`` starts it; the harness above the library, training above eval because it finds its
#: configs through :mod:`htmlrag_bench.eval.locations`. ``htmlrag.testing`` (generated test inputs) sits above
#: every stage, so no stage can use it in a run.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("htmlrag.core",),
    ("htmlrag.html",),
    ("htmlrag.rankers",),
    ("htmlrag.pruning",),
    ("htmlrag.readers",),
    ("htmlrag.factory",),
    ("htmlrag.baselines",),
    ("htmlrag.docqa",),
    ("htmlrag.superrag",),
    ("htmlrag.data",),
    ("htmlrag.evaluation",),
    ("htmlrag.testing",),
    ("htmlrag.app",),
    ("htmlrag.cli",),
    ("htmlrag",),  # the package's front door (``from htmlrag import clean_html``) and ``python -m htmlrag``
    ("htmlrag_bench.eval",),
    ("htmlrag_bench.training",),
)

#: The only modules allowed at ``htmlrag/``'s top level (everything else lives in a stage package).
TOP_LEVEL_MODULES = {"__init__", "__main__", "_compat", "factory"}

#: The package of the front door: ``htmlrag/__init__.py``, ``__main__`` and the old-path aliases.
FRONT_DOOR = {"htmlrag", "htmlrag.__main__", "htmlrag._compat"}


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` (both module names) at ``where`` (path:line)."""

    source: str
    target: str
    where: str
    runtime: bool  # False under ``if TYPE_CHECKING:``
    local: bool = False  # inside a function


def module_names(root: Path = ROOT, sources: dict[str, str] = SOURCES) -> dict[str, Path]:
    """Module name -> file for every ``.py`` under the source folders (a package is its ``__init__``)."""
    out: dict[str, Path] = {}
    for folder, package in sources.items():
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                inside.update(id(n) for n in ast.walk(stmt))
    return inside


def _function_local_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside function bodies."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    return inside


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement can load (``from a import b`` may load ``a.b`` or ``a``)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    for alias in node.names:
        yield f"{base}.{alias.name}"
    yield base


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` names or lies in; None for third-party names."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_edges(modules: dict[str, Path], root: Path = ROOT) -> list[Edge]:
    """Every import between our modules, module-level and function-local."""
    edges: list[Edge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_only = _type_checking_nodes(tree)
        local = _function_local_nodes(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = {_resolve(n, modules) for n in _imported_names(node, module, is_package)}
            if isinstance(node, ast.ImportFrom) and len(targets - {None}) > 1:
                # ``from a import b``: the submodule when b is one, else the package a
                targets.discard(_resolve(_imported_names_base(node, module, is_package), modules))
            where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
            for target in targets - {None, module}:
                edges.append(Edge(module, target, where, id(node) not in typing_only, id(node) in local))
    return edges


def _imported_names_base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    *_, base = _imported_names(node, module, is_package)
    return base


def find_cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.runtime:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(components)


def package_of(module: str) -> str:
    """The layered package a module belongs to (``htmlrag.rankers.bm25`` -> ``htmlrag.rankers``)."""
    if module in FRONT_DOOR:
        return "htmlrag"
    if module.startswith("htmlrag_bench."):
        return ".".join(module.split(".")[:2])
    return ".".join(module.split(".")[:2])


def layer_of(package: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int:
    """The index of ``package``'s layer (a package missing from :data:`LAYERS` is an error to fix there)."""
    for i, layer in enumerate(layers):
        if package in layer:
            return i
    raise AssertionError(f"package {package} is in no layer: add it to LAYERS and docs/architecture.md")


def layering_violations(edges: list[Edge]) -> list[str]:
    """Each import from a package to one of its own layer or above, as ``where: source -> target``."""
    bad = []
    for e in edges:
        src, dst = package_of(e.source), package_of(e.target)
        if src != dst and layer_of(dst) >= layer_of(src):
            bad.append(f"{e.where}: {e.source} ({src}) -> {e.target} ({dst})")
    return sorted(bad)


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges(module_names())


def test_the_walk_sees_module_level_and_function_local_imports(edges):
    assert len(edges) > 500, "the walk missed most imports"
    assert {e.local for e in edges} == {True, False}
    assert {e.source.split(".")[0] for e in edges} == {"htmlrag", "htmlrag_bench"}
    assert {package_of(e.source) for e in edges} >= {"htmlrag_bench.eval", "htmlrag_bench.training"}


def test_no_import_cycle(edges):
    cycles = find_cycles(edges)
    detail = {" <-> ".join(c): sorted(e.where for e in edges if e.runtime and e.source in c and e.target in c)
              for c in cycles}
    assert not cycles, f"import cycles (break them; docs/architecture.md): {detail}"


def test_each_package_imports_only_below_it(edges):
    bad = layering_violations(edges)
    assert not bad, "imports against the layering (docs/architecture.md):\n" + "\n".join(bad)


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in module_names()}
    for package in packages:
        layer_of(package)


def test_the_top_level_holds_packages_and_a_handful_of_modules():
    modules = {p.stem for p in (ROOT / "htmlrag").glob("*.py")}
    assert modules <= TOP_LEVEL_MODULES, f"move these into a stage package: {sorted(modules - TOP_LEVEL_MODULES)}"
    packages = {p.name for p in (ROOT / "htmlrag").iterdir() if (p / "__init__.py").exists()}
    assert {"core", "html", "rankers", "pruning", "readers", "evaluation"} <= packages


def test_product_code_never_imports_the_tests():
    bad = []
    for folder in ("htmlrag", "eval", "training", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names
                        if n == "tests" or n.startswith("tests.")]
    assert not bad, f"product code importing the tests (move the helper into htmlrag/testing or training/): {bad}"


def private_imports(root: Path = ROOT, modules: dict[str, Path] | None = None,
                    folders: tuple[str, ...] = ("htmlrag", "eval", "training", "scripts")) -> list[str]:
    """``path:line module._name`` for each import of a private name from a module of another package."""
    modules = module_names(root) if modules is None else modules
    own = {path: name for name, path in modules.items()}
    bad = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            importer = own.get(path)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                target = _resolve(node.module, modules)
                if target is None or (importer and package_of(importer) == package_of(target)):
                    continue
                bad += [f"{path.relative_to(root).as_posix()}:{node.lineno} {node.module}.{a.name}"
                        for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return bad


def test_no_private_name_crosses_a_package():
    bad = private_imports()
    assert not bad, f"private names imported from another package (make them public, or move the piece): {bad}"


def test_no_code_under_results():
    code = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "results").rglob("*.py"))
    assert not code, f"code under results/ (move it to scripts/): {code}"


# --- the checks can fail -------------------------------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        path = tmp_path / "htmlrag" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return module_names(tmp_path, {"htmlrag": "htmlrag"})


def test_a_function_local_import_back_up_is_a_cycle_and_a_layering_fault(tmp_path):
    modules = _tree(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/io.py": "def f():\n    from htmlrag.html import parse\n    return parse\n",
        "html/__init__.py": "",
        "html/parse.py": "from htmlrag.core.io import f\n",
    })
    edges = import_edges(modules, tmp_path)
    assert find_cycles(edges) == [["htmlrag.core.io", "htmlrag.html.parse"]]
    assert [v.split(": ", 1)[1] for v in layering_violations(edges)] == [
        "htmlrag.core.io (htmlrag.core) -> htmlrag.html.parse (htmlrag.html)"]


def test_relative_and_type_checking_imports(tmp_path):
    modules = _tree(tmp_path, {
        "__init__.py": "",
        "rankers/__init__.py": "from .bm25 import Bm25\n",
        "rankers/bm25.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from htmlrag.rankers import Bm25\n",
    })
    edges = import_edges(modules, tmp_path)
    assert {(e.source, e.target, e.runtime) for e in edges} == {
        ("htmlrag.rankers", "htmlrag.rankers.bm25", True), ("htmlrag.rankers.bm25", "htmlrag.rankers", False)}
    assert find_cycles(edges) == []  # the TYPE_CHECKING import never runs


def test_an_import_up_or_across_a_layer_is_a_fault():
    up = Edge("htmlrag.app.server", "htmlrag.cli.main", "x.py:1", True)
    assert layering_violations([up]) == ["x.py:1: htmlrag.app.server (htmlrag.app) -> htmlrag.cli.main (htmlrag.cli)"]
    assert layering_violations([Edge("htmlrag.app.server", "htmlrag.evaluation.runs", "x.py:1", True)]) == []
    peers = (("a",), ("b", "c"))
    assert layer_of("b", peers) == layer_of("c", peers) == 1
    assert package_of("htmlrag._compat") == package_of("htmlrag") == "htmlrag"
    assert package_of("htmlrag_bench.eval.systems.build") == "htmlrag_bench.eval"


def test_a_private_name_from_another_package_is_caught(tmp_path):
    modules = _tree(tmp_path, {
        "__init__.py": "",
        "html/__init__.py": "",
        "html/text.py": "_CJK = 'x'\ndef _helper(): ...\n",
        "html/blocktree.py": "from htmlrag.html.text import _helper\n",  # same package: fine
        "rankers/__init__.py": "",
        "rankers/bm25.py": "def f():\n    from htmlrag.html.text import _CJK, __doc__\n",
    })
    assert private_imports(tmp_path, modules, ("htmlrag",)) == ["htmlrag/rankers/bm25.py:2 htmlrag.html.text._CJK"]


def test_the_architecture_page_lists_the_layers_in_this_order():
    """docs/architecture.md describes each package lowest first; its order is the one this test enforces."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## What each package owns and may import", 1)[1].split("\n## ", 1)[0]
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("- **`")]
    assert listed == [p for layer in LAYERS for p in layer]
