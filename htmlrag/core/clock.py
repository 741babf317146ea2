"""Timing a stage: wall seconds, and GPU seconds when CUDA is in use.

**GPU seconds** are measured with CUDA events (``torch.cuda.Event(enable_timing=True)``) recorded on the
current stream at the start and the end of the stage: the time the GPU's stream took from the first event to
the second, waited for with ``Event.synchronize()`` when the stage ends. They are measured only when torch is
already imported and CUDA has been initialised in this process (a CPU run never loads torch for this), and are
``None`` otherwise. A stage on one GPU therefore bills its GPU-seconds once; multi-GPU stages (tensor
parallelism) bill the current device's stream only.
"""

from __future__ import annotations

import sys
import time
from typing import Any


def cuda_in_use() -> bool:
    """torch is imported, CUDA is available and initialised in this process."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    except Exception:  # a torch build without CUDA support
        return False


class Clock:
    """A context manager timing one stage: :attr:`seconds` (wall, ``time.perf_counter``) and
    :attr:`gpu_seconds` (CUDA events, ``None`` without CUDA; see the module docstring).

    Example::

        with Clock() as c:
            run_stage()
        c.seconds, c.gpu_seconds
    """

    def __init__(self, gpu: bool | None = None) -> None:
        self.gpu = cuda_in_use() if gpu is None else gpu
        self.seconds = 0.0
        self.gpu_seconds: float | None = None
        self._t0 = 0.0
        self._events: tuple[Any, Any] | None = None

    def __enter__(self) -> Clock:
        if self.gpu:
            import torch

            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            self._events = (start, end)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._events is not None:
            start, end = self._events
            end.record()
            end.synchronize()
            self.gpu_seconds = start.elapsed_time(end) / 1000.0
        self.seconds = time.perf_counter() - self._t0


def add_usage(total: dict[str, dict[str, int]], model: str, tokens_in: int = 0, tokens_out: int = 0) -> None:
    """Add a model's tokens to a ledger ``{model: {"input": n, "output": m}}`` (in place)."""
    if not model:
        return
    rec = total.setdefault(model, {"input": 0, "output": 0})
    rec["input"] += int(tokens_in)
    rec["output"] += int(tokens_out)


def usage_of(objects: Any) -> dict[str, dict[str, int]]:
    """A snapshot ``{model: {"input", "output"}}`` of the cumulative ``token_usage`` counters of ``objects``
    (rankers and refiners that run a model keep one; objects without it are skipped)."""
    out: dict[str, dict[str, int]] = {}
    for obj in objects:
        usage = getattr(obj, "token_usage", None)
        if isinstance(usage, dict):
            add_usage(out, str(getattr(obj, "usage_name", "") or type(obj).__name__), usage.get("input", 0),
                      usage.get("output", 0))
    return out


def usage_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``after - before`` per model (models with no tokens left out)."""
    out = {}
    for model, rec in after.items():
        b = before.get(model, {})
        d = {k: int(rec.get(k, 0)) - int(b.get(k, 0)) for k in ("input", "output")}
        if d["input"] or d["output"]:
            out[model] = d
    return out
