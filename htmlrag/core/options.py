"""Checked numeric options for every command line (``htmlrag``, its ``prune``/``graph``/``serve`` commands, and the
harness's and training's commands).

``argparse`` calls these as the option's ``type``: a value that is not a number, is NaN or infinite, or lies
outside the option's range is refused at parsing with ``<prog>: error: argument --budget: must be an integer
>= 1, got '0'`` and exit status 2 -- before any model or file is loaded, and never blamed on a later stage.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from htmlrag.core.errors import InputError, os_error_text


def _fmt(v: float) -> str:
    """A bound for messages: ``10,000,000``, ``0.5``, ``1e+300``."""
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e16 else f"{v:g}"


def _range_text(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"within {_fmt(lo)}-{_fmt(hi)}" if not lo_open else f"> {_fmt(lo)} and <= {_fmt(hi)}"
    if lo is not None:
        return f"> {_fmt(lo)}" if lo_open else f">= {_fmt(lo)}"
    return f"<= {_fmt(hi)}" if hi is not None else ""


def _wants(kind: str, lo: float | None, hi: float | None, lo_open: bool = False) -> tuple[str, str, str]:
    """What a refused value must be: (not a number at all, too small or not finite, too big). A number out of
    range is told the bound it crossed; anything else the whole range."""
    def text(rng: str) -> str:
        return f"{kind} {rng}" if rng else kind

    return (text(_range_text(lo, hi, lo_open)), text(_range_text(lo, None, lo_open) if lo is not None else ""),
            text(_range_text(None, hi)))


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An option type: an integer within ``[lo, hi]`` (either bound may be open-ended)."""
    want, want_low, want_high = _wants("an integer", lo, hi)

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if lo is not None and value < lo:
            raise argparse.ArgumentTypeError(f"must be {want_low}, got {text!r}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be {want_high}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> Callable[[str], float]:
    """An option type: a finite number within ``[lo, hi]`` (``lo_open``: strictly above ``lo``); NaN and
    infinities are refused."""
    want, want_low, want_high = _wants("a finite number", lo, hi, lo_open)

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be {want}, got {text!r}")
        if lo is not None and (value <= lo if lo_open else value < lo):
            raise argparse.ArgumentTypeError(f"must be {want_low}, got {text!r}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be {want_high}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


#: Most processes ``--workers`` starts.
MAX_WORKERS = 1024


def workers(text: str) -> str | int:
    """``--workers``: ``auto`` or an integer within 1-:data:`MAX_WORKERS`."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return integer(1, MAX_WORKERS)(text)
    except argparse.ArgumentTypeError as exc:
        bound = f"<= {MAX_WORKERS:,}" if "<=" in str(exc) else ">= 1"
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer {bound}, got {text!r}") from None


workers.__name__ = "workers"


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def check_output_file(path: str | Path, what: str = "output") -> None:
    """Refuse an output file that cannot be (re)written as a regular file: an existing folder, device, FIFO or
    socket at ``path`` (a symlink is followed; outputs are replaced by a rename, which would replace a device
    such as ``/dev/null`` with a file), or a folder on its way that is a file.

    Args:
        path: the output file.
        what: how messages name it (``--out``, ``output``).

    Raises:
        InputError: names ``path`` and the problem.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        _check_parent(p, what)
        return
    except NotADirectoryError:
        _check_parent(p, what)
        raise InputError(f"{what} {p}: a folder on its path is a file") from None
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot write: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{what} {p}: is a folder; give a file name")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise InputError(f"{what} {p}: is {kind}, not a regular file; give the path of a file to write")


def _check_parent(p: Path, what: str) -> None:
    for parent in p.absolute().parents:
        try:
            st = os.stat(parent)
        except (FileNotFoundError, NotADirectoryError):
            continue  # made when the file is written, or a file on the way found further up
        except OSError as exc:
            raise InputError(f"{what} {p}: cannot write in {parent}: {exc.strerror or exc}") from exc
        if not stat.S_ISDIR(st.st_mode):
            raise InputError(f"{what} {p}: {parent} is not a folder")
        return


def check_output_dir(path: str | Path, what: str = "--out-dir") -> Path:
    """Make the output folder ``path`` (and its parents) unless it exists.

    Raises:
        InputError: ``path`` (or a folder on its way) is a file, or cannot be made (names it and the reason).
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {p}: not a folder (a file is in the way); give a folder, new or existing")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        _check_parent(p, what)
        raise InputError(f"{what} {p}: a folder on its path is a file") from None
    except OSError as exc:
        raise InputError(f"{what} {p}: cannot make the folder: {exc.strerror or exc}") from exc
    return p


def run_writing(prog: str, body: Callable[[], int]) -> int:
    """Run a console command's ``body`` (its exit status), so that an output that cannot be written -- a full
    disk, a read-only folder, a folder where a file goes, stdout included -- ends it with ``<prog>: error:
    <file>: <reason>`` and status 1, never a traceback; a closed pipe (``... | head``) ends it quietly, 0."""
    try:
        code = body()
        sys.stdout.flush()  # a full disk behind stdout shows here, not at exit
        return code
    except BrokenPipeError:  # `htmlrag clean x.html | head`
        _drop_stdout()
        return 0
    except OSError as exc:
        _drop_stdout()
        print(f"{prog}: error: {os_error_text(exc)}", file=sys.stderr)
        return 1


def _drop_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush of unwritten output (to a closed pipe
    or a full disk) does not print a second error at exit."""
    if sys.stdout is not sys.__stdout__:  # replaced (a test's capture): not ours to redirect
        return
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or already closed
        pass


