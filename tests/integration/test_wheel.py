"""The built wheel runs outside a checkout: configs and samples ship with it, results go where the user works,
and it installs no top-level names but ``htmlrag`` and ``htmlrag_bench``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    left = not (ROOT / "build").exists()  # setuptools builds in the checkout's build/: the test leaves none behind
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                        "-w", str(out)], check=True, capture_output=True, text=True, timeout=600)
    finally:
        if left:
            shutil.rmtree(ROOT / "build", ignore_errors=True)
    (whl,) = out.glob("htmlrag_bench-*.whl")
    return whl


def test_wheel_holds_every_package_configs_and_samples_and_no_stray_top_level_names(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"htmlrag", "htmlrag_bench"}
    assert "htmlrag_bench/conf/config.yaml" in names
    assert "htmlrag_bench/conf/experiment/quickstart.yaml" in names
    assert not any(n.startswith("htmlrag_bench/conf/local/") and n.endswith(".yaml") for n in names)
    assert "htmlrag_bench/samples/pages/lighthouse.html" in names
    assert any(n.startswith("htmlrag_bench/samples/pdfs/docs/") and n.endswith(".pdf") for n in names)
    # every package folder of the checkout is listed in pyproject.toml and so lands in the wheel
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "htmlrag").rglob("__init__.py")}
    folders |= {"htmlrag_bench." + ".".join(p.parent.relative_to(ROOT).parts)
                for d in ("eval", "training") for p in (ROOT / d).rglob("__init__.py")}
    assert folders <= listed, f"package folders missing from pyproject.toml: {sorted(folders - listed)}"
    for pkg in listed:
        assert any(n.startswith(pkg.replace(".", "/") + "/") for n in names), pkg


def test_installed_wheel_runs_the_quickstart_from_an_empty_folder(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python*/site-packages"))
    # the dependencies of this environment (no downloads here), but not its editable copy of the project: a
    # folder named in a .pth file is searched, but its own .pth files (the editable finder's) are not run
    deps = [p for p in sys.path if p.endswith("site-packages")] or [sysconfig.get_paths()["purelib"]]
    (site / "zz_deps.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300,
                   capture_output=True)
    work = tmp_path / "empty"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HTMLRAG_") and k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled")
    where = subprocess.run([str(py), "-c", "import htmlrag, htmlrag_bench.eval; print(htmlrag.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert str(site) in where.stdout, where.stdout + where.stderr  # the wheel's copy, not the checkout's
    assert subprocess.run([str(py), "-c", "import eval.app"], cwd=work, env=env, capture_output=True,
                          timeout=60).returncode != 0  # no top-level 'eval' package
    run = subprocess.run([str(venv / "bin" / "htmlrag-bench"), "experiment=quickstart", "run.progress=false"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    runs = list((work / "results" / "quickstart").glob("*/metrics.json"))
    assert len(runs) == 1, sorted(p.as_posix() for p in work.rglob("*"))[:40]
    assert not list((site / "htmlrag_bench").rglob("metrics.json"))  # nothing written into the installed code
    _the_other_commands_run(venv / "bin", work, env, site)


def _run_tool(bin_dir: Path, args: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    out = subprocess.run([str(bin_dir / args[0]), *args[1:]], cwd=work, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, (args, out.stdout[-2000:] + out.stderr[-3000:])
    return out


def _the_other_commands_run(bin_dir: Path, work: Path, env: dict[str, str], site: Path) -> None:
    """Every console script of the wheel, from the empty folder: tables from the saved run, the data registry,
    the tiny model, the library's commands on the shipped samples, and the web app serving them."""
    _run_tool(bin_dir, ["htmlrag-bench-table", "results/quickstart"], work, env)
    assert (work / "results" / "quickstart" / "tables" / "provenance.csv").is_file()
    _run_tool(bin_dir, ["htmlrag-paper", "table", "results/quickstart"], work, env)
    assert (work / "results" / "quickstart" / "tables" / "paper.md").is_file()
    where = _run_tool(bin_dir, ["htmlrag-data", "where"], work, env)
    assert str(work) in where.stdout and str(site) not in where.stdout   # downloads go where the user works
    assert "quickstart" in _run_tool(bin_dir, ["htmlrag-data", "list"], work, env).stdout
    _run_tool(bin_dir, ["htmlrag-train-tiny-model", "--out", "tiny"], work, env)
    assert (work / "tiny" / "config.json").is_file()
    page = site / "htmlrag_bench" / "samples" / "pages" / "lighthouse.html"
    pruned = _run_tool(bin_dir, ["htmlrag", "prune", str(page), "-q", "Who designed the lighthouse?", "--budget",
                                 "64"], work, env)
    assert "Margaret Ellis" in pruned.stdout
    _serve_answers(bin_dir, work, env)
    assert not list(site.rglob("htmlrag-app"))   # the app's corpus folder is made where the user works


def _serve_answers(bin_dir: Path, work: Path, env: dict[str, str]) -> None:
    """``htmlrag serve`` starts, lists the shipped sample pages, prunes one and browses the saved run."""
    import json
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(bin_dir / "htmlrag"), "serve", "--port", str(port), "--embedding-model",
                             "hashing-256", "--vector-backend", "numpy"], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/samples", timeout=5) as r:
                    samples = json.loads(r.read())
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.5)
        assert "lighthouse.html" in samples   # the samples shipped in the wheel
        body = json.dumps({"sample": "lighthouse.html", "question": "Who designed it?", "budget": 64}).encode()
        req = urllib.request.Request(f"{base}/api/prune", body, {"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert json.loads(r.read())["tokens"]["pruned"] <= 64
        with urllib.request.urlopen(f"{base}/api/results", timeout=30) as r:
            assert [e["name"] for e in json.loads(r.read())] == ["quickstart"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
