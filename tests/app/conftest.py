"""Fixtures of the web app's tests: an app over a small corpus (one generated PDF, one sample page) with the
hashing embedder, and a results/ folder with two runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("pymupdf")
pytest.importorskip("kuzu")

from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from htmlrag.app.settings import AppSettings
from htmlrag.testing import pdfs as mk
from tests.conftest import SAMPLE_PAGES
from tests.helpers.app_data import make_results


def settings_for(tmp: Path, **kw) -> AppSettings:
    s = AppSettings(db=tmp / "db", results=tmp / "results", samples=SAMPLE_PAGES, embedding_model="hashing-256",
                    vector_backend="numpy", openai_model=None, hf_model=None)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def wait_job(client: TestClient, job_id: str, timeout: float = 120.0) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s")


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("app")
    (d / "results").mkdir()
    make_results(d / "results")
    mk.report_pdf(d / "report.pdf")
    return d


@pytest.fixture(scope="module")
def client(app_dir: Path) -> Iterator[TestClient]:
    """An app with report.pdf and lighthouse.html built (module-scoped: built once)."""
    app = create_app(settings_for(app_dir))
    with TestClient(app) as c:
        files = [("files", ("report.pdf", (app_dir / "report.pdf").read_bytes(), "application/pdf")),
                 ("files", ("lighthouse.html", (SAMPLE_PAGES / "lighthouse.html").read_bytes(), "text/html"))]
        r = c.post("/api/documents", files=files)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job"]["id"])
        assert job["status"] == "done", job
        yield c


def doc_ids(client: TestClient) -> dict[str, str]:
    """name -> id of the documents."""
    return {d["name"]: d["id"] for d in client.get("/api/documents").json()["documents"]}
