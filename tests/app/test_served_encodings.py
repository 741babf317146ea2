"""A secret in a text body written in another encoding than UTF-8 never leaves: the results browser refuses a text
file that is not UTF-8 (415, naming the file and why), and every other text body is read so that a UTF-16 or
UTF-32 secret reads as itself and is redacted (before: the body was decoded as UTF-8 and the secret's UTF-16
bytes, NULs between its characters, went out as they were)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from htmlrag.app.secrets import RedactBodies
from htmlrag.app.server import create_app
from tests.app.conftest import settings_for
from tests.helpers.app_data import RUN_IDS, make_results

KEY = "sk-enc-test-DO-NOT-LEAK-5d2b8e71c0"
#: A Latin-1 secret (a password with umlauts) in a variable whose name marks a credential.
PASSWORD = "Pässwörter-geheim-2024"
ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "latin-1"]


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("SERVICE_PASSWORD", PASSWORD)


def text_of(encoding: str) -> str:
    line = "2024-05-01 INFO calling the endpoint\n"
    return line * 50 + f"error: key {KEY} refused; password {PASSWORD}; Authorization: Bearer tok3n-abc-123456\n" \
        + line * 50


def leaked(body: bytes) -> list[str]:
    """Every form of a secret (whole, or a piece of 8 characters or more) in ``body``, in any encoding, also
    with NULs written as JSON escapes between its characters."""
    found = []
    bare = body.replace(b"\\u0000", b"").replace(b"\x00", b"")
    for secret in (KEY, PASSWORD, "tok3n-abc-123456"):
        for piece in (secret, secret[:10], secret[-10:]):
            for enc in ("utf-8", "latin-1"):
                if piece.encode(enc) in bare:
                    found.append(f"{piece} ({enc}, NULs dropped)")
    for secret in (KEY, PASSWORD, "tok3n-abc-123456"):
        for piece in (secret, secret[:10], secret[-10:]):
            for enc in ("utf-8", *ENCODINGS):
                try:
                    data = piece.encode(enc)
                except UnicodeEncodeError:
                    continue
                if enc in ("utf-16", "utf-32"):
                    data = data[2:] if enc == "utf-16" else data[4:]  # the byte order mark
                if data in body:
                    found.append(f"{piece} ({enc})")
    return found


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("name", ["run.log", "notes.txt", "metrics.json", "table.csv"])
def test_the_results_browser_refuses_text_that_is_not_utf8(tmp_path: Path, encoding: str, name: str) -> None:
    (tmp_path / "results" / "exp").mkdir(parents=True)
    (tmp_path / "results" / "exp" / name).write_bytes(text_of(encoding).encode(encoding))
    with TestClient(create_app(settings_for(tmp_path))) as c:
        api = c.get(f"/results/files/exp/{name}")
        page = c.get(f"/results/files/exp/{name}", headers={"Accept": "text/html"})
    assert api.json()["detail"].startswith(f"'exp/{name}': not UTF-8 text (") and str(tmp_path) not in api.text
    assert page.status_code == 415 and "not UTF-8 text" in page.text and f"exp/{name}" in page.text
    for r in (api, page):
        assert r.status_code == 415 and leaked(r.content) == []


def test_utf8_text_is_still_served(tmp_path: Path) -> None:
    (tmp_path / "results" / "exp").mkdir(parents=True)
    (tmp_path / "results" / "exp" / "a.log").write_text("\ufeffé 日本 ok\n" + text_of("utf-8"), encoding="utf-8")
    with TestClient(create_app(settings_for(tmp_path))) as c:
        r = c.get("/results/files/exp/a.log")
    assert r.status_code == 200 and "é 日本 ok" in r.text and "[REDACTED]" in r.text and leaked(r.content) == []


def _app(body: bytes, streamed: bool, media_type: str) -> Starlette:
    """An app answering ``body`` (whole, or in pieces of 997 bytes: cuts inside characters and secrets), behind
    :class:`RedactBodies` only."""

    def endpoint(request: object) -> Response:
        if streamed:
            return StreamingResponse(iter([body[i:i + 997] for i in range(0, len(body), 997)]),
                                     media_type=media_type)
        return Response(body, media_type=media_type)

    app = Starlette(routes=[Route("/x", endpoint)])
    app.add_middleware(RedactBodies)
    return app


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("media_type", ["text/plain; charset=utf-8", "application/json",
                                        "text/plain; charset=utf-16", None])
def test_no_text_body_lets_a_secret_out_in_another_encoding(encoding: str, streamed: bool,
                                                            media_type: str | None) -> None:
    body = text_of(encoding).encode(encoding) * (100 if streamed else 1)  # streamed: past the whole-body size
    with TestClient(_app(body, streamed, media_type)) as c:
        r = c.get("/x")
    assert r.status_code == 200
    assert leaked(r.content) == [], leaked(r.content)
    assert b"[REDACTED]" in r.content
    r.content.decode("utf-8")  # what is sent is UTF-8 ...
    if media_type and "charset" in media_type:
        assert r.headers["content-type"].endswith("charset=utf-8")  # ... and says so


def test_images_pass_untouched() -> None:
    body = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # not UTF-8, NULs: read as text, it would be changed
    with TestClient(_app(body, False, "image/png")) as c:
        assert c.get("/x").content == body


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_run_files_shown_on_the_pages_let_no_secret_out(tmp_path: Path, encoding: str) -> None:
    """The run page and its JSON twin show config.yaml, Markdown and CSV tables: read from a file in another
    encoding, no secret in it leaves (JSON writes a NUL as ``\\u0000``, which the middleware cannot drop)."""
    make_results(tmp_path / "results")
    run = tmp_path / "results" / "demo" / RUN_IDS["A"]
    (run / "config.yaml").write_bytes(f"name: demo\nnote: key {KEY} pw {PASSWORD}\n".encode(encoding))
    (run / "tables" / "notes.md").write_bytes(f"# notes\n\nkey {KEY}, pw {PASSWORD}\n".encode(encoding))
    (run / "tables" / "extra.csv").write_bytes(f"a,b\n{KEY},{PASSWORD}\n".encode(encoding))
    with TestClient(create_app(settings_for(tmp_path))) as c:
        for url in (f"/results/run/demo/{RUN_IDS['A']}", f"/api/results/runs/demo/{RUN_IDS['A']}", "/results",
                    "/api/results"):
            r = c.get(url)
            assert r.status_code == 200, (url, r.status_code)
            assert leaked(r.content) == [], (url, leaked(r.content))
