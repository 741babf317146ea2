"""The stage-loss waterfall (rule, per-question checks, summary, table) and the cost ledger priced (money,
unpriced models, Pareto front, table)."""

from __future__ import annotations

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.costs import PriceTable, cost_summary, pareto_front, system_cost
from htmlrag.evaluation.report import cost_grid, waterfall_grid
from htmlrag.evaluation.scoring.stages import StageCheck, resolve_rule
from htmlrag.evaluation.waterfall import lost_at, waterfall_summary


def test_rule_and_checks() -> None:
    assert resolve_rule("auto", ["em", "ref_em"]) == "ref_em"
    assert resolve_rule("auto", ["evidence_recall", "evidence_hit"]) == "evidence_hit"
    assert resolve_rule("auto", ["em"]) is None and resolve_rule("none", ["ref_em"]) is None
    with pytest.raises(HtmlRagError, match="waterfall rule"):
        resolve_rule("bleu", ["bleu"])
    check = StageCheck("ref_em", ["Margaret Ellis"])
    assert check.holds("<p>Designed by <b>Margaret</b> Ellis.</p>")        # HTML read as text, normalised
    assert check.holds("designed by margaret ellis", "text")
    assert not check.holds("<p>Designed by Margaret</p>")
    numbers = StageCheck("evidence_hit", ["Revenue was $81.8 billion, up 2%."])
    assert numbers.holds("net sales 81.8 billion dollars rose 2 %", "text")
    assert not numbers.holds("net sales fell", "text")


def _row(i: int, hits: list[tuple[str, int]], error: str | None = None) -> dict:
    return {"id": f"q{i}", "index": i, "error": None,
            "systems": {"s": {"waterfall": [list(h) for h in hits], "error": error}}}


def test_waterfall_summary_counts_where_answers_are_lost() -> None:
    stages = ["pages", "cleaned", "step1", "context", "answer"]
    rows = [_row(0, list(zip(stages, [1, 1, 1, 1, 1], strict=True))),
            _row(1, list(zip(stages, [1, 1, 0, 0, 0], strict=True))),
            _row(2, list(zip(stages, [1, 1, 0, 0, 1], strict=True))),   # the reader guessed it
            _row(3, list(zip(stages, [0, 0, 0, 0, 0], strict=True))),   # not in the retrieved pages
            _row(4, list(zip(stages, [1, 1, 1, 1, 0], strict=True))),
            _row(5, list(zip(stages, [1, 1, 1, 1, 1], strict=True)), error="failed")]
    assert lost_at(rows[1]["systems"]["s"]["waterfall"]) == "step1" and lost_at(rows[0]["systems"]["s"]["waterfall"]) is None
    w = waterfall_summary(rows, ["s", "absent"])["s"]
    assert w == {"n": 5, "stages": stages, "held": [4, 4, 2, 2, 1], "lost": [1, 0, 2, 0, 1], "worst": "step1",
                 "answer_without_context": 1}
    md = waterfall_grid({"s": w}).to_markdown()
    assert "| s | 5 | 80.0 | 80.0 | 40.0 | 40.0 | 20.0 | step1 | 40.0 | 1 |" in md
    assert waterfall_summary([_row(0, [])], ["s"]) == {}


def test_money_of_a_ledger() -> None:
    prices = PriceTable.from_dict({"models": {"gemma3-270m": {"input": 0.1, "output": 0.4}}, "gpu_hour": 3.6,
                                   "cpu_hour": 0.36, "currency": "EUR"})
    ledger = {"seconds": {"clean": 1.0, "step1": 2.0, "read": 10.0}, "gpu_seconds": {"read": 4.0},
              "tokens": {"gemma3-270m": {"input": 1000, "output": 20}, "minilm": {"input": 500, "output": 0}}}
    money, unpriced = prices.money(ledger)
    # tokens: (1000 x 0.1 + 20 x 0.4) / 1e6; GPU: 4 s x 3.6 / 3600; CPU: (1 + 2) s x 0.36 / 3600 (read had GPU time)
    assert money == pytest.approx(108e-6 + 0.004 + 0.0003)
    assert unpriced == ["minilm"]
    s = system_cost([ledger, {"seconds": {"clean": 3.0}, "tokens": {}}], prices)
    assert s["seconds"] == pytest.approx((13 + 3) / 2) and s["stage_seconds"]["clean"] == pytest.approx(2.0)
    assert s["tokens"]["gemma3-270m"] == {"input": 500.0, "output": 10.0} and s["gpu_seconds"] == pytest.approx(2.0)
    assert s["unpriced"] == ["minilm"]


def test_pareto_front() -> None:
    pts = {"cheap": (0.5, 1.0), "good": (0.9, 10.0), "dominated": (0.4, 5.0), "tie_worse": (0.9, 12.0),
           "missing": (None, 1.0)}
    assert pareto_front(pts) == {"cheap", "good"}
    assert pareto_front({"a": (0.5, 1.0), "b": (0.5, 1.0)}) == {"a", "b"}  # equal points dominate neither


def test_cost_summary_and_table() -> None:
    rows = [{"id": f"q{i}", "error": None, "systems": {
        "a": {"error": None, "cost": {"seconds": {"read": 2.0}, "tokens": {"m": {"input": 100, "output": 10}}}},
        "b": {"error": None, "cost": {"seconds": {"read": 1.0}, "tokens": {"m": {"input": 50, "output": 5}}}}}}
        for i in range(3)]
    summary = {"metric_names": ["em"], "system_order": ["a", "b"],
               "systems": {"a": {"metrics": {"em": 0.6}, "intervals": {"em": [0.5, 0.7]}},
                           "b": {"metrics": {"em": 0.5}, "intervals": {"em": [0.4, 0.6]}}}}
    cost = cost_summary(rows, summary, PriceTable.from_dict({"models": {"m": {"input": 1.0, "output": 2.0}}}))
    assert cost["axis"] == "money" and cost["systems"]["a"]["money"] == pytest.approx(120e-6)
    assert cost["systems"]["a"]["front"] and cost["systems"]["b"]["front"]
    md = cost_grid(cost).to_markdown()
    assert "| a | 60.00 | [50.00, 70.00] | 2.000 | - | 100 | 10 | 0.1200 | yes |" in md
    seconds = cost_summary(rows, summary, PriceTable())
    assert seconds["axis"] == "seconds" and seconds["systems"]["b"]["front"]
    assert cost_summary([{"id": "x", "systems": {"a": {}}}], summary, PriceTable()) == {}
