"""Readers in the Ask page: a local HF model (tiny, offline) answers and reflects; a model endpoint writes the
Cypher query, which still goes through the read-only guard."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from htmlrag.app.server import create_app
from htmlrag.testing import pdfs as mk
from tests.app.conftest import settings_for, wait_job
from tests.helpers.app_data import openai_stub

Q = "Which region had revenue of 7,890?"


def _built(c: TestClient, tmp: Path) -> None:
    r = c.post("/api/documents", files=[("files", ("report.pdf", mk.report_pdf(tmp / "r.pdf").read_bytes(),
                                                    "application/pdf"))])
    assert wait_job(c, r.json()["job"]["id"])["status"] == "done"


@pytest.mark.slow
def test_local_hf_model_answers_and_reflects(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.helpers.tiny import save_tiny

    model = save_tiny(tmp_path, "llama", max_position_embeddings=1024)
    with TestClient(create_app(settings_for(tmp_path, hf_model=str(model), max_new_tokens=8))) as c:
        _built(c, tmp_path)
        assert any(r["name"] == "hf" and r["ready"] for r in c.get("/api/readers").json())
        a = c.post("/api/ask", json={"question": Q, "reader": "hf", "retriever": "reflect", "budget": 256}).json()
        b = c.post("/api/ask", json={"question": Q, "reader": "hf", "retriever": "reflect", "budget": 256}).json()
    assert isinstance(a["answer"], str) and a["answer"] == b["answer"]  # greedy: the same answer twice
    assert a["reflection"] in (True, False) and a["seconds"]["read"] > 0


@pytest.mark.parametrize(("written", "ok"), [
    ("```cypher\nMATCH (t:TableChunk) WHERE t.text CONTAINS '7,890' RETURN t.id AS id\n```", True),
    ("MATCH (n) DETACH DELETE n", False),
])
def test_model_written_cypher_goes_through_the_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     written: str, ok: bool) -> None:
    from tests.helpers import app_data

    monkeypatch.setattr(app_data._Stub, "answer", written)
    with openai_stub("ok") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        with TestClient(create_app(settings_for(tmp_path, openai_model="stub"))) as c:
            _built(c, tmp_path)
            r = c.post("/api/ask", json={"question": Q, "reader": "openai", "retriever": "cypher"})
            count = c.post("/api/ask", json={"question": "n", "retriever": "cypher",
                                             "cypher": "MATCH (n) RETURN count(n) AS n"}).json()["evidence"][0]["text"]
    if ok:
        assert r.status_code == 200 and r.json()["evidence"][0]["kind"] == "TableChunk"
        assert "RETURN t.id AS id" in r.json()["cypher_query"]
    else:
        assert r.status_code == 400 and "refused" in r.json()["detail"]
    assert int(count.split(":")[1].strip(" }")) > 10  # nothing deleted


@pytest.mark.parametrize("retriever", ["reflect", "full", "cypher"])
def test_a_reader_whose_endpoint_failed_is_rebuilt_whatever_used_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    retriever: str) -> None:
    """Self-reflection and Cypher writing call the reader before it answers: a refusal there must not leave the
    failed reader cached, or every later question gets the old 502 after the endpoint is fixed."""
    from tests.helpers import app_data

    monkeypatch.setattr(app_data._Stub, "answer", "MATCH (t:TableChunk) RETURN t.id AS id")
    with openai_stub("echo401") as bad, openai_stub("ok") as good:
        monkeypatch.setenv("OPENAI_BASE_URL", bad)
        with TestClient(create_app(settings_for(tmp_path, openai_model="stub"))) as c:
            _built(c, tmp_path)
            ask = {"question": Q, "reader": "openai", "retriever": retriever}
            first = c.post("/api/ask", json=ask)
            monkeypatch.setenv("OPENAI_BASE_URL", good)  # the endpoint is fixed
            second = c.post("/api/ask", json=ask)
    assert first.status_code == 502 and "401" in first.json()["detail"]
    assert second.status_code == 200, second.text
