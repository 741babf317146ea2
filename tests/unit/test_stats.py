"""Paired t-tests and paper-style tables."""

from __future__ import annotations

import csv
import io

import pytest
from scipy import stats as sps

from htmlrag.core.errors import HtmlRagError
from htmlrag.evaluation.stats import compare_to, mcnemar_exact, paired_ttest
from htmlrag.evaluation.tables import build_table


def test_paired_ttest_matches_scipy() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.0, 0.5, 0.0, 0.0, 1.0]
    t = paired_ttest(a, b)
    ref = sps.ttest_rel(a, b)
    assert t.n == 8 and t.t == pytest.approx(ref.statistic) and t.p == pytest.approx(ref.pvalue)
    assert t.mean_a == pytest.approx(sum(a) / 8)


def test_paired_ttest_degenerate_cases() -> None:
    assert paired_ttest([1, 0, 1], [1, 0, 1]).p == 1.0            # identical: no difference
    assert paired_ttest([1, 1, 1], [0, 0, 0]).p == 0.0            # constant non-zero difference
    assert paired_ttest([1.0], [0.0]).p is None                   # one pair: undefined
    with pytest.raises(HtmlRagError):
        paired_ttest([1, 2], [1])


def test_compare_to_pairs_by_id() -> None:
    scores = {"em": {"ours": {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0},
                     "base": {"b": 0.0, "a": 0.0, "c": 0.0}}}  # base lacks d: only a, b, c are paired
    res = compare_to(scores, "ours", ["em"])["em"]["base"]
    assert res.n == 3
    assert res.to_dict() == paired_ttest([1.0, 1.0, 0.0], [0.0, 0.0, 0.0]).to_dict()
    with pytest.raises(HtmlRagError, match="no em scores"):
        compare_to(scores, "other", ["em"])


HOLM = {"correction": "holm", "power": 0.8}  # what a run records (runs without it are tabled as before, legacy)


def _runs():
    return [
        {"dataset": "ASQA", "ours": "htmlrag", "system_order": ["bm25", "text", "htmlrag"], "intervals": HOLM,
         "systems": {"bm25": {"metrics": {"em": 0.30, "tokens": 4000}}, "text": {"metrics": {"em": 0.35, "tokens": 3900}},
                     "htmlrag": {"metrics": {"em": 0.40, "tokens": 3950}}},
         "tests": {"em": {"bm25": {"p": 0.01, "mean_a": 0.40, "mean_b": 0.30},
                          "text": {"p": 0.03, "mean_a": 0.40, "mean_b": 0.35}}}},
        {"dataset": "NQ", "ours": "htmlrag", "intervals": HOLM,
         "systems": {"bm25": {"metrics": {"em": 0.50, "tokens": 1}}, "text": {"metrics": {"em": 0.45, "tokens": 1}},
                     "htmlrag": {"metrics": {"em": 0.48, "tokens": 1}}},
         "tests": {"em": {"bm25": {"p": 0.5, "mean_a": 0.48, "mean_b": 0.50},
                          "text": {"p": 0.04, "mean_a": 0.48, "mean_b": 0.45}}}},
    ]


def test_table_marks_best_second_and_dagger() -> None:
    runs = [{**r, "intervals": {"correction": "none"}} for r in _runs()]  # the paper's uncorrected rule
    t = build_table(runs, ["em", "tokens"], directions={"tokens": False}, scales={"tokens": 1.0}, unranked=["tokens"])
    md = t.to_markdown()
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and "---" not in line}
    assert lines["text"].split("|")[2].strip() == "<u>35.00</u>"     # ASQA second
    # the paper's rule: † on ours, when significantly better than every other system of the column
    assert lines["htmlrag"].split("|")[2].strip() == "**40.00**†"     # ASQA: p = 0.01 and 0.03, ours higher
    assert "†" not in lines["bm25"] and "†" not in lines["text"]     # never on a baseline
    assert lines["htmlrag"].split("|")[4].strip() == "<u>48.00</u>"  # NQ: not better than bm25 (p = 0.5)
    assert lines["bm25"].split("|")[4].strip() == "**50.00**"
    assert lines["htmlrag"].split("|")[3].strip() == "3950"          # tokens: unscaled, unranked
    assert list(lines)[1:] == ["bm25", "text", "htmlrag"]            # system_order respected
    tex = t.to_latex()
    assert "\\multicolumn{2}{c}{ASQA}" in tex and "\\textbf{40.00}" in tex and "\\underline{35.00}" in tex
    assert "40.00}$^\\dagger$" in tex and "\\cmidrule(lr){2-3}" in tex
    rows = list(csv.DictReader(io.StringIO(t.to_csv())))
    assert {"row_group": "", "system": "bm25", "dataset": "ASQA", "metric": "em", "value": "0.3", "p_vs_ours": "0.01",
            "rank": "3", "dagger": "0", "ci_low": "", "ci_high": "", "p_adjusted": "0.01", "correction": "none"} in rows


def test_table_marks_use_holm_adjusted_p_values_over_the_whole_table() -> None:
    """The family is every comparison of the table (4 here); the mark needs the adjusted p below alpha. Holm by
    default: ASQA's p = 0.01 and 0.03 become 0.04 and 0.09, so ours loses its mark there."""
    from statsmodels.stats.multitest import multipletests

    t = build_table(_runs(), ["em"])
    assert t.correction == "holm"
    family = t.comparisons()
    raw = [t.tests[c.key][r]["p"] for c, r in family]
    assert sorted(raw) == [0.01, 0.03, 0.04, 0.5]
    expected = multipletests(raw, alpha=0.05, method="holm")[1]
    assert [t.adjusted()[(c.key, r)] for c, r in family] == pytest.approx(list(expected))
    assert not t.dagger(t.columns[0], ("", "htmlrag"))  # 0.09 for text: not significant after correction
    strong = _runs()
    strong[0]["tests"]["em"] = {"bm25": {"p": 0.001, "mean_a": 0.40, "mean_b": 0.30},
                                "text": {"p": 0.002, "mean_a": 0.40, "mean_b": 0.35}}
    t = build_table(strong, ["em"])
    assert t.dagger(t.columns[0], ("", "htmlrag"))  # 0.004 and 0.006 adjusted
    bonf = build_table([{**r, "intervals": {"correction": "bonferroni"}} for r in _runs()], ["em"])
    assert bonf.adjusted()[(bonf.columns[0].key, ("", "bm25"))] == pytest.approx(0.04)
    md = t.to_markdown()
    assert "holm correction over the table's 4 comparisons (alpha 0.05)" in md


def test_lower_is_better_direction() -> None:
    runs = [{"dataset": "d", "ours": "a", "systems": {"a": {"metrics": {"x": 0.1}}, "b": {"metrics": {"x": 0.2}}}}]
    md = build_table(runs, ["x"], directions={"x": False}).to_markdown()
    assert "**10.00**" in md and "<u>20.00</u>" in md


def test_mcnemar_exact_matches_binomial_test() -> None:
    # 12 examples: a alone succeeds on 7, b alone on 2, both on 2, neither on 1
    a = [1] * 7 + [0] * 2 + [1] * 2 + [0]
    b = [0] * 7 + [1] * 2 + [1] * 2 + [0]
    res = mcnemar_exact(a, b)
    assert (res.n, res.a_only, res.b_only) == (12, 7, 2)
    assert res.p == pytest.approx(sps.binomtest(2, 9, 0.5).pvalue)
    assert mcnemar_exact(b, a).p == pytest.approx(res.p)          # symmetric
    assert mcnemar_exact([True, False], [True, False]).p == 1.0     # never disagree
    assert mcnemar_exact([1] * 3 + [0] * 3, [0] * 3 + [1] * 3).p == 1.0  # balanced disagreement
    big = mcnemar_exact([1] * 600 + [0] * 400, [0] * 600 + [1] * 400)  # 1000 discordant pairs: no underflow
    assert 0 < big.p < 1e-8 and big.p == pytest.approx(sps.binomtest(400, 1000, 0.5).pvalue)
    with pytest.raises(HtmlRagError):
        mcnemar_exact([1], [1, 0])
