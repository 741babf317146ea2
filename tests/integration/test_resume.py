"""Kill -9 a run in the middle, rerun: no lost or duplicated rows, metrics.json byte-identical to an
uninterrupted run; two runs of one config give byte-identical metrics.json."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration._runs import command, make_questions, overrides, rows, run_app, run_dir, strip_timing

N = 24


@pytest.mark.slow
def test_kill_9_then_resume(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", N)
    # slow fake reader (0.1 s per answer, 2 systems) and small chunks so that rows land while we watch
    slow = overrides(q, tmp_path / "killed", tmp_path / "cache_killed", "reader.delay=0.1", "run.chunk_size=2")
    proc = subprocess.Popen(command(*slow), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ}, start_new_session=True)
    deadline = time.monotonic() + 120
    pred = None
    while time.monotonic() < deadline:
        found = list((tmp_path / "killed").glob("default/*/predictions.jsonl"))
        if found and len(found[0].read_bytes().splitlines()) >= 6:
            pred = found[0]
            break
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
        time.sleep(0.05)
    assert pred is not None, "the run wrote no rows in time"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = len(pred.read_bytes().splitlines())
    assert 6 <= saved < N, "killed too late to test resuming"
    assert not (pred.parent / "metrics.json").exists()

    out = run_app(*slow)
    m = re.search(r"(\d+) evaluated \((\d+) saved before\)", out.stderr + out.stdout)
    assert m, out.stderr[-2000:]
    evaluated, before = int(m.group(1)), int(m.group(2))
    assert before >= 6 and evaluated + before == N          # nothing recomputed that was saved
    resumed = rows(tmp_path / "killed")
    assert [r["id"] for r in resumed] == [f"q{i:03d}" for i in range(N)]   # none lost, none duplicated

    fresh = overrides(q, tmp_path / "fresh", tmp_path / "cache_fresh", "reader.delay=0.1", "run.chunk_size=2")
    run_app(*fresh)
    a = (run_dir(tmp_path / "killed") / "metrics.json").read_bytes()
    b = (run_dir(tmp_path / "fresh") / "metrics.json").read_bytes()
    assert a == b
    assert [strip_timing(r) for r in resumed] == [strip_timing(r) for r in rows(tmp_path / "fresh")]
    assert run_dir(tmp_path / "killed").name == run_dir(tmp_path / "fresh").name  # same config, same run id


def test_two_runs_byte_identical_and_rerun_is_a_noop(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 6)
    run_app(*overrides(q, tmp_path / "a", tmp_path / "cache_a"))
    run_app(*overrides(q, tmp_path / "b", tmp_path / "cache_b"))
    ma = (run_dir(tmp_path / "a") / "metrics.json").read_bytes()
    assert ma == (run_dir(tmp_path / "b") / "metrics.json").read_bytes()
    out = run_app(*overrides(q, tmp_path / "a", tmp_path / "cache_a"))
    assert "0 evaluated (6 saved before)" in out.stderr + out.stdout
    assert (run_dir(tmp_path / "a") / "metrics.json").read_bytes() == ma
    assert len(rows(tmp_path / "a")) == 6
