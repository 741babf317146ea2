"""Helpers for tests that run ``htmlrag-bench`` in subprocesses on a generated question set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, SAMPLE_PAGES

_QUESTIONS = [
    ("Who designed Harrow Point Lighthouse?", ["Margaret Ellis"], ["lighthouse.html", "river-festival.html"]),
    ("How many steps does the tower have?", ["164"], ["lighthouse.html", "tea-garden.html"]),
    ("What is the range of the light?", ["22 nautical miles"], ["lighthouse.html"]),
    ("Which club won the dragon boat race?", ["Millbank Rowing Club"], ["river-festival.html", "lighthouse.html"]),
    ("How many visitors did the festival draw?", ["41,000"], ["river-festival.html", "tea-garden.html"]),
    ("When was the last keeper gone?", ["1989"], ["lighthouse.html", "tea-garden.html"]),
]


def make_questions(folder: Path, n: int) -> Path:
    """``n`` questions over the sample pages (cycled, with distinct ids and wording)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        q, answers, pages = _QUESTIONS[i % len(_QUESTIONS)]
        lines.append(json.dumps({"id": f"q{i:03d}", "question": f"{q} (variant {i})", "answers": answers,
                                 "pages": [str(SAMPLE_PAGES / p) for p in pages]}))
    path = folder / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def overrides(questions: Path, results: Path, cache: Path, *extra: str) -> list[str]:
    """A small, fast configuration: BM25 pruning of the questions' pages, fake reader, QA metrics."""
    return ["ranker=bm25", "reader=fake", "metric=short", f"dataset.loader.path={questions}",
            f"paths.results={results}", f"paths.cache={cache}", "run.progress=false", "pruner.budget=256",
            "+baselines.cleaned={clean:true}", *extra]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "htmlrag_bench.eval.app", *args]


def run_app(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run(command(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def run_dir(results: Path) -> Path:
    (d,) = [p for p in (results / "default").iterdir() if p.is_dir()]
    return d


def rows(results: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir(results) / "predictions.jsonl").read_text().splitlines()]


def strip_timing(row: dict) -> dict:
    """A row without wall-clock and cache-hit fields (they differ between runs by nature; the cost ledger's
    tokens stay)."""
    row = json.loads(json.dumps(row))
    for rec in row["systems"].values():
        rec.pop("seconds", None)
        rec.pop("cached", None)
        for key in ("seconds", "gpu_seconds"):
            (rec.get("cost") or {}).pop(key, None)
    return row
