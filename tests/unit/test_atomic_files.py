"""Files written whole: :func:`htmlrag.core.io.atomic_file` and every writer built on it. Writers of one path at
once (threads of the web app, jobs sharing a folder) each write a temporary file of their own, so the file
holds one writer's content whole, never a mix and never a failed rename; an error leaves the old file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from htmlrag.core.io import atomic_file, atomic_write
from htmlrag.evaluation.store import atomic_write as store_write
from htmlrag_bench.training.data import write_jsonl
from tests.conftest import ROOT

N = 8
BIG = 400_000  # large enough that writes interleave


def _contents(i: int) -> str:
    return f"writer {i}\n" + (chr(ord("a") + i) * BIG) + "\n"


def _race(write) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(N)

    def run(i: int) -> None:
        start.wait()
        try:
            for _ in range(5):
                write(i)
        except BaseException as exc:  # collected: the test names them
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("writer", ["core", "store", "jsonl"])
def test_threads_writing_one_file_leave_one_writer_whole(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "out" / "file.txt"
    if writer == "core":
        errors = _race(lambda i: atomic_write(path, _contents(i)))
        wanted = {_contents(i) for i in range(N)}
    elif writer == "store":  # the run folders' writer (metrics.json, tables, manifests)
        errors = _race(lambda i: store_write(path, _contents(i)))
        wanted = {_contents(i) for i in range(N)}
    else:  # htmlrag-train-data's sample files
        errors = _race(lambda i: write_jsonl([{"writer": i, "text": _contents(i)}] * 3, path))
        wanted = {(json.dumps({"writer": i, "text": _contents(i)}) + "\n") * 3 for i in range(N)}
    assert errors == []
    assert path.read_text(encoding="utf-8") in wanted
    assert sorted(p.name for p in path.parent.iterdir()) == ["file.txt"]  # no temporary file left


def test_processes_writing_one_file_leave_one_writer_whole(tmp_path: Path) -> None:
    path = tmp_path / "shared.bin"
    code = ("import sys; from htmlrag.core.io import atomic_write\n"
            "for _ in range(20): atomic_write(sys.argv[1], bytes([int(sys.argv[2])]) * 300_000)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(i)], env=env, stderr=subprocess.PIPE)
             for i in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errs
    data = path.read_bytes()
    assert len(data) == 300_000 and len(set(data)) == 1 and data[0] in range(4)
    assert [p.name for p in tmp_path.iterdir()] == ["shared.bin"]


def test_an_error_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "keep.json"
    atomic_write(path, '{"old": true}\n')
    with pytest.raises(RuntimeError, match="stopped"), atomic_file(path) as fh:
        fh.write('{"new": ')
        raise RuntimeError("stopped halfway")
    assert path.read_text() == '{"old": true}\n' and [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_the_new_file_has_the_modes_a_plain_open_gives(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    atomic_write(tmp_path / "atomic.txt", "x")
    assert stat.S_IMODE((tmp_path / "atomic.txt").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_a_bad_mode_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode 'a'"), atomic_file(tmp_path / "f", "a"):
        pass
