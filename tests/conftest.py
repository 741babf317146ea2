"""Shared test set-up: never reach the network; find the real data in ../shared/data or skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

if os.environ.get("HTMLRAG_TEST_BF16_CPU") == "1":
    # Act as a CPU with AVX512-BF16 (as many CI runners are): the "auto" dtypes then pick bfloat16, so tests
    # that assume float32 numerics without asking for them fail here too (.ci/run runs the embedding tests so).
    import torch

    torch.cpu._is_avx512_bf16_supported = lambda: True

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HTMLRAG_SHARED_DATA", ROOT.parent / "shared" / "data"))
SAMPLE_PAGES = ROOT / "data" / "pages"


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; skips the calling test with a reason when it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p} (a fresh clone has no ../shared/data)")
    return p


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (README's test command): one worker per usable core, but at most 8 and at most one per
    3 GiB of memory, since a worker holds torch and the subprocess runs it starts (``--dist loadfile`` in
    pyproject keeps each file's module fixtures in one worker)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):
        gib = 3.0 * cores
    return max(1, min(cores, 8, int(gib // 3)))


@pytest.fixture
def shared() -> Path:
    """The ../shared/data folder, or skip."""
    return shared_path()


@pytest.fixture(autouse=True)
def _no_leftover_log_filters():
    """A command line run in-process (``main([...])``) quiets other packages' INFO records by filtering the
    root handlers, pytest's capture handlers among them; take that filter off after each test so a later
    test's ``caplog`` sees every record."""
    yield
    from htmlrag.core.logs import restore

    restore()


def quickstart_run(tmp: Path) -> Path:
    """A small real run of the quickstart experiment (fake reader, two budgets, contexts saved) under ``tmp``:
    the run folder. For tests that check, tamper with or rewrite a finished run."""
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", "experiment=quickstart", "reader=fake",
                          "metric=short", "run.save_contexts=true", "run.progress=false", "pruner.budgets=[64,128]",
                          f"paths.results={tmp / 'r'}", f"paths.cache={tmp / 'c'}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (run,) = [p.parent for p in (tmp / "r" / "quickstart").glob("*/metrics.json")]
    return run
