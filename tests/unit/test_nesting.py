"""The table of nestings libxml2's HTML parser does not keep (htmlrag.html.nesting): it is the installed
parser's, it does not depend on the context, and cleaning never creates such a nesting."""

from __future__ import annotations

import lxml.etree as etree
import pytest

from htmlrag.html.nesting import (
    NOT_KEPT,
    NOT_KEPT_UNDER,
    PROBED_TAGS,
    derive_not_kept,
    format_table,
    parser_keeps,
)
from htmlrag.html.parse import parse_html


def test_table_is_what_the_installed_libxml2_does():
    derived = {parent: children for parent, children in derive_not_kept().items() if children}
    assert derived == NOT_KEPT, (
        f"libxml2 {etree.LIBXML_VERSION} nests differently from htmlrag.html.nesting.NOT_KEPT: run "
        f"`python -m htmlrag.html.nesting` and paste its output there\n{format_table(derived)}")


@pytest.mark.parametrize("context", [("div",), ("table", "tr", "td"), ("ul", "li"), ("p",), ("p", "b"),
                                     ("h2", "a"), ("pre",), ("x-custom",)])
def test_the_answer_does_not_depend_on_what_is_around_the_parent(context):
    derived = derive_not_kept(context=context)
    assert len(derived) > 50  # most parents can be probed in each context
    assert {p: c for p, c in derived.items() if c != NOT_KEPT.get(p, frozenset())} == {}


def test_known_nestings():
    # the issue-36 case: a <pre> start tag closes a <ul>; block elements close a <p> and a <p> closes a <b>
    assert not parser_keeps("ul", "pre") and not parser_keeps("p", "div") and not parser_keeps("b", "p")
    # self-nestings (a probe that looked the child up with .//li would find the outer one)
    for tag in ("li", "p", "a", "form", "tr", "td", "option"):
        assert not parser_keeps(tag, tag)
    for tag in ("div", "ul", "table", "b", "span", "section", "blockquote"):
        assert parser_keeps(tag, tag)
    assert parser_keeps("div", "p") and parser_keeps("td", "table") and parser_keeps("h2", "div")
    # unknown tags: no rule either way
    assert parser_keeps("x-custom", "p") and parser_keeps("p", "x-custom")
    assert derive_not_kept(("x-custom", "p", "div"))["x-custom"] == frozenset()
    assert NOT_KEPT_UNDER["pre"] == frozenset({"ul", "p"}) and all(c in PROBED_TAGS for c in NOT_KEPT_UNDER)


@pytest.mark.parametrize("html", ["<ul>x<li>a</li>y</ul>", "<table>x<tr><td>a</td>y</tr>z</table>",
                                  "<tr>y</tr>", "<p><img alt=\"a\"> <img alt=\"b\"></p>",
                                  "<div><sup>1</sup> <sup>2</sup></div>"])
def test_text_and_spaces_between_inline_elements_are_kept_anywhere(html):
    html = f"<html><body>{html}</body></html>"
    assert etree.tostring(parse_html(html), method="html", encoding="unicode") == html
