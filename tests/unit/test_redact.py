"""Central redaction: what counts as a secret, truncation, log records (message, args, traceback)."""

from __future__ import annotations

import logging

import pytest

from htmlrag.core import redact

KEY = "sk-proj-Zq8vT1xK3mN7pR2sW9yB4cD6fG0hJ5lA"


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2-but-longer")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("MY_ENDPOINT_CREDS", "qwertyuiop-0987")


def test_known_values_from_credential_variables() -> None:
    text = f"Incorrect API key provided: {KEY}. pw=hunter2-but-longer parallel=false"
    out = redact.redact(text)
    assert KEY not in out and "hunter2-but-longer" not in out and "parallel=false" in out
    assert "qwertyuiop-0987" in redact.redact("qwertyuiop-0987")     # a name that says nothing ...
    redact.register_env("MY_ENDPOINT_CREDS")                        # ... until a reader registers it
    assert "qwertyuiop-0987" not in redact.redact("x qwertyuiop-0987 y")


@pytest.mark.parametrize("text", [
    "Authorization: Bearer abc123def456ghi",
    '{"authorization": "Bearer abc123def456ghi"}',
    "headers={'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}",
    "bearer abc123def456ghi",
    "key sk-otherkey1234567890abcd",
    "token hf_abcdefghijklmnopqrstuvwx",
    "https://host/v1?api_key=abc123def456&x=1",
    '{"api-key": "abc123def456"}',
    "password: s3cr3t-value",
])
def test_credential_shapes_in_messages(text: str) -> None:
    out = redact.redact(text)
    assert "[REDACTED]" in out
    for secret in ("abc123def456", "dXNlcjpwYXNzd29yZA", "otherkey1234567890", "hf_abcdefghij", "s3cr3t-value"):
        assert secret not in out


def test_data_keeps_words_that_look_like_shapes() -> None:
    answer = "The bearer instruments were basic. Authorization: granted by the board."
    assert redact.redact(answer, shapes=False) == answer
    assert redact.redact(f"{answer} {KEY}", shapes=False) == f"{answer} [REDACTED]"


def test_a_key_cut_by_truncation_is_still_redacted() -> None:
    body = f"error for key {KEY}"
    cut = repr(body[:30])                                          # someone truncated first
    assert KEY[:12] in cut and KEY[:12] not in redact.redact(cut)
    assert KEY[-12:] not in redact.redact(f"...{KEY[-14:]} was refused")
    assert redact.excerpt(body, 30) == "error for key [REDACTED]"      # redact first, then cut


def test_error_text() -> None:
    assert redact.error_text(RuntimeError(f"HTTP 401: {KEY}")) == "RuntimeError: HTTP 401: [REDACTED]"


def test_log_records_are_redacted_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    redact.install()
    redact.install()  # idempotent
    log = logging.getLogger("some.third.party")
    with caplog.at_level(logging.INFO):
        log.info("calling with %s", f"Bearer {KEY}")
        log.warning(f"f-string {KEY}")
        try:
            raise ValueError(f"echo {KEY}")
        except ValueError:
            log.exception("failed")
    assert KEY not in caplog.text and caplog.text.count("[REDACTED]") >= 3
    formatted = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    assert KEY not in formatted and "ValueError: echo [REDACTED]" in formatted


@pytest.mark.parametrize("shapes", [True, False])
def test_any_eight_characters_of_a_key_in_a_row_are_redacted(shapes: bool) -> None:
    """A service quoting part of the key (``tail=...``, ``raw:...``), a cut key, a key inside a longer word:
    no run of 8 of its characters survives, in messages or in data; shorter runs and other text stay."""
    texts = [f"tail={KEY[-9:]}", f"raw:{KEY[3:]}", f"x{KEY[5:20]}y", f"{KEY[:8]}", f"'{KEY[10:30]}'",
             f"head {KEY[:10]} and tail {KEY[-10:]}", f"{KEY}{KEY}"]
    for text in texts:
        out = redact.redact(text, shapes=shapes)
        assert all(KEY[i:i + 8] not in out for i in range(len(KEY) - 7)), (text, out)
        assert "[REDACTED]" in out
    assert redact.redact(f"key ending in {KEY[-4:]}") == f"key ending in {KEY[-4:]}"  # 4 characters say nothing
    assert redact.redact("sk-proj- keys are long", shapes=False) == "[REDACTED] keys are long"  # even a prefix


def test_pieces_of_a_path_valued_credential_variable_are_not_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-XXXXabcdef/agent.1234")
    assert redact.redact("cannot open /tmp/ssh-other/file") == "cannot open /tmp/ssh-other/file"
    assert redact.redact("sock /tmp/ssh-XXXXabcdef/agent.1234 gone") == "sock [REDACTED] gone"


@pytest.mark.parametrize("written", [
    lambda k: k.replace("-", "%2D"), lambda k: k.replace("-", "%2d"), lambda k: k.replace("-", "\\u002d"),
    lambda k: k.replace("-", "&#45;"), lambda k: k.replace("-", "&#x2D;"),
    lambda k: "".join(f"%{ord(c):02x}" for c in k[:12]), lambda k: "".join(f"\\u{ord(c):04x}" for c in k[8:20]),
])
def test_a_key_partly_written_as_escapes_is_still_redacted(written) -> None:
    """A service or a log quoting the key URL-, JSON- or HTML-escaped: no 8 of its characters in a row survive,
    once decoded; text with escapes and no key is left as it is."""
    import html
    import urllib.parse

    out = redact.redact(f"error for key {written(KEY)}.")
    decoded = html.unescape(urllib.parse.unquote(out.encode().decode("unicode_escape")))
    assert all(KEY[i:i + 8] not in decoded for i in range(len(KEY) - 7)), out
    assert out.startswith("error for key [REDACTED]")
    plain = "100% sure, a &amp; b, caf\\u00e9 %20 &#45;"
    assert redact.redact(plain) == plain
