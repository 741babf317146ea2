"""The real ``htmlrag-bench`` on a bad dataset file: Hydra builds the loader, and wraps what it raises; the user
still gets one line naming the file, the line and the problem (exit 1, no traceback), and the run's log file
names no folder of this machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE_PAGES
from tests.integration._runs import command, overrides

ROW = {"id": "q0", "question": "Who designed Harrow Point Lighthouse?", "answers": ["Margaret Ellis"],
       "pages": [str(SAMPLE_PAGES / "lighthouse.html")]}
CASES = {
    "duplicate id": ([ROW, ROW], "duplicate"),
    "question a number": ([ROW, {**ROW, "id": "q1", "question": 5}], "questions.jsonl:2: 'question' must be"),
    "pages a string": ([ROW, {**ROW, "id": "q1", "pages": "lighthouse.html"}], "questions.jsonl:2: 'pages' must"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_dataset_is_one_clear_line(tmp_path: Path, case: str) -> None:
    rows, expected = CASES[case]
    q = tmp_path / "data" / "questions.jsonl"
    q.parent.mkdir()
    q.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(command(*overrides(q, tmp_path / "results", tmp_path / "cache")), cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 1, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "InstantiationException" not in out.stderr, out.stderr[-3000:]
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("htmlrag-bench: error:")]
    assert expected in line and str(q) in line


def test_a_crash_log_names_no_folder_of_this_machine(tmp_path: Path) -> None:
    """An unexpected error is logged with its traceback; the log file in the results folder names the code's
    files relative to the source tree and the Python installation."""
    q = tmp_path / "data" / "questions.jsonl"
    q.parent.mkdir()
    q.write_text(json.dumps(ROW) + "\n")
    out = subprocess.run(command(*overrides(q, tmp_path / "results", tmp_path / "cache"),
                                 "+dataset.loader.unexpected_argument=1"), cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 1
    logs = list((tmp_path / "results").rglob("*.log"))
    assert logs and any("Traceback" in p.read_text() for p in logs), out.stderr[-2000:]
    for p in logs:
        text = p.read_text()
        found = re.findall(r"(?:/tmp/|/home/|/root/|/work/|/usr/)\S*", text)
        assert not found, (p.name, found[:5])


def _bench(tmp_path: Path, results: Path, *extra: str) -> subprocess.CompletedProcess:
    q = tmp_path / "data" / "questions.jsonl"
    q.parent.mkdir(exist_ok=True)
    q.write_text(json.dumps(ROW) + "\n")
    return subprocess.run(command(*extra, *overrides(q, results, tmp_path / "cache")), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize("sweep", [False, True])
def test_a_file_where_the_results_folder_goes_is_one_clear_line(tmp_path: Path, sweep: bool) -> None:
    (tmp_path / "afile").write_text("x")
    out = _bench(tmp_path, tmp_path / "afile" / "results", *(["-m", "pruner.budget=64,128"] if sweep else []))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert f"htmlrag-bench: error: {tmp_path / 'afile'}: a file where the folder" in out.stderr


def test_a_folder_where_the_runs_rows_go_is_one_clear_line(tmp_path: Path) -> None:
    first = _bench(tmp_path, tmp_path / "results")
    assert first.returncode == 0, first.stderr[-3000:]
    (pred,) = (tmp_path / "results").rglob("predictions.jsonl")
    pred.unlink()
    pred.mkdir()
    out = _bench(tmp_path, tmp_path / "results")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert f"htmlrag-bench: error: {pred}: not a regular file" in out.stderr


@pytest.mark.parametrize("content", [b"\x1f\x8b\x08\x00garbage", None])
def test_a_broken_gzip_page_fails_its_own_examples_only(tmp_path: Path, content: bytes | None) -> None:
    """Like a binary page: the examples that use it are error rows (exit 1, counted), the others are scored;
    the dataset's fingerprint (env.json) no longer reads every page as a page before the run starts."""
    import gzip

    data = tmp_path / "data"
    data.mkdir()
    broken = data / "broken.html.gz"
    broken.write_bytes(content if content is not None else
                       gzip.compress((SAMPLE_PAGES / "tea-garden.html").read_bytes())[:300])
    q = data / "questions.jsonl"
    q.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "id": "q1", "pages": [str(broken)]}) + "\n")
    out = subprocess.run(command(*overrides(q, tmp_path / "results", tmp_path / "cache")), cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 1 and "1 of 2 examples failed" in out.stderr and "gzip" in out.stderr, out.stderr[-2000:]
    rows = [json.loads(x) for x in next((tmp_path / "results").rglob("predictions.jsonl")).read_text().splitlines()]
    assert {r["id"]: bool(r["error"]) for r in rows} == {"q0": False, "q1": True}
