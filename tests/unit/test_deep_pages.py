"""Deep pages everywhere (issue 38, class 3): every tree walk of the library takes pages nested 2,040 levels (the
deepest tree the parser keeps), 5,000 and 100,000 levels (flattened by the parser to 1,024), in six shapes, and
keeps their text. Before, pruning (``_pruned_copy``), the Markdown format and the Markdown baseline raised
RecursionError, and LangChain's section splitter silently dropped everything below level 256."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag.cli.main import main
from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.formats import (
    FORMATS,
    MARKDOWN_MAX_DEPTH,
    bound_depth,
    convert,
    html_to_markdown,
    html_to_text,
)
from htmlrag.html.parse import parse_html, shallow_html, tree_depth
from htmlrag.testing.pages import NEEDLE, SHAPES, deep_page
from tests.conftest import SAMPLE_PAGES

DEPTHS = [2040, 5000]
SHAPE_NAMES = list(SHAPES)
NAME = "Margaret Ellis"


@pytest.fixture(scope="module")
def pages() -> dict[tuple[str, int], str]:
    return {(s, d): deep_page(d, s) for s in SHAPE_NAMES for d in [*DEPTHS, 100_000] if d < 100_000 or s in
            ("div", "inline", "list")}


def _words(text: str) -> list[str]:
    """The words of a text, sorted (markup such as Markdown's ``#``, ``*``, ``|`` left out)."""
    import re

    return sorted(re.findall(r"\w+", text))


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_library_stages_take_deep_pages_and_keep_their_text(pages: dict, shape: str, depth: int) -> None:
    page = pages[(shape, depth)]
    cleaned = clean_html(page)
    tree = build_block_tree(cleaned, 32)
    assert any(NAME in b.text for b in tree.blocks)
    text = html_to_text(cleaned)
    assert NEEDLE in text
    md = html_to_markdown(cleaned)
    assert _words(md) == _words(text)  # every word kept
    from htmlrag.html.lossless import check_lossless

    assert check_lossless(page, cleaned).ok


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_pruning_a_deep_page_in_every_format(pages: dict, shape: str, depth: int) -> None:
    from htmlrag.factory import make_pipeline

    for fmt in FORMATS:
        res = make_pipeline("bm25", budget2=96, max_words1=32, fmt=fmt).run("Who designed the tower?",
                                                                             [pages[(shape, depth)]])
        # (the needle sits under up to 2,040 levels whose tags alone exceed the budget: what is kept is what fits)
        assert not res.errors and res.tokens <= 96, (fmt, res.tokens)
        if not (shape == "table" and fmt == "markdown"):  # markdownify writes a header row per nested table: no
            assert res.tokens > 0 and res.context.strip(), fmt  # block of 128 nested tables fits 96 tokens


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("shape", ["div", "list", "table", "section"])
def test_the_iterative_rebuild_equals_pruning_by_removal(pages: dict, shape: str, depth: int) -> None:
    """``_pruned_copy`` (rebuilt with a stack now) gives the pages the removal path gives, block choice by block
    choice: the same tree, not merely no error."""
    import random

    from htmlrag.pruning.prune import _materialise_blocks, _materialise_by_removal

    tree = build_block_tree(clean_html(pages[(shape, depth)]), 32)
    rng = random.Random(depth)
    for _ in range(5):
        kept = {id(b) for b in tree.blocks if rng.random() < 0.3}
        assert _materialise_blocks([tree.root], [tree.blocks], kept) == \
            _materialise_by_removal([tree.root], [tree.blocks], kept)


def test_markdown_bounds_nesting_but_keeps_shallow_pages_unchanged() -> None:
    shallow = (SAMPLE_PAGES / "lighthouse.html").read_text()
    assert bound_depth(shallow) == shallow
    deep = deep_page(400, "list")
    bounded = bound_depth(deep)
    assert tree_depth(parse_html(bounded)) <= MARKDOWN_MAX_DEPTH + 1
    assert _words(html_to_text(bounded)) == _words(html_to_text(deep))


def test_shallow_html_flattens_only_deep_pages() -> None:
    shallow = (SAMPLE_PAGES / "lighthouse.html").read_text()
    assert shallow_html(shallow, 200) == shallow
    deep = deep_page(2040, "section")
    flat = shallow_html(deep, 200)
    assert tree_depth(parse_html(flat)) <= 200 and _words(html_to_text(flat)) == _words(html_to_text(deep))


@pytest.mark.parametrize("depth", [300, 2040, 5000])
@pytest.mark.parametrize("shape", ["div", "section", "table"])
def test_baselines_take_deep_pages_without_losing_text(pages: dict, shape: str, depth: int) -> None:
    pytest.importorskip("langchain_text_splitters")
    from htmlrag.baselines.chunk_rerank import html_section_chunks
    from htmlrag.baselines.page_formats import page_markdown, page_text

    page = pages.get((shape, depth)) or deep_page(depth, shape)
    chunks = html_section_chunks(page)
    assert any(NAME in c for c in chunks)                     # was silently dropped below level 256
    assert NAME in page_markdown(page) and NAME in page_text(page)
    from htmlrag.html.chunking import section_chunks

    assert any(NAME in c for c in section_chunks(clean_html(page), 64))


def test_chunk_cutting_is_linear_and_unchanged() -> None:
    from htmlrag.html.chunking import cut_words as _cut

    def naive(text: str, max_words: int) -> list[str]:  # the former slicing version
        import re

        out, cur = [], []
        for sent in re.split(r"(?<=[.!?。！？])\s+", text):
            words = sent.split()
            while words:
                room = max_words - len(cur)
                if len(words) <= room:
                    cur.extend(words)
                    words = []
                elif cur:
                    out.append(" ".join(cur))
                    cur = []
                else:
                    out.append(" ".join(words[:max_words]))
                    words = words[max_words:]
        if cur:
            out.append(" ".join(cur))
        return out

    texts = ["a b c. d e f g h. i", " ".join(f"w{i}" for i in range(1000)), "x. " * 50, "", "one"]
    for t in texts:
        for m in (1, 2, 3, 7, 128):
            assert _cut(t, m) == naive(t, m)


def test_training_samples_and_block_paths_take_deep_pages(pages: dict) -> None:
    from htmlrag.pruning.tokens import load_tokenizer
    from htmlrag.rankers.generative import block_paths
    from htmlrag_bench.training.samples import load_page_tree

    page = load_page_tree(pages[("div", 2040)], load_tokenizer(None), 128, "deep")
    assert page is not None and NAME in page.html
    assert max(len(p) for p in block_paths([page.tree])) > 1000


# -- the command line -------------------------------------------------------------------------------------

def _cli(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize(("shape", "depth"), [("div", 2040), ("list", 5000), ("div", 100_000),
                                              ("inline", 100_000), ("list", 100_000)])
def test_every_command_on_a_deep_page(tmp_path: Path, pages: dict, capsys: pytest.CaptureFixture, shape: str,
                                      depth: int) -> None:
    path = tmp_path / "deep.html"
    path.write_text(pages[(shape, depth)])
    rc, out, err = _cli(["clean", str(path)], capsys)
    assert rc == 0 and NAME in out and "Traceback" not in err
    rc, out, err = _cli(["tree", str(path), "--max-words", "32"], capsys)
    assert rc == 0 and "Traceback" not in err
    for fmt in FORMATS:
        rc, out, err = _cli(["prune", str(path), "-q", "Who designed the tower?", "--budget", "96", "--max-words",
                             "32", "--ranker", "bm25", "--format", fmt], capsys)
        assert rc == 0 and out.strip() and "Traceback" not in err and " tokens (budget 96" in err, (fmt, err[-2000:])


def test_batch_of_deep_pages_among_normal_ones(tmp_path: Path, pages: dict, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / "in.jsonl"
    items = []
    for (shape, depth), html in pages.items():
        p = tmp_path / f"{shape}{depth}.html"
        p.write_text(html)
        items.append({"id": f"{shape}{depth}", "question": "Who designed the tower?",
                      "page_paths": [str(p), str(SAMPLE_PAGES / "tea-garden.html")]})
    src.write_text("".join(json.dumps(i) + "\n" for i in items))
    out = tmp_path / "out.jsonl"
    rc, _, err = _cli(["prune", "--batch", str(src), "--out", str(out), "--budget", "96", "--max-words", "32",
                       "--workers", "1"], capsys)
    assert rc == 0, err[-2000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [i["id"] for i in items]
    assert all("error" not in r and r["context"] and 0 < r["tokens"] <= 96 for r in rows)


def test_embedding_ranker_on_a_deep_page(tmp_path: Path, pages: dict, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("sentence_transformers")
    path = tmp_path / "deep.html"
    path.write_text(pages[("list", 5000)])
    rc, out, err = _cli(["prune", str(path), "-q", "Who designed the tower?", "--budget", "96", "--max-words", "32",
                         "--ranker", "embed", "--embed-dtype", "float32"], capsys)
    assert rc == 0 and out.strip() and " tokens (budget 96, embed" in err, err[-2000:]


def test_every_format_converter_on_flattened_pages(pages: dict) -> None:
    cleaned = clean_html(pages[("section", 5000)])
    for fmt in FORMATS:
        assert NAME in convert(cleaned, fmt)


@pytest.mark.parametrize("n", [2040, 2050, 5000])
@pytest.mark.parametrize(("before", "unclosed", "after"), [
    ("<html><head>", "<noscript>n ", "</head><body><p>{}</p></body></html>"),
    ("<body><div id=a>", "<span>s ", "</div><p>{}</p>"),
    ("<body><table><tr><td>", "<b>b ", "</td></tr></table><p>{}</p>"),
    ("<body><ul><li>", "<em>e ", "</li></ul><p>{}</p>"),
])
def test_what_follows_thousands_of_unclosed_elements_keeps_its_place(before: str, unclosed: str, after: str,
                                                                     n: int) -> None:
    """The end tag of a kept element closes what was opened inside it, as HTML does: the text after it is
    shallow again and cleaned like any other text (past libxml2's 2,048 levels, 2,050 unclosed <noscript> in
    <head> used to swallow the whole body, which cleaning then removed with the <noscript>)."""
    page = before + unclosed * n + after.format(NEEDLE)
    assert NEEDLE in clean_html(page)
    assert NEEDLE in " ".join(b.text for b in build_block_tree(page, max_words=64).blocks)


@pytest.mark.parametrize("tag", ["div", "img", "br/"])
def test_an_element_with_very_many_attributes_keeps_its_first_thousand(tag: str) -> None:
    """libxml2's time grows with the square of one element's attribute count (300,000 attributes: over 90 s);
    a huge tag goes through the standard tokenizer first and keeps its first MAX_ATTRS attributes, the text
    around it unchanged."""
    from htmlrag.html.parse import MAX_ATTRS

    name = tag.rstrip("/")
    attrs = " ".join(f'a{i}="v&amp;{i}"' for i in range(20_000))
    page = f"<html><body><p>before</p><{name} {attrs}{'/' if tag.endswith('/') else ''}>{NEEDLE}<p>after</p></body></html>"
    root = parse_html(page)
    (el,) = root.iter(name)
    assert len(el.attrib) == MAX_ATTRS and el.get("a0") == "v&0" and el.get(f"a{MAX_ATTRS - 1}")
    text = " ".join(root.itertext())
    assert "before" in text and NEEDLE in text and "after" in text
    assert NEEDLE in clean_html(page)
    small = parse_html(f'<p {" ".join(f"a{i}=v" for i in range(50))}>x</p>')
    assert len(next(small.iter("p")).attrib) == 50  # ordinary pages take the fast path untouched
