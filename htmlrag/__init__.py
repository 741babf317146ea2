"""htmlrag: lossless HTML cleaning, block trees and block-tree pruning for retrieval-augmented generation.

The library takes plain arguments (no configuration framework). Heavy parts (embedding and generative
rankers, readers) import their dependencies lazily, so cleaning and BM25 pruning need no torch.
"""

from __future__ import annotations

from htmlrag.core.errors import BudgetError, HtmlRagError, InputError
from htmlrag.html.blocktree import Block, BlockTree, build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.lossless import check_lossless

__all__ = [
    "Block",
    "BlockTree",
    "BudgetError",
    "HtmlRagError",
    "InputError",
    "build_block_tree",
    "check_lossless",
    "clean_html",
]
__version__ = "0.1.0"
