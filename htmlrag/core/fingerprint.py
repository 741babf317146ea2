"""Code fingerprints: one SHA-256 over the source of a declared set of packages.

What shapes what is declared here, once, by package (a folder and everything under it, or one module), never by
excluding file names. A run id, a cache key or a corpus folder holds the fingerprint of the set that can change
it, so editing a web-app view, a command line or a table writer changes no run id and misses no cache, while
editing a ranker, a metric or the harness's wiring of systems changes every id it can affect.

Presentation and storage (:mod:`htmlrag.app`, :mod:`htmlrag.cli.main`, :mod:`htmlrag.evaluation` outside
``scoring/``, :mod:`htmlrag.core` outside ``models/`` and ``answers``, the harness's entry points and table commands) are in
no set.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path

#: Code that can change a row of an HtmlRAG run: model loading, answer normalisation, the HTML stage, rankers,
#: pruning, readers, baselines, dataset loaders, document-QA items and metrics, the metric registry and the
#: evaluation loop, and the harness's wiring from a config to systems.
ROWS: tuple[str, ...] = (
    "htmlrag.core.models", "htmlrag.core.answers", "htmlrag.html", "htmlrag.rankers", "htmlrag.pruning",
    "htmlrag.readers", "htmlrag.baselines", "htmlrag.data", "htmlrag.docqa", "htmlrag.evaluation.scoring",
    "htmlrag_bench.eval.systems",
)
#: ... and of a run over PDFs (SuperRAG systems, PDF datasets): all of SuperRAG as well.
PDF_ROWS: tuple[str, ...] = (*ROWS, "htmlrag.superrag")
#: Code that shapes a parsed PDF (the parse cache).
PDF_PARSE: tuple[str, ...] = ("htmlrag.superrag.parse",)
#: Code that shapes a built corpus (graph, chunk texts, embeddings, indexes).
PDF_CORPUS: tuple[str, ...] = (*PDF_PARSE, "htmlrag.core.models", "htmlrag.superrag.build", "htmlrag.superrag.graph",
                               "htmlrag.superrag.index")
#: The per-example metric code (``htmlrag-paper verify`` tells rows that changed from metrics that did).
METRICS: tuple[str, ...] = ("htmlrag.core.answers", "htmlrag.evaluation.scoring.metrics",
                             "htmlrag.evaluation.scoring.qa", "htmlrag.docqa.items", "htmlrag.docqa.metrics")


def locate(name: str) -> list[Path]:
    """The source files of package or module ``name`` (none when it is not installed)."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.py")
                      if "__pycache__" not in p.parts)
    return [Path(spec.origin)] if spec.origin and spec.origin.endswith(".py") else []


def fingerprint(packages: Sequence[str], *, files: Callable[[str], list[Path]] | None = None) -> str:
    """SHA-256 (16 hex digits) over the relative path and bytes of every source file of ``packages``.

    Args:
        packages: package or module names (e.g. :data:`ROWS`).
        files: how to list a package's files (default :func:`locate`; tests pass a copy of the tree).
    """
    if files is None:
        return _cached(tuple(packages))
    return _digest(tuple(packages), files)


@functools.lru_cache(maxsize=16)
def _cached(packages: tuple[str, ...]) -> str:
    return _digest(packages, locate)


def _digest(packages: tuple[str, ...], files: Callable[[str], list[Path]]) -> str:
    h = hashlib.sha256()
    for name in sorted(set(packages)):
        paths = files(name)
        base = _common_root(paths)
        for path in paths:
            h.update(f"{name}:{path.relative_to(base).as_posix() if base else path.name}".encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _common_root(paths: list[Path]) -> Path | None:
    if not paths:
        return None
    if len(paths) == 1:
        return paths[0].parent
    parts = [p.parts for p in paths]
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return Path(*common)
