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


def test_tabling_one_run_never_overwrites_the_runs_own_tables(tmp_path: Path) -> None:
    """`htmlrag-bench-table RUN_DIR` wrote the multi-run layout over the run's own tables/ (verify then failed
    the run); without --out a run folder is refused, with --out it is tabled there."""
    import shutil

    run = sorted(p.parent for p in (ROOT / "results" / "frontier_wtq").glob("*/metrics.json"))[0]
    copy = Path(shutil.copytree(run, tmp_path / "frontier_wtq" / run.name))
    before = {p.name: p.read_bytes() for p in (copy / "tables").iterdir() if p.is_file()}
    out = _run("htmlrag_bench.eval.table", str(copy))
    assert out.returncode == 2 and "is a run folder" in out.stderr, out.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in (copy / "tables").iterdir() if p.is_file()} == before
    ok = _run("htmlrag_bench.eval.table", str(copy), "--out", str(tmp_path / "t"))
    assert ok.returncode == 0 and (tmp_path / "t" / "results.md").is_file(), ok.stderr[-2000:]


def test_figure5_refuses_a_run_without_its_config_naming_it(tmp_path: Path) -> None:
    import shutil

    runs = sorted(p.parent for p in (ROOT / "results" / "frontier_wtq").glob("*/metrics.json"))
    for r in runs:
        shutil.copytree(r, tmp_path / "exp" / r.name)
    bad = tmp_path / "exp" / runs[0].name / "config.yaml"
    bad.unlink()
    bad.mkdir()  # a folder where config.yaml goes
    out = _run("htmlrag_bench.eval.paper", "figure5", str(tmp_path / "exp"), "--out", str(tmp_path / "f.png"))
    assert out.returncode == 2 and "Traceback" not in out.stderr and "config.yaml" in out.stderr, out.stderr[-2000:]
