"""Checked numeric options for every command line (``htmlrag``, its ``prune``/``graph``/``serve`` commands, and the
harness's and training's commands).

``argparse`` calls these as the option's ``type``: a value that is not a number, is NaN or infinite, or lies
outside the option's range is refused at parsing with ``<prog>: error: argument --budget: must be an integer
>= 1, got '0'`` and exit status 2 -- before any model or file is loaded, and never blamed on a later stage.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _range_text(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"within {lo:g}-{hi:g}" if not lo_open else f"> {lo:g} and <= {hi:g}"
    if lo is not None:
        return f"> {lo:g}" if lo_open else f">= {lo:g}"
    return f"<= {hi:g}" if hi is not None else ""


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An option type: an integer within ``[lo, hi]`` (either bound may be open-ended)."""
    rng = _range_text(lo, hi)
    want = f"an integer {rng}" if rng else "an integer"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> Callable[[str], float]:
    """An option type: a finite number within ``[lo, hi]`` (``lo_open``: strictly above ``lo``); NaN and
    infinities are refused."""
    rng = _range_text(lo, hi, lo_open)
    want = f"a finite number {rng}" if rng else "a finite number"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if not math.isfinite(value) or (lo is not None and (value <= lo if lo_open else value < lo)) \
                or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def workers(text: str) -> str | int:
    """``--workers``: ``auto`` or an integer >= 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return integer(1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer >= 1, got {text!r}") from None


workers.__name__ = "workers"
