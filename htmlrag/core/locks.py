"""Lock files that keep a second process out of a folder another one is writing.

:func:`hold_or_refuse` takes a lock file for this process or raises at once when another process holds it (a
second ``htmlrag prune`` on the same ``--out``, a second graph system on one corpus, a resubmitted training
run). The operating system releases the lock when its holder ends or dies, so a killed run never leaves a
stale lock behind. Built on ``filelock`` (``flock`` on POSIX, ``msvcrt`` locking on Windows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError


def hold_or_refuse(path: str | Path, busy: str, error: type[Exception] = HtmlRagError) -> Any:
    """Hold the lock file ``path`` (its folder made) until ``.release()`` or the process ends.

    Args:
        path: the lock file.
        busy: the message when another process holds it (say what is busy and what to do).
        error: the exception type raised then.

    Returns:
        The held ``filelock.FileLock``.

    Raises:
        error: another process holds ``path``.
    """
    from filelock import FileLock, Timeout

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise error(busy) from exc
    return lock
