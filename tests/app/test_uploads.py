"""Uploads are judged by their bytes, within limits: wrong types, look-alikes and bombs are refused by name."""

from __future__ import annotations

import gzip

import pytest

from htmlrag.app.uploads import UploadError, check_upload, is_html, is_pdf, safe_name

LIMITS = {"max_pdf_bytes": 10_000, "max_html_bytes": 5_000}
PDF = b"%PDF-1.7\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
HTML = b"<!DOCTYPE html><html><head><title>t</title></head><body><p>hello</p></body></html>"


def test_accepts_a_pdf_and_an_html_page_by_content() -> None:
    assert check_upload("a.pdf", PDF, **LIMITS).kind == "pdf"
    assert check_upload("b.html", HTML, **LIMITS).kind == "html"
    assert check_upload("c.htm", b"\xef\xbb\xbf  \n<div><p>x</p></div>", **LIMITS).kind == "html"


@pytest.mark.parametrize(("name", "data", "needle"), [
    ("fake.pdf", HTML, "not a PDF"),
    ("fake.pdf", b"\x89PNG\r\n\x1a\n....", "PNG image"),
    ("fake.pdf", b"PK\x03\x04zipzip", "ZIP"),
    ("fake.pdf", b"", "empty file"),
    ("fake.html", PDF, "not an HTML page"),
    ("fake.html", b"\x7fELF\x02\x01\x01", "executable"),
    ("fake.html", b"just some text, no markup at all", "not an HTML page"),
    ("fake.html", b"<html>" + b"\x00" * 40 + b"binary</html>", "not an HTML page"),  # over 10% control bytes
    ("notes.txt", HTML, "unsupported file type"),
    ("archive.html.gz", HTML, "not gzip data"),
])
def test_refuses_content_that_does_not_match_its_name(name: str, data: bytes, needle: str) -> None:
    with pytest.raises(UploadError) as e:
        check_upload(name, data, **LIMITS)
    assert e.value.status == 415
    assert needle in str(e.value) and name.split(".")[0] in str(e.value)


def test_size_limits_give_413_naming_the_file_and_the_limit() -> None:
    with pytest.raises(UploadError) as e:
        check_upload("big.pdf", PDF + b"0" * 20_000, **LIMITS)
    assert e.value.status == 413 and "big.pdf" in str(e.value) and "0.0 MB limit" in str(e.value)
    with pytest.raises(UploadError) as e:
        check_upload("big.html", HTML + b" " * 6_000, **LIMITS)
    assert e.value.status == 413


def test_gzip_pages_are_decompressed_with_a_cap() -> None:
    up = check_upload("p.html.gz", gzip.compress(HTML), **LIMITS)
    assert up.kind == "html" and up.data == HTML and up.name == "p.html"
    bomb = gzip.compress(b"<html>" + b" " * 10_000_000)  # ~10 KB compressed, 10 MB expanded
    assert len(bomb) < LIMITS["max_pdf_bytes"]
    with pytest.raises(UploadError) as e:
        check_upload("bomb.html.gz", bomb, **LIMITS)
    assert e.value.status == 413 and "decompresses" in str(e.value)
    with pytest.raises(UploadError, match=r"truncated|broken"):
        check_upload("cut.html.gz", gzip.compress(HTML)[:20], **LIMITS)


def test_sniffers() -> None:
    assert is_pdf(b"garbage\n" * 10 + PDF)  # header within the first 1024 bytes, as readers accept
    assert not is_pdf(b" " * 2000 + PDF)
    assert is_html("<html><body>ü</body></html>".encode("utf-16"))  # UTF-16 with a BOM
    assert not is_html(b"<xml><note/></xml>")


@pytest.mark.parametrize(("raw", "safe"), [
    ("../../etc/passwd", "passwd"), ("C:\\temp\\x.pdf", "x.pdf"), (".hidden.pdf", "hidden.pdf"),
    ("r\u00e9sum\u00e9 <b>.pdf", "r_sum_ _b_.pdf"), ("", "upload"), ("a" * 300 + ".pdf", "a" * 116 + ".pdf"),
])
def test_safe_names(raw: str, safe: str) -> None:
    assert safe_name(raw) == safe
