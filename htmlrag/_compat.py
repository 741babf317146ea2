"""Old module paths (before the stage packages) still import, for one release, with a DeprecationWarning.

``import htmlrag.prune`` gives :mod:`htmlrag.pruning.prune` and warns. A finder at the end of ``sys.meta_path``
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
    "htmlrag.errors": "htmlrag.core.errors", "htmlrag.logs": "htmlrag.core.logs", "htmlrag.io": "htmlrag.core.io",
    "htmlrag.cache": "htmlrag.core.cache", "htmlrag.redact": "htmlrag.core.redact",
    "htmlrag.models": "htmlrag.core.models", "htmlrag.model_aliases": "htmlrag.core.models.aliases",
    "htmlrag.parse": "htmlrag.html.parse", "htmlrag.encoding": "htmlrag.html.encoding",
    "htmlrag.clean": "htmlrag.html.clean", "htmlrag.lossless": "htmlrag.html.lossless",
    "htmlrag.blocktree": "htmlrag.html.blocktree", "htmlrag.formats": "htmlrag.html.formats",
    "htmlrag.text": "htmlrag.html.text", "htmlrag.chunking": "htmlrag.html.chunking",
    "htmlrag.prune": "htmlrag.pruning.prune", "htmlrag.pipeline": "htmlrag.pruning.pipeline",
    "htmlrag.tokens": "htmlrag.pruning.tokens", "htmlrag.cli_prune": "htmlrag.cli.prune",
    "htmlrag.cli_graph": "htmlrag.cli.graph", "htmlrag.prune_batch": "htmlrag.cli.batch",
    "htmlrag.metrics": "htmlrag.evaluation.scoring.metrics", "htmlrag.evaluate": "htmlrag.evaluation.scoring.loop",
    "htmlrag.results": "htmlrag.evaluation.store", "htmlrag.stats": "htmlrag.evaluation.stats",
    "htmlrag.tables": "htmlrag.evaluation.tables", "htmlrag.summary": "htmlrag.evaluation.summary",
    "htmlrag.superrag.quality": "htmlrag.evaluation.parse_quality",
    "htmlrag.superrag.lines": "htmlrag.superrag.parse.lines",
    "htmlrag.superrag.headings": "htmlrag.superrag.parse.headings",
    "htmlrag.superrag.furniture": "htmlrag.superrag.parse.furniture",
    "htmlrag.superrag.order": "htmlrag.superrag.parse.order", "htmlrag.superrag.tables": "htmlrag.superrag.parse.tables",
    "htmlrag.superrag.figures": "htmlrag.superrag.parse.figures", "htmlrag.superrag.toc": "htmlrag.superrag.parse.toc",
    "htmlrag.superrag.pdfio": "htmlrag.superrag.parse.pdfio", "htmlrag.superrag.model": "htmlrag.superrag.parse.model",
    "htmlrag.superrag.ocr": "htmlrag.superrag.parse.ocr", "htmlrag.superrag.corpus": "htmlrag.superrag.build.corpus",
    "htmlrag.superrag.embed": "htmlrag.superrag.build.embed",
    "htmlrag.superrag.figdesc": "htmlrag.superrag.build.figdesc", "htmlrag.superrag.view": "htmlrag.app.pdfview",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(self.new)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new one, already executed; importlib has just set its ``__spec__`` to the alias's:
        put the real one back (``find_spec``, ``reload`` and the code fingerprint read it)."""
        module.__spec__ = self.real_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        return importlib.machinery.ModuleSpec(name, _AliasLoader(new)) if new else None


def install() -> None:
    """Put the alias finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
