"""The real ``htmlrag-bench`` (issue 38, class 1): a cache that cannot work stops the run naming the file (exit 1,
no traceback, no row); a page that fails to clean makes error rows (exit 1 naming the page, counted in the
caption); the rerun retries exactly the error rows, and neither the rerun nor a fresh results folder
gets anything computed from the failure back from a cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import ROOT, SAMPLE_PAGES
from tests.integration._runs import command, overrides, rows, run_dir

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _questions(folder: Path, page: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    qs = [{"id": "q0", "question": "Who designed Harrow Point Lighthouse?", "answers": ["Margaret Ellis"],
           "pages": [str(SAMPLE_PAGES / "lighthouse.html"), str(page)]},
          {"id": "q1", "question": "Which club won the dragon boat race?", "answers": ["Millbank Rowing Club"],
           "pages": [str(SAMPLE_PAGES / "river-festival.html")]}]
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in qs))
    return path


def test_a_folder_in_place_of_a_cache_file_stops_the_run_before_any_row(tmp_path: Path) -> None:
    q = _questions(tmp_path / "data", SAMPLE_PAGES / "river-festival.html")
    for name in ("pages.sqlite", "contexts.sqlite", "responses.sqlite"):
        cache = tmp_path / f"cache-{name}"
        (cache / name).mkdir(parents=True)
        out = _run(overrides(q, tmp_path / f"results-{name}", cache))
        assert out.returncode == 1, (name, out.stderr[-3000:])
        assert f"htmlrag-bench: error: cache {cache / name}: not a file" in out.stderr
        assert "Traceback" not in out.stderr
        assert not list((tmp_path / f"results-{name}").rglob("metrics.json"))
        pred = list((tmp_path / f"results-{name}").rglob("predictions.jsonl"))
        assert not pred or pred[0].read_text() == ""
        (cache / name).rmdir()
        fixed = _run(overrides(q, tmp_path / f"results-{name}", cache))
        assert fixed.returncode == 0, fixed.stderr[-3000:]
        saved = rows(tmp_path / f"results-{name}")
        assert [r["id"] for r in saved] == ["q0", "q1"] and saved[0]["systems"]["htmlrag"]["scores"]["ref_em"] == 1.0


def test_a_page_that_fails_to_clean_makes_error_rows_retried_after_the_fix(tmp_path: Path) -> None:
    page = tmp_path / "pages" / "second.html"
    page.parent.mkdir()
    page.write_bytes(PNG)
    q = _questions(tmp_path / "data", page)
    cache = tmp_path / "cache"
    args = overrides(q, tmp_path / "results", cache)
    out = _run(args)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "1 of 2 examples failed (first: q0: " in out.stderr and "page 1 of 2" in out.stderr
    saved = {r["id"]: r for r in rows(tmp_path / "results")}
    for name in ("htmlrag", "cleaned"):
        assert "scores" not in saved["q0"]["systems"][name] and saved["q0"]["systems"][name]["page_errors"]
    metrics = json.loads((run_dir(tmp_path / "results") / "metrics.json").read_text())
    assert metrics["systems"]["htmlrag"]["n"] == 1 and metrics["systems"]["htmlrag"]["n_errors"] == 1
    caption = (run_dir(tmp_path / "results") / "tables" / "results.md").read_text()
    assert "Error rows (not scored): cleaned 1, htmlrag 1 of 2 examples." in caption
    allowed = _run([*args, "run.allow_errors=true"])
    assert allowed.returncode == 0 and "Error rows (not scored)" in allowed.stdout + allowed.stderr
    # the rerun retries the error row (and only it); nothing computed from the failure was cached, so a fresh
    # results folder sharing the cache computes the same error row again instead of reading back a context
    again = _run(args)
    assert again.returncode == 1 and "1 evaluated (1 saved before)" in again.stdout + again.stderr
    fresh = _run(overrides(q, tmp_path / "fresh", cache))
    assert fresh.returncode == 1 and "page 1 of 2" in fresh.stderr
    got = {r["id"]: r for r in rows(tmp_path / "fresh")}
    assert got["q0"]["systems"]["htmlrag"]["page_errors"] and not got["q1"]["systems"]["htmlrag"]["error"]
    import sqlite3

    with sqlite3.connect(cache / "contexts.sqlite") as db:
        stored = [json.loads(v) for (v,) in db.execute("SELECT value FROM contexts")]
    assert len(stored) == 2 and not any("page_errors" in e for e in stored)   # q1's two contexts only
