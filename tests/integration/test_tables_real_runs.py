"""The defect as a new user met it, end to end: two quickstart runs at different budgets in one results
folder. The sweep that made them writes one combined table labelled by the swept values, and
``htmlrag-bench-table results/quickstart`` tables both runs; every cell equals the value in the run its
provenance names, and the two budgets' numbers differ."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _check_provenance(path: Path, root: Path) -> dict[str, dict[str, float]]:
    """Every provenance line names a run relative to the results ``root`` and prints its metrics.json value as
    the table does; returns values[column][system]."""
    from htmlrag.evaluation.tables import printed

    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(path.open(encoding="utf-8")):
        assert not Path(row["runs"]).is_absolute(), row
        saved = json.loads((root / row["runs"] / "metrics.json").read_text())
        assert row["value"] == printed(row["metric"], saved["systems"][row["system"]]["metrics"][row["metric"]]), row
        if row["metric"] == "tokens":
            out.setdefault(row["dataset"], {})[row["system"]] = float(row["value"])
    return out


@pytest.mark.slow
def test_sweep_and_cli_tables_over_two_budgets(tmp_path: Path) -> None:
    paths = [f"paths.results={tmp_path}/results", f"paths.cache={tmp_path}/cache", "run.progress=false"]
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", "-m", "experiment=quickstart", "ranker=bm25",
                          "dataset.limit=3", "pruner.budget=64,256", *paths], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    folder = tmp_path / "results" / "quickstart"
    runs = sorted(p.parent for p in folder.glob("*/metrics.json"))
    assert len(runs) == 2
    # the sweep's table: column groups labelled by the swept values
    (sweep,) = (folder / "sweeps").iterdir()
    md = (sweep / "results.md").read_text()
    assert "pruner.budget=64 ref_em" in md and "pruner.budget=256 ref_em" in md
    tokens = _check_provenance(sweep / "provenance.csv", tmp_path / "results")
    assert tokens["pruner.budget=64"]["bm25"] <= 64 < tokens["pruner.budget=256"]["bm25"] <= 256
    # the command a user runs afterwards: column groups labelled by the setting that differs
    cli = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.table", str(folder)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert cli.returncode == 0, cli.stderr[-3000:]
    md = (folder / "tables" / "results.md").read_text()
    assert "sample_pages (budget=64) ref_em" in md and "sample_pages (budget=256) ref_em" in md
    assert "Fidelity: ours." in md
    tokens = _check_provenance(folder / "tables" / "provenance.csv", tmp_path / "results")
    assert tokens["sample_pages (budget=64)"]["vanilla"] == 64 and tokens["sample_pages (budget=256)"]["vanilla"] == 256
