"""Pruning to a token budget: token counting, the greedy budget walk over ranked blocks, and the two-step
pipeline (coarse embedding step, fine generative step).

Imports: :mod:`htmlrag.core`, :mod:`htmlrag.html`, :mod:`htmlrag.rankers` (through the ``Ranker`` protocol).
"""
