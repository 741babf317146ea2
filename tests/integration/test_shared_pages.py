"""Every real page of the shared page sets cleans without an exception and losslessly."""

from __future__ import annotations

import gzip

from htmlrag import build_block_tree, check_lossless, clean_html
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
