"""A scripted OpenAI-compatible endpoint on 127.0.0.1 (a thread of the test process) that can misbehave: echo the
caller's key in a 401 body, echo the Authorization header in a 5xx body, put the key in an answer, ..."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class EchoStub:
    """``mode`` says how to answer every request:

    ok: a normal answer; echo401: 401 whose body quotes the key; echo500: 500 echoing the request headers;
    echo400: 400 whose body quotes the Authorization header (a per-request failure); echo200: an answer that
    contains the Authorization header; fail_on: questions containing this text get ``echo400``.
    """

    mode: str = "ok"
    fail_on: str | None = None
    answer: str = "Margaret Ellis"
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, headers: dict[str, str], body: dict) -> tuple[int, bytes]:
        with self.lock:
            self.requests += 1
        auth = headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ")
        mode = self.mode
        if self.fail_on and self.fail_on in body["messages"][-1]["content"]:
            mode = "echo400"
        if mode == "echo401":
            return 401, json.dumps({"error": {"message": f"Incorrect API key provided: {key}.",
                                              "type": "invalid_request_error"}}).encode()
        if mode == "echo500":  # the header lands across the 120th character: an excerpt would cut the key
            return 500, (f"upstream crashed ({'.' * 40}) request headers: Authorization: {auth}\n"
                         + "".join(f"{k}: {v}\n" for k, v in headers.items())).encode()
        if mode == "echo400":
            return 400, json.dumps({"error": f"bad request from {auth}", "api_key": key}).encode()
        text = f"{self.answer} (you sent {auth})" if mode == "echo200" else self.answer
        out = {"choices": [{"message": {"role": "assistant", "content": text}}], "usage": {"prompt_tokens": 7}}
        return 200, json.dumps(out).encode()


def _handler(stub: EchoStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            code, data = stub.reply(dict(self.headers.items()), body)
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


@contextmanager
def serve(stub: EchoStub) -> Iterator[str]:
    """Serve ``stub``; yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def dead_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
