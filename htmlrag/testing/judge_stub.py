"""An OpenAI-compatible judge endpoint on 127.0.0.1 that disagrees with itself on purpose (for the judge
reliability tests and ``scripts/judge_agreement_stub.py``)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FlipStub:
    """Per answer: ``FLIP`` answers get "1", "0", "1", ... on their successive requests (a judge that disagrees
    with itself); ``BAD`` answers "0"; other answers "1". With ``parity=True`` every answer whose text has an
    odd length flips (for whole runs, whose answers are not chosen by the test)."""

    def __init__(self, parity: bool = False) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.parity = parity
        self.requests = 0

    def reply(self, body: dict) -> str:
        answer = body["messages"][-1]["content"].split("User Answer:", 1)[1].split("\n", 1)[0]
        with self.lock:
            self.requests += 1
            self.seen[answer] += 1
            n = self.seen[answer]
        if "FLIP" in answer or (self.parity and len(answer) % 2):
            return "1" if n % 2 else "0"
        return "0" if "BAD" in answer else "1"


@contextmanager
def serve(stub: FlipStub) -> Iterator[str]:
    """Serve ``stub``; yields its base URL (``http://127.0.0.1:PORT/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": stub.reply(body)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
