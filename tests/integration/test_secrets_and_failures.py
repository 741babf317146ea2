"""The real ``htmlrag-bench`` in a subprocess against a localhost endpoint that echoes the key (401 body, 5xx
echoing the Authorization header, a 400 per request, an answer holding it; the reader and the LLM judge): the
key occurs nowhere in results/, caches, logs, stdout or stderr. And failures fail fast: nothing listening ->
a clear error within seconds and a non-zero exit; failed rows -> non-zero exit unless run.allow_errors, and
a rerun recomputes them; garbage cache files are set aside, not turned into failed rows."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.openai_stub import EchoStub, dead_url, serve
from tests.integration._runs import command, make_questions, overrides, rows, run_dir

KEY = "sk-live-7Rq2ZxV9DoNotLeak-a83Kd0pQ4mWnL1x"
OTHER_KEY = "c0ffee42deadbeef1337feedface9abc"  # not sk-shaped, in a variable whose name says nothing


def _openai(url_env: str = "STUB_BASE_URL", key_env: str = "STUB_API_KEY", *extra: str) -> list[str]:
    return ["reader=openai", "reader.model=stub-model", f"reader.base_url_env={url_env}",
            f"reader.api_key_env={key_env}", "reader.backoff=0.01", "reader.max_retries=2", *extra]


def _run(args: list[str], env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})


def _assert_nowhere(secret: str, out: subprocess.CompletedProcess, *folders: Path) -> None:
    for frag in (secret, secret[:16], secret[-16:]):
        assert frag not in out.stdout and frag not in out.stderr, (frag, out.stderr[-3000:])
        for folder in folders:
            for f in folder.rglob("*"):
                if f.is_file():
                    assert frag.encode() not in f.read_bytes(), (frag, f)


@pytest.mark.parametrize(("mode", "key_env", "key", "rc"), [
    ("echo401", "STUB_API_KEY", KEY, 1),      # the key is refused: stop at once
    ("echo500", "STUB_API_KEY", KEY, 1),      # the endpoint keeps failing: stop after N attempts in a row
    ("echo400", "STUB_SVC_X", OTHER_KEY, 1),  # every request fails: rows saved with redacted errors, exit 1
    ("echo200", "STUB_API_KEY", KEY, 0),      # answers quote the key: redacted in rows and caches
])
def test_an_echoing_endpoint_never_leaks_the_key(tmp_path: Path, mode: str, key_env: str, key: str, rc: int) -> None:
    q = make_questions(tmp_path / "data", 3)
    stub = EchoStub(mode=mode)
    with serve(stub) as url:
        out = _run(overrides(q, tmp_path / "results", tmp_path / "cache", *_openai("STUB_BASE_URL", key_env)),
                   {"STUB_BASE_URL": url, key_env: key})
    assert stub.requests > 0
    assert out.returncode == rc, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    _assert_nowhere(key, out, tmp_path)
    if mode == "echo400":
        saved = rows(tmp_path / "results")
        assert len(saved) == 3 and all("[REDACTED]" in r["systems"]["htmlrag"]["error"] for r in saved)
    if mode in ("echo401", "echo500"):
        assert "htmlrag-bench: error: reader stub-model" in out.stderr


def test_the_judge_never_leaks_the_key(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 2)
    judge = ["judge=docbench_gpt4", "judge.reader.model=stub-judge", "judge.reader.base_url_env=STUB_BASE_URL",
             "judge.reader.api_key_env=STUB_API_KEY", "judge.reader.backoff=0.01", "judge.reader.max_retries=1"]
    for mode in ("echo500", "echo400", "echo200"):
        stub = EchoStub(mode=mode)
        with serve(stub) as url:
            out = _run(overrides(q, tmp_path / mode, tmp_path / f"cache-{mode}", *judge),
                       {"STUB_BASE_URL": url, "STUB_API_KEY": KEY})
        assert stub.requests > 0, out.stderr[-3000:]
        _assert_nowhere(KEY, out, tmp_path)
        assert (out.returncode == 1) == (mode == "echo500"), (mode, out.stderr[-3000:])


def test_nothing_listening_fails_fast_then_a_rerun_completes(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 4)
    args = overrides(q, tmp_path / "results", tmp_path / "cache", "reader=openai", "reader.model=stub-model",
                     "reader.base_url_env=STUB_BASE_URL", "reader.api_key_env=STUB_API_KEY")  # default retries
    t0 = time.monotonic()
    out = _run(args, {"STUB_BASE_URL": dead_url(), "STUB_API_KEY": KEY})
    took = time.monotonic() - t0
    assert out.returncode == 1 and took < 60, (took, out.stderr[-3000:])
    assert "failed 8 attempts in a row (last: ConnectError)" in out.stderr and "Traceback" not in out.stderr
    pred = list((tmp_path / "results").glob("default/*/predictions.jsonl"))
    assert not pred or pred[0].read_text() == ""            # no row saved as a failure
    with serve(EchoStub()) as url:
        again = _run(args, {"STUB_BASE_URL": url, "STUB_API_KEY": KEY})
    assert again.returncode == 0, again.stderr[-3000:]
    assert [r["id"] for r in rows(tmp_path / "results")] == [f"q{i:03d}" for i in range(4)]
    assert not any(r["systems"]["htmlrag"].get("error") for r in rows(tmp_path / "results"))


def test_failed_rows_exit_non_zero_and_are_recomputed(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 4)
    args = overrides(q, tmp_path / "results", tmp_path / "cache", *_openai())
    stub = EchoStub(fail_on="variant 2")
    with serve(stub) as url:
        env = {"STUB_BASE_URL": url, "STUB_API_KEY": KEY}
        out = _run(args, env)
        assert out.returncode == 1 and "1 of 4 examples failed (first: q002" in out.stderr, out.stderr[-3000:]
        assert "run.allow_errors=true" in out.stderr
        metrics = json.loads((run_dir(tmp_path / "results") / "metrics.json").read_text())
        assert metrics["systems"]["htmlrag"]["n_errors"] == 1   # results are written all the same
        allowed = _run([*args, "run.allow_errors=true"], env)
        assert allowed.returncode == 0  # accepted, still failing; the caption says so
        assert "Error rows (not scored): cleaned 1, htmlrag 1 of 4 examples" in allowed.stdout + allowed.stderr
        old_name = _run([*args, "run.allow_failures=true"], env)  # the former name still works, with a warning
        assert old_name.returncode == 0 and "former name of run.allow_errors" in old_name.stdout + old_name.stderr
        stub.fail_on = None
        fixed = _run(args, env)                                  # the default rerun recomputes the failed row
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert "3 saved before" in fixed.stderr + fixed.stdout
    saved = {r["id"]: r for r in rows(tmp_path / "results")}
    assert len(saved) == 4 and saved["q002"]["systems"]["htmlrag"]["response"] == "Margaret Ellis"


def test_garbage_cache_files_are_set_aside(tmp_path: Path) -> None:
    q = make_questions(tmp_path / "data", 3)
    cache = tmp_path / "cache"
    cache.mkdir()
    names = ("contexts.sqlite", "pages.sqlite", "responses.sqlite")
    for name in names:
        (cache / name).write_bytes(os.urandom(3000))
    out = _run(overrides(q, tmp_path / "results", cache), {})
    assert out.returncode == 0, out.stderr[-3000:]
    saved = rows(tmp_path / "results")
    assert len(saved) == 3 and not any(r["error"] or any(s["error"] for s in r["systems"].values()) for r in saved)
    for name in names:
        assert str(cache / name) in out.stdout + out.stderr and list(cache.glob(f"{name}.corrupt-*")), name


#: Runs the real entry point with one fault injected: the row writer stops for 20 ms in the middle of every row
#: (as a big row written in several system calls, or a writer descheduled mid-line, would), so that readers
#: running beside it do meet half-written rows.
SLOW_WRITER = """
import json, os, sys, time
import htmlrag.evaluation.store as results

def append(self, row):
    line = json.dumps(row, ensure_ascii=False, sort_keys=True) + "\\n"
    self._fh.write(line[: len(line) // 2])
    self._fh.flush()
    time.sleep(0.02)
    self._fh.write(line[len(line) // 2 :])
    self._fh.flush()
    os.fsync(self._fh.fileno())

results.RowWriter.append = append
from htmlrag_bench.eval.app import main
main()
"""


def test_a_reader_loop_beside_a_100_question_run_loses_nothing(tmp_path: Path) -> None:
    import sys

    from htmlrag.evaluation.store import RunStore

    q = make_questions(tmp_path / "data", 100)
    args = overrides(q, tmp_path / "results", tmp_path / "cache", "run.chunk_size=1")
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=err)
        reads = torn = 0
        while proc.poll() is None:  # what a notebook, a status check or a second run's done-ids check does
            found = list((tmp_path / "results").glob("default/*/predictions.jsonl"))
            if found:
                data = found[0].read_bytes()
                torn += bool(data) and not data.endswith(b"\n")
                RunStore(tmp_path / "results", "default", found[0].parent.name).done_ids()
                reads += 1
    assert proc.returncode == 0, (tmp_path / "stderr.txt").read_text()[-3000:]
    assert reads > 50 and torn > 5, f"the reader loop did not meet half-written rows ({reads} reads, {torn} torn)"
    assert [r["id"] for r in rows(tmp_path / "results")] == [f"q{i:03d}" for i in range(100)]
    metrics = json.loads((run_dir(tmp_path / "results") / "metrics.json").read_text())
    assert metrics["systems"]["htmlrag"]["n"] == 100
