"""A budget frontier through ``htmlrag-bench`` (subprocesses, generated questions over the sample pages, fake
reader): one record per (question, system, budget), each equal to a one-budget run's; the frontier, waterfall
and cost tables and plots; resuming; a fresh rerun reproduces metrics.json (every interval) byte for byte;
``htmlrag-paper report`` across two runs; the MLflow logger's local store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration._runs import make_questions, overrides, rows, run_app, run_dir

BUDGETS = "pruner.budgets=[64,128,256]"
# one window for every run: a derived window follows the largest budget, and may cut a one-budget run's context
# by a token where its longest question (in characters) is not its longest in tokens
WINDOW = "reader.window=2048"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("frontier")
    q = make_questions(tmp / "data", 6)
    out = {"q": q, "tmp": tmp}
    for name, extra in (("frontier", [BUDGETS]), ("one", ["pruner.budget=128"]),
                        ("fresh", [BUDGETS, "run.use_cache=false"]),
                        ("paper", [BUDGETS, "fidelity=paper", "logger=mlflow"])):
        run_app(*overrides(q, tmp / name, tmp / f"cache-{name}", WINDOW, *extra))
        out[name] = tmp / name
    return out


def test_one_record_per_question_system_and_budget_each_equal_to_its_own_run(runs: dict[str, Path]) -> None:
    frontier, one = rows(runs["frontier"]), rows(runs["one"])
    assert set(frontier[0]["systems"]) == {f"{s}@{b}" for s in ("htmlrag", "cleaned") for b in (64, 128, 256)}
    for rf, r1 in zip(frontier, one, strict=True):
        for s in ("htmlrag", "cleaned"):
            a, b = rf["systems"][f"{s}@128"], r1["systems"][s]
            assert a["budget"] == 128
            for key in ("scores", "tokens", "response", "stage_tokens", "waterfall"):
                assert a[key] == b[key], (rf["id"], s, key)
    rec = frontier[0]["systems"]["htmlrag@64"]
    assert [s for s, _ in rec["waterfall"]] == ["pages", "cleaned", "step1", "context", "answer"]
    assert dict(rec["waterfall"])["context"] == rec["scores"]["ref_em"]  # the same rule as reference-text EM
    assert set(rec["cost"]["seconds"]) >= {"clean", "step1", "read"}
    assert rec["cost"]["tokens"]["fake-30w"]["input"] == rec["reader_tokens"]["input"]


def test_frontier_tables_plots_and_tests(runs: dict[str, Path]) -> None:
    d = run_dir(runs["frontier"])
    m = json.loads((d / "metrics.json").read_text())
    assert m["frontier"]["budgets"] == [64, 128, 256] and m["frontier"]["ours"] == "htmlrag"
    assert set(m["tests"]["em"]) == {"cleaned@64", "cleaned@128", "cleaned@256"}
    assert m["intervals"]["seed"] == 0 and m["intervals"]["correction"] == "holm"
    curve = m["frontier"]["systems"]["htmlrag"]["ref_em"]
    assert curve["means"] == [m["systems"][f"htmlrag@{b}"]["metrics"]["ref_em"] for b in (64, 128, 256)]
    for name in ("frontier_em.md", "frontier_ref_em.csv", "frontier_ref_em.tex", "waterfall.md", "cost.md",
                 "results.md"):
        assert (d / "tables" / name).is_file(), name
    for name in ("frontier_em.png", "waterfall.png", "pareto.png"):
        assert (d / "plots" / name).read_bytes()[:4] == b"\x89PNG"
    prov = (d / "tables" / "frontier_ref_em.provenance.csv").read_text()
    assert f"{d.parent.name}/{d.name}" in prov and str(d.parent.parent) not in prov  # relative to the results root
    table = (d / "tables" / "frontier_ref_em.md").read_text()
    assert "| htmlrag |" in table and "holm correction over the table's" in table and "area" in table
    results = (d / "tables" / "results.md").read_text()
    assert "| *64 tokens* |" in results and "| *256 tokens* |" in results  # one row group per budget


def test_resume_and_fresh_rerun_reproduce_every_interval(runs: dict[str, Path]) -> None:
    d = run_dir(runs["frontier"])
    before = (d / "metrics.json").read_bytes()
    out = run_app(*overrides(runs["q"], runs["frontier"], runs["tmp"] / "cache-frontier", WINDOW, BUDGETS))
    assert "6 saved before" in out.stderr + out.stdout
    assert (d / "metrics.json").read_bytes() == before
    fresh = run_dir(runs["fresh"])  # the same configuration, computed again without any cache
    assert fresh.name == d.name and (fresh / "metrics.json").read_bytes() == before


def test_report_across_runs_compares_matched_systems(runs: dict[str, Path], tmp_path: Path) -> None:
    from htmlrag_bench.eval.paper import main

    assert main(["report", str(run_dir(runs["paper"])), str(run_dir(runs["frontier"])), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "tables" / "frontier_ref_em.md").read_text()
    assert "| *htmlrag* |" in md and "| *cleaned* |" in md and "fidelity=ours" in md and "fidelity=paper" in md
    paper, frontier = run_dir(runs["paper"]), run_dir(runs["frontier"])
    name = f"{paper.parent.name}/{paper.name}"  # runs are named relative to their results root, never by path
    assert "over the table's" in md and name in md and str(paper) not in md
    prov = (tmp_path / "tables" / "frontier_ref_em.provenance.csv").read_text()
    assert name in prov and f"{frontier.parent.name}/{frontier.name}" in prov and str(runs["tmp"]) not in prov
    assert (tmp_path / "plots" / "frontier_ref_em.png").is_file() and (tmp_path / "tables" / "waterfall.md").is_file()


def test_mlflow_logger_writes_a_local_store(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3's file store, as `mlflow ui` reads it
    from mlflow.tracking import MlflowClient

    store = runs["paper"] / "mlruns"
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    (exp,) = [e for e in client.search_experiments() if e.name == "default"]
    (run,) = client.search_runs([exp.experiment_id])
    d = run_dir(runs["paper"])
    m = json.loads((d / "metrics.json").read_text())
    assert run.data.metrics["htmlrag_128/em"] == pytest.approx(m["systems"]["htmlrag@128"]["metrics"]["em"])
    assert run.data.metrics["htmlrag_128/em_ci_low"] == pytest.approx(m["systems"]["htmlrag@128"]["intervals"]["em"][0])
    assert run.data.metrics["htmlrag/em_auc"] == pytest.approx(m["frontier"]["systems"]["htmlrag"]["em"]["auc"])
    assert run.data.params["fidelity.name"] == "paper" and run.data.tags["htmlrag.run_dir"] == d.name
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"metrics.json", "tables", "plots"} <= arts
    plots = {a.path for a in client.list_artifacts(run.info.run_id, "plots")}
    assert "plots/frontier_em.png" in plots
