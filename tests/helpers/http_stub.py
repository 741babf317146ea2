"""A local HTTP server for download tests: serves given bytes by path on 127.0.0.1, honours ``Range`` (or
not), can cut a transfer short once, adds per-file headers, can answer slowly, and records every request. Never the network."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


@dataclass
class StubFile:
    """``body`` served at a path; ``cut_once``: the first GET stops after this many bytes (a killed transfer);
    ``ranges``: honour ``Range`` (False: always send the whole body with 200); ``headers``: extra headers."""

    body: bytes
    cut_once: int | None = None
    ranges: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    delay: float = 0.0  # seconds before the reply (a slow source: downloads overlap)


class Stub:
    """``with Stub({"/a.zip": StubFile(b"...")}) as s: s.url("/a.zip")``; ``s.requests``: (path, Range header)."""

    def __init__(self, files: dict[str, StubFile]) -> None:
        self.files = files
        self.requests: list[tuple[str, str | None]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                path = unquote(self.path.split("?", 1)[0])
                rng = self.headers.get("Range")
                stub.requests.append((path, rng))
                f = stub.files.get(path)
                if f is None:
                    self.send_error(404)
                    return
                if f.delay:
                    import time

                    time.sleep(f.delay)
                if f.status != 200:
                    self.send_error(f.status)
                    return
                body, start, code = f.body, 0, 200
                if rng and f.ranges:
                    start = int(rng.split("=", 1)[1].split("-", 1)[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    code = 206
                part = body[start:]
                self.send_response(code)
                if code == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.send_header("Content-Length", str(len(part)))
                for k, v in f.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if f.cut_once is not None:
                    cut, f.cut_once = f.cut_once, None
                    self.wfile.write(part[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(part)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
