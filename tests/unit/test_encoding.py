"""Decoding page bytes as a browser does, checked against the rules of the HTML standard's encoding sniffing
algorithm (BOM, prescan of <meta>, the UTF-16 and x-user-defined rules, "change the encoding" for a later
declaration, the WHATWG Encoding standard's labels, autodetection) and position-independent NUL handling."""

from __future__ import annotations

import codecs

import pytest

from htmlrag.core.errors import InputError
from htmlrag.html.encoding import decode_html, encoding_from_label, prescan, sniff, to_text, to_utf8

CYR = "Привет"          # windows-1251 / koi8-r test text
CYR_1251 = CYR.encode("cp1251")


def page(head: str, body: bytes = CYR_1251) -> bytes:
    return f"<html><head>{head}</head><body><p>".encode("ascii") + body + b"</p></body></html>"


# -- 1. the BOM wins over everything ---------------------------------------------------------------------
@pytest.mark.parametrize(("data", "name"), [
    (codecs.BOM_UTF8 + page('<meta charset="windows-1251">', "ü".encode()), "utf-8"),
    (codecs.BOM_UTF16_LE + "<meta charset=windows-1251><p>ü</p>".encode("utf-16-le"), "utf-16le"),
    (codecs.BOM_UTF16_BE + "<p>ü</p>".encode("utf-16-be"), "utf-16be"),
    (codecs.BOM_UTF32_LE + "<p>x</p>".encode("utf-32-le"), "utf-16le"),   # no UTF-32 on the web: FF FE = UTF-16LE
])
def test_bom_decides(data: bytes, name: str) -> None:
    s = sniff(data, declared="windows-1251")
    assert (s.name, s.source) == (name, "bom")
    if name != "utf-16le" or not data.startswith(codecs.BOM_UTF32_LE):
        assert "ü" in decode_html(data) or "x" in decode_html(data)


def test_transport_charset_comes_before_meta() -> None:
    data = page('<meta charset="koi8-r">')
    assert sniff(data, declared="text/html; windows-1251".split()[-1]).name == "windows-1251"
    assert CYR in decode_html(data, declared="cp1251")


# -- 2. the prescan and its rules ------------------------------------------------------------------------
@pytest.mark.parametrize("head", [
    '<meta charset="utf-16">', "<meta charset=utf-16le>", "<meta charset='UTF-16BE'>", '<meta charset="unicode">',
    '<meta http-equiv="Content-Type" content="text/html; charset=utf-16">',
])
def test_declared_utf16_on_ascii_bytes_is_utf8(head: str) -> None:
    data = page(head, "naïve café".encode())                  # the bytes are ASCII-compatible, no BOM
    assert sniff(data).name == "utf-8"
    assert "naïve café" in decode_html(data)                   # not CJK garbage


def test_x_user_defined_is_windows_1252() -> None:
    data = page('<meta charset="x-user-defined">', b"\x80 \x93quoted\x94")
    assert sniff(data).name == "windows-1252" and "€ “quoted”" in decode_html(data)


@pytest.mark.parametrize(("label", "name"), [
    ("iso-8859-1", "windows-1252"), ("latin1", "windows-1252"), ("ascii", "windows-1252"),
    ("US-ASCII", "windows-1252"), (" utf8 ", "utf-8"), ("unicode-1-1-utf-8", "utf-8"), ("gb2312", "gbk"),
    ("x-gbk", "gbk"), ("x-sjis", "shift_jis"), ("ms932", "shift_jis"), ("iso-8859-9", "windows-1254"),
    ("tis-620", "windows-874"), ("ks_c_5601-1987", "euc-kr"), ("cp1251", "windows-1251"), ("koi8", "koi8-r"),
    ("iso-8859-8-i", "iso-8859-8-i"), ("hz-gb-2312", "replacement"), ("iso-2022-kr", "replacement"),
    ("utf-32", None), ("bogus", None), ("", None),
])
def test_labels_follow_the_encoding_standard(label: str, name: str | None) -> None:
    assert encoding_from_label(label) == name


@pytest.mark.parametrize(("head", "expected"), [
    ('<meta charset="windows-1251">', "windows-1251"),
    ("<META CHARSET=WINDOWS-1251>", "windows-1251"),
    ('<meta charset="bogus"><meta charset="windows-1251">', "windows-1251"),          # unknown: keep scanning
    ('<meta charset="koi8-r" charset="windows-1251">', "koi8-r"),                      # first of a name wins
    ('<meta content="text/html; charset=windows-1251">', None),                       # no pragma: ignored
    ('<meta content="text/html; charset=windows-1251" http-equiv="content-type">', "windows-1251"),
    ("<meta http-equiv=Content-Type content=\"text/html;charset='windows-1251'\">", "windows-1251"),
    ('<meta http-equiv="content-type" content="charset">', None),
    ("<!-- <meta charset=koi8-r> --><meta charset=windows-1251>", "windows-1251"),       # comments skipped
    ("<!--><meta charset=windows-1251>", "windows-1251"),                             # <!--> ends the comment
    ("<a title='<meta charset=koi8-r>'><meta charset=windows-1251>", "windows-1251"),  # inside a value: no tag
    ("<script>document.write('<meta charset=koi8-r>')</script>", "koi8-r"),            # the prescan reads it
    ("<?php x ?><!DOCTYPE html></x ><meta/charset=windows-1251>", "windows-1251"),
    ("<meta name=viewport><meta charset=windows-1251>", "windows-1251"),
])
def test_prescan(head: str, expected: str | None) -> None:
    assert prescan(page(head)) == expected


def test_prescan_reads_1024_bytes_and_a_later_declaration_changes_the_encoding() -> None:
    filler = "<!-- " + "x" * 1100 + " -->"
    late = page(filler + '<meta charset="windows-1251">')
    assert prescan(late) is None
    s = sniff(late)
    assert (s.name, s.source) == ("windows-1251", "meta-later") and CYR in decode_html(late)
    hidden = page("<p>" + "x" * 1100 + "</p><!-- <meta charset=koi8-r> -->", CYR.encode())
    assert sniff(hidden).name == "utf-8"                       # a declaration inside a comment is no declaration
    later_utf16 = page("<p>" + "y" * 1100 + '</p><meta charset="utf-16">', "ü".encode())
    assert sniff(later_utf16).name == "utf-8"                  # same UTF-16 rule when changing the encoding


# -- 3. no declaration: autodetection and the default ----------------------------------------------------
def test_autodetection_and_default() -> None:
    assert sniff("<p>déjà vu</p>".encode()).name == "utf-8"
    latin = "<p>déjà vu</p>".encode("cp1252")
    assert sniff(latin).name == "windows-1252" and "déjà vu" in decode_html(latin)
    assert decode_html("<p>naïve</p>".encode("utf-16-le")).endswith("naïve</p>")   # UTF-16 without a BOM
    assert decode_html("<p>naïve</p>".encode("utf-16-be")).endswith("naïve</p>")


def test_replacement_encoding_is_one_replacement_character() -> None:
    assert decode_html(page('<meta charset="hz-gb-2312">')) == "\ufffd"


def test_gbk_labels_decode_with_the_gb18030_decoder() -> None:
    text = "中文𠀀"  # the last one is outside GBK proper: gb18030 four-byte
    assert text in decode_html(page('<meta charset="gbk">', text.encode("gb18030")))


# -- 4. NUL bytes: the same wherever they are; binary means the whole input ---------------------------------
@pytest.mark.parametrize("offset", [5, 100, 8000, 9000, 50_000])
def test_a_nul_is_dropped_wherever_it_is(offset: int) -> None:
    body = ("<p>" + "word " * 12_000 + "</p>").encode()
    data = body[:offset] + b"\x00" + body[offset:]
    assert "\x00" not in to_text(data) and b"\x00" not in to_utf8(data)
    assert to_text(data).count("word") == 12_000


@pytest.mark.parametrize("data", [
    b"%PDF-1.7\n" + b"stream text " * 100, b"\x89PNG\r\n\x1a\n" + b"x" * 200, b"PK\x03\x04" + b"y" * 300,
    bytes(range(256)) * 10, b"<p>" + b"\x00\x01\x02\x03" * 500 + b"</p>",
])
def test_binary_inputs_are_refused(data: bytes) -> None:
    with pytest.raises(InputError, match=r"page\.html: .*binary"):
        decode_html(data, name="page.html")


def test_decode_and_fast_path_agree() -> None:
    for data in (page('<meta charset="utf-16">', "ü".encode()), page('<meta charset="windows-1251">'),
                 "<p>plain ü</p>".encode(), codecs.BOM_UTF8 + b"<p>x</p>", "<p>déjà</p>".encode("cp1252")):
        assert to_utf8(data).decode("utf-8") == to_text(data)


@pytest.mark.parametrize("encoding", ["utf-8", "windows-1252", "utf-16"])
def test_a_form_feed_is_whitespace_never_dropped_and_never_binary(encoding: str) -> None:
    """FF is HTML whitespace: the words on either side stay apart (XML text cannot hold FF, so it becomes a
    space), and a page full of form feeds (a printout's page breaks) is a page, not binary data."""
    from htmlrag.html.encoding import decode_html, to_text, to_utf8

    page = "<pre>Page 1 text\x0cPage 2 text\x0cPage 3</pre>" + "\x0c" * 40
    data = page.encode(encoding)
    for out in (to_text(data), to_utf8(data).decode("utf-8"), to_text(page), to_utf8(page).decode("utf-8")):
        assert "text Page 2" in out and "\x0c" not in out
    assert decode_html(data).count("\x0c") == 42  # the decoder itself keeps it; the parser's input has spaces
