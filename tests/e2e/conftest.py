"""End-to-end tests in a real headless browser: Playwright driving Debian's chromium (``apt-get install -y
chromium``; ``playwright install`` is never run), against the app served by uvicorn on 127.0.0.1.

Without the browser these tests skip, except where CI=1 or HTMLRAG_REQUIRE_BROWSER=1 is set (``.ci/run`` sets
it): there a missing chromium or playwright is a failure, so browser tests cannot silently stop running in CI.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("HTMLRAG_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def browser_required() -> bool:
    """True in CI (CI=1) or with HTMLRAG_REQUIRE_BROWSER=1: a missing browser fails instead of skipping."""
    return os.environ.get("CI") in ("1", "true") or os.environ.get("HTMLRAG_REQUIRE_BROWSER") == "1"


def _unavailable(why: str) -> None:
    if browser_required():
        pytest.fail(f"browser tests are required here (CI/HTMLRAG_REQUIRE_BROWSER) but {why}", pytrace=False)
    pytest.skip(why)


def chromium_path() -> str:
    path = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not path:
        _unavailable(f"chromium is not installed ({CHROMIUM}; apt-get install -y chromium)")
    return str(path)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    path = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=ARGS)
        yield b
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """The app served by uvicorn in a thread on 127.0.0.1:<free port>."""

    def __init__(self, settings: object) -> None:
        import uvicorn

        from htmlrag.app.server import create_app

        self.app = create_app(settings, extra_hosts=())
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        import urllib.request

        self.thread.start()
        for _ in range(300):
            try:
                urllib.request.urlopen(self.url + "/api/status", timeout=1).read()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the app did not start")

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    pytest.importorskip("fastapi")
    pytest.importorskip("pymupdf")
    pytest.importorskip("kuzu")
    from htmlrag.testing import pdfs as mk
    from tests.app.conftest import settings_for
    from tests.helpers.app_data import make_results

    d = tmp_path_factory.mktemp("e2e")
    (d / "results").mkdir()
    make_results(d / "results")
    mk.report_pdf(d / "report.pdf")
    (d / "fake.pdf").write_bytes(b"<html><body>I am not a PDF</body></html>")
    with LiveServer(settings_for(d)) as server:
        server.dir = d  # type: ignore[attr-defined]
        yield server


@pytest.fixture
def page(browser: object, live: LiveServer) -> Iterator[object]:
    """A fresh page; console errors and CSP violations are collected in ``page.problems``."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.problems = []
    pg.on("console", lambda m: pg.problems.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.problems.append(str(e)))
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()
