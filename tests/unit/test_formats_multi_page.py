"""A context of several pages (``<html>`` documents joined with newlines) converts to the text of every page,
so reference-text EM sees all of them (libxml2 alone keeps only the first document)."""

from __future__ import annotations

from htmlrag.evaluation.scoring.metrics import MetricInput, score_example
from htmlrag.html.formats import convert


def test_text_of_every_joined_page() -> None:
    ctx = ("<!doctype html><!-- page 0 --><html><body><p>alpha</p></body></html>\n"
           "<HTML lang=en><body><table><tr><td>beta</td><td>gamma</td></tr></table></body></html>\n"
           "<html><body><p>delta</p></body></html>")
    text = convert(ctx, "text")
    assert [w for w in ("alpha", "beta", "gamma", "delta") if w in text] == ["alpha", "beta", "gamma", "delta"]
    assert convert("<p>one page</p>", "text") == "one page"


def test_ref_em_finds_an_answer_on_a_later_page() -> None:
    ctx = "<html><body><p>nothing here</p></body></html>\n<html><body><p>The answer is Guadalupe.</p></body></html>"
    x = MetricInput(response="", context=ctx, answers=["Guadalupe"], context_text=convert(ctx, "text"))
    assert score_example(["ref_em"], x)["ref_em"] == 1.0
