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
        error: another process holds ``path`` (``busy``), or the lock file cannot be made (``cannot write
            <folder>: <reason>``: a read-only or missing folder, a file in the way).
    """
    import os

    from filelock import FileLock, Timeout

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # filelock reports a lock file it cannot create as a Timeout, the same as one another process holds:
        # create it here first, so that a Timeout below can only mean "held"
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))
    except OSError as exc:
        raise error(f"cannot write {path.parent}: {exc.strerror or exc} (the lock file {path.name} goes there)"
                    ) from exc
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise error(busy) from exc
    return lock
