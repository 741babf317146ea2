"""One page decoder for the command line and the web app (issue 38, class 5): every page ``htmlrag clean`` reads
-- UTF-16/32 with or without a BOM, legacy encodings declared in ``<meta>`` -- the app accepts, stores and shows
with the same text; what one refuses as binary, the other refuses too."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from htmlrag.app.uploads import UploadError, check_upload, is_html
from htmlrag.cli.main import main
from htmlrag.html.clean import clean_html
from tests.app.conftest import settings_for, wait_job

TEXT = ("<html><head><title>Café</title></head><body><h1>Phare</h1><p>Le phare fut conçu par Margaret Ellis — "
        "en 1872, 164 marches.</p></body></html>")
LIMITS = {"max_pdf_bytes": 10**6, "max_html_bytes": 10**6}

ENCODED: dict[str, bytes] = {
    "utf-8": TEXT.encode("utf-8"),
    "utf-8 BOM": codecs.BOM_UTF8 + TEXT.encode("utf-8"),
    "utf-16le BOM": codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"),
    "utf-16be BOM": codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"),
    "utf-16le": TEXT.encode("utf-16-le"),
    "utf-16be": TEXT.encode("utf-16-be"),
    "utf-32le": TEXT.encode("utf-32-le"),
    "utf-32be": TEXT.encode("utf-32-be"),
    "utf-32le BOM": codecs.BOM_UTF32_LE + TEXT.encode("utf-32-le"),
    "windows-1252 meta": TEXT.replace("<head>", '<head><meta charset="windows-1252">').encode("cp1252", "replace"),
    "iso-8859-15 meta": TEXT.replace("—", "-").replace("<head>", '<head><meta charset="iso-8859-15">').encode(
        "iso-8859-15"),
}
BINARY: dict[str, bytes] = {
    "png": b"\x89PNG\r\n\x1a\n" + TEXT.encode(),
    "pdf": b"%PDF-1.4\n" + TEXT.encode(),
    "mostly NULs": b"<html>" + b"\x00" * 200 + b"</html>",
    "random": bytes(range(256)) * 4,
}


def _cli_clean(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    path = tmp_path / "page.html"
    path.write_bytes(data)
    rc = main(["clean", str(path)])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize("case", list(ENCODED))
def test_the_app_accepts_what_clean_reads_with_the_same_text(case: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    data = ENCODED[case]
    rc, out = _cli_clean(tmp_path, data, capsys)
    assert rc == 0 and "Margaret Ellis" in out
    assert is_html(data)
    up = check_upload("page.html", data, **LIMITS)
    want = TEXT if "meta" not in case else TEXT.replace("—", "-") if "8859" in case else TEXT
    assert up.kind == "html" and clean_html(up.data) == clean_html(want.encode("utf-8"))
    assert clean_html(up.data) + "\n" == out


@pytest.mark.parametrize("case", list(BINARY))
def test_what_clean_refuses_as_binary_the_app_refuses(case: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(BINARY[case])
    assert main(["clean", str(path)]) == 1
    assert "binary data" in capsys.readouterr().err
    with pytest.raises(UploadError):
        check_upload("page.html", BINARY[case], **LIMITS)


def test_utf16_and_utf32_pages_upload_and_ask(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    with TestClient(create_app(settings_for(tmp_path))) as c:
        files = [("files", (f"{name.replace(' ', '-')}.html", ENCODED[name], "text/html"))
                 for name in ("utf-8", "utf-16le", "utf-16be", "utf-32le", "utf-32be")]
        r = c.post("/api/documents", files=files)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job"]["id"])
        assert job["status"] == "done" and all(i["ok"] for i in job["items"]), job
        docs = {d["name"]: d for d in c.get("/api/documents").json()["documents"]}
        facts = {(d["title"], d["tokens_cleaned"], d["tokens_raw"] > 0) for d in docs.values()}
        assert len(docs) == 5 and len(facts) == 1, facts         # the same page whatever its encoding
        res = c.post("/api/ask", json={"question": "Qui a conçu le phare?", "k": 10}).json()
        assert len({e["doc_id"] for e in res["evidence"]}) == 5 and "Margaret Ellis" in res["evidence"][0]["text"]
