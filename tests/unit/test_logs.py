"""Our command lines keep other packages' INFO chatter out, and never our own loggers' records."""

from __future__ import annotations

import logging

import pytest

from htmlrag.core import logs


@pytest.mark.parametrize("name", ["htmlrag", "htmlrag.pruning.prune", "htmlrag-train", "htmlrag-paper", "htmlrag-bench-table",
                                  "htmlrag_bench.eval.systems.build", "htmlrag_bench.training.loss", "root", "__main__"])
def test_our_loggers_pass(name: str) -> None:
    assert logs.OursBelowWarning().filter(logging.LogRecord(name, logging.INFO, __file__, 1, "m", None, None))


@pytest.mark.parametrize("name", ["bm25s", "transformers.modeling_utils", "htmlragx", "urllib3", "evaluate"])
def test_other_loggers_below_warning_are_dropped_but_warnings_pass(name: str) -> None:
    f = logs.OursBelowWarning()
    assert not f.filter(logging.LogRecord(name, logging.INFO, __file__, 1, "m", None, None))
    assert f.filter(logging.LogRecord(name, logging.WARNING, __file__, 1, "m", None, None))


def test_restore_takes_the_filter_off() -> None:
    handler = logging.StreamHandler()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        logs.quiet_third_party()
        assert logs._FILTER in handler.filters
        logs.restore()
        assert logs._FILTER not in handler.filters
    finally:
        root.removeHandler(handler)
