"""The sample format (``questions.jsonl`` + page files) refuses every bad row with an error naming the file, the
line and the field -- no AttributeError, no page name walked letter by letter -- and reads a file with a
UTF-8 byte-order mark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag.core.errors import InputError
from htmlrag.data.local import load_page_questions

GOOD = {"id": "a", "question": "Who designed it?", "answers": ["Margaret Ellis"], "pages": ["p.html"]}


def _folder(tmp_path: Path, second: object, raw: bytes | None = None) -> Path:
    (tmp_path / "p.html").write_text("<p>Margaret Ellis designed it.</p>")
    (tmp_path / "dir.html").mkdir()
    lines = [json.dumps(GOOD).encode(), raw if raw is not None else json.dumps(second).encode()]
    (tmp_path / "questions.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path


BAD = {
    "question a number": ({**GOOD, "id": "b", "question": 5}, "'question' must be a non-empty string"),
    "question empty": ({**GOOD, "id": "b", "question": "  "}, "'question' must be a non-empty string"),
    "question missing": ({"id": "b", "answers": ["x"], "pages": []}, "'question' must be a non-empty string"),
    "no answers": ({**GOOD, "id": "b", "answers": []}, "no answers"),
    "pages a string": ({**GOOD, "id": "b", "pages": "p.html"}, "'pages' must be a list of page file names"),
    "a page a number": ({**GOOD, "id": "b", "pages": [3]}, "'pages' must be a list"),
    "pages an object": ({**GOOD, "id": "b", "pages": {"a": 1}}, "'pages' must be a list"),
    "id an object": ({**GOOD, "id": {"x": 1}}, "'id' must be a string or a whole number"),
    "id a list": ({**GOOD, "id": [1]}, "'id' must be a string or a whole number"),
    "id a boolean": ({**GOOD, "id": True}, "'id' must be a string or a whole number"),
    "duplicate id": (GOOD, "duplicate"),
    "missing page": ({**GOOD, "id": "b", "pages": ["nope.html"]}, "page 'nope.html' not found"),
    "page a folder": ({**GOOD, "id": "b", "pages": ["dir.html"]}, "page 'dir.html' is a folder"),
    "a row a list": ([1, 2], "expected a JSON object"),
    "not JSON": (None, "not a JSON line"),
    "not UTF-8": (None, "not UTF-8"),
    # answers written as text would be answers no reader gives: every system scored 0 on the row, silently
    "answers an object": ({**GOOD, "id": "b", "answers": {"text": "Margaret Ellis"}}, "'answers' must be a string"),
    "answers a list of lists": ({**GOOD, "id": "b", "answers": [["Margaret Ellis", "M. Ellis"]]},
                                "'answers' must be a string"),
    "answers a boolean": ({**GOOD, "id": "b", "answers": True}, "'answers' must be a string"),
    "long answers objects": ({**GOOD, "id": "b", "long_answers": [{"a": 1}]}, "'long_answers' must be a string"),
    "an id of 5,000 digits": (None, "not a JSON line"),  # json.loads raises ValueError, not JSONDecodeError
}
RAW = {"not JSON": b"{oops", "not UTF-8": b'{"id": "b", "question": "caf\xe9?"}',
       "an id of 5,000 digits": b'{"id": 1' + b"1" * 5000 + b', "question": "q?", "answers": ["x"], "pages": []}'}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_row_names_the_file_the_line_and_the_problem(tmp_path: Path, case: str) -> None:
    row, problem = BAD[case]
    folder = _folder(tmp_path, row, RAW.get(case))
    with pytest.raises(InputError) as err:
        load_page_questions(folder)
    msg = str(err.value)
    assert "questions.jsonl" in msg and problem in msg, msg
    if case != "duplicate id":
        assert "questions.jsonl:2" in msg, msg


def test_a_byte_order_mark_is_read_as_utf8(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {**GOOD, "id": "b", "id_note": "café"})
    q = folder / "questions.jsonl"
    q.write_bytes(b"\xef\xbb\xbf" + q.read_bytes())
    assert [e.id for e in load_page_questions(folder)] == ["a", "b"]


WTQ_BAD = {
    "page a list": ({"id": "b", "question": "q?", "answers": ["x"], "page": ["p.html"]}, "'page' must be a page file"),
    "page missing": ({"id": "b", "question": "q?", "answers": ["x"]}, "'page' must be a page file"),
    "distractors a string": ({"id": "b", "question": "q?", "answers": ["x"], "page": "p.html", "distractors": "p.html"},
                             "'distractors' must be a list"),
    "question a list": ({"id": "b", "question": ["q"], "answers": ["x"], "page": "p.html"}, "'question' must be"),
    "id an object": ({"id": {"a": 1}, "question": "q?", "answers": ["x"], "page": "p.html"}, "'id' must be"),
}


@pytest.mark.parametrize("case", list(WTQ_BAD))
def test_the_wtq_folder_refuses_bad_rows_the_same_way(tmp_path: Path, case: str) -> None:
    from htmlrag.data.local import load_wtq_html

    row, problem = WTQ_BAD[case]
    (tmp_path / "p.html").write_text("<table><tr><td>1</td></tr></table>")
    good = {"id": "a", "question": "q?", "answers": ["1"], "page": "p.html"}
    (tmp_path / "questions.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(InputError) as err:
        load_wtq_html(tmp_path)
    assert "questions.jsonl:2" in str(err.value) and problem in str(err.value), str(err.value)


@pytest.mark.parametrize("ident", [{"x": 1}, [1], True, 1.5])
def test_other_loaders_refuse_an_id_that_is_not_a_string_or_a_number(tmp_path: Path, ident: object) -> None:
    from htmlrag.data.crag import load_crag
    from htmlrag.data.htmlrag_test import load_htmlrag_test

    crag = tmp_path / "crag.jsonl"
    crag.write_text(json.dumps({"interaction_id": ident, "query": "q?", "answer": "a", "search_results": []}) + "\n")
    with pytest.raises(InputError, match="'id' must be a string or a whole number"):
        load_crag(crag)
    nq = tmp_path / "nq.jsonl"
    nq.write_text(json.dumps({"id": ident, "question": "q?", "answers": ["a"]}) + "\n")
    with pytest.raises(InputError, match="'id' must be a string or a whole number"):
        load_htmlrag_test("nq", nq)
