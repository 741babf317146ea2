"""Result tables never mix runs: every cell is read from the run its provenance names, runs with different
settings never share a cell, runs with identical settings follow the documented rule (written last wins),
and the paper's dagger rule."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
import yaml

from htmlrag.evaluation.runs import find_runs, run_name, select
from htmlrag.evaluation.tables import Column, Table, build_table, printed


def _run(root: Path, name: str, dataset: str, config: dict, values: dict[str, float], *, mtime: float | None = None,
         tests: dict | None = None, fidelity: str | None = "ours", reader: str | None = None,
         metrics: tuple[str, ...] = ("ref_em",)) -> Path:
    d = root / name
    d.mkdir(parents=True)
    systems = {s: {"n": 10, "metrics": {**{m: v for m in metrics}, "tokens": 100.0}} for s, v in values.items()}
    summary = {"dataset": dataset, "run_id": name, "ours": "ours", "alpha": 0.05, "metric_names": list(metrics),
               "systems": systems, "system_order": list(values), "tests": tests or {}}
    if fidelity:
        summary["fidelity"] = {"name": fidelity, "deviations": []}
    (d / "metrics.json").write_text(json.dumps(summary))
    cfg = {"name": "quickstart", "dataset": {"name": dataset}, **config}
    if reader:
        cfg["reader"] = {"_target_": "htmlrag.readers.hf.HFReader", "model": reader, "window": 131072}
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    if mtime is not None:
        os.utime(d / "metrics.json", (mtime, mtime))
    return d


def _cells(csv_text: str) -> dict[tuple[str, str, str], str]:
    return {(r["system"], r["dataset"], r["metric"]): r for r in csv.DictReader(io.StringIO(csv_text))}


def test_two_runs_on_one_dataset_keep_their_own_numbers(tmp_path: Path) -> None:
    """The reported defect: two quickstart runs at different budgets showed the second run's numbers in both
    columns. Each column group now holds its own run's values, labelled by the budget, with provenance."""
    from htmlrag_bench.eval.table import main

    a = _run(tmp_path / "results", "run_a", "sample_pages", {"pruner": {"budget": 128}, "reader": {"window": 128}},
             {"cleaned": 0.25, "ours": 0.5})
    b = _run(tmp_path / "results", "run_b", "sample_pages", {"pruner": {"budget": 256}, "reader": {"window": 256}},
             {"cleaned": 0.75, "ours": 1.0})
    assert main([str(tmp_path / "results")]) == 0
    out = tmp_path / "results" / "tables"
    md = (out / "results.md").read_text()
    assert "sample_pages (budget=128) ref_em" in md and "sample_pages (budget=256) ref_em" in md
    assert "window" not in md.split("\n\n")[1].splitlines()[0]  # the window follows the budget: not a label
    row = next(x for x in md.splitlines() if x.startswith("| ours "))
    assert [c.strip().strip("*<u>/") for c in row.split("|")[2:-1]] == ["50.00", "100", "100.00", "100"]
    cells = _cells((out / "results.csv").read_text())
    assert cells[("cleaned", "sample_pages (budget=128)", "ref_em")]["value"] == "0.25"
    assert cells[("cleaned", "sample_pages (budget=256)", "ref_em")]["value"] == "0.75"
    prov = _cells((out / "provenance.csv").read_text())
    # runs are named relative to the results root (here: tmp_path, which holds results/run_a)
    assert prov[("cleaned", "sample_pages (budget=128)", "ref_em")]["runs"] == "results/run_a" == run_name(a)
    assert prov[("ours", "sample_pages (budget=256)", "ref_em")]["runs"] == "results/run_b" == run_name(b)
    # every value in the table is the value in the run its provenance names, printed as the table prints it
    for (system, _, metric), rec in prov.items():
        summary = json.loads((tmp_path / rec["runs"] / "metrics.json").read_text())
        assert rec["value"] == printed(metric, summary["systems"][system]["metrics"][metric])
        assert f"| {rec['value']}" in md or f"**{rec['value']}**" in md or f"<u>{rec['value']}</u>" in md


def test_identical_settings_newest_run_fills_the_cells(tmp_path: Path, caplog) -> None:
    """The same configuration run twice (different code: different run ids): the run written last wins, the
    other is named as superseded; nothing is averaged or mixed."""
    from htmlrag_bench.eval.table import write

    cfg = {"pruner": {"budget": 128}}
    old = _run(tmp_path, "old", "sample_pages", cfg, {"ours": 0.1}, mtime=1_000)
    new = _run(tmp_path, "new", "sample_pages", cfg, {"ours": 0.9}, mtime=2_000)
    runs = find_runs([tmp_path])
    (kept,) = select(runs)
    assert kept.dir == new and kept.superseded == [old]
    paths = write(runs, tmp_path / "out")
    prov = _cells(paths["provenance"].read_text())
    assert prov[("ours", "sample_pages", "ref_em")] == {"row_group": "", "system": "ours", "dataset": "sample_pages",
                                                       "metric": "ref_em", "value": "90.00", "runs": run_name(new)}
    assert f"superseded: {run_name(old)}" in paths["md"].read_text() and str(tmp_path) not in paths["md"].read_text()


def test_build_table_refuses_two_runs_in_one_column_group() -> None:
    runs = [{"dataset": "d", "ours": "a", "systems": {"a": {"metrics": {"x": v}}}} for v in (0.1, 0.2)]
    with pytest.raises(ValueError, match="column group 'd'"):
        build_table(runs, ["x"])
    t = build_table(runs, ["x"], labels=["d (1)", "d (2)"], sources=["r1", "r2"])
    assert [t.values[("d (1)", "x")][("", "a")], t.values[("d (2)", "x")][("", "a")]] == [0.1, 0.2]
    with pytest.raises(ValueError, match="two columns share"):
        Table([Column("d", "x"), Column("d", "x")], ["a"], {})


def test_dagger_only_on_ours_when_better_than_every_baseline() -> None:
    col = Column("d", "em")
    rows = ["b1", "b2", "ours"]
    values = {("d", "em"): {"b1": 0.3, "b2": 0.35, "ours": 0.4}}

    def table(t1: dict, t2: dict, higher: bool = True) -> Table:
        c = Column("d", "em", higher_is_better=higher)
        return Table([c], rows, values, {("d", "em"): {"b1": t1, "b2": t2}}, ours="ours")

    sig = {"p": 0.01, "mean_a": 0.4, "mean_b": 0.3}
    assert table(sig, {"p": 0.04, "mean_a": 0.4, "mean_b": 0.35}).dagger(col, ("", "ours"))
    assert not table(sig, {"p": 0.2, "mean_a": 0.4, "mean_b": 0.35}).dagger(col, ("", "ours"))   # one not significant
    assert not table(sig, {"p": 0.04, "mean_a": 0.3, "mean_b": 0.35}).dagger(col, ("", "ours"))  # one better than ours
    assert not table(sig, {}).dagger(col, ("", "ours"))                                            # one untested
    assert not table(sig, sig).dagger(col, ("", "b1"))                                             # never a baseline
    lower = table({"p": 0.01, "mean_a": 0.2, "mean_b": 0.3}, {"p": 0.01, "mean_a": 0.2, "mean_b": 0.25}, higher=False)
    assert lower.dagger(Column("d", "em", higher_is_better=False), ("", "ours"))
    md = table(sig, {"p": 0.04, "mean_a": 0.4, "mean_b": 0.35}).to_markdown()
    assert "against every other system with a value in that column shows it better" in md


def test_paper_table_reader_row_groups_do_not_overwrite(tmp_path: Path) -> None:
    """Table 1 with two readers: one row group per reader; the same dataset's cells differ by reader."""
    from htmlrag_bench.eval.paper import main_table, write_table

    for reader, v in (("meta-llama/Llama-3.1-8B-Instruct", 0.3), ("meta-llama/Llama-3.1-70B-Instruct", 0.6)):
        for ds in ("asqa", "nq"):
            _run(tmp_path, f"{ds}-{v}", ds, {"pruner": {"budget": 4000}}, {"bm25": v - 0.1, "ours": v},
                 reader=reader, fidelity="paper", metrics=("em", "hit1", "ref_em"))
    table = main_table(find_runs([tmp_path]), caption="T1")
    assert table.row_groups() == ["Llama-3.1-8B-Instruct", "Llama-3.1-70B-Instruct"]
    # the paper's printed columns, in the notebook's order: "EM" (our hit1), then "Hit@1" (our em)
    assert [(c.dataset, c.label) for c in table.columns] == [("ASQA", "EM [hit1]"), ("ASQA", "Hit@1 [em]"),
                                                             ("NQ", "EM [hit1]"), ("NQ", "Hit@1 [em]")]
    assert table.values[("ASQA", "hit1")][("Llama-3.1-8B-Instruct", "ours")] == 0.3
    assert table.values[("ASQA", "hit1")][("Llama-3.1-70B-Instruct", "ours")] == 0.6
    paths = write_table(table, tmp_path / "out")
    md = paths["md"].read_text()
    assert "| *Llama-3.1-8B-Instruct* |" in md and "| *Llama-3.1-70B-Instruct* |" in md
    assert "Fidelity: paper." in md and "\"EM\" = our hit1" in md
    prov = list(csv.DictReader(io.StringIO(paths["provenance"].read_text())))
    assert {(r["row_group"], r["system"], r["dataset"]): Path(r["runs"]).name for r in prov}[
        ("Llama-3.1-70B-Instruct", "ours", "ASQA")] == "asqa-0.6"


def test_paper_table_two_budgets_of_one_dataset_are_two_column_groups(tmp_path: Path) -> None:
    from htmlrag_bench.eval.paper import info_loss_table

    _run(tmp_path, "a", "wtq_html_qa", {"pruner": {"budget": 2048}}, {"ours": 0.5})
    _run(tmp_path, "b", "wtq_html_qa", {"pruner": {"budget": 4096}}, {"ours": 0.7})
    t = info_loss_table(find_runs([tmp_path]))
    assert [c.dataset for c in t.columns][::2] == ["WTQ-HTML (budget=2048)", "WTQ-HTML (budget=4096)"]
    assert t.values[("WTQ-HTML (budget=4096)", "ref_em")][("", "ours")] == 0.7


def test_mixed_fidelities_are_told_apart_in_labels_and_caption(tmp_path: Path) -> None:
    from htmlrag_bench.eval.table import write

    _run(tmp_path, "p", "d", {"fidelity": {"name": "paper", "fill": "stop"}}, {"ours": 0.4}, fidelity="paper")
    _run(tmp_path, "o", "d", {"fidelity": {"name": "ours", "fill": "skip"}}, {"ours": 0.6}, fidelity="ours")
    md = write(find_runs([tmp_path]), tmp_path / "out")["md"].read_text()
    assert "d (fidelity=paper) ref_em" in md and "d (fidelity=ours) ref_em" in md
    assert "Fidelity per column group: d (fidelity=ours): ours; d (fidelity=paper): paper." in md or \
           "Fidelity per column group: d (fidelity=paper): paper; d (fidelity=ours): ours." in md


def test_sweep_table_labels_columns_by_swept_values(tmp_path: Path) -> None:
    """The callback's table over a multirun: one column group per job, labelled by what the sweep varied."""
    from htmlrag_bench.eval.table import write_sweep

    sweep = tmp_path / "_hydra" / "multirun-x"
    for i, b in enumerate((128, 256)):
        d = _run(tmp_path / "results", f"r{b}", "sample_pages", {"pruner": {"budget": b}}, {"ours": b / 1000})
        (sweep / str(i)).mkdir(parents=True)
        (sweep / str(i) / "htmlrag_run.json").write_text(json.dumps(
            {"run_dir": str(d), "overrides": ["experiment=quickstart", f"pruner.budget={b}"]}))
    (sweep / "2").mkdir()  # a job that failed before its run existed: left out
    paths = write_sweep(sweep, tmp_path / "out")
    cells = _cells(paths["csv"].read_text())
    assert cells[("ours", "pruner.budget=128", "ref_em")]["value"] == "0.128"
    assert cells[("ours", "pruner.budget=256", "ref_em")]["value"] == "0.256"


def test_paper_tables_say_how_many_rows_were_errors(tmp_path: Path) -> None:
    """A run accepted with error rows (run.allow_errors=true) says so in the paper-layout tables' captions,
    as its own results.md does: the means are over fewer examples than n."""
    from htmlrag_bench.eval.paper import info_loss_table, main_table

    d = _run(tmp_path, "a", "asqa", {"pruner": {"budget": 4000}}, {"bm25": 0.3, "ours": 0.5},
             metrics=("em", "hit1", "ref_em"))
    m = json.loads((d / "metrics.json").read_text())
    m["n_examples"] = 7
    m["systems"]["ours"]["n_errors"] = 1
    (d / "metrics.json").write_text(json.dumps(m))
    for table in (main_table(find_runs([tmp_path])), info_loss_table(find_runs([tmp_path]))):
        assert "Error rows (not scored): " in table.caption and "ours 1 of 7 examples" in table.caption
    clean = _run(tmp_path / "clean", "b", "asqa", {"pruner": {"budget": 4000}}, {"ours": 0.5})
    assert "Error rows" not in main_table(find_runs([clean.parent])).caption
