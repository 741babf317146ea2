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
:class:`RedactStream` redacts a text that arrives in pieces (a served file) in bounded memory, with the output
:func:`redact` gives for the whole text.
"""

from __future__ import annotations

import bisect
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
    # a URL's userinfo, user and password alike: scheme://user:password@host (first: a token shape before it
    # would take the scheme with it, "hf_<token>https://user:pw@host")
    # (the scheme starts after any character a scheme cannot hold, "_" too: "token_https://u:pw@h", "hf_...https://")
    (re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)[^\s/?#'\"<>@]+(?:@[^\s/?#'\"<>@]+)*@"),
     rf"\g<1>{REDACTED}@"),
    (re.compile(r"(?i)\b(authorization\W{0,3}\s*[:=]\s*['\"]?)(?:(?:bearer|basic|token)\s+)?[^\s'\",;}]+"),
     rf"\g<1>{REDACTED}"),
    (re.compile(r"(?i)\b(bearer)(\s+)(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"), rf"\g<1>\g<2>{REDACTED}"),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{12,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"(?i)\b((?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)['\"]?"
                r"\s*[:=]\s*['\"]?)[^\s'\"&,;}]{4,}"), rf"\g<1>{REDACTED}"),
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
def _pieces(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """Every :data:`PIECE`-character window of the key-like secrets (each searched with ``str.find``: one
    alternation of them all, tried at every position of the text, cost 50 ms per MB for one key)."""
    return tuple(sorted({s[i:i + PIECE] for s in secrets if _pieces_count(s) for i in range(len(s) - PIECE + 1)}))


#: Characters written as escapes: URL (%2D), JSON/Python (\u002d), HTML (&#45; &#x2d;).
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};")


def _unescaped(text: str) -> tuple[str, list[int], list[int], list[int]]:
    """``text`` with the escapes of :data:`_ESCAPE` decoded, and for each escape where its character stands in
    the decoded text and where the escape starts and ends in ``text`` (:func:`_where` maps a decoded position
    back, so a piece found in the decoded text is replaced where it stands). Only the escapes cost Python
    steps: the text between them is copied whole."""
    out: list[str] = []
    at: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    i = n = 0
    for m in _ESCAPE.finditer(text):
        out.append(text[i:m.start()])
        n += m.start() - i
        out.append(_escaped(m.group()))
        at.append(n)
        starts.append(m.start())
        ends.append(m.end())
        n += 1
        i = m.end()
    out.append(text[i:])
    return "".join(out), at, starts, ends


def _escaped(tok: str) -> str:
    """The character an escape of :data:`_ESCAPE` stands for (U+FFFD past U+10FFFF)."""
    code = int(tok[1:], 16) if tok[0] == "%" else int(tok[2:], 16) if tok[1] == "u" else \
        int(tok[3:-1], 16) if tok[2] in "xX" else int(tok[2:-1])
    return chr(code) if code < 0x110000 else "\ufffd"


@functools.lru_cache(maxsize=8)
def _piece_chars(grams: tuple[str, ...]) -> frozenset[str]:
    return frozenset("".join(grams))


def _escapes_matter(text: str, grams: tuple[str, ...]) -> bool:
    """Whether an escape in ``text`` stands for a character of a key-like secret (else a piece found in the
    decoded text holds no escape, and was found in ``text`` itself: decoding is skipped)."""
    chars = _piece_chars(grams)
    return any(_escaped(tok) in chars for tok in set(_ESCAPE.findall(text)))


def _where(j: int, at: list[int], starts: list[int], ends: list[int]) -> tuple[int, int]:
    """Where the decoded character ``j`` of :func:`_unescaped` starts and ends in the original text."""
    k = bisect.bisect_right(at, j)
    if k and at[k - 1] == j:  # an escape
        return starts[k - 1], ends[k - 1]
    pos = j if not k else ends[k - 1] + (j - at[k - 1] - 1)
    return pos, pos + 1


def _redact_pieces(text: str, grams: tuple[str, ...]) -> str:
    """``text`` with every run of :data:`PIECE` or more characters of a key-like secret replaced (windows that
    overlap or touch are one run), also where some of its characters are written as escapes (``sk%2Dproj``)."""
    spans = _spans(text, grams)
    if _ESCAPE.search(text) and _escapes_matter(text, grams):
        plain, at, starts, ends = _unescaped(text)
        spans = sorted(spans + [[_where(a, at, starts, ends)[0], _where(b - 1, at, starts, ends)[1]]
                                for a, b in _spans(plain, grams)])
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


def _spans(text: str, grams: tuple[str, ...]) -> list[list[int]]:
    """Runs of windows: ``[start, end)`` of every stretch where windows of ``grams`` start at most
    :data:`PIECE` characters apart, in order."""
    found: set[int] = set()
    for g in grams:
        i = text.find(g)
        while i >= 0:
            found.add(i)
            i = text.find(g, i + 1)
    spans: list[list[int]] = []
    for a in sorted(found):
        if spans and a <= spans[-1][1]:
            spans[-1][1] = a + PIECE
        else:
            spans.append([a, a + PIECE])
    return spans


#: For each of :data:`_SHAPES`, words every match of it holds (each a tuple: one of them), in lower case: a
#: shape is only tried on ASCII text holding them (a quick test of the lower-cased text; the regular expressions
#: cost 10-70 ms per MB each, tried at every position). Text with other characters is always tried: there,
#: ``(?i)`` also matches the Kelvin sign to ``k`` and the long s to ``s``.
_NEEDS: list[tuple[tuple[str, ...], ...]] = [
    (("://",), ("@",)),
    (("authorization",),),
    (("bearer",),),
    (("sk-",),),
    (("hf_",),),
    (("apikey", "api_key", "api-key", "accesstoken", "access_token", "access-token", "authtoken", "auth_token",
      "auth-token", "secret", "passw"),),
    (("key=", "token=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature=", "credential=",
      "credentials=", "auth="),),
]


def _redact_known(text: str, known: tuple[str, ...], shapes: bool) -> str:
    """:func:`redact` with the secret values given (longest first)."""
    out = text
    rx = _pattern(known)
    if rx is not None:
        out = rx.sub(REDACTED, out)
    grams = _pieces(known)
    if grams:
        out = _redact_pieces(out, grams)
    if shapes:
        # Replacing inserts "[REDACTED]", which holds none of the words: a shape skipped for the text as it is
        # now would find nothing after the others ran either.
        low = out.lower() if out.isascii() else None
        for (shape, repl), needs in zip(_SHAPES, _NEEDS, strict=True):
            if low is None or all(any(w in low for w in group) for group in needs):
                out = shape.sub(repl, out)
    return out


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
    return _redact_known(out, known, shapes)


class RedactStream:
    """:func:`redact` over a text that arrives in pieces (a response body, a file), in bounded memory: what
    :meth:`feed` returns, then :meth:`close`, joined, is ``redact(whole text)``, while at most about
    ``block + window`` characters are held.

    The text is cut where redacting the two sides apart gives what redacting them together gives. Cuts are
    tried at least ``window`` characters before the end of what arrived (after a line end, else after white
    space, else after a quote, else anywhere) and taken only when the text around the cut redacts alike whole
    and apart: ``window`` characters on the right; on the left, ``window`` characters before the runs the cut
    stands in (runs of characters other than white space and quotes: the one holding the cut and up to three
    before it with the white space between); a cut whose runs reach back further than :data:`STREAM_REACH`
    characters, or into text already sent, is not taken. So no secret, piece of a key or credential-shaped
    string that straddles a cut escapes, unless its parts lie further apart than ``window`` (16 KiB, or twice
    the longest secret) outside such runs. When no cut passes within :data:`STREAM_HOLD` characters (a run of
    that length: a blob without white space or quotes), the text is cut anyway and the run of non-space
    characters on each side of the cut is replaced by ``[REDACTED]``: more is hidden, never less.
    """

    def __init__(self, *, shapes: bool = True, window: int = 16 * 1024, block: int = 1 << 20,
                 first_block: int = 1 << 16) -> None:
        self._known = known_secrets()  # one set of secrets for the whole text
        self._shapes = shapes
        self._window = max(window, 2 * max((len(s) for s in self._known), default=0) + 64)
        self._block, self._max_block = min(first_block, block), block
        self._parts: list[str] = []
        self._size = 0
        self._retry_at = 0
        self._mask_head = False  # the text held starts inside a run cut by force: hide that run
        self._open = False  # the text held starts inside a run (its start was sent already)

    def feed(self, text: str) -> str:
        """Take the next piece of the text; return what can be sent now (redacted; often ``""``)."""
        if text:
            self._parts.append(text)
            self._size += len(text)
        out = []
        while self._size >= max(self._block + self._window, self._retry_at):
            done = self._emit()
            if done is None:
                break
            out.append(done)
        return "".join(out)

    def close(self) -> str:
        """The rest of the text, redacted (the stream is over)."""
        held = self._held()
        self._parts, self._size = [], 0
        return self._redact(self._masked_head(held))

    def _held(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def _redact(self, text: str) -> str:
        return _redact_known(text, self._known, self._shapes) if text else ""

    def _masked_head(self, text: str) -> str:
        """``text`` with its first run of non-space characters hidden while a cut made by force left one open."""
        if not self._mask_head or not text:
            return text
        run = _NON_SPACE.match(text).end()  # type: ignore[union-attr]
        if run == len(text):
            return ""  # the run goes on past this text (its start was hidden by force already)
        self._mask_head = False
        return text[run:]

    def _emit(self) -> str | None:
        held = self._held()
        hi = len(held) - self._window
        cut = self._cut(held, max(0, hi - self._block // 2), hi)
        if cut is None:
            if len(held) < STREAM_HOLD + self._window:
                self._block = min(self._block * 2, self._max_block)
                self._retry_at = len(held) + self._block  # look again when a block more has arrived
                return None
            cut = hi  # no clean cut within STREAM_HOLD: cut anyway, hiding the runs on both sides
            head = held[:cut]
            tail = held[cut:]
            keep = len(head) - _NON_SPACE.match(head[::-1]).end()  # type: ignore[union-attr]  # its last run
            out = "" if keep == 0 and self._mask_head else self._redact(self._masked_head(head[:keep])) + REDACTED
            self._mask_head = self._open = True
            self._parts, self._size, self._retry_at = [tail], len(tail), 0
            return out
        head, tail = held[:cut], held[cut:]
        self._open = not (_is_break(held[cut - 1]) or _is_break(held[cut]))  # cut inside a run
        self._parts, self._size, self._retry_at = [tail], len(tail), 0
        self._block = min(self._block * 2, self._max_block)
        return self._redact(self._masked_head(head))

    def _cut(self, text: str, lo: int, hi: int) -> int | None:
        """A position in ``[lo, hi]`` where ``text`` can be cut (see the class docstring), or None."""
        if hi <= 0 or hi < lo:
            return None
        tried: set[int] = set()
        for finder in (_after_newlines, _after_spaces, _after_quotes, _anywhere):
            for n, cut in enumerate(finder(text, lo, hi)):
                if n >= 8:
                    break
                if cut in tried or cut <= 0:
                    continue
                tried.add(cut)
                if self._clean_cut(text, cut):
                    return cut
        return None

    def _clean_cut(self, text: str, cut: int) -> bool:
        """Whether ``text`` redacts alike cut at ``cut`` and whole, around the cut: ``window`` characters on
        each side, and on the left also back over the runs the cut stands in (up to :data:`STREAM_REACH`): a
        long key's start, or the word before a long stretch of white space, may decide what follows."""
        seen = text[max(0, cut - STREAM_REACH):cut]
        back = _BACK.match(seen[::-1]).end()  # type: ignore[union-attr]
        if back == len(seen) and (cut > STREAM_REACH or self._open):
            return False  # the runs go back further than can be seen: what they start with is unknown
        left = text[max(0, cut - back - self._window):cut]
        right = text[cut:cut + self._window]
        return self._redact(left + right) == self._redact(left) + self._redact(right)


#: Characters a :class:`RedactStream` holds at most while it looks for a clean cut (then it cuts by force).
STREAM_HOLD = 8 << 20
#: How far back a cut's check looks over the runs it stands in (characters).
STREAM_REACH = 1 << 20
#: Read backwards from a cut: the run it stands in, and up to three more runs and the white space between them.
_BACK = re.compile(r"(?:[^\s'\"]*\s*['\"]?){1,4}")
_NON_SPACE = re.compile(r"\S*")


def _is_break(ch: str) -> bool:
    """White space or a quote: no credential shape's run of characters goes on across one."""
    return ch.isspace() or ch in "'\""


def _after_newlines(text: str, lo: int, hi: int) -> Iterable[int]:
    """Positions just after a line end in ``[lo, hi]``, last first."""
    i = text.rfind("\n", lo, hi)
    while i >= 0:
        yield i + 1
        i = text.rfind("\n", lo, i)


def _after_spaces(text: str, lo: int, hi: int) -> Iterable[int]:
    """Positions just after white space in ``[lo, hi]``, last first."""
    for m in _LAST_SPACES.finditer(text[lo:hi][::-1]):
        yield hi - m.start()


_LAST_SPACES = re.compile(r"\s")


def _after_quotes(text: str, lo: int, hi: int) -> Iterable[int]:
    """Positions just after a quote in ``[lo, hi]``, last first (where text without white space, such as
    compact JSON, has breaks no credential shape runs across)."""
    i = max(text.rfind('"', lo, hi), text.rfind("'", lo, hi))
    while i >= 0:
        yield i + 1
        i = max(text.rfind('"', lo, i), text.rfind("'", lo, i))


def _anywhere(text: str, lo: int, hi: int) -> Iterable[int]:
    """Positions spread over ``[lo, hi]``, last first."""
    step = max(1, (hi - lo) // 8)
    return range(hi, lo - 1, -step)


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
