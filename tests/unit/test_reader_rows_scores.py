"""A score that is not a number a mean can use -- NaN, an infinity, null, or missing -- in a loaded row: loading
still accepts it (it has the shape of a number; ``test_run_shapes`` keeps NaN and null loadable, and the web app
shows such rows), and the summary takes it out of that metric for that system explicitly: counted in
``unusable_scores``, logged, named in the tables' caption, never averaged and never a crash (it failed in the
t-test's standard deviation). The harness itself never writes one: a metric that gives NaN or an infinity is a
metric error (an error row), like one that raises."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from htmlrag.core.answers import MetricInput
from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.scoring import metrics as registry
from htmlrag.evaluation.scoring.metrics import Metric, score_example
from htmlrag.evaluation.store import RunStore, dump_json
from htmlrag.evaluation.summary import summarize, table_texts, unusable_caption

MISSING = object()
#: run A of tests/helpers/app_data: ref_em per question (q1, q2, q3) -- bm25 [1, 1, 0], minilm [1, 1, 0]
BM25, MINILM = [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]


def _rows(bad: object, metric: str = "ref_em") -> list[dict]:
    rows = []
    for i, (a, b) in enumerate(zip(BM25, MINILM, strict=True)):
        bm25 = {"scores": {"ref_em": a, "bleu": a}, "metric_stats": {"bleu": [3.0, 3.0, a, a, a, a, 3, 2, 1, 0]},
                "response": "x", "tokens": 100, "error": None}
        rows.append({"id": f"q{i + 1}", "index": i, "question": "?", "answers": ["x"], "error": None,
                     "systems": {"bm25": bm25, "minilm": {**bm25, "scores": {"ref_em": b, "bleu": b}}}})
    target = rows[1]["systems"]["bm25"]
    if bad is MISSING:
        del target["scores"][metric]
    elif metric == "bleu-stats":
        target["metric_stats"]["bleu"][2] = bad
    else:
        target["scores"][metric] = bad
    return rows


def _loaded(tmp_path: Path, rows: list[dict]) -> list[dict]:
    """``rows`` written as the harness writes them (``json.dumps``: NaN, Infinity) and read back by the store."""
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return RunStore.read_rows(path)


def _summary(rows: list[dict], metrics: tuple[str, ...] = ("ref_em",)) -> dict:
    return summarize(rows, ["bm25", "minilm"], list(metrics), ours="minilm", experiment="e", run_id="r",
                     dataset="d")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), None, MISSING],
                         ids=["nan", "inf", "-inf", "null", "missing"])
def test_a_score_that_is_not_a_number_is_left_out_counted_and_reported(bad: object, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    rows = _loaded(tmp_path, _rows(bad))   # loading accepts it, as before
    with caplog.at_level(logging.WARNING):
        summary = _summary(rows)
    bm25 = summary["systems"]["bm25"]
    assert bm25["metrics"]["ref_em"] == 0.5                 # the mean of q1 and q3, not NaN, not inf
    assert bm25["n"] == 3 and bm25["unusable_scores"] == {"ref_em": 1}
    assert "unusable_scores" not in summary["systems"]["minilm"]
    assert summary["tests"]["ref_em"]["bm25"]["n"] == 2     # paired over the questions both scored
    assert "system bm25, metric ref_em: 1 scored examples hold no usable score" in caplog.text and "id q2" in caplog.text
    dump_json(summary)                                       # metrics.json can be written (no NaN reaches it)
    assert unusable_caption([summary]) == "Scores that are not numbers (left out): bm25 ref_em 1 of 3 examples."
    assert "Scores that are not numbers (left out)" in table_texts([summary])["md"]
    kept = rows[1]["systems"]["bm25"]["scores"].get("ref_em", "missing")  # the loaded rows are not edited
    assert kept in (None, "missing") or not math.isfinite(kept)


def test_rows_with_usable_scores_give_the_summary_they_gave_before() -> None:
    summary = _summary(_rows(0.0))
    assert all("unusable_scores" not in e for e in summary["systems"].values())
    assert unusable_caption([summary]) == ""


def test_a_corpus_metric_whose_statistics_hold_nan_leaves_that_example_out(tmp_path: Path) -> None:
    rows = _loaded(tmp_path, _rows(float("nan"), "bleu-stats"))
    summary = _summary(rows, ("bleu", "ref_em"))
    bm25 = summary["systems"]["bm25"]
    assert bm25["unusable_scores"] == {"bleu": 1} and bm25["metrics"]["ref_em"] == 2 / 3
    assert bm25["metrics"]["bleu"] is not None and math.isfinite(bm25["metrics"]["bleu"])
    dump_json(summary)


def test_a_frontier_never_averages_a_nan() -> None:
    rows = []
    for i in range(4):
        systems = {f"{s}@{b}": {"scores": {"em": float((i + b // 100) % 2)}, "tokens": b, "error": None, "budget": b}
                   for s in ("ours", "bm25") for b in (100, 200)}
        rows.append({"id": f"q{i}", "index": i, "error": None, "systems": systems})
    rows[2]["systems"]["ours@200"]["scores"]["em"] = float("nan")
    names = [f"{s}@{b}" for s in ("ours", "bm25") for b in (100, 200)]
    summary = summarize(rows, names, ["em"], ours="ours", experiment="e", run_id="r", dataset="d")
    assert summary["systems"]["ours@200"]["unusable_scores"] == {"em": 1}
    text = dump_json(summary)                                # no NaN anywhere, frontier included
    curve = summary["frontier"]["systems"]["ours"]["em"]
    assert "NaN" not in text and curve["n"] == [4, 3] and curve["auc_n"] == 3  # q2 left out at 200 and of the area
    assert all(m is not None and math.isfinite(m) for m in curve["means"])


def test_a_metric_that_gives_nan_or_an_infinity_is_a_metric_error_never_a_saved_nan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (float("nan"), float("inf")):
        monkeypatch.setitem(registry.METRICS, "odd", Metric("odd", lambda x, v=value: v))
        with pytest.raises(HtmlRagError, match=rf"metric odd: the score is {value!r}, not a finite number"):
            score_example(["em", "odd"], MetricInput(response="x", answers=["x"]))
    assert score_example(["em"], MetricInput(response="x", answers=["x"])) == {"em": 1.0}
