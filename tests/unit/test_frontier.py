"""Budget frontiers: every budget filled from one ranking gives exactly the context of a pipeline built for that
budget (one step, two steps, no ranker, text format; sample pages and real Wikipedia pages); the area under
the frontier; the frontier section of metrics.json."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htmlrag.core.errors import BudgetError, InputError
from htmlrag.evaluation.frontier import (
    curve,
    frontier_groups,
    frontier_summary,
    normalised_auc,
    question_aucs,
)
from htmlrag.evaluation.intervals import IntervalSettings, mean_interval
from htmlrag.evaluation.scoring.budgets import budget_name, split_name
from htmlrag.evaluation.stats import paired_ttest
from htmlrag.pruning.pipeline import HtmlRagPipeline
from htmlrag.pruning.tokens import load_tokenizer
from htmlrag.rankers.bm25 import BM25Ranker
from tests.conftest import SAMPLE_PAGES, shared_path

BUDGETS = [48, 96, 192, 384]


def _pages() -> list[str]:
    return [(SAMPLE_PAGES / n).read_text(encoding="utf-8") for n in ("lighthouse.html", "river-festival.html",
                                                                       "tea-garden.html")]


def _same(a, b) -> None:
    assert (a.context, a.tokens, a.stages, a.stage_tokens) == (b.context, b.tokens, b.stages, b.stage_tokens)


@pytest.mark.parametrize("kind", ["one_step", "two_steps", "no_ranker", "text", "paper_rules"])
def test_every_budget_equals_a_pipeline_built_for_it(kind: str) -> None:
    tok = load_tokenizer(None)
    r1 = None if kind == "no_ranker" else BM25Ranker()
    r2 = BM25Ranker(stemmer=None) if kind == "two_steps" else None
    opts = {"max_words1": 32, "max_words2": 16, "budget1": 400, "fmt": "text" if kind == "text" else "html"}
    if kind == "paper_rules":
        opts |= {"fill": "stop", "pack_siblings": False, "split_to_fill": 0, "split_oversize": False}
    question = "Who designed the lighthouse and how many steps does the tower have?"
    frontier = HtmlRagPipeline(r1, r2, tok, budget2=BUDGETS[0], **opts).run_budgets(question, _pages(), BUDGETS)
    assert list(frontier) == BUDGETS
    for b in BUDGETS:
        _same(frontier[b], HtmlRagPipeline(r1, r2, tok, budget2=b, **opts).run(question, _pages()))
        assert frontier[b].tokens <= b


def test_frontier_budgets_are_checked() -> None:
    tok = load_tokenizer(None)
    pipe = HtmlRagPipeline(BM25Ranker(), BM25Ranker(), tok, budget1=200, budget2=100)
    with pytest.raises(InputError, match="budget1"):
        pipe.run_budgets("q", _pages(), [100, 300])
    with pytest.raises(BudgetError):
        pipe.run_budgets("q", _pages(), [0, 100])


def test_real_pages_every_budget_equals_its_own_run() -> None:
    """Five WTQ-HTML questions (own Wikipedia page + 4 distractors), our and the paper's walk rules, the budgets of
    the frontier experiment: the shared token counts (WalkMemo) never change a decision."""
    from htmlrag.data import load_wtq_html

    examples = load_wtq_html(shared_path("wtq-html-qa"), sample_size=5, seed=3)
    tok = load_tokenizer(None)
    budgets = [512, 1024, 2048, 4096, 8192]
    for opts in ({}, {"fill": "stop", "pack_siblings": False, "split_to_fill": 0, "split_oversize": False}):
        for ex in examples:
            pages = ex.load_pages()
            frontier = HtmlRagPipeline(BM25Ranker(), None, tok, max_words1=128, **opts).run_budgets(
                ex.question, pages, budgets)
            for b in budgets:
                _same(frontier[b], HtmlRagPipeline(BM25Ranker(), None, tok, max_words1=128, budget2=b, **opts).run(
                    ex.question, pages))


def test_names_and_area() -> None:
    assert budget_name("bm25", 1024) == "bm25@1024" and split_name("bm25@1024") == ("bm25", 1024)
    assert split_name("a@b@512") == ("a@b", 512) and split_name("plain") == ("plain", None)
    assert split_name("x@12k") == ("x@12k", None)
    # log2 budgets 9, 10, 11: (1 x (0 + 1) / 2 + 1 x (1 + 1) / 2) / 2
    assert normalised_auc([512, 1024, 2048], [0.0, 1.0, 1.0]) == pytest.approx(0.75)
    assert normalised_auc([512, 8192], [0.4, 0.4]) == pytest.approx(0.4)
    # uneven spacing on the log scale: 512 -> 1024 is one unit, 1024 -> 4096 two
    assert normalised_auc([512, 1024, 4096], [0.0, 1.0, 1.0]) == pytest.approx((0.5 + 2.0) / 3)
    with pytest.raises(ValueError):
        normalised_auc([1024, 512], [0.0, 1.0])
    with pytest.raises(ValueError):
        normalised_auc([512], [1.0])


def _rows() -> list[dict]:
    rng = np.random.default_rng(1)
    rows = []
    for i in range(30):
        systems = {}
        for base, p in (("bm25", 0.4), ("minilm", 0.6)):
            held = False
            for b in (512, 1024, 2048):
                held = held or bool(rng.random() < p)  # retention grows with the budget
                systems[budget_name(base, b)] = {"scores": {"ref_em": float(held)}, "tokens": b - 10, "error": None}
        rows.append({"id": f"q{i}", "index": i, "systems": systems, "error": None})
    rows[3]["systems"]["bm25@1024"] = {"error": "boom"}  # an error: q3 leaves bm25's area
    return rows


def test_frontier_summary_from_rows() -> None:
    rows = _rows()
    systems = [budget_name(b, x) for b in ("bm25", "minilm") for x in (512, 1024, 2048)]
    s = IntervalSettings(n_resamples=999)
    out = frontier_summary(rows, systems, ["ref_em"], s, ours="minilm")
    assert out["budgets"] == [512, 1024, 2048] and out["ours"] == "minilm"
    mini = out["systems"]["minilm"]["ref_em"]
    per = [[r["systems"][f"minilm@{b}"]["scores"]["ref_em"] for r in rows] for b in (512, 1024, 2048)]
    assert mini["means"] == pytest.approx([sum(x) / 30 for x in per])
    # the area is linear in the means: the mean of the per-question areas is the area of the means
    assert mini["auc"] == pytest.approx(normalised_auc([512, 1024, 2048], mini["means"]))
    assert mini["intervals"][0] == list(mean_interval(per[0], s))
    bm25 = out["systems"]["bm25"]["ref_em"]
    assert bm25["auc_n"] == 29 and bm25["n"] == [30, 29, 30]
    a = question_aucs(rows, frontier_groups(systems)["minilm"], "ref_em")
    b = question_aucs(rows, frontier_groups(systems)["bm25"], "ref_em")
    ids = sorted(set(a) & set(b))
    t = paired_ttest([a[i] for i in ids], [b[i] for i in ids])
    assert out["auc_tests"]["ref_em"]["bm25"]["p"] == pytest.approx(t.p)
    assert out["auc_tests"]["ref_em"]["bm25"]["n"] == 29
    assert frontier_summary(rows, ["plain"], ["ref_em"], s) == {}


def test_curve_tokens_and_single_budget() -> None:
    c = curve(_rows(), [(512, "minilm@512")], "ref_em", IntervalSettings(n_resamples=99))
    assert c.tokens == [502.0] and c.auc is None and not math.isnan(c.means[0])
