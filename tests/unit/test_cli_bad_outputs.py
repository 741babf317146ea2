"""Bad options and unwritable outputs of the command lines: one error line naming the option or file, a
non-zero exit (argparse's 2 for options), never a traceback, never an input or a device overwritten.

Covers: upper bounds on every numeric option (``clean``/``tree``/``prune``/``graph``), reading stdin and gzip
in steps (a huge ``--max-page-mb`` allocates nothing), ``--page-prior`` overflow, an output that is an input,
a folder, a device, a FIFO or a socket, a lock file that cannot be made, a full disk behind stdout, output
folders that cannot be made, ``htmlrag-train-data`` outputs, and ``graph query``'s limits and ``--cypher ''``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from htmlrag.cli.main import build_parser, main
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import PageTooLarge, gunzip_capped, read_capped, read_page
from htmlrag.core.locks import hold_or_refuse
from htmlrag.core.options import check_output_dir, check_output_file
from htmlrag.rankers.base import PagePrior, add_page_prior
from htmlrag.superrag.graph.bounds import QueryLimits

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "pages"
PAGE = SAMPLES / "lighthouse.html"
HUGE = "1" + "0" * 30


def run(*args: str, stdin: bytes | None = None, stdout=subprocess.PIPE, cwd: Path | None = None,
        module: str = "htmlrag") -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          timeout=120, cwd=cwd, env=env)


def _refused(capsys: pytest.CaptureFixture, argv: list[str], option: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert f"argument {option}: must be " in err and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------------------------------ numeric bounds
def _numeric_options(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _numeric_options(sub, (*prefix, name))
        elif getattr(action.type, "__name__", "") in ("integer", "number", "workers", "int", "float"):
            yield prefix, action


@pytest.mark.parametrize("command", ["clean", "tree", "prune", "graph"])
def test_every_numeric_option_has_an_upper_bound(command: str) -> None:
    """The class: no numeric option of these commands takes 10^30 (or an unbounded int/float type)."""
    found = [(p, a) for p, a in _numeric_options(build_parser()) if p[0] == command]
    assert found
    for prefix, action in found:
        assert action.type not in (int, float), (prefix, action.option_strings)
        with pytest.raises(argparse.ArgumentTypeError, match=r"<= [0-9,]+|within"):
            action.type(HUGE)


@pytest.mark.parametrize("argv, option", [
    (["clean", "--max-page-mb", "1e13"], "--max-page-mb"),
    (["clean", "--max-page-mb", "30000"], "--max-page-mb"),
    (["clean", str(PAGE), "--max-page-mb", "1e303"], "--max-page-mb"),
    (["tree", str(PAGE), "--max-page-mb", "1e303"], "--max-page-mb"),
    (["tree", str(PAGE), "--max-words", HUGE], "--max-words"),
    (["prune", str(PAGE), "-q", "x", "--max-page-mb", "1e303"], "--max-page-mb"),
    (["prune", "--batch", "b.jsonl", "--out", "o.jsonl", "--max-page-mb", "1e303"], "--max-page-mb"),
    (["prune", str(PAGE), "-q", "x", "--page-prior", "1e39"], "--page-prior"),
    (["prune", str(PAGE), "-q", "x", "--budget", HUGE], "--budget"),
    (["prune", str(PAGE), "-q", "x", "--workers", "100000"], "--workers"),
    (["graph", "query", "q", "--db", "db", "--timeout", "1e300"], "--timeout"),
    (["graph", "query", "q", "--db", "db", "--query-memory-mb", "1e30"], "--query-memory-mb"),
    (["graph", "query", "q", "--db", "db", "--query-memory-mb", "100000000"], "--query-memory-mb"),
    (["graph", "query", "q", "--db", "db", "--max-rows", HUGE], "--max-rows"),
    (["graph", "query", "q", "--db", "db", "--max-hops", HUGE], "--max-hops"),
    (["graph", "build", "x.pdf", "--db", "db", "--chunk-words", HUGE], "--chunk-words"),
])
def test_numbers_too_big_are_refused_when_parsed(argv: list[str], option: str, capsys: pytest.CaptureFixture) -> None:
    err = _refused(capsys, argv, option)
    assert "<=" in err or "within" in err


def test_query_limits_have_upper_bounds() -> None:
    for kw in ({"timeout_s": 1e300}, {"memory_mb": 10**30}, {"memory_mb": 100_000_000}, {"max_rows": 10**30},
               {"max_result_bytes": 10**30}, {"max_list": 10**30}, {"max_string": 10**30}, {"max_hops": 10**30},
               {"timeout_s": True}):
        with pytest.raises(HtmlRagError, match=r"query limit .* (within|<=)"):
            QueryLimits(**kw)
    assert QueryLimits(memory_mb=4096, timeout_s=3600).memory_mb == 4096


# ---------------------------------------------------------------------------------- reading: no big allocation
def test_gunzip_with_a_huge_limit_decompresses_in_steps() -> None:
    data = PAGE.read_bytes()
    assert gunzip_capped(gzip.compress(data), 10**19, "p.gz") == data      # was: OverflowError (ssize_t)
    assert gunzip_capped(gzip.compress(data) + gzip.compress(b"x"), None, "p.gz") == data + b"x"
    bomb = gzip.compress(b"\0" * 5_000_000)
    with pytest.raises(PageTooLarge, match=r"p\.gz: decompresses to more than"):
        gunzip_capped(bomb, 3_000_000, "p.gz")
    assert len(gunzip_capped(bomb, 5_000_000, "p.gz")) == 5_000_000
    with pytest.raises(InputError, match="truncated"):
        gunzip_capped(bomb[:-20], None, "p.gz")


def test_stdin_is_read_in_steps_never_the_limit_at_once() -> None:
    asked: list[int] = []

    class Stream(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            asked.append(n)
            return super().read(n)

    assert read_capped(Stream(b"a" * 3_000_000), 10**13, "<stdin>") == b"a" * 3_000_000
    assert max(asked) <= 1 << 20
    with pytest.raises(PageTooLarge, match="<stdin>: over the"):
        read_capped(Stream(b"a" * 3_000_000), 2_000_000, "<stdin>")


def test_clean_stdin_with_a_big_limit_and_gzip_file(tmp_path: Path) -> None:
    r = run("clean", "--max-page-mb", "10000", stdin=PAGE.read_bytes())
    assert r.returncode == 0 and b"<html>" in r.stdout, r.stderr
    gz = tmp_path / "p.html.gz"
    gz.write_bytes(gzip.compress(PAGE.read_bytes()))
    r = run("clean", str(gz), "--max-page-mb", "10000")
    assert r.returncode == 0 and b"<html>" in r.stdout, r.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_pipe_as_page_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'wb').write(b'<p>' * 1_000_000)"])
    try:
        with pytest.raises(PageTooLarge, match=r"page\.html: over the"):
            read_page(fifo, 100_000)
    finally:
        writer.kill()
        writer.wait()


# ------------------------------------------------------------------------------------------------ page prior
def test_page_prior_overflow_is_refused_not_nan() -> None:
    with np.errstate(all="raise"), pytest.raises(ValueError, match=r"page 2: page prior weight 1000 .* overflows"):
        add_page_prior([np.array([1.0], np.float32), np.array([1.0, 3e38], np.float32)], 1000.0)
    for bad in (float("nan"), float("inf"), 1e39, -1.0):
        with pytest.raises(ValueError, match="page prior weight must be"):
            PagePrior(object(), bad)  # type: ignore[arg-type]
    out = add_page_prior([np.array([1.0, 2.0], np.float32)], 0.5)
    assert out[0].dtype == np.float32 and out[0].tolist() == [2.0, 3.0]


def test_prune_with_the_largest_page_prior_works(capsys: pytest.CaptureFixture) -> None:
    assert main(["prune", str(PAGE), str(SAMPLES / "tea-garden.html"), "-q", "tower", "--budget", "64",
                 "--page-prior", "1000"]) == 0
    assert "NaN" not in capsys.readouterr().err


# ------------------------------------------------------------------------------------ outputs that are inputs
def _pages(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n in names:
        (folder / n).write_bytes(PAGE.read_bytes())
        out.append(folder / n)
    return out


def _intact(*paths: Path) -> None:
    for p in paths:
        assert p.read_bytes() == PAGE.read_bytes(), p


def test_clean_refuses_to_overwrite_its_inputs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    od = tmp_path / "od"
    a, b = _pages(od, "a.html", "b.html")
    assert main(["clean", str(a), str(b), "--out-dir", str(od)]) == 1
    err = capsys.readouterr().err
    assert f"output {od / 'a.html'} is the input {a}" in err and "Traceback" not in err
    _intact(a, b)
    # the same folder by another name, a relative path from elsewhere
    r = run("clean", "a.html", "--out-dir", "../od/.", cwd=od)
    assert r.returncode == 1 and b"is the input" in r.stderr
    _intact(a)
    # an output that is a symlink to the input, or a hard link to it
    src = _pages(tmp_path / "src", "c.html", "d.html")
    out = tmp_path / "out"
    out.mkdir()
    (out / "c.html").symlink_to(src[0])
    os.link(src[1], out / "d.html")
    for page in src:
        assert main(["clean", str(page), "--out-dir", str(out)]) == 1
        assert "is the input" in capsys.readouterr().err
    _intact(*src)


def test_clean_out_dir_still_writes_new_and_old_outputs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a, = _pages(tmp_path / "in", "a.html")
    out = tmp_path / "out"
    (out).mkdir()
    (out / "a.html").write_text("old output")
    assert main(["clean", str(a), "--out-dir", str(out)]) == 0
    assert (out / "a.html").read_text().startswith("<html>")


# ---------------------------------------------------------------------- outputs that are not regular files
def _special_files(folder: Path) -> list[Path]:
    made = []
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "fifo")
        made.append(folder / "fifo")
    if Path("/dev/null").exists():
        (folder / "devlink").symlink_to("/dev/null")
        made.append(folder / "devlink")
    if hasattr(socket, "AF_UNIX") and len(str(folder / "sock")) < 100:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(folder / "sock"))
        s.close()
        made.append(folder / "sock")
    return made


def _batch(tmp_path: Path) -> Path:
    src = tmp_path / "b1.jsonl"
    src.write_text('{"id":1,"question":"x","pages":["<p>hi</p>"]}\n')
    return src


def test_prune_batch_refuses_an_out_that_is_no_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = _batch(tmp_path)
    specials = _special_files(tmp_path)
    assert specials
    for out in specials:
        mode = os.stat(out).st_mode
        assert main(["prune", "--batch", str(src), "--out", str(out), "--budget", "64", "--workers", "1"]) == 1
        err = capsys.readouterr().err
        assert f"--out {out}: is a" in err and "not a regular file" in err, err
        assert stat.S_IFMT(os.stat(out).st_mode) == stat.S_IFMT(mode)          # not replaced by a file
        assert not (out.parent / f".{out.name}.lock").exists()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_clean_refuses_output_files_that_are_no_regular_files(tmp_path: Path) -> None:
    """A FIFO where an output goes would block the run forever (subprocess: the old code hangs here)."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "lighthouse.html")
    r = run("clean", str(PAGE), "--out-dir", str(out))
    assert r.returncode == 1
    assert b"lighthouse.html: is a FIFO (named pipe), not a regular file" in r.stderr and b"Traceback" not in r.stderr
    (out / "lighthouse.html").unlink()
    (out / "lighthouse.html").symlink_to("/dev/null")
    r = run("clean", str(PAGE), "--out-dir", str(out))
    assert r.returncode == 1 and b"is a character device" in r.stderr


def test_check_output_file_and_dir(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    check_output_file(f, "--out")
    check_output_file(tmp_path / "new" / "deeper" / "x.jsonl", "--out")
    with pytest.raises(InputError, match=r"--out .*: is a folder"):
        check_output_file(tmp_path, "--out")
    with pytest.raises(InputError, match=rf"--out .*: {f} is not a folder"):
        check_output_file(f / "a" / "x.jsonl", "--out")
    with pytest.raises(InputError, match="not a folder"):
        check_output_dir(f)
    with pytest.raises(InputError, match=rf"{f} is not a folder"):
        check_output_dir(f / "sub")
    assert check_output_dir(tmp_path / "made" / "here").is_dir()


# ------------------------------------------------------------------------------------------------ lock files
def test_a_lock_file_that_cannot_be_made_is_not_called_busy(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match=r"^cannot write .*file") as exc:
        hold_or_refuse(blocker / "sub" / ".x.lock", "BUSY", InputError)
    assert "BUSY" not in str(exc.value)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ".x.lock").mkdir()  # a folder where the lock file goes
    with pytest.raises(InputError, match=r"^cannot write .*d: "):
        hold_or_refuse(tmp_path / "d" / ".x.lock", "BUSY", InputError)
    held = hold_or_refuse(tmp_path / ".y.lock", "BUSY", InputError)
    try:  # held: still told as busy
        with pytest.raises(InputError, match=r"^BUSY$"):
            hold_or_refuse(tmp_path / ".y.lock", "BUSY", InputError)
    finally:
        held.release()


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_prune_out_in_an_unwritable_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["prune", "--batch", str(_batch(tmp_path)), "--out", "/proc/out.jsonl", "--budget", "64"]) == 1
    err = capsys.readouterr().err
    assert "htmlrag: error: cannot write /proc:" in err and "another htmlrag prune" not in err, err


# ------------------------------------------------------------------------------- outputs that fail to write
def test_out_dir_problems_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    folder_out = tmp_path / "o2"
    (folder_out / "lighthouse.html").mkdir(parents=True)
    cases = [(afile, "not a folder"), (afile / "sub", f"{afile} is not a folder"),
             (folder_out, "lighthouse.html: is a folder")]
    if Path("/proc/self").exists():
        cases.append((Path("/proc/xx"), "cannot make the folder"))
    if Path("/dev/full").exists():
        cases.append((Path("/dev/full/x"), "/dev/full is not a folder"))
    for out_dir, needle in cases:
        assert main(["clean", str(PAGE), "--out-dir", str(out_dir)]) == 1, out_dir
        err = capsys.readouterr().err
        assert err.startswith("htmlrag: error: --out-dir") and needle in err and "Traceback" not in err, err
    assert afile.read_text() == "x"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["clean", str(PAGE)], ["clean"], ["tree", str(PAGE)],
                                  ["prune", str(PAGE), "-q", "lighthouse", "--budget", "64"]])
def test_a_full_disk_behind_stdout_is_one_line(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        r = run(*argv, stdin=PAGE.read_bytes() if argv == ["clean"] else None, stdout=full)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "htmlrag: error: <stdout>: cannot write: No space left on device" in err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_os_errors_with_a_file_name_are_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                                 tmp_path: Path) -> None:
    """The class: any OSError naming a file that a command lets through ends it with ``<file>: <reason>``."""
    import htmlrag.cli.main as cli

    def boom(args: argparse.Namespace) -> int:
        raise PermissionError(13, "Permission denied", str(tmp_path / "x.out"))

    monkeypatch.setattr(cli, "_cmd_tree", boom)
    assert main(["tree", str(PAGE)]) == 1
    err = capsys.readouterr().err
    assert err == f"htmlrag: error: {tmp_path / 'x.out'}: Permission denied\n"


def test_train_data_outputs_that_cannot_be_written(tmp_path: Path) -> None:
    from htmlrag_bench.training.data import write_jsonl

    existing = tmp_path / "exists.jsonl"
    existing.write_text("x")
    r = run("--pages", str(SAMPLES / "questions.jsonl"), "--out", str(existing), "--limit", "1", "--no-progress",
            module="htmlrag_bench.training.build_data")
    err = r.stderr.decode()
    assert r.returncode == 1 and f"{existing}: not a folder" in err and "Traceback" not in err, err
    with pytest.raises(InputError, match=r"is a folder"):
        write_jsonl([{"a": 1}], tmp_path)
    with pytest.raises(InputError, match=rf"{existing} is not a folder"):
        write_jsonl([{"a": 1}], existing / "x.jsonl")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(InputError, match="FIFO"):
            write_jsonl([{"a": 1}], tmp_path / "fifo")
        assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    assert write_jsonl([{"a": 1}], tmp_path / "new" / "ok.jsonl") == 1


# ---------------------------------------------------------------------------------------------- graph query
def test_graph_query_refuses_an_empty_cypher(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for text in ("", "   ", "\n"):
        assert main(["graph", "query", "q", "--db", str(tmp_path / "db"), "--cypher", text]) == 2
        err = capsys.readouterr().err
        assert "htmlrag: error: --cypher: empty query" in err, err


def test_graph_build_tells_how_to_use_a_damaged_pdf() -> None:
    from htmlrag.cli.graph import _cli_error

    msg = _cli_error("x.pdf: PDF is truncated (no %EOF marker at the end); pages or text may be missing "
                     "(pass repair=True to accept)")
    assert "repair=True" not in msg and msg.startswith("x.pdf: PDF is truncated") and "repair it first" in msg


def test_train_data_names_a_bad_out_before_building_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO (or a file) where htmlrag-train-data's output folder goes is refused before any sample is built."""
    import os

    import htmlrag_bench.training.build_data as bd

    built = []
    monkeypatch.setattr(bd, "build_samples", lambda *a, **k: built.append(1) or ([], None))
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    pages = Path(__file__).resolve().parents[2] / "data" / "pages" / "questions.jsonl"
    assert bd.main(["--pages", str(pages), "--out", str(fifo), "--limit", "1", "--no-progress"]) == 1
    assert not built
