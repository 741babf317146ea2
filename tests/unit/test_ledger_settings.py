"""The cost ledger's clock and token counters, the metric settings against the library's defaults, and the
MLflow metric names."""

from __future__ import annotations

import sys
import time

from htmlrag.core.clock import Clock, add_usage, cuda_in_use, usage_delta, usage_of
from htmlrag.evaluation.intervals import IntervalSettings


def test_clock_wall_seconds_and_no_gpu_without_cuda() -> None:
    with Clock(gpu=False) as c:
        time.sleep(0.02)
    assert c.seconds >= 0.02 and c.gpu_seconds is None
    if "torch" not in sys.modules:
        assert not cuda_in_use()  # never imports torch to find out


def test_usage_counters() -> None:
    class Model:
        usage_name = "m"

        def __init__(self) -> None:
            self.token_usage = {"input": 0, "output": 0}

    m = Model()
    before = usage_of([m, object()])
    m.token_usage["input"] += 120
    m.token_usage["output"] += 3
    assert usage_delta(before, usage_of([m])) == {"m": {"input": 120, "output": 3}}
    assert usage_delta(usage_of([m]), usage_of([m])) == {}
    ledger: dict = {}
    add_usage(ledger, "m", 5, 1)
    add_usage(ledger, "m", 5)
    assert ledger == {"m": {"input": 10, "output": 1}}


def test_metric_schema_defaults_are_the_librarys() -> None:
    from htmlrag_bench.eval.schemas import MetricConfig, interval_settings

    lib = IntervalSettings()
    schema = MetricConfig()
    assert (schema.correction, schema.confidence, schema.n_resamples, schema.ci_method, schema.power) == (
        lib.correction, lib.confidence, lib.n_resamples, lib.method, lib.power)

    class Node:
        confidence, n_resamples, ci_method, bootstrap_seed, correction, power = 0.9, 99, "bca", 5, "none", 0.9

    assert interval_settings(Node()) == IntervalSettings(0.9, 99, "bca", 5, "none", 0.9)


def test_mlflow_metric_names_never_nest() -> None:
    from htmlrag_bench.eval.loggers import flat_metrics

    summary = {"systems": {"bm25@1024": {"metrics": {"em": 0.5, "tokens": 900.0}, "intervals": {"em": [0.4, 0.6]}}},
               "frontier": {"systems": {"bm25": {"em": {"auc": 0.45}}}}}
    keys = flat_metrics(summary)
    assert keys == {"bm25_1024/em": 0.5, "bm25_1024/tokens": 900.0, "bm25_1024/em_ci_low": 0.4,
                    "bm25_1024/em_ci_high": 0.6, "bm25/em_auc": 0.45}
    names = list(keys)
    assert not any(b.startswith(a + "/") for a in names for b in names)  # a file store keeps each as a file
