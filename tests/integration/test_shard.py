"""Sharding over processes (RANK/WORLD_SIZE, as set by torchrun / accelerate launch): the merged result of
two CPU processes equals a single-process run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration._runs import command, make_questions, overrides, rows, run_app, run_dir, strip_timing


def _check_equal(single: Path, sharded: Path) -> None:
    assert (run_dir(single) / "metrics.json").read_bytes() == (run_dir(sharded) / "metrics.json").read_bytes()
    assert [strip_timing(r) for r in rows(single)] == [strip_timing(r) for r in rows(sharded)]
    assert not list((run_dir(sharded) / "shards").glob("*"))


@pytest.mark.slow
def test_two_processes_by_env_equal_one(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 9)
    run_app(*overrides(q, tmp_path / "single", tmp_path / "c1"))
    args = overrides(q, tmp_path / "sharded", tmp_path / "c2")
    procs = [subprocess.Popen(command(*args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "RANK": str(r), "WORLD_SIZE": "2"}) for r in (1, 0)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert "5 evaluated" in "".join(outs[1]) and "4 evaluated" in "".join(outs[0])  # rank 0: 0,2,4,6,8; rank 1: 1,3,5,7
    _check_equal(tmp_path / "single", tmp_path / "sharded")


@pytest.mark.slow
def test_torchrun_two_cpu_processes(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed.run")
    q = make_questions(tmp_path / "data", 6)
    run_app(*overrides(q, tmp_path / "single", tmp_path / "c1"))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          "-m", "htmlrag_bench.eval.app", *overrides(q, tmp_path / "sharded", tmp_path / "c2")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rank 0 of 2" in out.stdout + out.stderr
    _check_equal(tmp_path / "single", tmp_path / "sharded")
