"""Dataset loaders: real question files (../shared/data), the sample pages, CRAG/hub-format rows."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.data import (
    Example,
    fingerprint,
    load_crag,
    load_htmlrag_test,
    load_page_questions,
    load_wtq_html,
    require_pages,
    sample_examples,
)
from tests.conftest import SAMPLE_PAGES, shared_path


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["asqa", "hotpot-qa", "nq", "trivia-qa"])
def test_htmlrag_question_files_load_question_only(name: str) -> None:
    path = shared_path("htmlrag-questions", f"{name}-test.jsonl.gz")
    examples = load_htmlrag_test(name, path, sample_size=None)
    assert len(examples) == 400
    assert len({e.id for e in examples}) == 400
    assert all(e.question and e.answers and e.pages == [] for e in examples)
    with pytest.raises(InputError, match="have no retrieved pages"):
        require_pages(examples, name)


@pytest.mark.shared_data
def test_asqa_fields() -> None:
    ex = load_htmlrag_test("asqa", shared_path("htmlrag-questions", "asqa-test.jsonl.gz"))[0]
    assert ex.id == "8793099883447006698"
    assert ex.answers[:2] == ["June 29, 2007", "2004"]          # short_answers
    assert ex.long_answers and ex.long_answers[0].startswith("The iPhone beta was created in 2004")
    assert ["2004"] in ex.metadata["answer_groups"]              # qa_pairs -> STR-EM groups


@pytest.mark.shared_data
def test_kilt_rows_use_answer_field() -> None:
    tq = load_htmlrag_test("trivia-qa", shared_path("htmlrag-questions", "trivia-qa-test.jsonl.gz"))
    assert tq[0].id == "sfq_17995" and "St. Asaph" in tq[0].answers
    hp = load_htmlrag_test("hotpot-qa", shared_path("htmlrag-questions", "hotpot-qa-test.jsonl.gz"))
    assert hp[0].answers == ["World's Best Goalkeeper"]


@pytest.mark.shared_data
def test_musique_json_list() -> None:
    ex = load_htmlrag_test("musique", shared_path("musique-questions", "musique.json"), sample_size=None)
    assert len(ex) == 500
    assert ex[0].question == "What was the director of Addicted to Love nominated for?"
    assert ex[0].answers == ["Academy Award for Best Live Action Short Film"]


@pytest.mark.shared_data
def test_sample_is_deterministic_per_seed() -> None:
    path = shared_path("musique-questions", "musique.json")
    a = [e.id for e in load_htmlrag_test("musique", path, sample_size=400, seed=1)]
    b = [e.id for e in load_htmlrag_test("musique", path, sample_size=400, seed=1)]
    c = [e.id for e in load_htmlrag_test("musique", path, sample_size=400, seed=2)]
    assert a == b and len(a) == 400 and a != c
    order = [e.id for e in load_htmlrag_test("musique", path, sample_size=None)]
    assert a == [i for i in order if i in set(a)]  # kept in source order


@pytest.mark.shared_data
def test_wtq_pages_and_distractors() -> None:
    root = shared_path("wtq-html-qa")
    examples = load_wtq_html(root)
    assert len(examples) == 300
    ex = examples[0]
    assert len(ex.pages) == 5 and all(isinstance(p, Path) and p.name.endswith(".html.gz") for p in ex.pages)
    gold = load_wtq_html(root, order="gold_first")[0].pages[0]
    assert ex.pages[ex.metadata["gold_page"]] == gold
    assert len({e.metadata["gold_page"] for e in examples}) > 1  # the own page is not always first
    assert b"<" in ex.load_pages()[0][:2000]


def test_sample_pages_loader() -> None:
    examples = load_page_questions(SAMPLE_PAGES)
    assert [e.id for e in examples][:2] == ["sample-1", "sample-2"]
    assert examples[0].answers == ["Margaret Ellis"]
    assert all(p.is_file() for e in examples for p in e.pages)
    require_pages(examples, "sample")
    assert fingerprint(examples) == fingerprint(load_page_questions(SAMPLE_PAGES))


def test_hub_format_rows_with_search_results(tmp_path: Path) -> None:
    rows = [
        {"id": "q1", "question": "Who?", "answers": ["Ann"], "slimplmqr_results": [{"html": "<p>Ann</p>", "url": "u"}, {"html": ""}]},
        {"id": "q2", "question": "What?", "answer": "Bob", "html": "<p>Bob</p>"},
        {"id": "q3", "question": "Long?", "long_answers": ["A long answer."], "search_results": [{"page_result": "<p>x</p>"}]},
    ]
    f = tmp_path / "eli5-test.jsonl.gz"
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    ex = load_htmlrag_test("eli5", tmp_path, sample_size=None)  # a folder holding <name>-test.jsonl.gz
    assert ex[0].pages == ["<p>Ann</p>"] and ex[1].pages == ["<p>Bob</p>"] and ex[1].answers == ["Bob"]
    assert ex[2].answers == ex[2].long_answers == ["A long answer."]  # ELI5: long answers are the gold


def test_crag_loader(tmp_path: Path) -> None:
    row = {"interaction_id": "c1", "query": "q?", "answer": "yes", "alternative_answers": ["y"], "domain": "finance",
           "search_results": [{"page_name": "n", "page_result": "<html><p>yes</p></html>"}, {"page_result": ""}]}
    f = tmp_path / "crag.jsonl.bz2"
    f.write_bytes(bz2.compress((json.dumps(row) + "\n").encode()))
    (ex,) = load_crag(f)
    assert ex.id == "c1" and ex.answers == ["yes", "y"] and len(ex.pages) == 1 and ex.metadata["domain"] == "finance"


def test_bad_inputs_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "nq-test.jsonl"
    bad.write_text('{"id": 1, "question": "q", "answer": ["a"]}\nnot json\n')
    with pytest.raises(InputError, match=r"nq-test.jsonl:2"):
        load_htmlrag_test("nq", bad)
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": 1, "question": "q", "answer": "a"}\n{"id": 1, "question": "q", "answer": "a"}\n')
    with pytest.raises(InputError, match="duplicate example id"):
        load_htmlrag_test("nq", dup)
    with pytest.raises(InputError, match="unknown HtmlRAG dataset"):
        load_htmlrag_test("squad", dup)
    with pytest.raises(InputError, match="no such file"):
        load_page_questions(tmp_path / "missing.jsonl")
    q = tmp_path / "questions.jsonl"
    q.write_text('{"id": "a", "question": "q", "answers": ["x"], "pages": ["nope.html"]}\n')
    with pytest.raises(InputError, match=r"nope\.html"):
        load_page_questions(q)


def test_sample_examples_small_sets_unchanged() -> None:
    exs = [Example(str(i), "q", ["a"]) for i in range(5)]
    assert sample_examples(exs, 400, 0) == exs
    assert [e.id for e in sample_examples(exs, 3, 7)] == [e.id for e in sample_examples(exs, 3, 7)]
