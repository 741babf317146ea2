"""Token counting: the segment lower bound that lets pruning skip blocks without tokenizing them."""

from __future__ import annotations

import gzip

from hypothesis import given, settings
from hypothesis import strategies as st

from htmlrag import clean_html
from htmlrag.pruning.prune import _tags_lower_bound
from htmlrag.pruning.tokens import load_tokenizer, pieces_respect_segments, segment_count
from tests.conftest import shared_path

TOK = load_tokenizer()

# Text built from what HTML pages hold: tags, words, digits, punctuation, spaces, newlines, non-ASCII.
_ALPHABET = st.sampled_from([*"abcXYZ0159 <>/=\"'&;.,-()[]\n\t", "é", "—", "\u00a0", "東", "😀", "\u2581"])


def test_mistral_vocabulary_respects_segments():
    assert TOK.segments_lower_bound  # checked on every piece of the vocabulary at load


@settings(max_examples=400, deadline=None)
@given(st.text(_ALPHABET, max_size=120))
def test_segment_count_never_exceeds_the_token_count(text):
    assert TOK.lower_bound(text) <= TOK.count(text)


def test_segment_bound_is_tight_and_sound_on_real_pages():
    pages = sorted((shared_path() / "wtq-html-qa").glob("page/*/*.html*"))[:12]
    assert pages
    tokens = bound = 0
    for p in pages:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        html = clean_html(raw)
        for k in range(0, len(html), 500):
            chunk = html[k : k + 500]
            n, b = TOK.count(chunk), TOK.lower_bound(chunk)
            assert b <= n, chunk
            tokens, bound = tokens + n, bound + b
    assert bound > 0.75 * tokens  # what makes it worth computing (words alone give ~20%)


def test_a_vocabulary_that_crosses_segments_is_refused():
    assert pieces_respect_segments(["\u2581the", "<", "></", "1", "\u2581\u2581", "ing"])
    for piece in ("a1", "12", "a,", "a\u2581b", "x\ny", ".\u2581,"):
        assert not pieces_respect_segments(["\u2581the", piece]), piece


def test_segment_count_examples():
    assert segment_count("<td>12</td>") == 8  # < td > 1 2 </ td >
    assert segment_count("Hello, world") == 3  # Hello , _world
    assert segment_count("caf\u00e9 au lait") == 3  # the non-ASCII letter joins its neighbours
    assert segment_count("") == 0 and segment_count("\u6771\u4eac") == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["p", "td", "h2", "b", "li", "img"]), st.text(_ALPHABET, max_size=30),
                          st.text(_ALPHABET, max_size=10)), min_size=1, max_size=6))
def test_tag_bound_never_exceeds_the_segment_count(parts):
    """Pruning skips a leaf block whose tags alone make more segments than the room left: in serialised
    HTML every "<" opens a tag (text and attribute values are escaped), n tags give >= 2n + 1 segments."""
    import lxml.etree as etree

    from htmlrag.html.formats import compact_html

    root = etree.Element("div")
    for tag, text, attr in parts:
        el = etree.SubElement(root, tag)
        if tag == "img":
            el.set("alt", text)
        else:
            el.text = text
            el.set("title", attr)
        el.tail = attr
    for markup in (etree.tostring(root, method="html", encoding="unicode"),
                   compact_html(etree.tostring(root, method="html", encoding="unicode"))):
        assert _tags_lower_bound(markup) <= segment_count(markup) <= TOK.count(markup), markup


def test_tag_bound_on_real_blocks():
    from htmlrag import build_block_tree
    from htmlrag.pruning.prune import _block_markup

    pages = sorted((shared_path() / "wtq-html-qa").glob("page/*/*.html*"))[:8]
    checked = 0
    for p in pages:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        for b in build_block_tree(clean_html(raw), 128, pack_siblings=True).blocks:
            if b.is_leaf:
                for fmt in ("html", "compact_html"):
                    m = _block_markup(b, fmt)
                    assert _tags_lower_bound(m) <= segment_count(m), m[:200]
                    checked += 1
    assert checked > 100
