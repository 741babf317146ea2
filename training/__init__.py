"""Pruner training: samples in the generative pruner's prompt format (:mod:`htmlrag_bench.training.samples`,
:mod:`htmlrag_bench.training.build_data`), their loading and tokenization (:mod:`htmlrag_bench.training.data`), and the Hydra entry point
``htmlrag-train`` with one linear :func:`htmlrag_bench.training.train.train` (recipes in ``conf/train/``, hardware in
``conf/accelerate/``)."""
