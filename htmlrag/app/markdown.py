"""A small, safe Markdown renderer for the subset our table writers emit (``tables/*.md`` of a run).

Supported: paragraphs (blank-line separated), GitHub pipe tables (a header row, a ``|---|---:|`` delimiter row
with left/right/centre alignment, then rows), ``**bold**``, ``*italic*`` and the underline tag ``<u>...</u>``;
the dagger ``†`` and any other text are kept as text. Everything is HTML-escaped first: no raw HTML from a
file reaches the page except ``<u>`` and ``</u>``, which are re-enabled on the escaped text. Numeric cells can
be given a ``title`` (the full value on hover) by the caller's ``title_of(row label, column header, cell)``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from markupsafe import Markup

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])")
_U = re.compile(r"&lt;u&gt;(.*?)&lt;/u&gt;")
_DELIM = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def inline(text: str) -> str:
    """Escaped ``text`` with bold, italic and ``<u>`` underline."""
    out = html.escape(text, quote=True)
    out = _U.sub(r"<u>\1</u>", out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _ITALIC.sub(r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip() for c in body.split("|")]


def _align(delim: str) -> str:
    d = delim.strip()
    if d.startswith(":") and d.endswith(":"):
        return "center"
    return "right" if d.endswith(":") else "left"


TitleOf = Callable[[str, str, str], "str | None"]


def _table(lines: list[str], title_of: TitleOf) -> str:
    head = _cells(lines[0])
    aligns = [_align(d) for d in _cells(lines[1])]
    out = ['<div class="scroll"><table class="grid md">', "<thead><tr>"]
    for i, h in enumerate(head):
        out.append(f'<th{_cls(aligns, i)}>{inline(h)}</th>')
    out.append("</tr></thead><tbody>")
    for line in lines[2:]:
        cells = _cells(line)
        out.append("<tr>")
        for i, c in enumerate(cells):
            title = title_of(cells[0], head[i] if i < len(head) else "", c) if c and i else None
            attr = f' title="{html.escape(title, quote=True)}"' if title else ""
            out.append(f'<td{_cls(aligns, i)}{attr}>{inline(c)}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _cls(aligns: list[str], i: int) -> str:
    name = {"right": "n", "center": "c"}.get(aligns[i] if i < len(aligns) else "left", "")
    return f' class="{name}"' if name else ""


def render(text: str, title_of: TitleOf | None = None) -> Markup:
    """HTML for Markdown ``text`` (module docstring). ``title_of(row label, header, cell)`` may give a cell's
    hover text (the first column is never given one)."""
    title_of = title_of or (lambda _r, _h, _c: None)
    blocks: list[str] = []
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and _DELIM.match(lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            blocks.append(_table(lines[i:j], title_of))
            i = j
            continue
        j = i
        while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith("|"):
            j += 1
        j = max(j, i + 1)
        blocks.append("<p>" + "<br>".join(inline(x.strip()) for x in lines[i:j]) + "</p>")
        i = j
    return Markup("\n".join(blocks))
