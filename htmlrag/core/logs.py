"""Keep other packages' chatter out of our command lines' output.

Libraries log at INFO/DEBUG on their own loggers (``bm25s`` sets its logger to DEBUG when imported and logs
"Building index from IDs objects"), draw download and weight-loading progress bars (transformers'
"Loading weights"), and print advisory messages. In a command line that output buries ours, so
:func:`quiet_third_party` lets through only our own records below WARNING and turns the progress bars and
transformers' advisories off. Warnings and errors from every package still show. Library code never calls
this: it is for entry points (``htmlrag``, ``htmlrag-bench``, ``htmlrag-data``).
"""

from __future__ import annotations

import logging
import os
import sys

#: Logger names (and their children) whose INFO/DEBUG records our command lines show. ``htmlrag`` also
#: covers every ``htmlrag-<tool>`` entry-point logger (``htmlrag-train``, ``htmlrag-paper``, ...).
OURS = ("htmlrag", "htmlrag_bench", "scripts", "quickstart", "__main__")


def is_ours(name: str) -> bool:
    """True for our package loggers, our entry points' ``htmlrag-*`` loggers and the root logger."""
    if name == "root" or name.startswith("htmlrag-"):
        return True
    return any(name == p or name.startswith(p + ".") for p in OURS)


class OursBelowWarning(logging.Filter):
    """Passes every record at WARNING or above, and lower records only from :data:`OURS` loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        return is_ours(record.name)


_FILTER = OursBelowWarning()


def quiet_third_party(verbose: bool = False) -> None:
    """Filter the root logger's handlers with :class:`OursBelowWarning` and switch progress bars and
    transformers' advisories off (``verbose``: keep transformers' warnings). Idempotent; call it after the
    handlers are set up (after ``logging.basicConfig``, or inside a Hydra job)."""
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when huggingface_hub/transformers load
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "warning" if verbose else "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if "huggingface_hub" in sys.modules:
        try:
            from huggingface_hub.utils import disable_progress_bars

            disable_progress_bars()
        except ImportError:  # pragma: no cover - very old huggingface_hub
            pass
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity(logging.WARNING if verbose else logging.ERROR)


def restore() -> None:
    """Undo :func:`quiet_third_party`'s handler filters (for callers that ran a command line in-process,
    e.g. a notebook or a test, and want every package's records again)."""
    for handler in logging.getLogger().handlers:
        handler.removeFilter(_FILTER)
