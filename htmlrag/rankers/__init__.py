"""Block rankers: question + block trees -> one score per block (higher is kept first)."""

from htmlrag.rankers.base import Ranker

__all__ = ["Ranker"]
