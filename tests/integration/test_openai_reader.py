"""The OpenAI-compatible reader against a real HTTP stub server on 127.0.0.1 (a thread in this process):
retries on 429/500, timeouts, malformed responses, the concurrency limit, and the API key never stored."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from htmlrag.core.errors import HtmlRagError
from htmlrag.readers import GenerationConfig, ReadRequest
from htmlrag.readers.openai import OpenAIReader

KEY = "sk-test-DO-NOT-LEAK-7f3a9c"


@dataclass
class Stub:
    """Scripted behaviour: ``script`` is consumed one entry per request (then ``default``)."""

    script: list[str] = field(default_factory=list)
    default: str = "ok"
    requests: list[dict] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    inflight: int = 0
    max_inflight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    answer: str = "Margaret Ellis"
    delay: float = 0.0

    def next(self, body: dict) -> str:
        with self.lock:
            q = body["messages"][-1]["content"]
            if "FAILQ" in q:
                return "malformed"
            return self.script.pop(0) if self.script else self.default


def _handler(stub: Stub):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with stub.lock:
                stub.requests.append(body)
                stub.auth.append(self.headers.get("Authorization"))
                stub.inflight += 1
                stub.max_inflight = max(stub.max_inflight, stub.inflight)
            try:
                mode = stub.next(body)
                if stub.delay:
                    time.sleep(stub.delay)
                if mode == "sleep":
                    time.sleep(1.0)
            finally:
                # counted done before the answer is sent: the client may send its next request as soon as it
                # has read this answer, before this handler would otherwise have counted it done
                with stub.lock:
                    stub.inflight -= 1
            if mode in ("429", "500", "503"):
                self._send(int(mode), b'{"error": "busy"}', {"Retry-After": "0"} if mode == "429" else {})
            elif mode == "malformed":
                self._send(200, b"<html>gateway says hi</html>")
            elif mode == "nochoices":
                self._send(200, b'{"choices": []}')
            elif mode == "filtered":
                self._send(200, b'{"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]}')
            elif mode == "400":
                self._send(400, b'{"error": "bad request"}')
            else:
                out = {"choices": [{"message": {"role": "assistant", "content": f" {stub.answer} "}}],
                       "usage": {"prompt_tokens": 42}}
                self._send(200, json.dumps(out).encode())

        def _send(self, code: int, data: bytes, headers: dict | None = None) -> None:
            try:
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return H


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    s = Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(s))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("STUB_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("STUB_API_KEY", KEY)
    yield s
    server.shutdown()
    server.server_close()


def _reader(**kw) -> OpenAIReader:
    args = {"model": "stub-model", "base_url_env": "STUB_BASE_URL", "api_key_env": "STUB_API_KEY", "backoff": 0.01,
            "max_retries": 3, "timeout": 5.0, "concurrency": 4, "generation": GenerationConfig(max_new_tokens=16)}
    args.update(kw)
    return OpenAIReader(**args)


REQ = ReadRequest("Who designed the lighthouse?", "<p>It was designed by Margaret Ellis.</p>", "html", True)


def test_retries_429_and_500_then_succeeds(stub: Stub) -> None:
    stub.script = ["429", "500", "503"]
    reader = _reader()
    (out,) = reader.read([REQ])
    assert out.text == "Margaret Ellis" and out.prompt_tokens == 42
    assert len(stub.requests) == 4 and reader.attempts == 4
    assert stub.auth[0] == f"Bearer {KEY}"                        # the key is sent ...
    body = stub.requests[-1]
    assert body["model"] == "stub-model" and body["temperature"] == 0.0 and body["max_tokens"] == 16
    assert "Margaret Ellis" in body["messages"][-1]["content"] and "short phrase" in body["messages"][-1]["content"]


def test_gives_up_after_max_retries(stub: Stub) -> None:
    stub.default = "500"
    with pytest.raises(HtmlRagError, match=r"failed after 3 attempts: HTTP 500"):
        _reader(max_retries=2).read([REQ])
    assert len(stub.requests) == 3


def test_timeout_is_retried(stub: Stub) -> None:
    stub.script = ["sleep"]
    t0 = time.monotonic()
    (out,) = _reader(timeout=0.3).read([REQ])
    assert out.text == "Margaret Ellis" and len(stub.requests) == 2 and time.monotonic() - t0 < 5
    stub.default = "sleep"
    with pytest.raises(HtmlRagError, match="ReadTimeout"):
        _reader(timeout=0.2, max_retries=1).read([REQ])


@pytest.mark.parametrize("mode", ["malformed", "nochoices"])
def test_malformed_response_raises_after_retries(stub: Stub, mode: str) -> None:
    stub.default = mode
    with pytest.raises(HtmlRagError, match="malformed response"):
        _reader(max_retries=1).read([REQ])


def test_client_error_is_not_retried(stub: Stub) -> None:
    stub.default = "400"
    with pytest.raises(HtmlRagError, match="HTTP 400"):
        _reader().read([REQ])
    assert len(stub.requests) == 1


def test_an_answer_withheld_by_a_content_filter_is_an_error_never_cached(stub: Stub, tmp_path: Path) -> None:
    """An empty answer with finish_reason content_filter is no answer: the request fails at once (no retry: the
    filter answers the same), nothing is cached, and the next read asks again."""
    from htmlrag.readers import ResponseCache

    stub.default = "filtered"
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    with pytest.raises(HtmlRagError, match="content_filter"):
        _reader(cache=cache).read([REQ])
    assert len(stub.requests) == 1
    stub.default = "ok"
    (out,) = _reader(cache=cache).read([REQ])
    assert out.text == "Margaret Ellis" and not out.cached and len(stub.requests) == 2


def test_concurrency_limit(stub: Stub) -> None:
    stub.delay = 0.15
    outs = _reader(concurrency=2).read([REQ] * 6)
    assert len(outs) == 6 and stub.max_inflight == 2


def test_response_cache_and_sampling(stub: Stub, tmp_path: Path) -> None:
    from htmlrag.readers import ResponseCache

    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = _reader(cache=cache)
    reader.read([REQ])
    (again,) = reader.read([REQ])
    assert again.cached and len(stub.requests) == 1
    sampled = _reader(cache=cache, generation=GenerationConfig(temperature=0.7, max_new_tokens=16))
    sampled.read([REQ])
    sampled.read([REQ])
    assert len(stub.requests) == 3  # sampled generations are never cached
    assert KEY not in (tmp_path / "r.sqlite").read_bytes().decode("latin-1")


def test_full_run_records_failures_and_never_stores_the_key(stub: Stub, tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.app import run
    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    q = tmp_path / "questions.jsonl"
    pages = Path(__file__).resolve().parents[2] / "data" / "pages"
    rows = [{"id": "ok1", "question": "Who designed Harrow Point Lighthouse?", "answers": ["Margaret Ellis"], "pages": [str(pages / "lighthouse.html")]},
            {"id": "bad", "question": "FAILQ what?", "answers": ["x"], "pages": [str(pages / "tea-garden.html")]},
            {"id": "ok2", "question": "Who won the dragon boat race?", "answers": ["Millbank Rowing Club"], "pages": [str(pages / "river-festival.html")]}]
    q.write_text("".join(json.dumps(r) + "\n" for r in rows))
    overrides = ["reader=openai", "reader.model=stub-model", "reader.base_url_env=STUB_BASE_URL",
                 "reader.api_key_env=STUB_API_KEY", "reader.backoff=0.01", "reader.max_retries=1", "ranker=bm25",
                 "metric=short", f"dataset.loader.path={q}", f"paths.results={tmp_path}/results",
                 f"paths.cache={tmp_path}/cache", "run.progress=false", "run.allow_errors=true"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    with caplog.at_level(logging.DEBUG):
        run(cfg)
    (run_dir,) = (tmp_path / "results" / "default").iterdir()
    preds = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in preds] == ["ok1", "bad", "ok2"]
    assert "malformed response" in preds[1]["systems"]["htmlrag"]["error"]      # recorded, run went on
    assert preds[0]["systems"]["htmlrag"]["scores"]["em"] == 1.0
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["systems"]["htmlrag"]["n"] == 2 and metrics["systems"]["htmlrag"]["n_errors"] == 1
    assert all(a == f"Bearer {KEY}" for a in stub.auth)
    for f in [*tmp_path.rglob("*")]:
        if f.is_file():
            assert KEY not in f.read_bytes().decode("latin-1"), f
    assert KEY not in caplog.text
