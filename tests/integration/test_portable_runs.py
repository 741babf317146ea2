"""Results that travel (issue 40), as a user meets them: a quickstart sweep into results folder A, A moved to B
and one run copied into a third results root C. On B and on the copy, ``htmlrag-paper verify`` passes, the app
browses and diffs the runs, ``htmlrag-bench-table`` re-tables them, a rerun of the same config resumes the moved
run, and nothing in the moved folder names a folder of this machine."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE_PAGES

MACHINE_PATH = re.compile(r"(/tmp/|/home/|/root/|/work/)")
ARGS = ["experiment=quickstart", "run.save_contexts=true", "run.progress=false", "dataset.limit=3"]


def bench(results: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", *args, *ARGS, f"paths.results={results}",
                          f"paths.cache={cache}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def verify(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.paper", "verify", "-q", *map(str, paths)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two quickstart runs (budgets 64 and 128) made in A, then A moved to B and one run copied to C."""
    tmp = tmp_path_factory.mktemp("travel")
    bench(tmp / "A", tmp / "cache", "-m", "pruner.budget=64,128")
    shutil.move(str(tmp / "A"), str(tmp / "B"))
    runs = sorted((p.parent for p in (tmp / "B" / "quickstart").glob("*/metrics.json")),
                  key=lambda d: "budget: 64\n" not in (d / "config.yaml").read_text())  # budget 64 first
    assert len(runs) == 2
    (tmp / "C" / "quickstart").mkdir(parents=True)
    copy = Path(shutil.copytree(runs[0], tmp / "C" / "quickstart" / runs[0].name))
    return {"tmp": tmp, "B": tmp / "B", "C": tmp / "C", "run": runs[0], "other": runs[1], "copy": copy}


@pytest.mark.slow
def test_moved_folder_names_no_machine_folder(moved: dict[str, Path]) -> None:
    hits = [f"{p}: {line.strip()[:120]}" for p in moved["B"].rglob("*") if p.is_file()
            for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if MACHINE_PATH.search(line)]
    assert not hits, "\n".join(hits)
    overrides = (moved["run"] / "overrides.yaml").read_text()
    assert "paths." not in overrides and "experiment=quickstart" in overrides
    config = (moved["run"] / "config.yaml").read_text()
    assert "path: ${paths.samples}/pages" in config and "corpus_root: ${paths.cache}/superrag/corpora" in config
    prov = list(csv.DictReader((moved["run"] / "tables" / "provenance.csv").open()))
    assert {r["runs"] for r in prov} == {f"quickstart/{moved['run'].name}"}
    # the sweep's record names the config folder by the source tree and still loads (no self-reference)
    from omegaconf import OmegaConf

    (multirun,) = (moved["B"] / "_hydra" / "quickstart").glob("multirun-*/multirun.yaml")
    assert "provider: main" in multirun.read_text()  # hydra.runtime.config_sources: the conf folder, made portable
    loaded = OmegaConf.load(multirun)
    assert loaded.paths.results == "${paths.results}" and loaded.paths.cache == "${paths.cache}"


@pytest.mark.slow
def test_verify_passes_on_the_moved_root_and_on_the_copy(moved: dict[str, Path]) -> None:
    for where in (moved["B"], moved["copy"], moved["C"]):
        out = verify(where)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        assert re.fullmatch(r"verified: \d runs, \d+ rows, \d+ tables\n", out.stdout), out.stdout
    assert verify(moved["B"]).stdout.startswith("verified: 2 runs, 6 rows, 20 tables")


@pytest.mark.slow
def test_moved_runs_are_browsed_diffed_and_retabled(moved: dict[str, Path]) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from htmlrag.app.server import create_app
    from htmlrag.app.settings import AppSettings

    a, b = (f"quickstart/{moved[k].name}" for k in ("run", "other"))
    settings = AppSettings(db=moved["tmp"] / "db", results=moved["B"], samples=SAMPLE_PAGES,
                           embedding_model="hashing-256", vector_backend="numpy", openai_model=None, hf_model=None)
    with TestClient(create_app(settings)) as client:
        page = client.get(f"/results/run/{a}")
        assert page.status_code == 200 and "<table" in page.text and "ref_em" in page.text
        diff = client.get("/results/diff", params={"a": a, "b": b})
        assert diff.status_code == 200 and 'id="flips"' in diff.text
        assert client.get(f"/api/results/runs/{a}").json()["run_id"] == moved["run"].name
    # the sweep's table and htmlrag-bench-table, from the moved folder
    from htmlrag_bench.eval.table import main, write_sweep

    (sweep,) = (moved["B"] / "_hydra" / "quickstart").glob("multirun-*")
    assert write_sweep(sweep, moved["tmp"] / "sweep_table") is not None
    assert "pruner.budget=64" in (moved["tmp"] / "sweep_table" / "results.md").read_text()
    assert main([str(moved["B"] / "quickstart")]) == 0
    prov = list(csv.DictReader((moved["B"] / "quickstart" / "tables" / "provenance.csv").open()))
    assert {r["runs"] for r in prov} == {a, b}


@pytest.mark.slow
def test_rerun_resumes_the_moved_run(moved: dict[str, Path]) -> None:
    before = (moved["run"] / "predictions.jsonl").read_bytes()
    out = bench(moved["B"], moved["tmp"] / "cache2", "pruner.budget=64")
    assert "resuming: 3 of 3 examples" in out.stdout + out.stderr
    assert sorted(p.name for p in (moved["B"] / "quickstart").iterdir() if p.is_dir() and p.name not in ("tables", "sweeps")) == \
        sorted([moved["run"].name, moved["other"].name])
    assert (moved["run"] / "predictions.jsonl").read_bytes() == before
    assert json.loads((moved["run"] / "metrics.json").read_text())["rows"]["n"] == 3
    assert verify(moved["B"]).returncode == 0


def _tampered(moved: dict[str, Path], tmp_path: Path) -> Path:
    """A fresh copy of the copied quickstart run, in its own results root."""
    return Path(shutil.copytree(moved["copy"], tmp_path / "results" / "quickstart" / moved["copy"].name))


@pytest.mark.slow
def test_verify_names_an_edited_metric_of_a_copied_run(moved: dict[str, Path], tmp_path: Path) -> None:
    run = _tampered(moved, tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    stored = m["systems"]["bm25"]["metrics"]["ref_em"]
    m["systems"]["bm25"]["metrics"]["ref_em"] = 0.123
    (run / "metrics.json").write_text(json.dumps(m))
    out = verify(run)
    assert out.returncode == 1
    assert f"FAILED quickstart/{run.name}" in out.stdout
    assert f"metrics.json systems.bm25.metrics.ref_em: stored 0.123, recomputed {stored!r}" in out.stdout
    assert "metrics.json was edited" in out.stdout


@pytest.mark.slow
def test_verify_names_a_deleted_row_of_a_copied_run(moved: dict[str, Path], tmp_path: Path) -> None:
    run = _tampered(moved, tmp_path)
    lines = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    gone = json.loads(lines[1])["id"]
    (run / "predictions.jsonl").write_text(lines[0] + "".join(lines[2:]))
    out = verify(run)
    assert out.returncode == 1 and f"FAILED quickstart/{run.name}" in out.stdout
    assert f"cause: rows: 1 missing ({gone})" in out.stdout and "metrics.json n_examples: stored 3, recomputed 2" in out.stdout


@pytest.mark.slow
def test_verify_names_an_edited_cell_of_a_copied_run(moved: dict[str, Path], tmp_path: Path) -> None:
    run = _tampered(moved, tmp_path)
    path = run / "tables" / "results.csv"
    rows = list(csv.reader(path.open()))
    cell = next(r for r in rows if r[1] == "cleaned" and r[3] == "ref_em")
    stored, cell[4] = cell[4], "0.99"
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    out = verify(run)
    assert out.returncode == 1 and f"FAILED quickstart/{run.name}" in out.stdout
    assert (f"tables/results.csv: row 'cleaned / sample_pages / ref_em', column 'value': stored 0.99, recomputed "
            f"{stored}") in out.stdout
    assert "cause: the table does not follow from metrics.json" in out.stdout
