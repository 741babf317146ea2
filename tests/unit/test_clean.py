"""Lossless cleaning: what goes, what stays, bad input, and the losslessness property."""

from __future__ import annotations

import codecs
import re

import lxml.etree as etree
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from htmlrag import HtmlRagError, build_block_tree, check_lossless, clean_html
from htmlrag.html.blocktree import _word_counts
from htmlrag.html.clean import clean_page_counted
from htmlrag.html.lossless import output_text, visible_text_runs


def test_drops_invisible_content_and_keeps_title():
    html = """<!DOCTYPE html><html><head><title>My Page</title><meta charset="utf-8">
    <style>.a{color:red}</style><script>var secret = 1;</script><link rel=stylesheet href=x.css></head>
    <body><!-- a comment --><?php echo 1 ?><noscript>enable js</noscript><template><p>tpl</p></template>
    <iframe src="x">frame text</iframe><p>Visible text.</p></body></html>"""
    out = clean_html(html)
    assert "<title>My Page</title>" in out
    for gone in ("secret", "color:red", "a comment", "enable js", "tpl", "frame text", "DOCTYPE", "php", "meta"):
        assert gone not in out
    assert "<p>Visible text.</p>" in out


def test_drops_text_hidden_by_markup_unless_asked_to_keep_it():
    """Wikipedia's table sort keys (and coordinates, persondata) sit in display:none spans: no reader sees
    them, and a key such as 7002188700000000000188.7 costs ~20 tokens per cell."""
    html = ("<body><table><tr><td><span style='display:none' class='sortkey'>7002188700000000000188.7</span>"
            "188.7</td><td>Alge<span style='DISPLAY : None;'>XX</span>ria</td></tr></table>"
            "<p>seen <b hidden>not seen</b>here</p><div style='color:red; visibility: hidden'>gone</div>"
            "<div style='display:none'><p>nested <span hidden>deeper</span></p></div><p>end</p></body>")
    out = clean_html(html)
    for hidden in ("70021887", "XX", "not seen", "gone", "nested", "deeper"):
        assert hidden not in out
    assert "<td>188.7</td>" in out and "Algeria" in out and "seen here" in out and "end" in out
    assert check_lossless(html, out).ok
    assert not check_lossless(html, out, keep_hidden=True).ok  # the hidden runs are missing, as they should be
    kept = clean_html(html, keep_hidden=True)
    assert "7002188700000000000188.7" in kept and "not seen" in kept and "deeper" in kept
    assert check_lossless(html, kept, keep_hidden=True).ok
    assert "display" not in kept  # the style attribute itself goes either way


def test_attributes_allow_list():
    html = ('<body><div class="x" id="y" style="z"><p data-a="1">t</p></div>'
            '<img src="a.png" alt="A red car" title="car" width="10"><img src="b.png">'
            '<table><tr><td colspan="2" rowspan="1" class="c">wide</td></tr><tr><td>a</td><td>b</td></tr></table>'
            '<a href="https://example.org/page">link</a></body>')
    out = clean_html(html)
    assert 'class=' not in out and 'style=' not in out and 'src=' not in out and 'width=' not in out
    assert '<img alt="A red car" title="car">' in out
    assert 'b.png' not in out and out.count("<img") == 1  # an image without alt text carries nothing
    assert '<td colspan="2">wide</td>' in out  # rowspan="1" is redundant
    assert "href" not in out and "link" in out
    assert 'href="https://example.org/page"' in clean_html(html, keep_href=True)


def test_unwraps_single_child_wrapper_chains_but_keeps_structure():
    html = ("<body><div><div><div><section><p>deep text</p></section></div></div></div>"
            "<ul><li><a>Home</a></li><li><span>About</span></li></ul>"
            "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td></td></tr></table></body>")
    out = clean_html(html)
    assert "<body><p>deep text</p><ul><li>Home</li><li>About</li></ul>" in out
    # table shape is kept: the empty cell holds the row's shape
    assert "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td></td></tr></table>" in out


def test_drops_empty_elements_and_empty_rows():
    out = clean_html("<body><div><span> </span><p></p></div><table><tr><td></td></tr></table><p>x</p></body>")
    assert out == "<html><body><p>x</p></body></html>"


def test_whitespace_normalised_but_pre_kept():
    out = clean_html("<body><p>  a \n\n  b\t c  </p><pre>  x\n    y</pre><p>one<br>two</p></body>")
    assert "<p>a b c</p>" in out
    assert "<pre>  x\n    y</pre>" in out
    assert "one two" in out


def test_renamed_tags_never_leak():
    out = clean_html("<body><div>a</div><div>b</div><p>c</p><p>d</p></body>")
    assert "div0" not in out and "div1" not in out and "p0" not in out


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (codecs.BOM_UTF8 + "<p>café</p>".encode(), "café"),
        (codecs.BOM_UTF16_LE + "<p>naïve</p>".encode("utf-16-le"), "naïve"),
        ('<meta charset="iso-8859-1"><p>caf\xe9</p>'.encode("latin-1"), "café"),
        ('<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><p>\xcf\xf0\xe8</p>'
         .encode("latin-1"), "При"),
        ("<p>日本語のテキスト</p>".encode("shift_jis").replace(b"<p>", b'<meta charset="shift_jis"><p>'), "日本語"),
        ("<p>plain utf-8 ü</p>".encode(), "ü"),
    ],
)
def test_bytes_are_decoded(data, expected):
    assert expected in clean_html(data)


def test_invalid_utf8_never_crashes():
    out = clean_html(b"<p>broken \xff\xfe\xc3 bytes and valid \xc3\xa9 more text here</p>")
    assert "broken" in out and "bytes" in out


@pytest.mark.parametrize("data", ["", "   \n\t ", b"", "<!-- only a comment -->", "<html><head></head></html>"])
def test_empty_inputs_give_empty_output(data):
    assert clean_html(data) == ""


def test_binary_garbage_is_a_clear_error():
    with pytest.raises(HtmlRagError, match="binary"):
        clean_html(bytes(range(256)) * 10, name="garbage.bin")
    with pytest.raises(HtmlRagError, match=r"garbage\.bin"):
        clean_html(b"\x00\x01\x02PK\x03\x04" * 100, name="garbage.bin")


def test_wrong_type_is_a_clear_error():
    with pytest.raises(HtmlRagError, match="expected str or bytes"):
        clean_html(12345)  # type: ignore[arg-type]


def test_nul_and_control_characters_in_str_are_dropped():
    out = clean_html("<p>a\x00b\x07c\ud800d</p>")
    assert "abc" in out.replace("\ufffd", "").replace("?", "")


def test_hundred_thousand_nested_divs_keep_all_text():
    n = 100_000
    html = "<p>start</p>" + "<div>w " * n + "bottom" + "</div>" * n + "<p>after the deep part</p>"
    out = clean_html(html)
    text = output_text(out)
    assert text.count("w") == n
    assert "bottom" in text and "after the deep part" in text


def test_deep_nesting_without_text_collapses():
    # within libxml2's depth limit the structure is kept and the wrapper chain collapses
    assert clean_html("<div>" * 1500 + "<p>x</p>" + "</div>" * 1500) == "<html><body><p>x</p></body></html>"
    # beyond it, tags below depth 1024 are flattened (text kept) instead of silently losing the page
    out = clean_html("<div>" * 5000 + "<p>x</p>" + "</div>" * 5000 + "<p>tail</p>")
    assert output_text(out) == "xtail" or output_text(out) == "x tail"


def test_fifty_megabyte_page():
    row = "<tr><td>cell {i}</td><td><span class='x'>value {i}</span></td></tr>"
    body = "".join(row.format(i=i) for i in range(700_000))
    html = f"<html><body><table>{body}</table><script>{'x' * 1000}</script></body></html>"
    assert len(html) > 50_000_000
    out = clean_html(html)
    assert out.count("<tr>") == 700_000
    assert "value 699999" in out and "class" not in out


def test_unclosed_tags_and_fragments():
    assert clean_html("<div><p>unclosed <b>bold<p>next") == (
        "<html><body><p>unclosed <b>bold</b></p><p>next</p></body></html>")
    assert clean_html("just some text, no tags") == "<html><body><p>just some text, no tags</p></body></html>" or \
        "just some text, no tags" in clean_html("just some text, no tags")


def test_xhtml_with_namespaces():
    html = ('<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml" '
            'xmlns:m="http://www.w3.org/1998/Math/MathML"><head><title>X</title></head>'
            '<body><p>Euler: <m:math><m:mi>e</m:mi></m:math> is a constant.</p></body></html>')
    out = clean_html(html.encode())
    assert "<title>X</title>" in out and "Euler:" in out and "is a constant." in out
    assert check_lossless(html.encode(), out).ok


def test_frameset_page_gives_valid_result():
    html = ('<html><head><title>Frames</title></head><frameset cols="50%,50%"><frame src="a.html">'
            '<frame src="b.html"></frameset></html>')
    out = clean_html(html)
    assert "frame" not in out.replace("Frames", "")
    assert out in ("", "<html><head><title>Frames</title></head></html>")


def test_output_is_well_formed_and_idempotent():
    html = "<body><div><p>a <b>b</b> &amp; &lt;c&gt;</p><ul><li>1<li>2</ul><img alt='x &quot; y'></div></body>"
    out = clean_html(html)
    # parses as XML (every element closed, text escaped) once void elements are self-closed
    etree.fromstring(re.sub(r"<img([^>]*)>", r"<img\1/>", out))
    assert clean_html(out) == out


# ---------------------------------------------------------------- every output is a fixed point (issue 36)

_ISSUE_36 = "<ul><article><ul><div><div><pre>&lt;</pre></div></div></ul>&lt;</article>&lt;</ul>"


def _clean_fixed(html: str, **kw) -> str:
    """``clean_html(html)`` without the ``<html><body>`` around it, after checking it is a fixed point, that
    its word counts are right and that its tree is what its HTML parses to (same block paths)."""
    out, root, counts = clean_page_counted(html, **kw)
    assert clean_html(out, **kw) == out, out
    assert check_lossless(html, out, keep_hidden=kw.get("keep_hidden", False)).ok
    expected, elements, _ = _word_counts(root)
    assert [counts.by_id[id(e)] for e in elements] == [expected[id(e)] for e in elements]
    assert [b.path_str for b in build_block_tree(root, 1).blocks] == \
           [b.path_str for b in build_block_tree(out, 1).blocks]
    assert out.startswith("<html><body>") and out.endswith("</body></html>")
    return out[len("<html><body>"):-len("</body></html>")]


@pytest.mark.parametrize(("html", "expected"), [
    # a <pre> start tag closes a <ul>: the <div> around it stays (the second pass dropped the inner <ul>)
    (_ISSUE_36, "<ul><article><ul><div><pre>&lt;</pre></div></ul>&lt;</article>&lt;</ul>"),
    ("<ul><li>a</li><div><pre>x</pre></div></ul>", "<ul><li>a</li><div><pre>x</pre></div></ul>"),
    ("<ul><li><div><li>x</li></div></li></ul>", "<ul><li><div><li>x</li></div></li></ul>"),  # <li> closes <li>
    ("<h2><div><p>x</p></div></h2>", "<h2><div><p>x</p></div></h2>"),  # a <p> closes an <h2>
    ("<div><b><div><p>x</p></div></b></div>", "<p>x</p>"),  # kept in the <b>, unwrapped once the <b> goes
    ("<h2><textarea> a  b </textarea></h2>", "<h2><textarea> a  b </textarea></h2>"),  # verbatim text stays so
])
def test_unwrapping_never_creates_a_nesting_the_parser_undoes(html, expected):
    assert _clean_fixed(html) == expected


@pytest.mark.parametrize(("html", "expected"), [
    # a <div> start tag closes a <p>: once the <span> or <a> around the <div> is stripped, the page is what
    # the parser makes of <p>a<div>: the paragraph ends there
    ("<p>a <span><div>b</div></span> c</p>", "<p>a</p><div>b</div>c"),
    ("<p>a <a href='u'><div>b <i>c</i></div></a> d</p>", "<p>a</p><div>b <i>c</i></div>d"),
    ("a<b><small><th></th></small>x</b>", "a<th></th>x"),  # an empty cell kept for its row's shape
])
def test_stripping_inline_tags_ends_a_parent_where_the_parser_does(html, expected):
    assert _clean_fixed(html) == expected


@pytest.mark.parametrize(("html", "expected"), [
    # an inline child's edge spaces are unwrapped into a block: they go (no-break spaces are spaces here)
    ("<table><tr><td>&#160;<b>OC&#160;</b></td></tr></table>", "<table><tr><td>OC</td></tr></table>"),
    ("<ul><li><b> x  y </b></li></ul>", "<ul><li>x y</li></ul>"),
    ("<table><tr><td><b>x <i>y</i> </b></td></tr></table>", "<table><tr><td>x <i>y</i></td></tr></table>"),
    # a block takes an inline's place: no space before or after it
    ("<div>a <b><div>x</div></b> c</div>", "a<div>x</div>c"),
    # an element removed from before a block leaves the space before it: it goes too
    ("<div><img alt='x'> <i></i><div>y</div></div>", '<img alt="x"><div>y</div>'),
    ("<p>z</p><b>a <i></i><div>y</div></b>", "<p>z</p><b>a<div>y</div></b>"),
    ("<p>z</p><b>a <br><div>y</div></b>", "<p>z</p><b>a<div>y</div></b>"),
    # inside <pre> every space stays
    ("<pre><b> x </b></pre>", "<pre> x </pre>"),
    ("<pre>a <i></i><div> y </div></pre>", "<pre>a <div> y </div></pre>"),
])
def test_edge_whitespace_follows_the_new_context_after_unwrapping_or_removal(html, expected):
    assert _clean_fixed(html) == expected


# ---------------------------------------------------------------- property: lossless on generated trees

# Tags that exercise every rule of cleaning: dropped with content, unwrapped inline, single-child wrappers,
# structure that is never unwrapped, and nestings the HTML parser does not keep (a <pre> in a <ul>, a <p> in
# a <b>, an <li> in an <li>, a <div> in a <p>, cells outside rows): htmlrag.html.nesting.NOT_KEPT.
_TAGS = ["div", "span", "p", "section", "article", "header", "nav", "form", "center", "blockquote",
         "a", "b", "i", "em", "font", "small", "sup", "label", "abbr",
         "ul", "ol", "li", "dl", "dt", "dd", "table", "tbody", "tr", "td", "th", "caption",
         "h1", "h2", "h3", "pre", "xmp", "textarea", "select", "option",
         "script", "style", "noscript", "br", "hr", "img"]
# Text pieces: words, whitespace of every kind (a no-break space collapses like a space outside <pre>), and
# character references.
_PIECES = ["a", "bc", "xyz", "Ä", "Ω", "中文", " ", "  ", "\n", "\t", "\r\n", "\xa0", "\u3000", "&nbsp;", "&#160;",
           "&#32;", "&lt;", "&gt;", "&amp;", "&quot;", "'", '"']
_words = st.lists(st.sampled_from(_PIECES), max_size=5).map("".join)
_ATTRS = ["", "", "", "", ' class="c"', ' style="x:y"', ' id="i" title="t"', ' href="u"', ' colspan="2"',
          ' alt="A b"', " hidden", ' style="display: none"']


_VOID = ["br", "hr", "img"]


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """An element around up to 4 children (elements or text); about 1 in 8 end tags is left out (the parser
    closes the element where it sees fit)."""
    def render(parts: tuple[str, str, list[str], bool]) -> str:
        tag, attrs, inner, closed = parts
        return f"<{tag}{attrs}>{''.join(inner)}{f'</{tag}>' if closed else ''}"
    return st.tuples(st.sampled_from([t for t in _TAGS if t not in _VOID]), st.sampled_from(_ATTRS),
                     st.lists(children, max_size=4), st.integers(0, 7).map(bool)).map(render)


#: An HTML fragment: text, a void element, or an element holding fragments (at most 16 leaves).
html_trees = st.recursive(
    _words | st.tuples(st.sampled_from(_VOID), st.sampled_from(_ATTRS), _words).map(lambda t: f"<{t[0]}{t[1]}>{t[2]}"),
    _element, max_leaves=16)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(html_trees, min_size=1, max_size=4), st.booleans(), st.booleans())
@example([_ISSUE_36], False, False)  # issue 36: the second pass dropped the <ul> the first kept
@example(["<table><tr><td>&#160;<b>OC&#160;</b></td></tr></table>"], False, False)  # <td>OC </td>, <td>OC</td>
@example(["<p>a<span><div>b</div></span>c</p>"], False, False)  # <p><div>: the parser closes the p
@example(["<div><b><div><p>x</p></div></b></div>"], False, False)  # a refused unwrap, allowed once the b goes
@example(["<div><img alt='x'> <i></i><div>y</div></div>"], False, False)  # space before a block, once <i> goes
@example(["<option><b><option>a"], False, False)  # the body wraps the inner <option> alone once <b> goes
def test_lossless_property_on_generated_trees(parts, keep_href, keep_hidden):
    html = "<html><body>" + "".join(parts) + "</body></html>"
    out = clean_html(html, keep_href=keep_href, keep_hidden=keep_hidden)
    report = check_lossless(html, out, keep_hidden=keep_hidden)
    assert report.ok, (html, out, report.first_missing)
    # Every output is a fixed point: cleaning it again changes nothing (issue 36).
    assert clean_html(out, keep_href=keep_href, keep_hidden=keep_hidden) == out, (html, out)
    if visible_text_runs(html, keep_hidden):
        assert out


@pytest.mark.parametrize("html, link", [
    ('<p><a href="/w/A">text</a></p>', '<a href="/w/A">text</a>'),
    ('<ul><li><a href="/w/B">B</a></li></ul>', '<a href="/w/B">B</a>'),
    ('<table><tr><td><a href="/w/C"><span>C</span></a></td></tr></table>', '<a href="/w/C">C</a>'),
    ('<div><div><a href="/w/D"><b>D d</b></a></div></div>', '<a href="/w/D"><b>D d</b></a>'),
    ('<h2><a href="/w/E">E</a></h2>', '<a href="/w/E">E</a>'),
])
def test_keep_href_keeps_a_link_that_is_the_only_content_of_its_parent(html, link):
    out = clean_html(html, keep_href=True)
    assert link in out
    assert clean_html(out, keep_href=True) == out
    assert "href" not in clean_html(html)  # without keep_href links go, text stays


@pytest.mark.parametrize("piece", ["a<br>", "<hr>a ", "<b></b>a ", "<b><i></i></b>a ", "<div></div> a ",
                                   "<span hidden>x</span>a ", "<p hidden>x</p>a "])
def test_a_long_run_of_removed_elements_cleans_in_bounded_memory(piece: str, tmp_path) -> None:
    """Each removed element hands its tail to the text before it; joined at each removal, a run of them copied
    the growing text once per element: 100,000 ``a<br>`` (500 KB) took 26 s and 10 GB, 900,000 (under the
    app's 5 MB upload limit) failed with MemoryError. The page below (about 1 MB) must clean within 2 GB of
    address space, and come out as the short page of the same pattern does, repeated."""
    import subprocess
    import sys

    n = 200_000
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from htmlrag.html.clean import clean_html\n"
        f"piece, n = {piece!r}, {n}\n"
        "small = clean_html('<p>' + piece * 3 + '</p>')\n"
        "big = clean_html('<p>' + piece * n + '</p>')\n"
        "unit = clean_html('<p>' + piece * 4 + '</p>')\n"
        "print(len(big), len(small), len(unit))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    big, small, unit = map(int, out.stdout.split())
    assert big == small + (n - 3) * (unit - small)  # each further piece adds what one adds to a short page
