"""The OpenAI-compatible reader against misbehaving endpoints (a real HTTP server on 127.0.0.1, a thread of the
test process): ``timeout`` bounds the whole request (a body or headers trickled a byte at a time fail the attempt
at the deadline, and a whole run stops with exit 1), ``max_response_bytes`` bounds the body (an endless answer
fails the attempt instead of growing until memory runs out), and an empty or cut answer is not scored and
cached as a normal one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from htmlrag.core.errors import HtmlRagError, ServiceError
from htmlrag.readers import GenerationConfig, ReadRequest, ResponseCache
from htmlrag.readers.openai import MAX_RESPONSE_BYTES, OpenAIReader
from tests.conftest import ROOT
from tests.integration._runs import command, make_questions, overrides

REQ = ReadRequest("Who designed the lighthouse?", "<p>It was designed by Margaret Ellis.</p>", "html", True)
NORMAL = {"choices": [{"message": {"role": "assistant", "content": " Margaret Ellis "}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 42}}


class Endpoint:
    """What the stub does, one mode for every request; ``requests`` counts them."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests = 0
        self.lock = threading.Lock()


def _handler(ep: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with ep.lock:
                ep.requests += 1
            with contextlib.suppress(OSError):  # the client gave up (as it should): nothing to answer
                getattr(self, "_" + ep.mode.split(":")[0])()

        def _json(self, data: dict) -> None:
            out = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def _ok(self) -> None:
            self._json(NORMAL)

        def _trickle(self) -> None:
            """200 with Content-Length 100000, then one byte every 0.2 s (each read is quick; the whole is not)."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(100000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)

        def _slowheaders(self) -> None:
            """The status line, then a header a byte every 0.2 s (never ending the headers)."""
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ")
            self.wfile.flush()
            for _ in range(100000):
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.2)

        def _huge(self) -> None:
            """A chunked answer that never closes its JSON: ``{"choices":[{"message":{"content":"aaaa...`` in 1 MiB
            chunks (24 of them, as good as endless here: a reader without a limit holds it all, and the test
            process stays bounded even then)."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            head = b'{"choices":[{"message":{"content":"'
            self.wfile.write(b"%x\r\n%s\r\n" % (len(head), head))
            chunk = b"a" * 1048576
            for _ in range(24):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")

        def _finish(self) -> None:
            """``finish:<reason>:<content>``: an answer with that finish_reason."""
            _, reason, content = ep.mode.split(":", 2)
            self._json({"choices": [{"message": {"content": content}, "finish_reason": reason}],
                        "usage": {"prompt_tokens": 42}})

    return Handler


@contextmanager
def serve(ep: Endpoint) -> Iterator[str]:
    """Serve ``ep`` on 127.0.0.1; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ep))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    ep = Endpoint()
    with serve(ep) as url:
        monkeypatch.setenv("DEADLINE_BASE_URL", url)
        monkeypatch.delenv("DEADLINE_API_KEY", raising=False)
        yield ep


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a daemon thread: its result, or its exception raised here; fails if it has not ended after
    ``seconds`` (a reader that hangs on a trickling endpoint would otherwise hang the test run too)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["out"] = fn()
        except BaseException as exc:  # handed to the test
            box["exc"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting for the endpoint after {seconds}s"
    if "exc" in box:
        raise box["exc"]
    return box["out"]


def _reader(**kw: object) -> OpenAIReader:
    args: dict = {"model": "stub-model", "base_url_env": "DEADLINE_BASE_URL", "api_key_env": "DEADLINE_API_KEY",
                  "backoff": 0.01, "max_retries": 1, "timeout": 1.0, "concurrency": 2,
                  "generation": GenerationConfig(max_new_tokens=16)}
    args.update(kw)
    return OpenAIReader(**args)


# ------------------------------------------------------------------------------------- 1. whole-request deadline
@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode", ["trickle", "slowheaders"])
def test_a_trickling_endpoint_fails_the_attempt_at_the_deadline(endpoint: Endpoint, mode: str) -> None:
    """Each byte comes well within any per-read timeout, so httpx alone waits for ever (the old reader hung)."""
    endpoint.mode = mode
    t0 = time.monotonic()
    with pytest.raises(HtmlRagError, match=r"failed after 2 attempts: ReadTimeout \(no complete response within "
                                           r"timeout=1s\)"):
        _within(8, lambda: _reader().read([REQ]))
    took = time.monotonic() - t0
    assert endpoint.requests == 2 and 1.9 < took < 4.0, took   # two attempts of about a second each


@pytest.mark.timeout(30)
def test_deadlines_count_towards_the_endpoint_being_down(endpoint: Endpoint) -> None:
    endpoint.mode = "trickle"
    t0 = time.monotonic()
    with pytest.raises(ServiceError, match=r"failed 2 attempts in a row \(last: ReadTimeout"):
        _within(8, lambda: _reader(max_retries=5, max_consecutive_failures=2, timeout=0.5).read([REQ, REQ]))
    assert time.monotonic() - t0 < 3.0


@pytest.mark.timeout(30)
def test_a_normal_answer_is_unchanged_under_the_deadline(endpoint: Endpoint) -> None:
    (out,) = _reader(timeout=5.0).read([REQ])
    assert (out.text, out.prompt_tokens, out.cached) == ("Margaret Ellis", 42, False)


@pytest.mark.timeout(60)
def test_a_run_against_a_trickling_endpoint_stops_with_exit_1(tmp_path: Path) -> None:
    """The probe's case: ``reader.timeout=1`` with default retries; the run ends in seconds, exit 1, no traceback,
    no row saved as a failure."""
    q = make_questions(tmp_path / "data", 3)
    ep = Endpoint("trickle")
    with serve(ep) as url:
        t0 = time.monotonic()
        out = subprocess.run(command(*overrides(q, tmp_path / "results", tmp_path / "cache", "reader=openai",
                                                "reader.model=stub-model", "reader.base_url_env=DEADLINE_BASE_URL",
                                                "reader.api_key_env=DEADLINE_API_KEY", "reader.timeout=1")),
                             cwd=ROOT, capture_output=True, text=True, timeout=50,
                             env={**os.environ, "DEADLINE_BASE_URL": url})
        took = time.monotonic() - t0
    assert out.returncode == 1, out.stderr[-3000:]
    assert "htmlrag-bench: error: reader stub-model" in out.stderr and "ReadTimeout" in out.stderr, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and took < 40, took
    pred = list((tmp_path / "results").glob("default/*/predictions.jsonl"))
    assert not pred or pred[0].read_text() == ""


# ------------------------------------------------------------------------------------------ 2. response size cap
@pytest.mark.timeout(30)
def test_an_endless_answer_fails_at_the_default_size_limit(endpoint: Endpoint) -> None:
    endpoint.mode = "huge"
    url = os.environ["DEADLINE_BASE_URL"]
    reader = _reader(timeout=20.0)
    assert reader.max_response_bytes == MAX_RESPONSE_BYTES == 8_000_000
    with pytest.raises(HtmlRagError) as err:
        _within(20, lambda: reader.read([REQ]))
    msg = str(err.value)
    assert f"response from {url}/chat/completions larger than max_response_bytes=8000000" in msg, msg
    assert endpoint.requests == 2 and len(msg) < 1000


@pytest.mark.timeout(30)
def test_the_size_limit_is_a_reader_setting(endpoint: Endpoint) -> None:
    endpoint.mode = "huge"
    with pytest.raises(HtmlRagError, match="larger than max_response_bytes=50000"):
        _within(10, lambda: _reader(max_response_bytes=50_000, max_retries=0).read([REQ]))
    with pytest.raises(ServiceError, match=r"failed 2 attempts in a row \(last: response from .* larger than"):
        _within(10, lambda: _reader(max_response_bytes=50_000, max_retries=5, max_consecutive_failures=2).read([REQ]))
    endpoint.mode = "ok"  # a normal answer fits a small limit
    (out,) = _reader(max_response_bytes=len(json.dumps(NORMAL))).read([REQ])
    assert out.text == "Margaret Ellis"
    with pytest.raises(HtmlRagError, match="max_response_bytes must be at least 1"):
        _reader(max_response_bytes=0)


def test_the_size_limit_can_be_set_in_the_config() -> None:
    from hydra import compose, initialize_config_dir

    from htmlrag_bench.eval.schemas import CONF_DIR, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["reader=openai", "reader.max_response_bytes=1234"])
        assert cfg.reader.max_response_bytes == 1234
        assert compose("config", overrides=["reader=openai"]).reader.max_response_bytes == MAX_RESPONSE_BYTES


# ------------------------------------------------------------------------------------ 4. empty and cut answers
@pytest.mark.timeout(30)
def test_an_empty_answer_cut_at_max_tokens_is_an_error_never_cached(endpoint: Endpoint, tmp_path: Path) -> None:
    endpoint.mode = "finish:length:  "
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    with pytest.raises(HtmlRagError, match=r"empty answer cut at max_tokens=16 \(finish_reason length\)"):
        _reader(cache=cache).read([REQ])
    assert endpoint.requests == 1                     # not retried: the same prompt is cut the same way
    endpoint.mode = "ok"
    (out,) = _reader(cache=cache).read([REQ])
    assert out.text == "Margaret Ellis" and not out.cached and endpoint.requests == 2


@pytest.mark.timeout(30)
def test_an_empty_answer_is_scored_but_never_cached(endpoint: Endpoint, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    endpoint.mode = "finish:stop:"
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = _reader(cache=cache)
    with caplog.at_level(logging.WARNING):
        (out,) = reader.read([REQ])
    assert out.text == "" and not out.cached and reader.empty == 1 and "empty answer" in caplog.text
    assert len(cache) == 0
    endpoint.mode = "ok"
    (again,) = _reader(cache=cache).read([REQ])       # asked again, not the empty answer from the cache
    assert again.text == "Margaret Ellis" and not again.cached and endpoint.requests == 2
    (hit,) = _reader(cache=cache).read([REQ])         # a normal answer is cached as before
    assert hit.cached and hit.text == "Margaret Ellis" and endpoint.requests == 2


@pytest.mark.timeout(30)
def test_an_empty_answer_cached_by_older_code_is_a_miss(endpoint: Endpoint, tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "r.sqlite"))
    reader = _reader(cache=cache)
    cache.put(reader.cache_key(reader.messages(reader.fit(REQ))),
              {"text": "", "prompt_tokens": 1, "seconds": 0.1, "gpu_seconds": None})
    (out,) = reader.read([REQ])
    assert out.text == "Margaret Ellis" and not out.cached and endpoint.requests == 1


@pytest.mark.timeout(30)
def test_a_cut_answer_is_kept_and_counted(endpoint: Endpoint, tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    endpoint.mode = "finish:length:Marg"
    reader = _reader(cache=ResponseCache(str(tmp_path / "r.sqlite")))
    with caplog.at_level(logging.WARNING):
        outs = reader.read([REQ, ReadRequest("Who else?", REQ.context)])
    assert [o.text for o in outs] == ["Marg", "Marg"] and reader.truncated == 2
    assert "cut at max_tokens=16 (finish_reason length; 2 so far)" in caplog.text

