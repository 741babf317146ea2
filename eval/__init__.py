"""Entry points of the evaluation harness: the Hydra app ``htmlrag-bench`` (:mod:`htmlrag_bench.eval.app`), the typed
config schemas (:mod:`htmlrag_bench.eval.schemas`) and the re-table command ``htmlrag-bench-table`` (:mod:`htmlrag_bench.eval.table`)."""
