"""``htmlrag-paper verify`` (issue 40): a run whose numbers follow from its rows verifies; an edited metrics.json,
a deleted or duplicated row, an edited table cell or a changed metric code is named, with the stored and the
recomputed value and the cause; what cannot be checked is said."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from htmlrag.core.fingerprint import METRICS, fingerprint
from htmlrag.evaluation.run_tables import run_tables
from htmlrag.evaluation.store import atomic_write, dump_json, manifest_text, rows_record
from htmlrag.evaluation.summary import summarize
from htmlrag_bench.eval.verify import main

GOLD = {"q1": ["Margaret Ellis"], "q2": ["164"], "q3": ["22 nautical miles"], "q4": ["1871"]}
ANSWERS = {"bm25": ["Margaret Ellis", "160", "22 nautical miles", "in 1871"],
           "ours": ["Margaret Ellis", "164 steps", "22 nautical miles", "1871"]}
CONTEXT = {"bm25": "<p>designed by Margaret <b>Ellis</b></p>", "ours": "<p>164 steps, lit in 1871</p>"}


def make_rows(save_contexts: bool = True, subsets: bool = False) -> list[dict[str, Any]]:
    from htmlrag.evaluation.scoring.loop import context_text
    from htmlrag.evaluation.scoring.metrics import MetricInput, score_example

    rows = []
    for i, (qid, gold) in enumerate(GOLD.items()):
        systems = {}
        for s, answers in ANSWERS.items():
            x = MetricInput(response=answers[i], context=CONTEXT[s], answers=gold,
                            context_text=context_text(CONTEXT[s], "html"))
            rec = {"response": answers[i], "scores": score_example(["em", "f1", "ref_em"], x), "tokens": 10 + i,
                   "fmt": "html", "stage_tokens": {"cleaned": 100}, "error": None}
            if save_contexts:
                rec["context"] = CONTEXT[s]
            systems[s] = rec
        row = {"id": qid, "index": i, "question": f"question {qid}", "answers": gold, "long_answers": [],
               "answer_groups": [], "error": None, "systems": systems}
        if subsets:
            row["metadata"] = {"type": "text" if i % 2 else "table"}
        rows.append(row)
    return rows


def write_run(root: Path, rows: list[dict[str, Any]], *, subsets: bool = False, code: str | None = None) -> Path:
    """A run folder as the harness's finalize writes it (rows, rows.sha256, metrics.json, tables/)."""
    d = root / "quickstart" / "0123456789ab"
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    atomic_write(d / "predictions.jsonl", text)
    atomic_write(d / "rows.sha256", manifest_text(rows))
    atomic_write(d / "config.yaml", "name: quickstart\ncaption: Demo table.\npruner:\n  fmt: html\n")
    summary = summarize(rows, ["bm25", "ours"], ["em", "f1", "ref_em"], ours="ours", experiment="quickstart",
                        run_id=d.name, dataset="sample_pages", fidelity={"name": "ours", "deviations": []})
    summary |= {"rows": rows_record(rows), "metric_code": code or fingerprint(METRICS)}
    atomic_write(d / "metrics.json", dump_json(summary))
    atomic_write(d / "env.json", dump_json({"fidelity": summary["fidelity"]}))  # written by the same call
    for rel, t in run_tables(summary, rows, run="quickstart/0123456789ab", caption="Demo table.",
                             subsets=["type"] if subsets else [], pairwise=subsets).items():
        atomic_write(d / "tables" / rel, t)
    return d


def verify(capsys: pytest.CaptureFixture, *paths: Path) -> tuple[int, str]:
    status = main(["-q", *map(str, paths)])
    return status, capsys.readouterr().out


def test_a_finished_run_verifies(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows(subsets=True), subsets=True)
    assert verify(capsys, run) == (0, "verified: 1 runs, 4 rows, 10 tables\n")
    assert verify(capsys, tmp_path)[0] == 0  # a results root


def test_edited_metrics_json_is_named_with_its_cause(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows())
    m = json.loads((run / "metrics.json").read_text())
    m["systems"]["bm25"]["metrics"]["em"] = 0.9
    (run / "metrics.json").write_text(json.dumps(m))
    status, out = verify(capsys, run)
    assert status == 1 and "FAILED quickstart/0123456789ab" in out
    assert "metrics.json systems.bm25.metrics.em: stored 0.9, recomputed 0.75" in out
    assert "cause: metrics.json was edited: the rows and the metric code match the run's records" in out


def test_deleted_row_is_named_and_blamed_on_the_rows(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows())
    lines = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run / "predictions.jsonl").write_text("".join(lines[:1] + lines[2:]))
    status, out = verify(capsys, run)
    assert status == 1
    assert "cause: rows: 1 missing (q2)" in out
    assert "rows: stored 4 rows (checksum recorded), recomputed 3 rows" in out
    assert "metrics.json n_examples: stored 4, recomputed 3" in out
    assert "tables/results.md: row 'bm25', column 'sample_pages em'" in out


def test_duplicated_and_edited_rows_are_named(tmp_path: Path, capsys) -> None:
    rows = make_rows()
    run = write_run(tmp_path, rows)
    text = (run / "predictions.jsonl").read_text()
    edited = text.replace('"response": "160"', '"response": "164"')
    (run / "predictions.jsonl").write_text(edited + text.splitlines(keepends=True)[0])
    status, out = verify(capsys, run)
    assert status == 1
    assert "duplicated row q1" in out and "1 edited (q2)" in out
    assert "metrics.json systems.bm25.metrics.em: stored 0.75, recomputed 1.0" in out


def test_edited_table_cell_is_named(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows())
    path = run / "tables" / "results.csv"
    rows = list(csv.reader(io.StringIO(path.read_text())))
    cell = next(r for r in rows if r[1] == "ours" and r[3] == "f1")
    cell[4] = "0.5"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())
    status, out = verify(capsys, run)
    assert status == 1
    assert "tables/results.csv: row 'ours / sample_pages / f1', column 'value': stored 0.5, recomputed 0.9166666666666666" in out
    assert "cause: the table does not follow from metrics.json" in out and "metrics.json systems" not in out


def test_changed_metric_code_is_the_cause_of_a_changed_score(tmp_path: Path, capsys) -> None:
    rows = make_rows()
    rows[1]["systems"]["bm25"]["scores"]["em"] = 1.0  # as an older em would have scored "160" for "164"
    run = write_run(tmp_path, rows, code="0ld0ld0ld0ld0ld0")
    status, out = verify(capsys, run)
    assert status == 1
    assert "score em of bm25 on q2: stored 1.0, recomputed 0.0" in out
    assert f"the metric code changed since the run (fingerprint 0ld0ld0ld0ld0ld0 -> {fingerprint(METRICS)})" in out
    assert "metrics.json systems.bm25.metrics.em: stored 1.0, recomputed 0.75" in out


def test_changed_metric_code_with_agreeing_numbers_verifies_with_a_note(tmp_path: Path, capsys, caplog) -> None:
    run = write_run(tmp_path, make_rows(), code="0ld0ld0ld0ld0ld0")
    with caplog.at_level("INFO"):
        assert main([str(run)]) == 0
    assert "metric code changed since the run (fingerprint 0ld0ld0ld0ld0ld0" in caplog.text
    assert "its numbers still agree" in caplog.text


def test_old_run_without_records_says_what_was_not_checked(tmp_path: Path, caplog) -> None:
    run = write_run(tmp_path, make_rows(save_contexts=False))
    m = json.loads((run / "metrics.json").read_text())
    del m["rows"], m["metric_code"]
    (run / "metrics.json").write_text(json.dumps(m))
    (run / "rows.sha256").unlink()
    with caplog.at_level("INFO"):
        assert main([str(run)]) == 0
    assert "no row checksum recorded" in caplog.text and "no metric-code fingerprint recorded" in caplog.text
    assert "ref_em: 8 saved scores not re-scored (the rows do not hold the context" in caplog.text
    assert "em: re-scored on all 8 saved scores" in caplog.text


def test_a_context_metric_is_rescored_from_saved_contexts(tmp_path: Path, capsys) -> None:
    rows = make_rows()
    rows[0]["systems"]["ours"]["scores"]["ref_em"] = 1.0  # its context does not hold "Margaret Ellis"
    run = write_run(tmp_path, rows)
    status, out = verify(capsys, run)
    assert status == 1 and "score ref_em of ours on q1: stored 1.0, recomputed 0.0" in out


def test_subset_tables_and_pairwise_tests_are_checked(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows(subsets=True), subsets=True)
    path = run / "tables" / "by_type" / "results.md"
    path.write_text(path.read_text().replace("| ours | **100.00**", "| ours | **90.00**", 1))
    pw = run / "tables" / "pairwise.json"
    data = json.loads(pw.read_text())
    data[0]["mean_a"] = 0.1
    pw.write_text(json.dumps(data))
    status, out = verify(capsys, run)
    assert status == 1
    assert ("tables/by_type/results.md: row 'ours', column 'all em': stored **90.00** [100.00, 100.00], "
            "recomputed **100.00** [100.00, 100.00]") in out
    assert "tables/pairwise.json: [0].mean_a: stored 0.1, recomputed 1.0" in out


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2
    assert "no runs (metrics.json)" in capsys.readouterr().err


def test_a_row_of_another_shape_is_a_finding_not_a_traceback(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, make_rows())
    lines = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    row = json.loads(lines[1])
    row["systems"]["bm25"] = "not a record"
    (run / "predictions.jsonl").write_text(lines[0] + json.dumps(row) + "\n" + "".join(lines[2:]))
    status, out = verify(capsys, run)
    assert status == 1 and "quickstart/0123456789ab" in out
    assert "a line is not a row" in out and "predictions.jsonl" in out and "'not a record'" in out
    assert "Traceback" not in out


def _run_with(root: Path, rows: list[dict[str, Any]], scored: list[dict[str, Any]], metrics: list[str],
              subsets: list[str], config: str) -> Path:
    """A run folder whose saved rows are ``rows`` and whose numbers come from ``scored`` (the rows with what the
    harness adds in memory, e.g. the judge's scores)."""
    d = root / "quickstart" / "0123456789ab"
    atomic_write(d / "predictions.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    atomic_write(d / "rows.sha256", manifest_text(rows))
    atomic_write(d / "config.yaml", config)
    summary = summarize(scored, ["bm25", "ours"], metrics, ours="ours", experiment="quickstart", run_id=d.name,
                        dataset="sample_pages", fidelity={"name": "ours", "deviations": []})
    summary |= {"rows": rows_record(rows), "metric_code": fingerprint(METRICS)}
    atomic_write(d / "metrics.json", dump_json(summary))
    atomic_write(d / "env.json", dump_json({"fidelity": summary["fidelity"]}))
    for rel, t in run_tables(summary, scored, run="quickstart/0123456789ab", caption="Demo table.",
                             subsets=subsets, pairwise=bool(subsets)).items():
        atomic_write(d / "tables" / rel, t)
    return d


def test_subset_tables_are_recomputed_in_the_runs_order(tmp_path: Path, capsys) -> None:
    """The pairwise groups follow ``docqa.subsets`` as the run listed them (rows store metadata with sorted
    keys, so the order comes from config.yaml), not the alphabetical order of the ``by_*`` folders."""
    rows = make_rows(subsets=True)
    for i, r in enumerate(rows):
        r["metadata"]["half"] = "first" if i < 2 else "second"
    config = "name: quickstart\ncaption: Demo table.\ndocqa:\n  subsets: [type, half]\n  pairwise: true\n"
    run = _run_with(tmp_path, rows, rows, ["em", "f1", "ref_em"], ["type", "half"], config)
    status, out = verify(capsys, run)
    assert status == 0, out


def test_judge_draws_are_averaged_as_the_harness_averages_them(tmp_path: Path, capsys) -> None:
    """With ``judge.draws`` > 1 the judged score is the mean verdict over the draws (no verdict counts 0);
    verify reads every draw from judgments.jsonl."""
    rows = make_rows()
    scored = json.loads(json.dumps(rows))
    lines = []
    for i, r in enumerate(scored):
        for s, rec in r["systems"].items():
            verdicts = [1, 0, 1] if (i + len(s)) % 2 else [1, 1, None]
            rec["scores"]["judge"] = sum(float(v or 0) for v in verdicts) / len(verdicts)
            rec["scores"]["judge_invalid"] = sum(float(v is None) for v in verdicts) / len(verdicts)
            lines.append(json.dumps({"id": r["id"], "system": s, "status": "ok", "score": verdicts[0], "reply": "",
                                     "draws": [{"score": v, "status": "ok" if v is not None else "unparsable"}
                                               for v in verdicts]}))
    run = _run_with(tmp_path, rows, scored, ["em", "f1", "ref_em", "judge", "judge_invalid"], [],
                    "name: quickstart\ncaption: Demo table.\n")
    atomic_write(run / "judgments.jsonl", "\n".join(lines) + "\n")
    from htmlrag.docqa.judge import judge_report, judgments_record

    records = [json.loads(x) for x in lines]  # the harness writes judge.json from the same lines
    report = judge_report(records, judge="docbench_gpt4", model="stub-judge", draws=3)
    atomic_write(run / "judge.json", json.dumps({**report, "judgments": judgments_record(records)}))
    from htmlrag.evaluation.grid import write_formats
    from htmlrag.evaluation.report import judge_grid

    summary = json.loads((run / "metrics.json").read_text())
    write_formats(judge_grid(report, summary), run / "tables", "judge_agreement")  # as the harness does
    status, out = verify(capsys, run)
    assert status == 0, out
    edited = lines[0].replace('"draws": [{"score": 1', '"draws": [{"score": 0')
    atomic_write(run / "judgments.jsonl", "\n".join([*lines[1:], edited]) + "\n")
    assert verify(capsys, run)[0] == 1  # an edited draw changes the judged score


def test_stored_floats_agree_up_to_their_last_bits_only() -> None:
    """numpy/scipy releases round the last bit of a bootstrap bound or p-value differently (seen at the
    dependency floors): that is the same number; any larger change is a difference."""
    from htmlrag.evaluation.verify import _equal

    assert _equal(0.0009312481719849166, 0.0009312481719849165)
    assert _equal([-0.02836960214926316, 0.11740513582462724], [-0.028369602149263158, 0.11740513582462724])
    assert not _equal(0.5, 0.5 * (1 + 1e-9)) and not _equal([0.1, 0.2], [0.1, 0.2000001])
    assert not _equal([0.1, 0.2], [0.1]) and not _equal(1.0, "1.0") and _equal(float("nan"), float("nan"))
