"""Entry points of the evaluation harness: the Hydra app ``htmlrag-bench`` (:mod:`eval.app`), the typed
config schemas (:mod:`eval.schemas`) and the re-table command ``htmlrag-bench-table`` (:mod:`eval.table`)."""
