"""An upload over the request limit gets 413 on every upload route, whether it says its length (Content-Length) or
is sent with ``Transfer-Encoding: chunked`` (before: 400, "There was an error parsing the body"), and stores
nothing; a chunked upload within the limit is still taken."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from htmlrag.app import api, views
from htmlrag.app.server import create_app
from tests.app.conftest import settings_for, wait_job
from tests.conftest import SAMPLE_PAGES

BOUNDARY = "----htmlrag-test-boundary"


def upload_routes() -> dict[str, str]:
    """Every POST route of the app's routers taking an uploaded file: path -> the name of its file field (found
    from the endpoints' signatures, so a new upload route is tested too)."""
    out = {}
    for route in [*api.router.routes, *views.router.routes]:
        if not isinstance(route, APIRoute) or "POST" not in route.methods:
            continue
        for name, param in inspect.signature(route.endpoint).parameters.items():
            if "UploadFile" in str(param.annotation):
                out[route.path] = name
    return out


def multipart(field: str, name: str, data: bytes, **fields: str) -> bytes:
    """A multipart form: text ``fields``, then the file ``name`` holding ``data`` in ``field``."""
    parts = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    return b"".join([*parts, f"--{BOUNDARY}\r\n".encode(),
                     f'Content-Disposition: form-data; name="{field}"; filename="{name}"\r\n'.encode(),
                     b"Content-Type: application/octet-stream\r\n\r\n", data, f"\r\n--{BOUNDARY}--\r\n".encode()])


def chunked(data: bytes, size: int = 4096) -> Iterator[bytes]:
    """The body as a generator: the client sends it with Transfer-Encoding: chunked, and no Content-Length."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _stored(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*")} if folder.exists() else set()


@pytest.fixture
def small_limit(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path, max_request_mb=0.05))) as c:
        yield c


def test_every_upload_route_is_found() -> None:
    assert {"/api/documents", "/documents", "/prune"} <= set(upload_routes())


@pytest.mark.parametrize("name", ["big.pdf", "big.html"])
@pytest.mark.parametrize("send_length", [False, True], ids=["chunked", "content-length"])
def test_an_oversized_upload_gets_413_on_every_route(small_limit: TestClient, tmp_path: Path, name: str,
                                                     send_length: bool) -> None:
    data = b"%PDF-1.7\n" + b"0" * 200_000 if name.endswith(".pdf") else b"<html><body>" + b"x" * 200_000
    for path, field in upload_routes().items():
        body = multipart(field, name, data)
        before = _stored(tmp_path / "db")
        r = small_limit.post(path, content=body if send_length else chunked(body),
                             headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert r.request.headers.get("transfer-encoding") == (None if send_length else "chunked")
        assert r.status_code == 413, (path, r.status_code, r.text[:200])
        assert "limit" in r.json()["detail"] and "0.1 MB" in r.json()["detail"]
        assert _stored(tmp_path / "db") == before


def test_a_chunked_upload_within_the_limit_is_taken(tmp_path: Path) -> None:
    page = (SAMPLE_PAGES / "lighthouse.html").read_bytes()
    with TestClient(create_app(settings_for(tmp_path))) as c:
        r = c.post("/api/documents", content=chunked(multipart("files", "l.html", page), 512),
                   headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert r.status_code == 202, r.text
        assert wait_job(c, r.json()["job"]["id"])["status"] == "done"
        r = c.post("/prune", content=chunked(multipart("file", "l.html", page, question="Who designed it?"), 512),
                   headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
        assert r.status_code == 200 and 'id="error"' not in r.text
