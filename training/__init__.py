"""Pruner training: samples in the generative pruner's prompt format (:mod:`training.samples`,
:mod:`training.build_data`), their loading and tokenization (:mod:`training.data`), and the Hydra entry point
``htmlrag-train`` with one linear :func:`training.train.train` (recipes in ``conf/train/``, hardware in
``conf/accelerate/``)."""
