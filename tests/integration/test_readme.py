"""The README's examples work as written: every block marked ``<!-- runnable -->`` in README.md and docs/*.md
runs, in document order, in a fresh-clone layout with no ``../shared`` next to it.

The clone is the tracked files (``git ls-files``, as they are in the working tree) copied into an empty
temporary folder; the commands are this venv's console scripts, importing the copy (``PYTHONPATH``). The two
set-up commands are not run here (they install; CI runs them, ``.ci/run``), but they must be the two commands
CI runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.docs import Block, fenced_blocks

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK_TIMEOUT_S = 600


def runnable_blocks() -> list[Block]:
    return [b for path in DOCS for b in fenced_blocks(path) if b.runnable]


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc}): cannot build a fresh-clone layout")
    return [f for f in out.decode().split("\0") if f]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The tracked files in ``<tmp>/htmlrag-bench``; ``<tmp>`` holds nothing else (no ``shared/``)."""
    if not (BIN / "htmlrag").exists():
        pytest.skip(f"console scripts not installed in {BIN} (pip install -e .)")
    dest = tmp_path_factory.mktemp("fresh") / "htmlrag-bench"
    for rel in tracked_files():
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert not (dest.parent / "shared").exists()
    return dest


def clone_env(clone: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HTMLRAG_") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(clone), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="disabled",
               TOKENIZERS_PARALLELISM="false", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "python"), "-"] if block.lang == "python" else ["bash", "-e", "-o", "pipefail", "-s"]
    return subprocess.run(cmd, input=block.code, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S)


def test_the_clone_imports_its_own_code(clone: Path):
    out = subprocess.run([str(BIN / "python"), "-c", "import eval, htmlrag; print(htmlrag.__file__, eval.__file__)"],
                         cwd=clone, env=clone_env(clone), capture_output=True, text=True, check=True).stdout
    assert all(Path(p).is_relative_to(clone) for p in out.split()), out


@pytest.mark.parametrize("block", runnable_blocks(), ids=lambda b: b.name)
def test_runnable_block(block: Block, clone: Path):
    proc = run_block(block, clone, clone_env(clone))
    assert proc.returncode == 0, (
        f"{block.name} ({block.lang}) exited {proc.returncode}:\n{block.code}\n"
        f"--- stdout (tail) ---\n{proc.stdout[-3000:]}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )


def test_readme_has_runnable_examples():
    readme = [b for b in runnable_blocks() if b.path.name == "README.md"]
    assert len(readme) >= 6, [b.name for b in readme]


def test_setup_commands_are_the_ones_ci_runs():
    """README's two set-up blocks are, up to pip's ``-q``, the two commands of ``.ci/run`` (which then also
    verifies the committed runs, ``htmlrag-paper verify results/``: not a set-up step, the README says so)."""
    blocks = [b for b in fenced_blocks(ROOT / "README.md") if not b.runnable]
    setup = [b.code.strip() for b in blocks[:2]]
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ".venv/bin/htmlrag-paper verify results/" in lines
    ci = [line.replace(" install -q ", " install ") for line in lines
          if line.startswith((".venv/", "python3 -m venv", "HF_HUB_OFFLINE=1 .venv/")) and "htmlrag-paper verify" not in line]
    assert setup == ci
