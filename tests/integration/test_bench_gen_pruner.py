"""scripts/bench_gen_pruner.py on the project's own sample pages (plain .html, a glob relative to the current
folder): every page read (gzip detected from the content, not assumed) and counted. Exactness of the walk is
tested in tests/unit/test_token_tree.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from tests.conftest import ROOT


def test_plain_pages_by_relative_glob() -> None:
    out = subprocess.run(
        [sys.executable, "scripts/bench_gen_pruner.py", "--pages", "data/pages/*.html", "--tokenizer", "tiny",
         "--time-pages", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                                     "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    pages = sorted((ROOT / "data" / "pages").glob("*.html"))
    assert f"— {len(pages)} pages," in out.stdout          # every sample page read, none skipped
    assert "skipped" not in out.stderr
    assert "| ours (cached walk) |" in out.stdout


def test_a_glob_matching_nothing_fails_with_the_places_tried(tmp_path) -> None:
    out = subprocess.run(
        [sys.executable, "scripts/bench_gen_pruner.py", "--pages", "nope/*.html", "--data", str(tmp_path),
         "--tokenizer", "tiny"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                                    "HF_HUB_OFFLINE": "1"})
    assert out.returncode != 0 and "nope/*.html" in out.stderr and str(tmp_path) in out.stderr
