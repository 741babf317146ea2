"""One capped page reader (issue 38, class 5): ``htmlrag clean/tree/prune`` read pages through
:func:`htmlrag.core.io.read_page` with the web app's limit (``--max-page-mb``, default :data:`MAX_PAGE_MB`), so a
100 MB gzip bomb is refused naming the file after decompressing at most the limit, never its whole size."""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc
import zlib
from pathlib import Path

import pytest

from htmlrag.cli.main import main
from htmlrag.core.errors import InputError
from htmlrag.core.io import MAX_PAGE_MB, PageTooLarge, gunzip_capped, read_page

PAGE = b"<html><body><p>The tower was designed by Margaret Ellis.</p></body></html>"


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 MB of spaces inside a page, about 100 KB compressed."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.html.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    with open(path, "wb") as fh:
        fh.write(z.compress(b"<html><body><p>"))
        for _ in range(100):
            fh.write(z.compress(block))
        fh.write(z.compress(b"</p></body></html>") + z.flush())
    assert path.stat().st_size < 200_000
    return path


def test_a_gzip_bomb_is_refused_having_decompressed_only_the_limit(bomb: Path) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PageTooLarge, match=rf"{bomb.name}: decompresses to more than the 5.0 MB limit"):
            read_page(bomb, 5_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30_000_000   # the limit and its copies, not the 100 MB the bomb holds


def test_limits_and_gzip_forms(tmp_path: Path) -> None:
    gz = tmp_path / "p.html.gz"
    gz.write_bytes(gzip.compress(PAGE))
    assert read_page(gz, len(PAGE)) == PAGE                              # exactly at the limit
    with pytest.raises(PageTooLarge):
        read_page(gz, len(PAGE) - 1)
    hidden = tmp_path / "p.html"                                         # gzip without the .gz name
    hidden.write_bytes(gzip.compress(PAGE))
    assert read_page(hidden, 10_000) == PAGE
    members = tmp_path / "m.html.gz"                                     # several members, zero padding
    members.write_bytes(gzip.compress(PAGE[:20]) + gzip.compress(PAGE[20:]) + b"\x00" * 16)
    assert read_page(members, 10_000) == PAGE == read_page(members)
    with pytest.raises(PageTooLarge):
        read_page(members, len(PAGE) - 1)                                # the limit counts every member
    cut = tmp_path / "cut.html.gz"
    cut.write_bytes(gzip.compress(PAGE)[:-12])
    with pytest.raises(InputError, match="truncated"):
        read_page(cut)
    broken = tmp_path / "broken.html.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(64))
    with pytest.raises(InputError, match="broken gzip"):
        read_page(broken)
    assert gunzip_capped(gzip.compress(PAGE * 1000), None, "x") == PAGE * 1000   # no limit


def test_a_plain_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.html"
    with open(big, "wb") as fh:          # a sparse 10 GB file: reading it would take minutes and the memory
        fh.truncate(10 * 10**9)
    with pytest.raises(PageTooLarge, match=r"10000\.0 MB is over the 5\.0 MB limit"):
        read_page(big, 5_000_000)
    small = tmp_path / "small.html"
    small.write_bytes(PAGE + b" " * 100)
    with pytest.raises(PageTooLarge):
        read_page(small, len(PAGE))
    assert read_page(small) == small.read_bytes()


@pytest.mark.parametrize("command", [["clean"], ["tree"], ["prune", "-q", "who?"]])
def test_every_command_refuses_the_bomb_with_the_option_to_raise_the_limit(bomb: Path, command: list[str],
                                                                          capsys: pytest.CaptureFixture) -> None:
    assert main([*command, str(bomb)]) == 1
    err = capsys.readouterr().err
    assert f"htmlrag: error: {bomb}: decompresses to more than the {MAX_PAGE_MB:.1f} MB limit for pages" in err
    assert "--max-page-mb" in err and "Traceback" not in err
    assert main([*command, str(bomb), "--max-page-mb", "150"]) == 0     # raised: read as any page
    capsys.readouterr()


def test_the_batch_gets_an_error_row_and_goes_on(bomb: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    page = tmp_path / "ok.html"
    page.write_bytes(PAGE)
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "bomb", "question": "who?", "page_paths": [str(bomb)]}) + "\n"
                   + json.dumps({"id": "ok", "question": "who?", "page_paths": [str(page)]}) + "\n"
                   + json.dumps({"id": "inline", "question": "who?", "pages": ["<p>" + "x" * 2_000 + "</p>"]}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["prune", "--batch", str(src), "--out", str(out), "--max-page-mb", "0.001", "--workers", "1"]) == 1
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert str(bomb) in rows["bomb"]["error"] and "over the 1,000 bytes limit" in rows["bomb"]["error"]
    assert "pages[0]: over the 1,000-byte limit for pages" in rows["inline"]["error"]
    assert "error" not in rows["ok"] and "Margaret Ellis" in rows["ok"]["context"]


def test_stdin_is_capped_too(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"<p>" + b" " * 3_000_000)))
    assert main(["clean", "--max-page-mb", "1"]) == 1
    assert "<stdin>: over the 1.0 MB limit for pages" in capsys.readouterr().err


def test_the_app_and_the_command_line_share_the_limit() -> None:
    from htmlrag.app.settings import AppSettings
    from htmlrag.cli.main import build_parser

    args = build_parser().parse_args(["clean", "x.html"])
    assert args.max_page_mb == MAX_PAGE_MB == AppSettings().max_html_mb
    serve = build_parser().parse_args(["serve"])
    assert serve.max_html_mb == MAX_PAGE_MB
