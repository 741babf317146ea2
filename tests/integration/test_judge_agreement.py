"""Judge reliability against a real HTTP stub on 127.0.0.1: a judge that disagrees with itself on purpose (it
alternates 1 and 0 for some answers), judged several times per answer (``judge.draws``): every draw is a fresh
request (never one cached reply), the score is the mean verdict, the agreement is Krippendorff's alpha of the
draws (checked against the ``krippendorff`` package on the known verdicts) and the answers whose draws disagree
are flagged; the same through a whole run (judge.json, tables/judge_agreement.*)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from htmlrag.core.cache import SqliteCache
from htmlrag.docqa.agreement import agreement, disagreements, krippendorff_alpha
from htmlrag.docqa.judge import JudgeItem, LLMJudge, ReaderChat
from htmlrag.readers import GenerationConfig
from htmlrag.readers.openai import OpenAIReader
from htmlrag.testing.judge_stub import FlipStub, serve

PROMPT = "Question: {{question}}\nUser Answer: {{sys_ans}}\nReference Answer: {{ref_ans}}"


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[FlipStub]:
    s = FlipStub(parity=getattr(request, "param", False))
    with serve(s) as url:
        monkeypatch.setenv("FLIP_URL", url)
        monkeypatch.setenv("FLIP_KEY", "sk-flip-test")
        yield s


def _judge(cache: SqliteCache | None) -> LLMJudge:
    reader = OpenAIReader("flip-judge", generation=GenerationConfig(max_new_tokens=4), base_url_env="FLIP_URL",
                          api_key_env="FLIP_KEY", max_retries=0, concurrency=2)
    return LLMJudge(ReaderChat(reader), PROMPT, cache=cache, concurrency=3)


def test_draws_are_fresh_requests_and_agreement_matches_krippendorff(stub: FlipStub, tmp_path: Path) -> None:
    judge = _judge(SqliteCache(tmp_path / "judge.sqlite", "judge"))  # a greedy judge with a cache ...
    items = [JudgeItem("q1", "GOOD one", "g"), JudgeItem("q2", "FLIP two", "g"), JudgeItem("q3", "BAD three", "g"),
             JudgeItem("q4", "FLIP four", "g"), JudgeItem("q5", "GOOD five", "g")]
    draws = judge.judge_draws(items, 4)
    assert stub.requests == 20                                     # ... still asks 4 times per answer
    matrix = [[v.score for v in vs] for vs in draws]
    # concurrent draws arrive in any order: two 1s and two 0s for each FLIP answer
    assert [sorted(m) for m in matrix] == [[1] * 4, [0, 0, 1, 1], [0] * 4, [0, 0, 1, 1], [1] * 4]
    assert not any(v.cached for vs in draws for v in vs)
    assert disagreements(matrix) == [1, 3]
    ref = krippendorff.alpha(reliability_data=np.array(matrix, dtype=float).T, level_of_measurement="nominal")
    alpha, why = krippendorff_alpha(matrix)
    assert alpha == pytest.approx(ref) and why == ""
    assert -0.5 < alpha < 0.9                                      # two of five answers disagree with themselves
    assert agreement(matrix) == {"alpha": alpha, "alpha_undefined": None, "raters": 4, "items": 5, "disagreements": 2}
    again = judge.judge_draws(items, 4)                           # no draw comes from a cached reply
    assert stub.requests == 40 and not any(v.cached for vs in again for v in vs)
    one = judge.judge_draws(items, 1)                             # one draw: the ordinary, cached judge
    assert [len(vs) for vs in one] == [1] * 5 and stub.requests == 45
    assert all(v.cached for vs in judge.judge_draws(items, 1) for v in vs) and stub.requests == 45


def test_alpha_is_undefined_without_anything_to_disagree_on() -> None:
    assert krippendorff_alpha([[1, 1], [1, 1]]) == (None, "every verdict is the same value (nothing to disagree on)")
    assert krippendorff_alpha([[1], [0]])[0] is None                # one draw: no agreement to measure
    assert krippendorff_alpha([[1, 1, 1], [0, 0, 0]])[0] == pytest.approx(1.0)
    assert krippendorff_alpha([[1, None, 1], [0, 0, None]])[0] == pytest.approx(
        krippendorff.alpha(reliability_data=np.array([[1, 0], [np.nan, 0], [1, np.nan]]), level_of_measurement="nominal"))


@pytest.mark.parametrize("stub", [True], indirect=True)
def test_run_with_judge_draws_reports_agreement_and_flags(stub: FlipStub, tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
    from tests.helpers.docqa_data import offline_pdf_overrides

    register_configs()
    overrides = ["experiment=superrag_quickstart", *offline_pdf_overrides(), "judge=docbench_gpt4",
                 "judge.reader.base_url_env=FLIP_URL", "judge.reader.api_key_env=FLIP_KEY", "judge.reader.max_retries=0",
                 "judge.draws=3", "reader=fake", "metric=docqa", "dataset.limit=3", f"paths.results={tmp_path}/results",
                 f"paths.cache={tmp_path}/cache", "run.progress=false"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run(cfg)
    (run_dir,) = (tmp_path / "results" / "superrag_quickstart").iterdir()
    lines = [json.loads(x) for x in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert lines and all(len(x["draws"]) == 3 for x in lines)
    assert stub.requests == 3 * len(lines)
    matrix = [[d["score"] for d in x["draws"]] for x in lines]
    flips = [i for i, x in enumerate(lines) if len({d["score"] for d in x["draws"]}) > 1]
    assert flips and len(flips) < len(lines)                      # some answers flip, some do not
    report = json.loads((run_dir / "judge.json").read_text())
    assert report["draws"] == 3 and report["agreement"]["draws"]["all"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.array(matrix, dtype=float).T, level_of_measurement="nominal"))
    assert [(f["id"], f["system"]) for f in report["flagged"]] == [(lines[i]["id"], lines[i]["system"]) for i in flips]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    rows = {(x["id"], x["system"]): sum(d["score"] for d in x["draws"]) / 3 for x in lines}
    for system, entry in metrics["systems"].items():
        mine = [v for (_, s), v in rows.items() if s == system]
        assert entry["metrics"]["judge"] == pytest.approx(sum(mine) / len(mine))   # the mean verdict
        lo, hi = entry["intervals"]["judge"]
        assert lo <= entry["metrics"]["judge"] <= hi
    table = (run_dir / "tables" / "judge_agreement.md").read_text()
    assert "Krippendorff's alpha" in table and f"{report['agreement']['draws']['all']['alpha']:.3f}" in table
    _judged_run_verifies_and_tampering_is_named(run_dir, tmp_path)


def _judged_run_verifies_and_tampering_is_named(run_dir: Path, tmp_path: Path) -> None:
    """``htmlrag-paper verify`` recomputes judge.json from judgments.jsonl and tables/judge_agreement.* from it:
    the run verifies; an edited alpha, a deleted judgments.jsonl and an edited verdict are each named."""
    import shutil

    from htmlrag.evaluation.verify import verify_run

    report = verify_run(run_dir)
    assert report.ok, report.findings
    assert report.tables == len(list((run_dir / "tables").rglob("*.*")))    # judge_agreement.* counted
    for name, tamper, expect in [
        ("alpha", lambda d: _edit(d / "judge.json", lambda j: j["agreement"]["draws"]["all"].update(alpha=0.84)),
         "judge.json agreement.draws.all.alpha"),
        ("deleted", lambda d: (d / "judgments.jsonl").unlink(), "judgments.jsonl deleted"),
        ("verdict", _flip_one_verdict, "judgments.jsonl was edited"),
    ]:
        copy = Path(shutil.copytree(run_dir, tmp_path / name / "superrag_quickstart" / run_dir.name))
        tamper(copy)
        found = verify_run(copy)
        assert not found.ok and any(expect in f.where or expect in f.cause for f in found.findings), \
            (name, found.findings)
        if name == "verdict":  # the judged scores that moved are blamed on the verdicts, not on metrics.json
            judged = [f for f in found.findings if f.where.startswith("metrics.json") and ".judge" in f.where]
            assert judged and all(f.cause.startswith("judgments.jsonl was edited") for f in judged), found.findings


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _flip_one_verdict(run_dir: Path) -> None:
    path = run_dir / "judgments.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for d in lines[0]["draws"]:
        d["score"] = 1 - d["score"] if d["score"] is not None else 1
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_alpha_is_undefined_when_no_answer_has_two_verdicts() -> None:
    """A flaky judge: every answer got one valid verdict of its draws. The krippendorff package raises there;
    the agreement is undefined, with the reason, and the run goes on."""
    alpha, why = krippendorff_alpha([[1, None], [None, 0], [0, None]])
    assert alpha is None and "two" in why
    assert agreement([[1, None], [None, None]])["alpha"] is None
    # the answers judged twice agree, another holds the other value once: the package gives NaN there
    assert krippendorff_alpha([[1, 1], [0, None]]) == (None, "every verdict is the same value (nothing to disagree on)")
