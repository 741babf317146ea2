"""The results browser's Markdown renderer takes time linear in its input (a run's ``tables/*.md`` is not trusted):
before, the lazy regexes of ``*italic*``, ``<u>`` and the table delimiter row re-scanned the rest of the line from
every opening mark without a closing one ("*x " * 8000: 5.7 s, "<u>" * 8000: 8.3 s; a 48 KB notes.md made a run
page take 30 s). The output is the same as the regexes gave (checked against them on random text and on every
committed ``results/**/*.md``)."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest

pytest.importorskip("markupsafe")

from htmlrag.app import markdown
from htmlrag.app.markdown import inline, render

ROOT = Path(__file__).resolve().parents[2]

# the regexes the renderer used before (the reference of the output)
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])")
_U = re.compile(r"&lt;u&gt;(.*?)&lt;/u&gt;")
_DELIM = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def reference_inline(text: str) -> str:
    out = html.escape(text, quote=True)
    out = _U.sub(r"<u>\1</u>", out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _ITALIC.sub(r"<em>\1</em>", out)


ADVERSARIAL = {
    "italic openers without closers": "*x " * 8000,
    "underline openers without closers": "<u>" * 8000,
    "underline and italic mixed": "*a <u> " * 6000,
    "openers on many lines": ("*x " * 200 + "\n") * 40,
    "a table whose cells open marks": "| a | b |\n|---|---|\n" + "| *x <u> " * 3000 + "|\n",
    "a delimiter row with a long run of spaces": "| a |\n|--- " + " " * 20000 + "x\n",
    "bold openers": "**x " * 8000,
}


def test_adversarial_tables_render_within_a_cpu_cap() -> None:
    """Every adversarial text, sixteen times over, rendered in a child process capped at 30 CPU-seconds: the
    regexes needed hours for these (8.3 s for 8,000 ``<u>``, growing with the square of the input), the scanners
    milliseconds. (A resource cap 100x above the cost, not a timing figure: those are in the commit log.)"""
    import pickle
    import subprocess
    import sys

    script = (
        "import pickle, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (30, 30))\n"
        "from htmlrag.app.markdown import render\n"
        "for text in pickle.load(sys.stdin.buffer):\n"
        "    render(text * 16)\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(list(ADVERSARIAL.values())),
                         capture_output=True, timeout=300)
    out.stdout, out.stderr = out.stdout.decode(), out.stderr.decode()
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr[-2000:]


ALPHABET = ["*", "**", "x", " ", "\n", "_", "<u>", "</u>", "|", "---", ":", "é", "\t", "a*", "*b", "&", "\u00a0",
            "1", "<", "u>"]


def test_inline_gives_what_the_regexes_gave_on_random_text() -> None:
    rng = random.Random(7)
    for _ in range(20000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        assert inline(text) == reference_inline(text), repr(text)
        assert markdown._is_delim(text) == bool(_DELIM.match(text.strip())), repr(text)


def test_committed_markdown_renders_as_before() -> None:
    files = sorted((ROOT / "results").rglob("*.md"))
    if not files:
        pytest.skip("no committed results")
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        for line in text.split("\n"):
            assert markdown._is_delim(line) == bool(_DELIM.match(line.strip())), (f, line)
            for part in [line, *line.split("|")]:
                assert inline(part.strip()) == reference_inline(part.strip()), (f, part)
        assert "<em>" in str(render("*a*")) and "<u>b</u>" in str(render("<u>b</u>"))
