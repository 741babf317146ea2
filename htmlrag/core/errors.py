"""Exceptions raised by the library.

Every error that a user can cause with bad input is an :class:`HtmlRagError` (or a subclass) whose message
names the input and the problem. Errors from inside parsers or models are wrapped, never leaked raw.
"""

from __future__ import annotations

import errno


class HtmlRagError(Exception):
    """Base class for all errors raised deliberately by htmlrag."""


class InputError(HtmlRagError, ValueError):
    """The input (a page, a question, a file) cannot be processed; the message says which and why."""


class BudgetError(HtmlRagError, ValueError):
    """A token budget or window is invalid or cannot be met."""


class ServiceError(HtmlRagError):
    """A service the run depends on (a reader or judge endpoint) is unreachable or refuses the credentials:
    every further request would fail the same way, so the run stops with this error (non-zero exit) instead of
    saving one failed row per example. Nothing is lost: a rerun resumes where it stopped."""


class CacheError(ServiceError):
    """A cache file cannot be opened, read or written (a folder in its place, no permission, a read-only file,
    a full disk, locked for too long). The message names the file. Like a service that is down, every further
    lookup would fail the same way, so a run stops at once (a cache is never silently skipped, and a result is
    never computed around it). A file that is merely not a usable SQLite database is not this error: it is set
    aside and rebuilt (:mod:`htmlrag.core.cache`)."""


#: A file or folder that is not what a command needs there (a folder where a file goes, a file where a folder
#: goes, missing, not allowed): its name and the problem are the whole message.
_PLACE_ERRORS = (IsADirectoryError, NotADirectoryError, FileExistsError, FileNotFoundError, PermissionError)


def user_error(exc: BaseException) -> HtmlRagError | None:
    """The error behind ``exc`` that a user can act on from its message alone, for a command's last line: a
    library error (itself, or one a framework wrapped: Hydra's ``InstantiationException`` around a dataset's
    "questions.jsonl:3: ..."), or a file in the way (an OSError naming it, as ``<file>: <reason>``); None for
    anything else (a bug: its traceback is logged)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, HtmlRagError):
            return cur
        if isinstance(cur, _PLACE_ERRORS) and cur.filename:
            return HtmlRagError(os_error_text(cur))
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


#: errno values of a failed write to a stream (stdout) rather than to a named file
_WRITE_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EPIPE, errno.EBADF}


def os_error_text(exc: OSError) -> str:
    """``<file>: <reason>`` for an OSError (a write to stdout without a file name is ``<stdout>``)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        name = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
        return f"{name}: {reason}"
    if exc.errno in _WRITE_ERRNOS:
        return f"<stdout>: cannot write: {reason}"
    return reason
