"""The htmlrag command line: clean/tree, one bad page never stops the batch."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "pages"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "htmlrag", *args], input=stdin, capture_output=True, timeout=120)


def test_clean_stdin_to_stdout():
    r = run("clean", stdin=b"<div><div><p>Hi <span>there</span></p></div></div><script>x()</script>")
    assert r.returncode == 0
    assert r.stdout.decode().strip() == "<html><body><p>Hi there</p></body></html>"


def test_clean_many_files_one_bad(tmp_path: Path, capsys):
    good = tmp_path / "a.html"
    good.write_text("<p>alpha</p>")
    gz = tmp_path / "b.html.gz"
    gz.write_bytes(gzip.compress(b"<p>beta</p>"))
    broken = tmp_path / "c.html.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    binary = tmp_path / "d.html"
    binary.write_bytes(b"\x00\x01\x02" * 50)
    out = tmp_path / "out"
    code = main(["clean", str(good), str(tmp_path / "missing.html"), str(gz), str(broken), str(binary),
                 "--out-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert (out / "a.html").read_text() == "<html><body><p>alpha</p></body></html>"
    assert (out / "b.html").read_text() == "<html><body><p>beta</p></body></html>"
    lines = [ln for ln in err.splitlines() if ln.startswith("htmlrag: error:")]
    assert len(lines) == 3
    assert "missing.html: no such file" in err and "c.html.gz: broken gzip" in err and "d.html" in err
    assert "Traceback" not in err


def test_several_paths_need_out_dir(capsys):
    assert main(["clean", str(SAMPLES / "lighthouse.html"), str(SAMPLES / "tea-garden.html")]) == 2


def test_tree_json(capsys):
    assert main(["tree", str(SAMPLES / "lighthouse.html"), "--max-words", "20", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["max_words"] == 20
    paths = [b["path"] for b in data["blocks"]]
    assert "<html><title>" in paths and any("<table" in p for p in paths)
    assert len(data["blocks"]) >= 10 and sum(b["words"] for b in data["blocks"]) > 100


def test_python_dash_m_help():
    r = run("--help")
    assert r.returncode == 0 and b"clean" in r.stdout and b"prune" in r.stdout


def test_prune_split_to_fill_option(tmp_path: Path, capsys):
    """``--split-to-fill 0`` is the paper's rule; both stay within the budget; a negative count is refused
    with a message naming the option, before any page is pruned."""
    rows = "".join(f"<tr><td>Player {i}</td><td>{'filler ' * 12}</td></tr>" for i in range(8))
    page = tmp_path / "p.html"
    page.write_text("<html><body><p>" + "intro words about golf " * 12 + "</p><table><tr><th>Place</th></tr>"
                    + rows + "<tr><td>Horton Smith</td><td>last in the top ten</td></tr></table>"
                    "<p>footer links to other pages of this site and more</p></body></html>")
    base = ["prune", str(page), "-q", "golf intro", "--budget", "250", "--max-words", "130", "--format", "text"]
    contexts = {}
    for n in ("0", "4"):
        assert main([*base, "--split-to-fill", n]) == 0
        contexts[n] = capsys.readouterr().out
    assert "intro words" in contexts["0"] and "intro words" in contexts["4"]
    # the table (one block) misses the room the intro leaves; with splitting its rows fill that room
    assert "Player" not in contexts["0"] and "Player 0" in contexts["4"]
    with pytest.raises(SystemExit) as exit_:  # refused when parsed (htmlrag.core.options), exit 2
        main([*base, "--split-to-fill", "-1"])
    assert exit_.value.code == 2
    assert "argument --split-to-fill: must be an integer >= 0, got '-1'" in capsys.readouterr().err


def test_hidden_text_is_dropped_unless_kept(tmp_path: Path, capsys):
    """Cleaning drops text hidden by markup (a table's display:none sort keys); ``--keep-hidden`` keeps it,
    in ``htmlrag clean`` and in ``htmlrag prune``."""
    page = tmp_path / "t.html"
    page.write_text("<html><body><table><tr><th>Country</th><th>GDP</th></tr><tr><td>Algeria</td><td>"
                    "<span style='display:none' class='sortkey'>7002188700000000000188.7</span>188.7</td></tr>"
                    "</table></body></html>")
    for cmd in (["clean", str(page)], ["prune", str(page), "-q", "gdp of algeria", "--budget", "200"]):
        assert main(cmd) == 0
        out = capsys.readouterr().out
        assert "188.7" in out and "7002188700000000000188.7" not in out
        assert main([*cmd, "--keep-hidden"]) == 0
        assert "7002188700000000000188.7" in capsys.readouterr().out
