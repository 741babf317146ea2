"""Every real page of the shared page sets cleans without an exception, losslessly, and to a fixed point."""

from __future__ import annotations

import gzip

import pytest

from htmlrag import build_block_tree, check_lossless, clean_html
from htmlrag.html.clean import clean_page, serialize
from htmlrag.html.parse import parse_html
from tests.conftest import shared_path


def _pages():
    root = shared_path()
    out = sorted((root / "readability-pages").glob("*/source.html.gz"))
    out += sorted((root / "article-extraction-benchmark" / "html").glob("*.html.gz"))
    return out


def test_all_shared_pages_clean_losslessly_and_shrink():
    pages = _pages()
    assert len(pages) > 300
    failures = []
    raw_total = out_total = 0
    for path in pages:
        raw = gzip.decompress(path.read_bytes())
        out = clean_html(raw, name=str(path))
        report = check_lossless(raw, out)
        if not report.ok:
            failures.append((path.name, report.first_missing))
        raw_total += len(raw.decode("utf-8", "replace"))
        out_total += len(out)
        assert len(build_block_tree(out, 256)) > 0
    assert not failures, failures[:3]
    assert out_total / raw_total <= 0.10


@pytest.mark.shared_data
@pytest.mark.parametrize("options", [{}, {"keep_href": True, "keep_hidden": True}])
def test_every_shared_page_is_a_fixed_point_of_cleaning(options):
    """Issue 36: cleaning a cleaned page changes nothing, and the cleaned HTML parses back to the very tree
    cleaning returned (all 581 pages: WTQ's Wikipedia pages, the articles, the readability pages)."""
    pages = _pages() + sorted((shared_path("wtq-html-qa", "page")).glob("*/*.html.gz"))
    assert len(pages) > 550
    not_fixed = []
    for path in pages:
        out, root = clean_page(gzip.decompress(path.read_bytes()), name=str(path), **options)
        if clean_html(out, **options) != out or serialize(parse_html(out)) != serialize(root):
            not_fixed.append(f"{path.parent.name}/{path.name}")
    assert not not_fixed, not_fixed[:5]
