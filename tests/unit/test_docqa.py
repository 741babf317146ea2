"""Document-QA pieces without models or PDFs: gold key items, the evidence/answer metrics, strict verdict
parsing, pairwise t-tests, and the DOCBENCH/SPIQA/sec-10-q loaders on their released layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.data.docbench import docbench_domain, download_docbench, load_docbench
from htmlrag.data.pdfqa import load_sec10q
from htmlrag.data.spiqa import download_spiqa, load_spiqa
from htmlrag.docqa.items import gold_items, item_recall
from htmlrag.docqa.judge import parse_verdict
from htmlrag.evaluation.run_tables import pairwise_tests
from htmlrag.evaluation.scoring.metrics import MetricInput, get_metric, score_example
from tests.conftest import shared_path

ANSWER = ("For the quarter ended July 1, 2023, total net sales were $81,797 million, down from $82,959 million; "
          "gross margin was 44.5%. (SOURCE: 2023 Q3 AAPL.pdf)")


def test_gold_items_numbers_leave_out_years_small_numbers_and_the_question() -> None:
    kind, items = gold_items("Were net sales above $81,797 million in 2023?", ANSWER)
    assert kind == "numbers" and items == ["44.5", "82959"]
    kind, items = gold_items("Why did margin change?", "Weakness in foreign currencies and lower volume.")
    assert kind == "phrases" and "weakness foreign" in items and "lower volume" in items
    assert gold_items("Is it audited?", "Yes") == ("words", ["yes"])
    assert gold_items("Which year?", "2019") == ("answer", ["2019"])


def test_items_are_found_as_numbers_pairs_words_or_normalised_text() -> None:
    ctx = "Net sales | $ 82,959 | 44.50 % ... weakness in foreign currencies; the answer is Yes."
    assert item_recall(["82959", "44.5"], ctx) == 1.0
    assert item_recall(["81797"], ctx) == 0.0
    assert item_recall(["weakness foreign", "foreign currencies"], ctx) == 1.0
    assert item_recall(["yes"], ctx) == 1.0 and item_recall(["2019"], "in 20190 units") == 0.0


def test_evidence_and_answer_metrics() -> None:
    groups = [["82959"], ["44.5"], ["12345"]]
    x = MetricInput(response="It was 82,959.", context="<p>82,959 and 44.5%</p>", answers=[ANSWER],
                    long_answers=[ANSWER], answer_groups=groups, context_text="82,959 and 44.5%")
    s = score_example(["evidence_recall", "evidence_hit", "answer_recall", "answer_hit", "answer_f1"], x)
    assert s["evidence_recall"] == pytest.approx(2 / 3) and s["evidence_hit"] == 1.0
    assert s["answer_recall"] == pytest.approx(1 / 3) and s["answer_hit"] == 0.0
    assert 0 < s["answer_f1"] < 1
    assert get_metric("evidence_hit").needs == "context" and get_metric("answer_hit").needs == "response"
    # no groups: the key items of the gold answer itself
    x2 = MetricInput(context_text="net sales 81,797", answers=["Net sales were $81,797 million."])
    assert score_example(["evidence_hit"], x2)["evidence_hit"] == 1.0
    with pytest.raises(HtmlRagError, match="judge step"):
        score_example(["judge"], x)


@pytest.mark.parametrize(("reply", "verdict"), [
    ("1", 1), ("0", 0), (" 1\n", 1), ("Correctness: 1", 1), ("- Correctness: 0", 0), ("**1**", 1),
    ("Score: 0 - the numbers differ", 0), ("1. The answer matches the reference.", None),
    ("The answer is correct (1).", 1), ("10/10", None), ("0 or 1", None), ("", None), ("maybe", None),
    ("Correctness: 1\nBut the second figure is wrong, so 0.", 1), ("1.5", None), ("I give it a 1 out of 1", 1),
])
def test_verdicts_are_parsed_strictly(reply: str, verdict: int | None) -> None:
    assert parse_verdict(reply) == verdict


def test_pairwise_t_tests_between_every_two_systems() -> None:
    rows = [{"id": str(i), "systems": {"a": {"scores": {"m": 1.0}}, "b": {"scores": {"m": float(i % 2)}},
                                       "c": {"error": "x"}}} for i in range(6)]
    md, recs = pairwise_tests([("all", rows)], ["a", "b", "c"], ["m"])
    (ab,) = [r for r in recs if (r["a"], r["b"]) == ("a", "b")]
    assert ab["n"] == 6 and ab["mean_a"] == 1.0 and ab["mean_b"] == 0.5 and ab["p"] is not None
    assert not [r for r in recs if "c" in (r["a"], r["b"])]  # no pairs without shared scores
    assert "| all | m | a | b | 6 | 100.0 | 50.0 |" in md


def _pdf(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"%PDF-1.4 loaders never open the PDF\n")
    return path


def test_docbench_loader_domains_types_and_items(tmp_path: Path) -> None:
    for n in (3, 60, 200):
        _pdf(tmp_path / str(n) / f"doc{n}.pdf")
        rows = [{"question": "What was revenue?", "answer": "$1,234 million", "type": "multimodal-t", "evidence": "Rev 1,234"},
                {"question": "Who wrote it?", "answer": "Jane Smith", "type": "text-only", "evidence": "by Jane Smith"}]
        (tmp_path / str(n) / f"{n}_qa.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    exs = load_docbench(tmp_path)
    assert [e.id for e in exs][:2] == ["docbench-3-0", "docbench-3-1"] and len(exs) == 6
    assert {e.metadata["domain"] for e in exs} == {"academia", "finance", "news"}
    e = exs[0]
    assert e.metadata["type"] == "multimodal" and e.metadata["type_raw"] == "multimodal-t"
    assert e.metadata["answer_groups"] == [["1234"]] and e.answers == ["$1,234 million"]
    assert e.metadata["evidence"] == "Rev 1,234" and e.pages == [tmp_path / "3" / "doc3.pdf"]
    assert [x.metadata["domain"] for x in load_docbench(tmp_path, domains=["finance"], types=["text"])] == ["finance"]
    assert docbench_domain(48) == "academia" and docbench_domain(49) == "finance" and docbench_domain(228) == "news"
    (tmp_path / "60" / "60_qa.jsonl").write_text("not json\n")
    with pytest.raises(InputError, match=r"60_qa.jsonl:1: not a JSON line"):
        load_docbench(tmp_path)
    with pytest.raises(InputError, match="no DOCBENCH folder"):
        load_docbench(tmp_path / "absent")


def test_spiqa_loaders_for_the_three_test_splits(tmp_path: Path) -> None:
    a = {"1611.04684v1": {"paper_id": "1611.04684v1",
                          "all_figures": {"1611.04684v1-Table2-1.png": {"caption": "Table 2: BLEU scores.",
                                                                         "content_type": "table", "figure_type": "N/A"}},
                          "qa": [{"question": "Which model has the best BLEU?", "answer": "The transformer, 28.4 BLEU.",
                                  "explanation": "Table 2", "reference": "1611.04684v1-Table2-1.png"}]}}
    b = {"1707.07012": {"question": ["What does Figure 3 show?"], "composition": ["Loss curves of both models."],
                        "referred_figures_tables": [["1707.07012-Figure3-1.png"]],
                        "all_figures_tables": {"1707.07012-Figure3-1.png": "Figure 3: Training loss."}}}
    c = {"1808.08780": {"question": ["Is the data public?", "How large is the corpus?"],
                        "answer": [{"free_form_answer": "", "yes_no": True}, {"free_form_answer": "1.2M tokens"}],
                        "referred_figures_tables": [["1808.08780-Table1-1.png"], []],
                        "figures_and_tables": [{"file": "1808.08780-Table1-1.png", "caption": "Table 1: Data."}],
                        "question_key": ["k1", "k2"], "arxiv_id": "1808.08780"}}
    for split, name, data in (("test-A", "SPIQA_testA.json", a), ("test-B", "SPIQA_testB.json", b),
                              ("test-C", "SPIQA_testC.json", c)):
        (tmp_path / split).mkdir()
        (tmp_path / split / name).write_text(json.dumps(data))
        with pytest.raises(InputError, match="1 of 1 papers have no PDF"):
            load_spiqa(tmp_path, split=split)
        assert load_spiqa(tmp_path, split=split, missing_pdfs="skip") == []
        pid = next(iter(data))
        _pdf(tmp_path / split / "pdfs" / f"{pid.split('v')[0]}.pdf")  # found without the version suffix
    (ea,) = load_spiqa(tmp_path, split="test-A")
    assert ea.metadata["type"] == "table" and ea.metadata["evidence"] == "Table 2: BLEU scores."
    assert ea.metadata["answer_groups"] == [["28.4"]] and ea.id == "spiqa-test-A-1611.04684v1-0"
    (eb,) = load_spiqa(tmp_path, split="test-B")
    assert eb.answers == ["Loss curves of both models."] and eb.metadata["type"] == "figure"
    c1, c2 = load_spiqa(tmp_path, split="test-C")
    assert c1.answers == ["Yes"] and c1.metadata["type"] == "table" and c2.answers == ["1.2M tokens"]
    assert c2.metadata["type"] == "?"


def test_download_helpers_fail_clearly_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match=r"could not download test-A/SPIQA_testA\.json from the hub dataset google/spiqa"):
        download_spiqa(tmp_path, "test-A")
    with pytest.raises(InputError, match="unknown SPIQA split"):
        download_spiqa(tmp_path, "test-D")
    import sys

    monkeypatch.setitem(sys.modules, "gdown", None)  # as if not installed
    with pytest.raises(InputError, match=r"needs gdown .* by hand from https://drive.google.com"):
        download_docbench(tmp_path)


@pytest.mark.shared_data
def test_sec10q_loader_types_and_filing_filter() -> None:
    root = shared_path("pdf", "sec-10-q")
    exs = load_sec10q(root)
    assert len(exs) == 80 and exs[0].id == "sec10q-000"
    assert sum(e.metadata["type"] == "table" for e in exs) == 48
    assert {e.metadata["question_type"] for e in exs} == {"multi-doc", "single-doc single-chunk", "single-doc multi-chunk"}
    assert len(exs[0].pages) == 4 and exs[0].metadata["scope"] == "multi-doc" and exs[0].metadata["domain"] == "AAPL"
    assert all(e.metadata["answer_groups"] for e in exs)
    two = load_sec10q(root, docs=["2023 Q2 AAPL.pdf", "2023 Q3 AAPL.pdf"])
    assert len(two) == 17 and all(set(e.metadata["docs"]) <= {"2023 Q2 AAPL.pdf", "2023 Q3 AAPL.pdf"} for e in two)
    with pytest.raises(InputError, match="no such filing"):
        load_sec10q(root, docs=["nope.pdf"])


def test_the_days_of_dates_are_not_gold_items() -> None:
    # A date's day ("October 30, 2022") is printed in every column heading of a filing: it is no evidence.
    answer = ("As of October 30, 2022, the inventory was $4,454 million; as of Oct. 29 2023 it was $4,779 million. "
              "On 30 September 2023 goodwill was 1,251; filed 10/30/2022 and 2023-10-29; revenue rose 30% by June 1st.")
    assert gold_items("How did inventory change?", answer) == ("numbers", ["1251", "30", "4454", "4779"])
    # "may" the verb is no month, and a number after a month name that is an amount stays an item
    assert gold_items("q", "The company may 20 times exceed it, and March 31.5 million units")[1] == ["20", "31.5"]
    # the question's dates are left out of the question's numbers too: its day does not remove an answer's amount
    assert gold_items("What was the balance on October 29, 2023?", "It was $29 million.") == ("numbers", ["29"])
