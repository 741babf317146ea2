"""The wiring from a composed config to the systems that build contexts: rankers, pruners, refiners, readers,
SuperRAG graph systems. This folder shapes rows: it is part of the run id (:mod:`htmlrag.core.fingerprint`)."""
