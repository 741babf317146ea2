"""Credentials in URLs: the userinfo of a URL (``http://admin:PASSWORD@host/v1``) and credential-named query
parameters are redacted in every message and log line, and the password of a URL in the environment (the
reader's base URL) is a known secret, redacted wherever it stands. A whole run against a failing endpoint whose
base URL holds a password never shows it: not in its error line, its log, nor any file it saves."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest

from htmlrag.core import redact
from tests.conftest import ROOT
from tests.helpers.openai_stub import EchoStub, dead_url, serve
from tests.integration._runs import command, make_questions, overrides

PASSWORD = "Pr0dPassw0rdZZ91"


def _with_userinfo(url: str, userinfo: str = f"admin:{PASSWORD}") -> str:
    return url.replace("http://", f"http://{userinfo}@", 1)


@pytest.mark.parametrize(("text", "kept"), [
    ("POST http://admin:s3cr3t-pass@127.0.0.1:1/v1/chat/completions failed", "http://[REDACTED]@127.0.0.1:1/v1"),
    ("url='https://user:p%40ss-word@api.example.com/v1'", "https://[REDACTED]@api.example.com/v1"),
    ("postgres://svc:hunter2hunter2@db:5432/app", "postgres://[REDACTED]@db:5432/app"),
    ("ssh://deploy-token-abc123@git.example.com/repo", "ssh://[REDACTED]@git.example.com/repo"),
    ("https://h.example/v1?key=AIzaSyA-1234&q=1", "?key=[REDACTED]&q=1"),
    ("https://h.example/o?X-Amz-Credential=AKIA123&X-Amz-Signature=abcdef12", "X-Amz-Signature=[REDACTED]"),
    ("https://h.example/o?sv=2024&sig=Zm9vYmFyYmF6&se=x", "&sig=[REDACTED]&se=x"),
    ("https://h.example/v1?access_token=ya29.abcdef&x=1", "?access_token=[REDACTED]&x=1"),
])
def test_credentials_in_urls_are_redacted_in_messages(text: str, kept: str) -> None:
    out = redact.redact(text)
    assert kept in out, out
    for secret in ("s3cr3t-pass", "p%40ss-word", "hunter2hunter2", "deploy-token", "AIzaSyA", "abcdef12",
                   "Zm9vYmFy", "ya29", "AKIA123"):
        assert secret not in out, out


@pytest.mark.parametrize("text", [
    "see https://example.com/a/b?q=1&page=2 and mail me at someone@example.com",
    "cache key=abc123 and 12 tokens",
    "http://127.0.0.1:8000/v1/chat/completions",
])
def test_urls_without_credentials_are_left_alone(text: str) -> None:
    assert redact.redact(text) == text


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact.redact("http://admin:s3cr3t-pass@host/v1?token=abcdef")
    assert redact.redact(once) == once == "http://[REDACTED]@host/v1?token=[REDACTED]"


def test_the_password_of_a_url_in_the_environment_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_BASE_URL", f"http://admin:{PASSWORD}@127.0.0.1:1/v1")
    monkeypatch.setenv("OTHER_URL", "https://u:p%40ssw0rd-x@h.example/v1")
    assert PASSWORD in redact.known_secrets() and "p@ssw0rd-x" in redact.known_secrets()
    # alone, quoted by a service, cut short, and in data (answers) too
    for text in (f"wrong password {PASSWORD}", f"pw ...{PASSWORD[-10:]}", f"'{PASSWORD[:9]}"):
        assert PASSWORD[:8] not in redact.redact(text) and PASSWORD[-8:] not in redact.redact(text)
    assert redact.redact(f"the answer {PASSWORD}", shapes=False) == "the answer [REDACTED]"
    assert "p@ssw0rd-x" not in redact.redact("rejected p@ssw0rd-x")
    monkeypatch.setenv("SHORT_URL", "http://a:b@h/v1")           # a password shorter than 6: not a secret
    assert "b" not in redact.known_secrets()


def test_log_records_with_a_url_are_redacted(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    redact.install()
    monkeypatch.setenv("SOME_BASE_URL", f"http://admin:{PASSWORD}@127.0.0.1:1/v1")
    with caplog.at_level(logging.WARNING):
        logging.getLogger("test.redact.urls").warning("calling %s", os.environ["SOME_BASE_URL"])
    assert PASSWORD not in caplog.text and "http://[REDACTED]@127.0.0.1:1/v1" in caplog.text


@pytest.mark.timeout(90)
@pytest.mark.parametrize("where", ["nothing listening", "500s"])
def test_a_failing_run_never_shows_the_password_of_the_base_url(tmp_path: Path, where: str) -> None:
    """The probe's case: ``OPENAI_BASE_URL=http://admin:PASSWORD@127.0.0.1:PORT/v1`` and an endpoint that is down
    (nothing listening; 500 on every request): exit 1 naming the endpoint without its userinfo, and the password
    nowhere in stdout, stderr, the log files or any saved file."""
    q = make_questions(tmp_path / "data", 2)
    args = overrides(q, tmp_path / "results", tmp_path / "cache", "reader=openai", "reader.model=stub-model",
                     "reader.backoff=0.01", "reader.max_retries=2")
    stub = EchoStub(mode="echo500")
    with serve(stub) as live:
        url = dead_url() if where == "nothing listening" else live
        env = {**os.environ, "OPENAI_BASE_URL": _with_userinfo(url), "OPENAI_API_KEY": "sk-test-nokey-0123456789ab"}
        out = subprocess.run(command(*args), cwd=ROOT, capture_output=True, text=True, timeout=80, env=env)
    assert out.returncode == 1, out.stderr[-3000:]
    assert (where == "500s") == (stub.requests > 0)
    error_line = [line for line in out.stderr.splitlines() if line.startswith("htmlrag-bench: error:")]
    assert error_line and _with_userinfo(url, "[REDACTED]") in error_line[-1], out.stderr[-3000:]
    for frag in (PASSWORD, PASSWORD[:8], PASSWORD[-8:], "admin:"):
        assert frag not in out.stdout and frag not in out.stderr, frag
        for f in tmp_path.rglob("*"):
            if f.is_file():
                assert frag.encode() not in f.read_bytes(), (frag, f)
    assert list(tmp_path.rglob("*.log")), "the run wrote no log file to search"


def test_a_url_glued_to_a_word_or_a_token_still_loses_its_userinfo() -> None:
    """The userinfo rule wanted a word boundary before the scheme, so a URL written right after a word
    character kept its password ("token_https://user:pw@host"), and a token shape that ran first took the scheme
    with it ("hf_<token>https://user:pw@host" left "pw"). The scheme now starts after any character a scheme
    cannot hold, and URLs are redacted before tokens."""
    from htmlrag.core.redact import redact

    for text in ("token_https://user:hunter22@db.example", "hf_" + "A" * 24 + "https://user:hunter22@db.example",
                 "sk-" + "b" * 20 + "postgres://admin:hunter22@10.0.0.1:5432/x", "id=7_ftp://me:hunter22@files"):
        out = redact(text)
        assert "hunter22" not in out and "[REDACTED]" in out, (text, out)
    assert redact("see https://example.com/a@b") == "see https://example.com/a@b"  # an @ in the path: no userinfo
