"""``htmlrag-paper verify`` against tampering that the first version let pass with exit 0: table files beside
results.* (waterfall, cost, frontier), deleted tables, a deleted predictions.jsonl, deleted run records, an
unknown metrics.json key, config/overrides/identity edits, a renamed folder, a folder in place of the rows and a
torn last line. One quickstart run (budgets 64 and 128: frontier, waterfall and cost tables) is made once; each
test copies it and tampers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from htmlrag_bench.eval.verify import main
from tests.conftest import ROOT, quickstart_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_run(tmp_path_factory.mktemp("tamper"))


def copy(made: Path, tmp: Path, experiment: str = "quickstart", name: str | None = None) -> Path:
    return Path(shutil.copytree(made, tmp / "root" / experiment / (name or made.name)))


def verify(capsys: pytest.CaptureFixture, path: Path) -> tuple[int, str]:
    status = main(["-q", str(path)])
    return status, capsys.readouterr().out


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_the_untouched_run_verifies_every_table(made: Path, tmp_path: Path, capsys) -> None:
    status, out = verify(capsys, copy(made, tmp_path))
    assert status == 0, out
    n = len([p for p in (made / "tables").rglob("*") if p.is_file()])
    assert out == f"verified: 1 runs, 6 rows, {n} tables\n"


@pytest.mark.parametrize(("rel", "old", "new"), [("waterfall.md", "| 100.0 |", "| 99.0 |"),
                                                 ("cost.md", "| yes |", "| |"),
                                                 ("frontier_em.md", "tokens", "tokenz")])
def test_an_edited_cell_of_a_report_table_is_named(made: Path, tmp_path: Path, capsys, rel: str, old: str,
                                                   new: str) -> None:  # C1
    run = copy(made, tmp_path)
    path = run / "tables" / rel
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    status, out = verify(capsys, run)
    assert status == 1 and f"tables/{rel}" in out, out


def test_an_edited_cost_json_is_named(made: Path, tmp_path: Path, capsys) -> None:  # C1
    run = copy(made, tmp_path)
    edit_json(run / "cost.json", lambda d: d.update(metric="f1"))
    status, out = verify(capsys, run)
    assert status == 1 and "cost.json metric: stored f1" in out, out


@pytest.mark.parametrize("how", ["one", "folder", "file"])
def test_deleted_tables_are_findings(made: Path, tmp_path: Path, capsys, how: str) -> None:  # C2
    run = copy(made, tmp_path)
    if how == "one":
        (run / "tables" / "results.tex").unlink()
    else:
        shutil.rmtree(run / "tables")
        if how == "file":
            (run / "tables").write_text("")
    status, out = verify(capsys, run)
    assert status == 1 and "tables/results.tex: stored the file is missing" in out, out
    assert "cause: " in out and "the file is missing" in out


def test_a_deleted_predictions_jsonl_is_a_finding(made: Path, tmp_path: Path, capsys) -> None:  # C3
    run = copy(made, tmp_path)
    (run / "predictions.jsonl").unlink()
    status, out = verify(capsys, run)
    assert status == 1 and "rows: 6 missing" in out and "recomputed 0 rows" in out, out


@pytest.mark.parametrize(("tamper", "expect"), [
    (lambda r: edit_json(r / "metrics.json", lambda d: d.pop("rows")), "its 'rows' record was deleted"),
    (lambda r: edit_json(r / "metrics.json", lambda d: d.pop("metric_code")), "its 'metric_code' record was deleted"),
    (lambda r: (r / "rows.sha256").unlink(), "rows.sha256 deleted"),
    (lambda r: (r / "rows.sha256").write_text((r / "rows.sha256").read_text().replace("  ", "  x", 1)),
     "rows.sha256 was edited"),
    (lambda r: edit_json(r / "metrics.json", lambda d: d.update(note="x")), "a key not written by the harness"),
], ids=["rows-key", "metric-code-key", "rows.sha256-deleted", "rows.sha256-ids", "unknown-key"])
def test_deleted_or_added_records_are_findings(made: Path, tmp_path: Path, capsys, tamper, expect: str) -> None:  # C4
    run = copy(made, tmp_path)
    tamper(run)
    status, out = verify(capsys, run)
    assert status == 1 and expect in out, out


@pytest.mark.parametrize(("tamper", "expect"), [
    (lambda r: (r / "config.yaml").unlink(), "config.yaml deleted"),
    (lambda r: (r / "overrides.yaml").write_text('- "experiment=quickstart"\n- "pruner.budget=256"\n'),
     "overrides.yaml pruner.budget: stored 256, recomputed 128"),
    (lambda r: edit_json(r / "metrics.json", lambda d: d.update(reader={"model": "gpt-4o"})),
     "metrics.json reader.model: stored gpt-4o, recomputed fake-30w"),
    (lambda r: edit_json(r / "metrics.json", lambda d: d.update(dataset="wtq_html_qa")),
     "metrics.json dataset: stored wtq_html_qa, recomputed sample_pages"),
], ids=["config-deleted", "overrides", "reader", "dataset"])
def test_config_and_identity_edits_are_findings(made: Path, tmp_path: Path, capsys, tamper, expect: str) -> None:  # C5
    run = copy(made, tmp_path)
    tamper(run)
    status, out = verify(capsys, run)
    assert status == 1 and expect in out, out


def test_an_edited_fidelity_is_blamed_on_metrics_json(made: Path, tmp_path: Path, capsys) -> None:  # C5
    run = copy(made, tmp_path)
    edit_json(run / "metrics.json", lambda d: d["fidelity"].update(name="paper"))
    status, out = verify(capsys, run)
    assert status == 1 and "metrics.json fidelity.name: stored paper, recomputed ours" in out, out
    assert "the table does not follow from metrics.json" not in out


def test_a_renamed_folder_is_one_clear_finding(made: Path, tmp_path: Path, capsys) -> None:  # C6
    status, out = verify(capsys, copy(made, tmp_path, name="renamed"))
    assert status == 1 and f"the folder is named renamed, recomputed the run's id is {made.name}" in out, out
    assert "1 differences" in out


def test_a_run_moved_into_another_experiment_folder_verifies(made: Path, tmp_path: Path, capsys) -> None:  # C6
    status, out = verify(capsys, copy(made, tmp_path, experiment="elsewhere"))
    assert status == 0, out


def test_a_folder_in_place_of_the_rows_is_a_finding(made: Path, tmp_path: Path, capsys) -> None:  # D2
    run = copy(made, tmp_path)
    (run / "predictions.jsonl").unlink()
    (run / "predictions.jsonl").mkdir()
    status, out = verify(capsys, run)
    assert status == 1 and "predictions.jsonl: stored a file of rows" in out, out


def test_a_torn_last_line_is_noted(made: Path, tmp_path: Path, caplog) -> None:
    run = copy(made, tmp_path)
    with (run / "predictions.jsonl").open("a") as f:
        f.write('{"id": "x')
    with caplog.at_level("INFO"):
        assert main([str(run)]) == 0
    assert "predictions.jsonl: an incomplete last line (9 bytes" in caplog.text


@pytest.mark.parametrize("tamper", ["delete", "garbage", "a list", "no fidelity"])
def test_a_deleted_or_broken_env_json_is_a_finding(made: Path, tmp_path: Path, capsys, tamper: str) -> None:
    """env.json holds the fidelity the run's metrics.json is checked against: without it a fidelity edit would
    pass unseen."""
    run = copy(made, tmp_path)
    env = run / "env.json"
    if tamper == "delete":
        env.unlink()
    elif tamper == "garbage":
        env.write_text("x")
    elif tamper == "a list":
        env.write_text("[1, 2]")
    else:
        edit_json(env, lambda d: d.pop("fidelity"))
    status, out = verify(capsys, run)
    assert status == 1 and "env.json" in out, out


def test_an_edited_row_is_the_cause_of_the_tables_too(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    pred = run / "predictions.jsonl"
    rows = [json.loads(x) for x in pred.read_text().splitlines()]
    name = next(iter(rows[0]["systems"]))
    rows[0]["systems"][name]["response"] = "Margaret Ellis"
    pred.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, out = verify(capsys, run)
    assert status == 1 and "rows: 1 edited" in out and "metrics.json was edited" not in out, out


def test_every_table_of_a_run_with_error_rows_says_how_many(tmp_path: Path, capsys) -> None:
    """run.allow_errors=true: the run's results, frontier, waterfall and cost tables all name the error rows
    (only results.* did), and the run verifies."""
    pages = tmp_path / "pages"
    shutil.copytree(ROOT / "data" / "pages", pages)
    (pages / "tea-garden.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)  # not a page
    out = subprocess.run([sys.executable, "-m", "htmlrag_bench.eval.app", "experiment=quickstart", "reader=fake",
                          "metric=short", "run.allow_errors=true", "run.progress=false", "pruner.budgets=[64,128]",
                          f"dataset.loader.path={pages}", f"paths.results={tmp_path / 'r'}",
                          f"paths.cache={tmp_path / 'c'}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = [p.parent for p in (tmp_path / "r" / "quickstart").glob("*/metrics.json")]
    mds = sorted((run / "tables").glob("*.md"))
    assert {p.stem.split("_")[0] for p in mds} >= {"results", "frontier", "waterfall", "cost"}
    for md in mds:
        assert "Error rows (not scored): " in md.read_text(), md.name
    status, text = verify(capsys, run)
    assert status == 0, text


def test_a_settings_edit_that_nothing_else_repeats_is_named(made: Path, tmp_path: Path, capsys) -> None:
    """config.yaml is checked against the digest metrics.json records (the run id cannot be recomputed from the
    stored file); re-indenting it or adding a comment changes nothing."""
    run = copy(made, tmp_path)
    cfg = (run / "config.yaml").read_text()
    assert "\nseed: 0\n" in cfg
    (run / "config.yaml").write_text(cfg.replace("\nseed: 0\n", "\nseed: 1\n", 1))
    status, out = verify(capsys, run)
    assert status == 1 and "config.yaml was edited after the run" in out, out
    benign = copy(made, tmp_path / "b")
    (benign / "config.yaml").write_text("# a reader's note\n\n" + cfg + "# end\n")
    status, out = verify(capsys, benign)
    assert status == 0, out


def test_an_edited_interval_setting_is_named_and_no_table_is_rewritten(made: Path, tmp_path: Path, capsys) -> None:
    """metrics.json's interval settings (correction, power, ...) must agree with config.yaml's metric group:
    changing the correction adds significance marks, and --write-tables must not make that pass."""
    run = copy(made, tmp_path)
    edit_json(run / "metrics.json", lambda d: d["intervals"].update(correction="none"))
    before = {p: p.read_bytes() for p in (run / "tables").iterdir()}
    assert main(["-q", "--write-tables", str(run)]) == 1
    assert {p: p.read_bytes() for p in (run / "tables").iterdir()} == before
    status, out = verify(capsys, run)
    assert status == 1 and "metrics.json intervals.correction: stored none, recomputed holm" in out, out


def test_a_renamed_folder_with_its_provenance_edited_to_match_is_named(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path, name="aaaaaaaaaaaa")
    prov = run / "tables" / "provenance.csv"
    prov.write_text(prov.read_text().replace(made.name, "aaaaaaaaaaaa"))
    status, out = verify(capsys, run)
    assert status == 1 and f"the run's id is {made.name}" in out, out


@pytest.mark.parametrize("rel", ["results.csv", "provenance.csv"])
def test_an_extra_csv_cell_is_named(made: Path, tmp_path: Path, capsys, rel: str) -> None:
    run = copy(made, tmp_path)
    path = run / "tables" / rel
    lines = path.read_text().split("\n")
    lines[1] += ",0.99"
    path.write_text("\n".join(lines))
    status, out = verify(capsys, run)
    assert status == 1 and "number of cells" in out, out


def test_a_whole_row_appended_without_its_newline_is_a_finding(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    pred = run / "predictions.jsonl"
    first = json.loads(pred.read_text().split("\n")[0])
    first["id"] = "forged"
    with pred.open("a") as f:
        f.write(json.dumps(first))
    status, out = verify(capsys, run)
    assert status == 1 and "a row was appended" in out, out


def test_verify_dot_inside_the_run_folder(made: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    run = copy(made, tmp_path)
    monkeypatch.chdir(run)
    assert verify(capsys, Path("."))[0] == 0
    monkeypatch.chdir(run / "tables")
    assert verify(capsys, Path(".."))[0] == 0


def test_write_tables_never_writes_through_a_linked_tables_folder(made: Path, tmp_path: Path, capsys) -> None:
    a, b = copy(made, tmp_path / "a"), copy(made, tmp_path / "b")
    edit_json(b / "metrics.json", lambda d: None)  # (b stays a valid run)
    shutil.rmtree(a / "tables")
    (a / "tables").symlink_to(b / "tables", target_is_directory=True)
    target = b / "tables" / "results.md"
    target.write_text(target.read_text() + "\nb's own line\n")
    assert main(["-q", "--write-tables", str(a)]) == 1
    assert target.read_text().endswith("b's own line\n")
    assert "tables/ is a link out of the run folder" in capsys.readouterr().out


def test_a_byte_order_mark_an_editor_added_changes_nothing(made: Path, tmp_path: Path, capsys) -> None:
    run = copy(made, tmp_path)
    for rel in ["metrics.json", "predictions.jsonl", "rows.sha256", "env.json", "cost.json", "config.yaml",
                "tables/results.md", "tables/results.csv", "tables/results.tex"]:
        path = run / rel
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    status, out = verify(capsys, run)
    assert status == 0, out


def test_a_deeply_nested_folder_is_one_finding_and_the_other_runs_are_verified(made: Path, tmp_path: Path,
                                                                              capsys) -> None:
    """1,100 nested folders in one run: Path.rglob recursed once per level (RecursionError, every run
    unverified); now that run has one finding and the run beside it verifies."""
    bad = copy(made, tmp_path)
    copy(made, tmp_path, experiment="other")
    here = os.getcwd()
    try:
        os.chdir(bad / "plots")
        for _ in range(1100):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(here)
    status, out = verify(capsys, tmp_path / "root")
    assert status == 1 and "1 of 2 runs differ" in out and "folders nested deeper than" in out, out
    subprocess.run(["rm", "-rf", str(bad / "plots" / "d")], check=True)  # (pytest's clean-up recurses)
