"""GPU seconds of the cost ledger: CUDA events around a stage measure the GPU's time (skipped without CUDA)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_clock_measures_gpu_seconds_with_cuda_events() -> None:
    from htmlrag.core.clock import Clock, cuda_in_use

    x = torch.randn(4096, 4096, device="cuda")  # initialises CUDA in this process
    assert cuda_in_use()
    with Clock() as clock:
        for _ in range(20):
            x = x @ x
            x = x / x.norm()
    assert clock.gpu_seconds is not None and clock.gpu_seconds > 0
    # the events bracket the queued work: the GPU time cannot exceed the wall time by more than timer noise
    assert clock.gpu_seconds <= clock.seconds + 0.01
    with Clock(gpu=False) as off:
        x = x @ x
    assert off.gpu_seconds is None
