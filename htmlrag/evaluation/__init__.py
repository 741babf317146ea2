"""Evaluation: scoring (:mod:`htmlrag.evaluation.scoring`: the metric registry and the evaluation loop, which
shape rows), and what reads rows afterwards: statistics, summaries, paper-style tables, the run store and the
one reader of run folders (:mod:`htmlrag.evaluation.runs`).

Imports: any package below (core, html, rankers, pruning, readers, factory, baselines, docqa, superrag, data).
Only ``scoring/`` is part of the run id.
"""
