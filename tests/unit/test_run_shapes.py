"""Bad shapes in run folders (issue 38, class 5): every row and ``metrics.json`` is checked once, where it is read,
so a row that is JSON but not an object, a score that is a string, a system that is a list... gives one clear
error naming the file, the line and the field -- in the summary, the t-tests, ``htmlrag-bench-table`` and
``htmlrag-paper`` -- never a TypeError traceback; a ``metrics.json`` of the wrong shape flags its run."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.evaluation.runs import find_runs, open_run
from htmlrag.evaluation.shapes import row_problem, summary_problem
from htmlrag.evaluation.summary import summarize
from tests.helpers.app_data import make_results

NULL = object()  # a change that makes the row JSON null


def _row(d: Path, change: Callable[[dict], object]) -> None:
    lines = (d / "predictions.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    new = change(row)
    lines[1] = json.dumps(None if new is NULL else row if new is None else new)
    (d / "predictions.jsonl").write_text("\n".join(lines) + "\n")


def _set(path: list, value: object) -> Callable[[dict], None]:
    def change(row: dict) -> None:
        node = row
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return change


#: name -> (change to row 2, the field named in the error)
ROWS: dict[str, tuple[Callable[[dict], object], str]] = {
    "a list": (lambda r: [1, 2], "a row must be a JSON object"),
    "a string": (lambda r: "row", "a row must be a JSON object"),
    "null": (lambda r: NULL, "a row must be a JSON object"),
    "no id": (lambda r: {k: v for k, v in r.items() if k != "id"}, "'id'"),
    "id an object": (_set(["id"], {"a": 1}), "'id'"),
    "id a boolean": (_set(["id"], True), "'id'"),
    "index a string": (_set(["index"], "1"), "index: must be int"),
    "question a list": (_set(["question"], [1]), "question: must be str"),
    "answers a string": (_set(["answers"], "164"), "answers: must be list"),
    "an answer a number": (_set(["answers"], [164]), "answers: must be a list of strings"),
    "error an object": (_set(["error"], {"x": 1}), "error: must be str"),
    "systems a list": (_set(["systems"], [1]), "systems: must be dict"),
    "a system a string": (_set(["systems", "bm25"], "x"), "systems.bm25: must be an object"),
    "scores a list": (_set(["systems", "bm25", "scores"], [1.0]), "systems.bm25.scores: must be an object"),
    "a score a string": (_set(["systems", "bm25", "scores", "ref_em"], "1.0"), "systems.bm25.scores.ref_em"),
    "a score a boolean": (_set(["systems", "bm25", "scores", "ref_em"], True), "systems.bm25.scores.ref_em"),
    "a score an object": (_set(["systems", "bm25", "scores", "ref_em"], {"v": 1}), "systems.bm25.scores.ref_em"),
    "tokens a string": (_set(["systems", "bm25", "tokens"], "118"), "systems.bm25.tokens"),
    "a stage count a string": (_set(["systems", "bm25", "stage_tokens"], {"cleaned": "x"}),
                               "systems.bm25.stage_tokens.cleaned"),
    "metric stats a number": (_set(["systems", "bm25", "metric_stats"], {"bleu": 3}),
                              "systems.bm25.metric_stats.bleu"),
    "response a number": (_set(["systems", "bm25", "response"], 12), "systems.bm25.response"),
    "a system error a list": (_set(["systems", "bm25", "error"], ["x"]), "systems.bm25.error"),
}


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    ids = make_results(tmp_path / "results")
    return tmp_path / "results" / ids["A"], tmp_path / "results" / "demo"


@pytest.mark.parametrize("case", list(ROWS))
def test_a_bad_row_is_a_clear_error_naming_file_line_and_field(runs: tuple[Path, Path], case: str) -> None:
    run_dir, _ = runs
    change, field = ROWS[case]
    _row(run_dir, change)
    with pytest.raises(InputError) as err:
        open_run(run_dir).rows()
    msg = str(err.value)
    assert f"{run_dir / 'predictions.jsonl'}:2: " in msg and field in msg and "fix or delete the line" in msg


def test_good_rows_pass_and_nan_or_null_scores_are_numbers(runs: tuple[Path, Path]) -> None:
    run_dir, _ = runs
    _row(run_dir, _set(["systems", "bm25", "scores", "ref_em"], float("nan")))
    _row(run_dir, _set(["systems", "minilm", "scores", "ref_em"], None))
    rows = open_run(run_dir).rows()
    assert len(rows) == 3 and math.isnan(rows[1]["systems"]["bm25"]["scores"]["ref_em"])
    assert row_problem({"id": 7, "systems": {}, "extra": {"any": ["thing"]}}) is None


@pytest.mark.parametrize("case", ["a score a string", "scores a list", "a list", "tokens a string"])
def test_the_summary_of_bad_rows_never_gets_a_type_error(runs: tuple[Path, Path], case: str) -> None:
    run_dir, _ = runs
    _row(run_dir, ROWS[case][0])
    with pytest.raises(InputError, match=r"predictions\.jsonl:2: "):
        summarize(open_run(run_dir).rows(), ["bm25", "minilm"], ["ref_em"], ours="minilm", experiment="e",
                  run_id="r", dataset="d")


def _metrics(d: Path, change: Callable[[dict], object]) -> None:
    m = json.loads((d / "metrics.json").read_text())
    new = change(m)
    (d / "metrics.json").write_text(json.dumps(m if new is None else new))


#: name -> (change to metrics.json, the problem recorded)
METRICS: dict[str, tuple[Callable[[dict], object], str]] = {
    "not an object": (lambda m: [1, 2], "not a JSON object"),
    "systems a list": (_set(["systems"], [1]), "systems: must be an object"),
    "a system a string": (_set(["systems", "bm25"], "x"), "systems.bm25: must be an object"),
    "a metric a string": (_set(["systems", "bm25", "metrics", "ref_em"], "high"), "systems.bm25.metrics.ref_em"),
    "metrics a list": (_set(["systems", "bm25", "metrics"], [1]), "systems.bm25.metrics: must be an object"),
    "n a string": (_set(["systems", "bm25", "n"], "3"), "systems.bm25.n"),
    "metric names a string": (_set(["metric_names"], "ref_em"), "metric_names: must be a list of strings"),
    "system order an object": (_set(["system_order"], {"a": 1}), "system_order: must be a list of strings"),
    "system order names a stranger": (_set(["system_order"], ["bm25", "nope"]), "system_order: names systems"),
    "n_examples a string": (_set(["n_examples"], "3"), "n_examples: must be int"),
    "tests a list": (_set(["tests"], []), "tests: must be dict"),
}


@pytest.mark.parametrize("case", list(METRICS))
def test_a_bad_metrics_json_flags_its_run_and_table_commands_refuse_it_clearly(
        runs: tuple[Path, Path], case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from htmlrag_bench.eval import paper, table

    run_dir, folder = runs
    change, problem = METRICS[case]
    _metrics(run_dir, change)
    run = open_run(run_dir)
    assert run.summary == {} and any(problem in p for p in run.problems), run.problems
    assert [r.dir for r in find_runs([folder]) if r.problems] == [run_dir]   # listed, flagged
    with pytest.raises(InputError, match=problem.split(":")[0]):
        run.check()
    assert table.main([str(folder), "--out", str(tmp_path / "t")]) == 2
    assert paper.main(["table", str(folder), "--out", str(tmp_path / "p")]) == 2
    assert problem.split(":")[0] in caplog.text and "Traceback" not in caplog.text


def test_good_metrics_json_has_no_problem_including_infinities(runs: tuple[Path, Path]) -> None:
    run_dir, _ = runs
    _metrics(run_dir, _set(["systems", "bm25", "metrics", "ref_em"], "inf"))
    assert open_run(run_dir).problems == []
    assert summary_problem({"systems": {"s": {"metrics": {"em": None}, "n": 0}}}) is None


@pytest.mark.parametrize("text", ["{not json", "", "\ufeff{oops", "null", "42"])
def test_unreadable_metrics_json_is_a_problem_not_an_exception(runs: tuple[Path, Path], text: str) -> None:
    run_dir, _ = runs
    (run_dir / "metrics.json").write_text(text)
    run = open_run(run_dir)
    assert run.summary == {}
    assert run.problems or text == "null"
