"""The app's safety guarantees over HTTP: refused uploads store nothing, the results browser serves nothing
outside results/, secrets never appear, other sites cannot post, foreign Host headers are refused, uploaded
HTML is sandboxed, and `htmlrag serve` binds 127.0.0.1 unless told otherwise (and then warns)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from tests.app.conftest import settings_for
from tests.conftest import ROOT
from tests.helpers.app_data import openai_stub

KEY = "sk-app-test-DO-NOT-LEAK-41c9e2"


def _files(client: TestClient, folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*")} if folder.exists() else set()


@pytest.mark.parametrize(("name", "data", "code", "needle"), [
    ("evil.pdf", b"<html><body>not a pdf</body></html>", 415, "not a PDF"),
    ("evil.pdf", b"\x89PNG\r\n\x1a\nxxxx", 415, "PNG image"),
    ("page.html", b"%PDF-1.7 fake", 415, "not an HTML page"),
    ("run.sh", b"#!/bin/sh\nrm -rf /", 415, "unsupported file type"),
    ("huge.pdf", b"%PDF-1.7\n" + b"0" * 3_000_000, 413, "limit"),
])
def test_refused_uploads_store_nothing(client: TestClient, app_dir: Path, name: str, data: bytes, code: int,
                                       needle: str) -> None:
    before = _files(client, app_dir / "db")
    client.app.state.app.settings.max_pdf_mb = 2.0
    try:
        r = client.post("/api/documents", files=[("files", (name, data, "application/octet-stream"))])
        page = client.post("/documents", files=[("files", (name, data, "application/octet-stream"))])
    finally:
        client.app.state.app.settings.max_pdf_mb = 50.0
    assert r.status_code == code and needle in r.json()["detail"] and name.split(".")[0] in r.json()["detail"]
    assert page.status_code == code and needle in page.text and 'id="error"' in page.text
    assert _files(client, app_dir / "db") == before


def test_a_body_over_the_request_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path, max_request_mb=0.01))
    with TestClient(app) as c:
        r = c.post("/api/documents", files=[("files", ("a.pdf", b"%PDF-1.7" + b"0" * 20_000, "application/pdf"))])
    assert r.status_code == 413 and "limit" in r.json()["detail"]
    assert not (tmp_path / "db" / "uploads").exists()


@pytest.mark.parametrize("url", [
    "/results/files/../db/manifest.json", "/results/files/%2e%2e/db/manifest.json",
    "/results/files/%252e%252e/db/manifest.json", "/results/files/..%2fdb%2fmanifest.json",
    "/results/files//etc/passwd", "/results/files/%2fetc%2fpasswd", "/results/files/demo/escape/manifest.json",
    "/results/files/demo/.hidden", "/results/files/demo/page.html", "/results/run/..%2f..%2fdb/x",
    "/api/results/runs/demo/escape", "/api/results/runs/..%2f..%2fdb/x/questions",
    "/results/diff?a=../db&b=demo/escape", "/api/results/diff?a=../../etc&b=demo/x",
])
def test_results_browser_serves_nothing_outside_results(client: TestClient, app_dir: Path, url: str) -> None:
    res = app_dir / "results"
    if not (res / "demo" / "escape").exists():
        (res / "demo" / "escape").symlink_to(app_dir / "db", target_is_directory=True)
        (res / "demo" / ".hidden").write_text("hidden")
        (res / "demo" / "page.html").write_text("<script>alert(1)</script>")
    r = client.get(url)
    assert r.status_code in (400, 404), (url, r.status_code)
    assert '"format"' not in r.text and "root:" not in r.text and "alert(1)" not in r.text


def test_results_files_inside_are_served_as_inert_types(client: TestClient) -> None:
    r = client.get("/results/files/demo/figure5.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    r = client.get("/results/files/demo/aaaaaaaaaaa1/tables/results.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.headers["x-content-type-options"] == "nosniff"


def test_no_secret_is_ever_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with openai_stub("echo401") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url.replace("http://", f"http://user:{KEY}@"))
        app = create_app(settings_for(tmp_path, openai_model="stub-model"))
        with TestClient(app) as c:
            r = c.post("/api/documents", files=[("files", ("l.html", (ROOT / "data/pages/lighthouse.html").read_bytes(),
                                                            "text/html"))])
            from tests.app.conftest import wait_job

            wait_job(c, r.json()["job"]["id"])
            bodies = [c.post("/api/ask", json={"question": "Who designed it?", "reader": "openai"}),
                      c.post("/ask", data={"question": "Who designed it?", "reader": "openai"}),
                      c.get("/api/readers"), c.get("/api/status"), c.get("/ask"), c.get("/openapi.json")]
    assert bodies[0].status_code == 502 and "401" in bodies[0].json()["detail"]
    assert bodies[1].status_code == 502  # asked again from the page: the reader was rebuilt, and refused again
    for r in bodies:
        assert KEY not in r.text
    assert "[REDACTED]" in bodies[0].text and "key set" in bodies[2].text


def test_a_configured_reader_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with openai_stub("ok") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        app = create_app(settings_for(tmp_path, openai_model="stub-model"))
        with TestClient(app) as c:
            r = c.post("/api/documents", files=[("files", ("l.html", (ROOT / "data/pages/lighthouse.html").read_bytes(),
                                                            "text/html"))])
            from tests.app.conftest import wait_job

            wait_job(c, r.json()["job"]["id"])
            res = c.post("/api/ask", json={"question": "Who designed it?", "reader": "openai"}).json()
            page = c.post("/ask", data={"question": "Who designed it?", "reader": "openai"}).text
    assert res["answer"] == "Margaret Ellis" and res["seconds"]["read"] >= 0
    assert 'id="answer-text">Margaret Ellis<' in page


@pytest.mark.parametrize("headers", [{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                                     {"Origin": "null"}])
def test_other_sites_cannot_post(client: TestClient, headers: dict) -> None:
    r = client.post("/api/ask", json={"question": "x"}, headers=headers)
    assert r.status_code == 403 and "cross-site" in r.json()["detail"]
    r = client.post("/api/documents", files=[("files", ("a.pdf", b"%PDF-1.7", "application/pdf"))], headers=headers)
    assert r.status_code == 403


def test_same_origin_posts_pass(client: TestClient) -> None:
    r = client.post("/api/prune", json={"sample": "lighthouse.html", "question": "who", "budget": 64},
                    headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 200


def test_foreign_host_headers_are_refused(client: TestClient) -> None:
    assert client.get("/ask", headers={"Host": "attacker.example"}).status_code == 400
    assert client.get("/ask", headers={"Host": "localhost:8000"}).status_code == 200


def test_pages_carry_a_strict_policy_and_user_html_is_sandboxed(client: TestClient) -> None:
    csp = client.get("/ask").headers["content-security-policy"]
    script_src = csp.split("script-src")[1].split(";")[0]
    assert script_src.strip() == "'self'" and "object-src 'none'" in csp and "frame-ancestors 'self'" in csp
    html = client.post("/prune", data={"html": "<html><body><p>hello world</p><script>alert(1)</script></body></html>",
                                       "question": "hello", "budget": "64"}).text
    assert 'sandbox=""' in html and "<script>alert(1)" not in html  # echoed only escaped, in the form
    key = html.split("/view/prune/")[1].split("/")[0]
    view = client.get(f"/view/prune/{key}/cleaned")
    assert view.headers["content-security-policy"].startswith("sandbox") and "<script" not in view.text


def test_serve_binds_loopback_by_default_and_warns_otherwise(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    import uvicorn

    from htmlrag.cli.main import build_parser

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: calls.append((host, port)))
    args = build_parser().parse_args(["serve", "--db", str(tmp_path / "db"), "--results", str(tmp_path)])
    assert args.func(args) == 0 and calls[-1] == ("127.0.0.1", 8000)
    assert "WARNING" not in capsys.readouterr().err
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "8123", "--db", str(tmp_path / "db")])
    assert args.func(args) == 0 and calls[-1] == ("0.0.0.0", 8123)
    err = capsys.readouterr().err
    assert "WARNING: htmlrag serve is listening on 0.0.0.0" in err and "no login" in err


def test_other_commands_do_not_import_the_web_stack() -> None:
    code = ("import sys; from htmlrag.cli.main import main; rc = main(['tree', 'data/pages/lighthouse.html']); "
            "bad = [m for m in ('fastapi', 'starlette', 'uvicorn', 'jinja2') if m in sys.modules]; "
            "print('IMPORTED', bad); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "IMPORTED []" in out.stdout
    help_text = subprocess.run([sys.executable, "-m", "htmlrag", "serve", "--help"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert help_text.returncode == 0 and "--host" in help_text.stdout and "127.0.0.1" in help_text.stdout


def test_shipped_static_files_are_served_unchanged(client: TestClient) -> None:
    from htmlrag.app.server import HERE, swagger_dir

    assert client.get("/static/app.js").content == (HERE / "static" / "app.js").read_bytes()
    if swagger_dir() is not None:
        js = client.get("/swagger/swagger-ui-bundle.js").content
        assert js == (swagger_dir() / "swagger-ui-bundle.js").read_bytes() and b"REDACTED" not in js
