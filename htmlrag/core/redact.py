"""Keep secrets out of log lines, error messages and saved results: one place that knows what a secret is.

A **secret** is

* the value of an environment variable whose name marks a credential: a ``_``-separated part ``KEY``,
  ``APIKEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASS``, ``CREDENTIAL(S)`` or ``AUTH``
  (``OPENAI_API_KEY``, ``HF_TOKEN``, ``NEO4J_PASSWORD``, ``ES_API_KEY``; not ``TOKENIZERS_PARALLELISM``);
* the value of any variable named with :func:`register_env` (readers register their ``api_key_env``), and any
  value given to :func:`register_secret`;
* the password of a URL's userinfo (``scheme://user:PASSWORD@host``) in the value of any environment variable
  (``OPENAI_BASE_URL=http://admin:...@host/v1``, ``DATABASE_URL``), as written and percent-decoded;
* in messages and log lines (not in model answers, where ``bearer`` is a word): anything shaped like one, an
  ``Authorization:`` value, a ``Bearer`` token with a digit in it, an ``sk-...`` key, an ``hf_...`` token, the
  value of an ``api_key=``/``"password": "..."``-style field, the whole userinfo of a URL
  (``http://[REDACTED]@host``), and the value of a credential-named query parameter (``?key=``, ``&token=``,
  ``api_key``, ``access_token``, ``sig``, ``X-Amz-Signature``, ...).

:func:`redact` replaces each with ``[REDACTED]`` (values of 6 characters or more; shorter ones are not
treated as secrets); ``redact(text, shapes=False)`` replaces only the known values, for data such as answers.
Of a known key-like secret of 12 characters or more (not a path or URL) **any 8 or more characters in a row**
are redacted too, wherever they stand: a key cut short by truncation, or quoted in part by a service
(``key ...SECRET123``); code should still redact *before* truncating: :func:`excerpt` does both in that order.
So are its pieces where some characters are written as URL, JSON or HTML escapes (``sk%2Dproj``,
``sk\\u002dproj``, ``sk&#45;proj``). A key spelled out with other characters between its own (``s k - 1 2 ...``),
or encoded as a whole (base64), is not recognised. :func:`error_text` is the one way an exception becomes a row field or
a message. :func:`install` makes every log record redacted (message, arguments and traceback), for every logger
and handler, by wrapping the logging record factory; readers and the evaluation entry point call it.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import traceback
import urllib.parse
from collections.abc import Iterable

REDACTED = "[REDACTED]"
MIN_SECRET = 6
#: A key-like secret of MIN_PIECE_OF characters or more is also redacted piece by piece: any PIECE or more of its
#: characters in a row (a truncated key, a service echoing ``tail=...`` or ``key ending in ...``).
MIN_PIECE_OF = 12
PIECE = 8
_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:_|$)", re.I)
_NOT_SECRET = frozenset({"true", "false", "none", "null", "yes", "no", "disabled", "enabled", "offline"})
_SHAPES = [
    (re.compile(r"(?i)\b(authorization\W{0,3}\s*[:=]\s*['\"]?)(?:(?:bearer|basic|token)\s+)?[^\s'\",;}]+"),
     rf"\g<1>{REDACTED}"),
    (re.compile(r"(?i)\b(bearer)(\s+)(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"), rf"\g<1>\g<2>{REDACTED}"),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{12,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"(?i)\b((?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)['\"]?"
                r"\s*[:=]\s*['\"]?)[^\s'\"&,;}]{4,}"), rf"\g<1>{REDACTED}"),
    # a URL's userinfo, user and password alike: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#'\"<>@]+(?:@[^\s/?#'\"<>@]+)*@"), rf"\g<1>{REDACTED}@"),
    # a credential-named query parameter: ?key=..., &token=..., &X-Amz-Signature=..., &sig=...
    (re.compile(r"(?i)([?&;](?:[a-z0-9.]*[_-])*(?:api_?key|key|token|secret|password|passwd|pwd|sig|signature"
                r"|credentials?|auth)=)[^&\s#'\"<>]+"), rf"\g<1>{REDACTED}"),
]
#: The password of a URL's userinfo, in an environment variable's value.
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:([^\s/?#]+)@")
_lock = threading.Lock()
_registered: set[str] = set()
_env_names: set[str] = set()
_installed = False


def register_secret(value: str | None) -> None:
    """Treat ``value`` as a secret from now on (ignored when shorter than 6 characters)."""
    if value and len(value.strip()) >= MIN_SECRET:
        with _lock:
            _registered.add(value.strip())


def register_env(*names: str | None) -> None:
    """Treat the values of these environment variables as secrets, whatever their names (read at each use)."""
    with _lock:
        _env_names.update(n for n in names if n)


def known_secrets() -> tuple[str, ...]:
    """Every secret value known now, longest first."""
    found = set(_registered)
    for name, value in os.environ.items():
        v = value.strip()
        if (name in _env_names or _NAME.search(name)) and len(v) >= MIN_SECRET and v.lower() not in _NOT_SECRET:
            found.add(v)
        if "://" in v and "@" in v:
            found.update(_url_passwords(v))
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def _url_passwords(value: str) -> set[str]:
    """The passwords of the URLs' userinfo in ``value`` (as written and percent-decoded; 6 characters or more)."""
    out = set()
    for m in _URL_PASSWORD.finditer(value):
        for pw in (m.group(1), urllib.parse.unquote(m.group(1))):
            if len(pw) >= MIN_SECRET and pw.lower() not in _NOT_SECRET:
                out.add(pw)
    return out


@functools.lru_cache(maxsize=8)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    if not secrets:
        return None
    return re.compile("|".join(re.escape(s) for s in secrets))


def _pieces_count(secret: str) -> bool:
    """Whether a piece of ``secret`` identifies it: a key-like value of :data:`MIN_PIECE_OF` characters or more
    (not a path or URL, whose pieces are everyone's: ``SSH_AUTH_SOCK=/tmp/ssh-...``)."""
    return (len(secret) >= MIN_PIECE_OF and not secret.startswith(("/", "~", "./", "../")) and "://" not in secret
            and not any(c.isspace() for c in secret))


@functools.lru_cache(maxsize=8)
def _pieces(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """Every :data:`PIECE`-character window of the key-like secrets, found at every position (a lookahead, so
    overlapping windows are all found)."""
    grams = sorted({s[i:i + PIECE] for s in secrets if _pieces_count(s) for i in range(len(s) - PIECE + 1)})
    return re.compile("(?=(?:" + "|".join(map(re.escape, grams)) + "))") if grams else None


#: Characters written as escapes: URL (%2D), JSON/Python (\u002d), HTML (&#45; &#x2d;).
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};")


def _unescaped(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` with the escapes of :data:`_ESCAPE` decoded, and for each decoded character where it starts and
    ends in ``text`` (so a piece found in the decoded text is replaced where it stands)."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    for m in _ESCAPE.finditer(text):
        for j in range(i, m.start()):
            out.append(text[j])
            starts.append(j)
            ends.append(j + 1)
        tok = m.group()
        code = int(tok[1:], 16) if tok[0] == "%" else int(tok[2:], 16) if tok[1] == "u" else \
            int(tok[3:-1], 16) if tok[2] in "xX" else int(tok[2:-1])
        out.append(chr(code) if code < 0x110000 else "\ufffd")
        starts.append(m.start())
        ends.append(m.end())
        i = m.end()
    for j in range(i, len(text)):
        out.append(text[j])
        starts.append(j)
        ends.append(j + 1)
    return "".join(out), starts, ends


def _redact_pieces(text: str, rx: re.Pattern[str]) -> str:
    """``text`` with every run of :data:`PIECE` or more characters of a key-like secret replaced (windows that
    overlap or touch are one run), also where some of its characters are written as escapes (``sk%2Dproj``)."""
    spans = _spans(text, rx)
    if _ESCAPE.search(text):
        plain, starts, ends = _unescaped(text)
        spans = sorted(spans + [[starts[a], ends[b - 1]] for a, b in _spans(plain, rx)])
    if not spans:
        return text
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, last = [], 0
    for a, b in merged:
        out += [text[last:a], REDACTED]
        last = b
    return "".join([*out, text[last:]])


def _spans(text: str, rx: re.Pattern[str]) -> list[list[int]]:
    spans: list[list[int]] = []
    for m in rx.finditer(text):
        a = m.start()
        if spans and a <= spans[-1][1]:
            spans[-1][1] = a + PIECE
        else:
            spans.append([a, a + PIECE])
    return spans


def redact(text: object, secrets: Iterable[str] | None = None, *, shapes: bool = True) -> str:
    """``text`` (made a string) with every secret replaced by ``[REDACTED]`` (see the module docstring).

    Args:
        text: anything; ``str()`` is applied first.
        secrets: extra secret values for this call only.
        shapes: also redact what is shaped like a credential (messages, logs); False for data (answers).
    """
    out = text if isinstance(text, str) else str(text)
    known = known_secrets()
    if secrets:
        known = tuple(sorted({*known, *(s for s in secrets if s and len(s) >= MIN_SECRET)}, key=lambda s: (-len(s), s)))
    rx = _pattern(known)
    if rx is not None:
        out = rx.sub(REDACTED, out)
    pieces = _pieces(known)
    if pieces is not None:
        out = _redact_pieces(out, pieces)
    if shapes:
        for shape, repl in _SHAPES:
            out = shape.sub(repl, out)
    return out


def excerpt(text: object, limit: int) -> str:
    """The first ``limit`` characters of ``text`` after redaction (redact first, so no key is cut in half)."""
    return redact(text)[:limit]


def error_text(exc: BaseException) -> str:
    """``"ExceptionType: message"`` with secrets redacted: how an exception becomes a row field or a message."""
    return redact(f"{type(exc).__name__}: {exc}")


def _redacting_factory(previous: logging._LogRecordFactory) -> logging._LogRecordFactory:  # type: ignore[name-defined]
    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            record.msg, record.args = redact(record.getMessage()), None
        except Exception:  # a bad format string: leave it to the handler to report, but without secrets
            record.msg, record.args = redact(f"{record.msg!s} {record.args!r}"), None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return record

    factory._htmlrag_redacting = True  # type: ignore[attr-defined]
    return factory


def install() -> None:
    """Redact every log record from now on (idempotent): message, arguments, traceback and stack text."""
    global _installed
    with _lock:
        current = logging.getLogRecordFactory()
        if _installed and getattr(current, "_htmlrag_redacting", False):
            return
        logging.setLogRecordFactory(_redacting_factory(current))
        _installed = True
