"""Every console entry point reports an output it cannot write -- a full disk behind stdout, a file where its
output folder goes -- in one line ``<prog>: error: <file>: <reason>``, exit 1, no traceback
(htmlrag.core.options.run_writing); and every numeric option of ``htmlrag serve`` has an upper bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")


def _run(module: str, *args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())", *args],
                          cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


@needs_full
@pytest.mark.parametrize(("module", "args", "prog"), [
    ("htmlrag_bench.eval.data_cli", ["where"], "htmlrag-data"),
    ("htmlrag_bench.eval.paper", ["verify", "results/frontier_wtq"], "htmlrag-paper"),
    ("htmlrag.cli.main", ["clean", "data/pages/lighthouse.html"], "htmlrag"),
])
def test_a_full_disk_behind_stdout_is_one_line(module: str, args: list[str], prog: str) -> None:
    with FULL.open("w") as full:
        out = _run(module, *args, stdout=full)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and f"{prog}: error: <stdout>: cannot write" in out.stderr, out.stderr


@pytest.mark.parametrize(("module", "args", "prog"), [
    ("htmlrag_bench.eval.table", ["results/frontier_wtq", "--out", "{file}/tables"], "htmlrag-bench-table"),
    ("htmlrag_bench.eval.paper", ["table", "results/frontier_wtq", "--out", "{file}/tables"], "htmlrag-paper"),
])
def test_a_file_where_the_output_folder_goes_is_one_line(tmp_path: Path, module: str, args: list[str],
                                                         prog: str) -> None:
    (tmp_path / "afile").write_text("x")
    out = _run(module, *(a.format(file=tmp_path / "afile") for a in args))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"{prog}: error: {tmp_path / 'afile'}" in out.stderr


@pytest.mark.parametrize("option", ["--max-new-tokens", "--max-upload-mb", "--max-html-mb", "--max-pdf-pages",
                                    "--max-files", "--max-library-mb", "--cypher-max-hops", "--cypher-timeout"])
def test_every_number_htmlrag_serve_takes_has_an_upper_bound(option: str, capsys: pytest.CaptureFixture) -> None:
    from htmlrag.cli.main import build_parser

    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", option, "1e30"])
    assert exit_.value.code == 2 and option in capsys.readouterr().err


def test_verify_read_by_a_pipe_that_closes_early_still_fails_a_failed_run(tmp_path: Path) -> None:
    """`htmlrag-paper verify results/ | head`: the verdict is the exit status even when nobody reads the lines."""
    import shutil

    run = sorted(p.parent for p in (ROOT / "results" / "frontier_wtq").glob("*/metrics.json"))[0]
    copy = Path(shutil.copytree(run, tmp_path / "frontier_wtq" / run.name))
    (copy / "tables" / "results.tex").unlink()  # a table missing: verify fails the run
    for target, want in ((run, 0), (copy, 1)):
        p = subprocess.Popen([sys.executable, "-m", "htmlrag_bench.eval.paper", "verify", "-q", str(target)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        p.stdout.close()  # the reader is gone before the verdict is printed
        assert p.wait(timeout=300) == want
