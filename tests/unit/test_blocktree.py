"""The block tree (Algorithm 1): splitting, paths, CJK words, deep pages, element mapping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htmlrag import HtmlRagError, build_block_tree, clean_html
from htmlrag.html.text import count_words


def _page(*paras: str) -> str:
    return "<html><body>" + "".join(paras) + "</body></html>"


def test_small_page_is_one_block():
    tree = build_block_tree(_page("<p>one two three</p>"), max_words=10)
    assert [b.path_str for b in tree] == ["<html>"]
    assert tree[0].is_leaf and tree[0].words == 3


def test_split_paths_and_non_leaf_text():
    html = _page("<div>intro words here<p>one two three</p><p>four five</p></div>",
                 "<section><p>six seven eight nine</p></section>", "tail text")
    tree = build_block_tree(html, max_words=3)
    got = {b.path_str: (b.is_leaf, b.words, " ".join(b.text.split())) for b in tree}
    assert got["<html><body><div><p0>"] == (True, 3, "one two three")
    assert got["<html><body><div><p1>"] == (True, 2, "four five")
    assert got["<html><body><div>"] == (False, 3, "intro words here")  # own text of a split node
    assert got["<html><body>"] == (False, 2, "tail text")
    assert got["<html><body><section><p>"] == (True, 4, "six seven eight nine")  # no children: leaf anyway


def test_sibling_suffixes_only_in_paths_numbered_from_zero():
    html = _page("<div>a b</div><div>c d</div><div>e f</div><p>g h</p>")
    tree = build_block_tree(html, max_words=2)
    assert [b.path_str for b in tree] == [
        "<html><body><div0>", "<html><body><div1>", "<html><body><div2>", "<html><body><p>"]
    assert "div0" not in tree.html() and "<div>" in tree.html()
    assert [b.element.tag for b in tree] == ["div", "div", "div", "p"]


def test_head_is_transparent_and_title_is_a_block():
    html = clean_html("<html><head><title>Page title</title></head><body><p>" + "w " * 20 + "</p></body></html>")
    tree = build_block_tree(html, max_words=10)
    assert tree[0].path_str == "<html><title>"
    assert tree[0].text == "Page title"


def test_cjk_words_are_characters():
    assert count_words("云岭茶园") == 4
    assert count_words("Tea 茶园 garden") == 4
    tree = build_block_tree(_page("<p>" + "茶" * 30 + "</p><p>短文</p>"), max_words=10)
    words = sorted(b.words for b in tree)
    assert words == [2, 30]


def test_blocks_map_to_their_elements_and_cover_all_text():
    html = clean_html(open("data/pages/lighthouse.html", encoding="utf-8").read())
    tree = build_block_tree(html, max_words=20)
    alt_words = sum(count_words(i.get("alt") or "") for i in tree.root.iter("img"))
    root_words = sum(count_words(t) for t in tree.root.itertext()) + alt_words
    assert sum(b.words for b in tree) == root_words  # every word is in exactly one block
    for b in tree:
        assert b.element.getroottree().getroot() is tree.root
        assert list(tree.root.iter())[b.position] is b.element
        if b.is_leaf and len(b.element):
            assert b.words <= 20 or not len(b.element)


def test_deep_page_no_recursion_error():
    n = 100_000
    html = "<div>w " * n + "end" + "</div>" * n
    tree = build_block_tree(html, max_words=256)  # raw page: flattened below depth 1024 by the parser
    assert len(tree) > 100
    assert sum(b.words for b in tree) == n + 1
    assert max(b.depth for b in tree) < 2000


def test_zero_blocks_and_bad_arguments():
    assert len(build_block_tree("", 256)) == 0
    assert len(build_block_tree("<div><span></span></div>", 256)) == 0
    with pytest.raises(HtmlRagError, match="max_words"):
        build_block_tree("<p>x</p>", max_words=0)


def test_image_alt_text_counts():
    tree = build_block_tree(_page('<img alt="a red car">', "<p>" + "w " * 5 + "</p>"), max_words=4)
    img = [b for b in tree if b.element.tag == "img"]
    assert img and img[0].words == 3 and img[0].text == "a red car"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["div", "p", "section", "ul"]), st.integers(0, 40)), min_size=1, max_size=12),
       st.integers(1, 50))
def test_blocks_respect_max_words_unless_unsplittable(parts, max_words):
    html = _page(*(f"<{t}>" + " ".join(f"w{i}" for i in range(n)) + f"<b>x</b></{t}>" for t, n in parts))
    tree = build_block_tree(html, max_words)
    for b in tree:
        if b.is_leaf and len(b.element):
            assert b.words <= max_words
    assert sum(b.words for b in tree) == sum(n + 1 for _, n in parts)
