"""htmlrag: lossless HTML cleaning, block trees and block-tree pruning for retrieval-augmented generation.

The library takes plain arguments (no configuration framework). Its packages are the stages of the pipeline,
each importing only the ones below it (docs/architecture.md; tests/unit/test_architecture.py), lowest first::

    core < html < rankers < pruning < readers < factory < baselines < docqa < superrag < data < evaluation
    < testing < app < cli

Heavy parts (embedding and generative rankers, readers) import their dependencies lazily, so cleaning and BM25
pruning need no torch. The most used names are importable from here.
"""

from __future__ import annotations

import importlib
from typing import Any

from htmlrag import _compat
from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.html.blocktree import Block, BlockTree, build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.lossless import check_lossless

_compat.install()

#: name -> module, imported on first use (numpy / tokenizers stay out of ``import htmlrag``)
_LAZY = {"prune_to_budget": "htmlrag.pruning.prune", "PruneResult": "htmlrag.pruning.prune",
         "HtmlRagPipeline": "htmlrag.pruning.pipeline", "load_tokenizer": "htmlrag.pruning.tokens"}

__all__ = [
    "Block",
    "BlockTree",
    "BudgetError",
    "HtmlRagError",
    "HtmlRagPipeline",
    "InputError",
    "PruneResult",
    "build_block_tree",
    "check_lossless",
    "clean_html",
    "load_tokenizer",
    "prune_to_budget",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'htmlrag' has no attribute {name!r}")
