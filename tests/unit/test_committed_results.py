"""Committed results travel (issue 40): no committed file under results/ or docs/ (or the README) names a folder of
the machine that wrote it, and every committed run verifies (its numbers follow from its rows)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: Absolute folders of some machine: Linux temp and home folders, root's home, this workplace, macOS, Windows.
MACHINE_PATH = re.compile(r"(/tmp/|/home/|/root/|/work/|/Users/|\b[A-Za-z]:\\\w)")


def committed(*paths: str) -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (git ls-files lists the committed files)")
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", *paths], capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p]


def machine_paths(rel: str) -> list[str]:
    """``line: text`` of every line of a committed text file that holds an absolute machine folder."""
    data = (ROOT / rel).read_bytes()
    if b"\0" in data[:8192]:  # images and other binary files
        return []
    text = data.decode("utf-8", errors="replace")
    return [f"{rel}:{n}: {line.strip()[:160]}" for n, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]


def test_committed_results_and_docs_hold_no_machine_path() -> None:
    files = committed("results", "docs", "README.md")
    assert any(f.startswith("results/") for f in files) and any(f.startswith("docs/") for f in files)
    found = [hit for f in files for hit in machine_paths(f)]
    assert not found, "absolute machine paths in committed files:\n" + "\n".join(found)


def test_the_pattern_catches_each_kind_of_machine_path() -> None:
    for line in ("runs,/tmp/x/results/quickstart/1", '"export_dir": "/home/me/out"', "cache /root/.cache/x",
                 "- paths.results=/work/gem/results", "/Users/me/results", r"C:\Users\me\results"):
        assert MACHINE_PATH.search(line), line
    for line in ("runs,quickstart/093ac65d4f21", "root: ${paths.data}/wtq-html-qa", "results/train/final", "a/tmp"):
        assert not MACHINE_PATH.search(line), line


def test_every_committed_run_verifies() -> None:
    """What CI runs after the tests (.ci/run: ``htmlrag-paper verify results/``), on the committed runs only (a
    checkout may hold runs of its own under results/)."""
    runs = [str(ROOT / f).removesuffix("/metrics.json") for f in committed("results") if f.endswith("/metrics.json")]
    assert len(runs) >= 6
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.paper", "verify", "-q", *runs],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert re.fullmatch(r"verified: \d+ runs, \d+ rows, \d+ tables\n", out.stdout), out.stdout
