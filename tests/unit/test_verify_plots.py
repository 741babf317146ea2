"""``htmlrag-paper verify`` checks a run's ``plots/``: the harness records in ``plots/plots.json`` the digest of the
data each PNG was drawn from and of the PNG's bytes, and verify rebuilds the data from the run (the writer's own
function) and compares both. Before, a PNG swapped in from another run, edited, left stale or deleted passed.

One quickstart run (budgets 64 and 128: frontier, waterfall and Pareto plots) is made once; each test copies it
and tampers."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from htmlrag.evaluation.plots import PLOT_RECORDS, canonical_json, data_digest
from htmlrag.evaluation.report import run_plots, write_run_report
from htmlrag.evaluation.runs import open_run
from htmlrag.evaluation.verify import Report, verify_run
from htmlrag_bench.eval.verify import main
from tests.conftest import quickstart_run

pytestmark = pytest.mark.slow

OLD_RUN_NOTE = "plots not checked: written before plot records"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_run(tmp_path_factory.mktemp("plots"))


def copy(made: Path, tmp: Path) -> Path:
    return Path(shutil.copytree(made, tmp / "root" / "quickstart" / made.name))


def verify(capsys: pytest.CaptureFixture, path: Path, *flags: str) -> tuple[int, str]:
    status = main(["-q", *flags, str(path)])
    return status, capsys.readouterr().out


def plot_findings(report: Report) -> list[tuple[str, str]]:
    return [(f.where, f.cause) for f in report.findings if f.where.startswith("plots")]


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_fresh_run_records_every_plot_and_verifies_clean(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    records = json.loads((run / "plots" / PLOT_RECORDS).read_text())
    pngs = sorted(p.name for p in (run / "plots").glob("*.png"))
    assert sorted(records["plots"]) == pngs and {"waterfall.png", "pareto.png", "frontier_em.png"} <= set(pngs)
    assert {r["kind"] for r in records["plots"].values()} == {"frontier", "waterfall", "pareto"}
    report = verify_run(run)
    assert report.ok and not any("plots" in n for n in report.notes), (report.findings, report.notes)
    status, out = verify(capsys, run)
    assert status == 0 and out.startswith("verified: 1 runs, 6 rows"), out


def test_a_png_swapped_for_another_is_named(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    shutil.copyfile(run / "plots" / "waterfall.png", run / "plots" / "pareto.png")
    report = verify_run(run)
    assert [w for w, _ in plot_findings(report)] == ["plots/pareto.png"], report.findings
    assert "replaced or edited" in plot_findings(report)[0][1]
    status, out = verify(capsys, run)
    assert status == 1 and "plots/pareto.png: stored content sha256" in out, out


def test_a_png_edited_in_place_is_named(made: Path, tmp_path: Path) -> None:
    run = copy(made, tmp_path)
    png = run / "plots" / "frontier_em.png"
    png.write_bytes(png.read_bytes() + b"\0")  # (a viewer still shows it)
    assert [w for w, _ in plot_findings(verify_run(run))] == ["plots/frontier_em.png"]


def test_a_deleted_png_is_named(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    (run / "plots" / "waterfall.png").unlink()
    status, out = verify(capsys, run)
    assert status == 1 and "plots/waterfall.png: stored the file is missing" in out, out
    assert "plots/waterfall.png deleted" in out


def test_a_png_the_harness_did_not_draw_is_named(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    shutil.copyfile(run / "plots" / "pareto.png", run / "plots" / "pareto_ours.png")
    status, out = verify(capsys, run)
    assert status == 1 and "plots/pareto_ours.png" in out and "not written by the harness" in out, out


def test_an_edited_metrics_json_leaves_the_plot_drawn_from_it_stale(made: Path, tmp_path: Path) -> None:
    """The frontier's area of bm25 changed in metrics.json: the file is named, and so is the plot (drawn from the
    number as it was), not the other plots."""
    run = copy(made, tmp_path)
    edit_json(run / "metrics.json", lambda d: d["frontier"]["systems"]["bm25"]["em"].update(auc=0.9))
    found = plot_findings(verify_run(run))
    assert [w for w, _ in found] == ["plots/frontier_em.png"], found
    assert found[0][1].startswith("the plot is stale")


def test_an_edited_row_names_the_plots_whose_numbers_change_with_the_tables(made: Path, tmp_path: Path,
                                                                             capsys) -> None:
    """One answer of bm25@128 made right: metrics.json and the tables no longer follow from the rows, and each
    plot showing bm25@128's numbers is named stale with the value that differs and the rows as the cause."""
    run = copy(made, tmp_path)
    pred = run / "predictions.jsonl"
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    row = next(r for r in rows if r["systems"]["bm25@128"]["scores"]["em"] == 0)
    row["systems"]["bm25@128"]["response"] = row["answers"][0]
    pred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = verify_run(run)
    assert any(f.where.startswith("tables/frontier_em") for f in report.findings)
    found = dict(plot_findings(report))
    # (each plot is named by its first value that differs, its systems in the run's order: on the Pareto plot
    # bm25@128's quality, or a point before it that left the front because of it)
    (pareto,) = [w for w in found if w.startswith("plots/pareto.png points.")]
    assert "plots/frontier_em.png lines.bm25.auc" in found, found
    assert not any(w.startswith("plots/waterfall.png") for w in found)  # (the answer does not change the waterfall)
    assert all(c.startswith("the plot is stale") and "rows: 1 edited" in c for c in found.values())
    status, out = verify(capsys, run)
    assert status == 1 and "plots/frontier_em.png lines.bm25.auc: stored 0.3333333333333333, recomputed " \
        "0.4166666666666667" in out and f"{pareto}: stored " in out, out


def test_plots_with_their_record_copied_from_another_run_are_stale(made: Path, tmp_path: Path) -> None:
    """The whole plots/ folder of a run with other numbers (each PNG matching its own record): every plot whose
    data differs is named stale; the PNG digests agree with the copied record, so nothing else is."""
    other = copy(made, tmp_path / "other")
    edit_json(other / "metrics.json", lambda d: d["frontier"]["systems"]["bm25"]["f1"].update(auc=0.5))
    o = open_run(other)
    write_run_report(other, o.summary, o.rows())
    run = copy(made, tmp_path)
    shutil.rmtree(run / "plots")
    shutil.copytree(other / "plots", run / "plots")
    found = plot_findings(verify_run(run))
    assert [w for w, _ in found] == ["plots/frontier_f1.png"], found
    assert "came from another run" in found[0][1]


@pytest.mark.parametrize(("text", "why"), [
    ('{"format": 1, "plots": {', "not JSON"),
    ("[1, 2]", "not an object"),
    ('{"format": 1, "plots": {"pareto.png": {"kind": "pareto"}}}', "not a record of the fields"),
    ('{"format": 1, "plots": {"../metrics.json": {}}}', "is not the name of a PNG"),
    ('{"format": 2, "plots": {}}', "format"),
    (None, "IsADirectoryError"),
], ids=["truncated", "list", "fields", "path", "format", "folder"])
def test_a_malformed_record_is_a_finding_not_a_traceback(made: Path, tmp_path: Path, capsys, text: str | None,
                                                         why: str) -> None:
    run = copy(made, tmp_path)
    path = run / "plots" / PLOT_RECORDS
    path.unlink()
    if text is None:
        path.mkdir()
    else:
        path.write_text(text)
    report = verify_run(run)
    assert [w for w, _ in plot_findings(report)] == ["plots/plots.json"], report.findings
    status, out = verify(capsys, run)
    assert status == 1 and "plots/plots.json was edited" in out and "Traceback" not in out, out
    if text is not None:
        assert why in out, out


def test_a_deleted_record_is_named_where_metrics_json_says_it_was_written(made: Path, tmp_path: Path,
                                                                          capsys) -> None:
    """Before, deleting ``plots/plots.json`` made a run read as one written before the record: a note, and a PNG
    swapped in went unchecked."""
    run = copy(made, tmp_path)
    assert json.loads((run / "metrics.json").read_text())["plot_record"] == "plots/plots.json"
    (run / "plots" / PLOT_RECORDS).unlink()
    shutil.copyfile(run / "plots" / "waterfall.png", run / "plots" / "pareto.png")
    report = verify_run(run)
    assert plot_findings(report) == [("plots/plots.json", report.findings[0].cause)], report.findings
    assert "plots/plots.json deleted" in report.findings[0].cause
    assert not any(n.startswith(OLD_RUN_NOTE) for n in report.notes)
    status, out = verify(capsys, run)
    assert status == 1 and "plots/plots.json deleted" in out, out
    assert main(["-q", "--write-tables", str(run)]) == 0, capsys.readouterr().out  # redrawn, record written
    assert verify_run(run).ok


def test_an_edited_plot_record_key_is_named(made: Path, tmp_path: Path) -> None:
    run = copy(made, tmp_path)
    edit_json(run / "metrics.json", lambda d: d.update(plot_record="../elsewhere/plots.json"))
    report = verify_run(run)
    assert [f.where for f in report.findings] == ["metrics.json plot_record"], report.findings
    assert "metrics.json was edited" in report.findings[0].cause


def test_a_run_without_plot_records_gets_a_note_not_a_finding(made: Path, tmp_path: Path, capsys) -> None:
    """Runs written before the record (every run committed under results/: no ``plots/plots.json`` and no
    ``plot_record`` in ``metrics.json``) are not failed for it."""
    run = copy(made, tmp_path)
    (run / "plots" / PLOT_RECORDS).unlink()
    edit_json(run / "metrics.json", lambda d: d.pop("plot_record"))
    shutil.copyfile(run / "plots" / "waterfall.png", run / "plots" / "pareto.png")  # (not checkable: no record)
    report = verify_run(run)
    assert report.ok and any(n.startswith(OLD_RUN_NOTE) for n in report.notes), (report.findings, report.notes)
    assert verify(capsys, run)[0] == 0


def test_write_tables_redraws_the_plots_and_their_record(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    shutil.copyfile(run / "plots" / "waterfall.png", run / "plots" / "pareto.png")
    (run / "plots" / PLOT_RECORDS).unlink()
    edit_json(run / "metrics.json", lambda d: d.pop("plot_record"))  # a run written before the record
    assert main(["-q", "--write-tables", str(run)]) == 0, capsys.readouterr().out
    assert (run / "plots" / PLOT_RECORDS).is_file()
    assert (run / "plots" / "pareto.png").read_bytes() != (run / "plots" / "waterfall.png").read_bytes()
    capsys.readouterr()
    report = verify_run(run)
    assert report.ok and not any(n.startswith(OLD_RUN_NOTE) for n in report.notes), report.findings


def test_write_tables_leaves_the_plots_of_a_run_with_findings(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    edit_json(run / "metrics.json", lambda d: d["frontier"]["systems"]["bm25"]["em"].update(auc=0.9))
    before = {p.name: p.read_bytes() for p in (run / "plots").iterdir()}
    assert main(["-q", "--write-tables", str(run)]) == 1
    assert {p.name: p.read_bytes() for p in (run / "plots").iterdir()} == before


def test_plot_data_does_not_depend_on_the_order_the_run_held_its_numbers_in(made: Path) -> None:
    """The harness draws from metrics.json as it holds it in memory (systems in the order they ran), verify from
    the file (keys sorted): the same numbers give the same plot data and digest."""
    run = open_run(made)
    stored, cost = run.summary, json.loads((made / "cost.json").read_text())

    def reverse(node):
        if isinstance(node, dict):
            return {k: reverse(node[k]) for k in reversed(list(node))}
        return [reverse(v) for v in node] if isinstance(node, list) else node

    a, b = run_plots(stored, cost), run_plots(reverse(stored), reverse(cost))
    assert list(a) == list(b) and all(a[n].digest() == b[n].digest() for n in a)


def test_the_data_digest_is_canonical() -> None:
    data = {"points": [{"label": "x", "cost": 1.5, "quality": 0.25, "interval": (0.0, 0.5), "front": True}],
            "quality": "em", "cost": "seconds per question", "title": ""}
    same = {"title": "", "cost": "seconds per question", "quality": "em",
            "points": [{"front": True, "interval": [0.0, 0.5], "quality": 0.25, "cost": 1.5, "label": "x"}]}
    assert data_digest("pareto", data) == data_digest("pareto", same)
    assert data_digest("pareto", data) != data_digest("frontier", data)
    moved = {**data, "points": [{**data["points"][0], "quality": 0.25000000000000006}]}  # (the last bit)
    assert data_digest("pareto", data) != data_digest("pareto", moved)
    assert canonical_json({"a": math.nan, "b": math.inf}) == '{"a":null,"b":null}'
