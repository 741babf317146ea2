"""Old module paths (before the stage packages) still import, for one release, with a DeprecationWarning.

``import htmlrag.pruning.prune`` gives :mod:`htmlrag.pruning.prune` and warns. A finder at the end of ``sys.meta_path``
answers only for the names in :data:`MOVED`, after every real module has had its chance.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old module -> new module
MOVED = {
    "htmlrag.core.errors": "htmlrag.core.errors", "htmlrag.core.logs": "htmlrag.core.logs", "htmlrag.core.io": "htmlrag.core.io",
    "htmlrag.core.cache": "htmlrag.core.cache", "htmlrag.core.redact": "htmlrag.core.redact",
    "htmlrag.core.models": "htmlrag.core.models", "htmlrag.core.models.aliases": "htmlrag.core.models.aliases",
    "htmlrag.html.parse": "htmlrag.html.parse", "htmlrag.html.encoding": "htmlrag.html.encoding",
    "htmlrag.html.clean": "htmlrag.html.clean", "htmlrag.html.lossless": "htmlrag.html.lossless",
    "htmlrag.html.blocktree": "htmlrag.html.blocktree", "htmlrag.html.formats": "htmlrag.html.formats",
    "htmlrag.html.text": "htmlrag.html.text", "htmlrag.html.chunking": "htmlrag.html.chunking",
    "htmlrag.pruning.prune": "htmlrag.pruning.prune", "htmlrag.pruning.pipeline": "htmlrag.pruning.pipeline",
    "htmlrag.pruning.tokens": "htmlrag.pruning.tokens", "htmlrag.cli.prune": "htmlrag.cli.prune",
    "htmlrag.cli.graph": "htmlrag.cli.graph", "htmlrag.cli.batch": "htmlrag.cli.batch",
    "htmlrag.evaluation.scoring.metrics": "htmlrag.evaluation.scoring.metrics", "htmlrag.evaluation.scoring.loop": "htmlrag.evaluation.scoring.loop",
    "htmlrag.evaluation.store": "htmlrag.evaluation.store", "htmlrag.evaluation.stats": "htmlrag.evaluation.stats",
    "htmlrag.evaluation.tables": "htmlrag.evaluation.tables", "htmlrag.evaluation.summary": "htmlrag.evaluation.summary",
    "htmlrag.evaluation.parse_quality": "htmlrag.evaluation.parse_quality",
    "htmlrag.superrag.parse.lines": "htmlrag.superrag.parse.lines",
    "htmlrag.superrag.parse.headings": "htmlrag.superrag.parse.headings",
    "htmlrag.superrag.parse.furniture": "htmlrag.superrag.parse.furniture",
    "htmlrag.superrag.parse.order": "htmlrag.superrag.parse.order", "htmlrag.superrag.parse.tables": "htmlrag.superrag.parse.tables",
    "htmlrag.superrag.parse.figures": "htmlrag.superrag.parse.figures", "htmlrag.superrag.parse.toc": "htmlrag.superrag.parse.toc",
    "htmlrag.superrag.parse.pdfio": "htmlrag.superrag.parse.pdfio", "htmlrag.superrag.parse.model": "htmlrag.superrag.parse.model",
    "htmlrag.superrag.parse.ocr": "htmlrag.superrag.parse.ocr", "htmlrag.superrag.build.corpus": "htmlrag.superrag.build.corpus",
    "htmlrag.superrag.build.embed": "htmlrag.superrag.build.embed",
    "htmlrag.superrag.build.figdesc": "htmlrag.superrag.build.figdesc", "htmlrag.app.pdfview": "htmlrag.app.pdfview",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=3)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:  # the module is the new one, already executed
        return None


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        return importlib.machinery.ModuleSpec(name, _AliasLoader(new)) if new else None


def install() -> None:
    """Put the alias finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
