"""A small, safe Markdown renderer for the subset our table writers emit (``tables/*.md`` of a run).

Supported: paragraphs (blank-line separated), GitHub pipe tables (a header row, a ``|---|---:|`` delimiter row
with left/right/centre alignment, then rows), ``**bold**``, ``*italic*`` and the underline tag ``<u>...</u>``;
the dagger ``†`` and any other text are kept as text. Everything is HTML-escaped first: no raw HTML from a
file reaches the page except ``<u>`` and ``</u>``, which are re-enabled on the escaped text. Numeric cells can
be given a ``title`` (the full value on hover) by the caller's ``title_of(row label, column header, cell)``.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable

from markupsafe import Markup

# Every step below takes time linear in its input (a results file is not trusted to be small or well formed):
# ``<u>`` and ``*italic*`` are found by scanning, not by lazy regexes, which re-scan the rest of the line from
# every opening mark that has no closing one ("*x " * 8000 took 5.7 s, "<u>" * 8000 8.3 s).
_BOLD = re.compile(r"\*\*(.+?)\*\*")  # (every "**" can close the one before it: no re-scan)
_CELL_DELIM = re.compile(r":?-{3,}:?")
_U_OPEN, _U_CLOSE = "&lt;u&gt;", "&lt;/u&gt;"


def _underline(text: str) -> str:
    """``&lt;u&gt;x&lt;/u&gt;`` -> ``<u>x</u>``: each opening tag with the nearest closing one after it on the
    same line (what ``re.sub(r"&lt;u&gt;(.*?)&lt;/u&gt;", ...)`` gives), in one pass."""
    out, pos, n = [], 0, len(text)
    while pos < n:
        o = text.find(_U_OPEN, pos)
        if o < 0:
            break
        c = text.find(_U_CLOSE, o + len(_U_OPEN))
        if c < 0:
            break  # no closing tag after this one: none after any later one either
        nl = text.find("\n", o, c)
        if nl >= 0:  # every opening tag before that line break would meet the same closing tag
            out.append(text[pos:nl + 1])
            pos = nl + 1
            continue
        out.append(text[pos:o] + "<u>" + text[o + len(_U_OPEN):c] + "</u>")
        pos = c + len(_U_CLOSE)
    out.append(text[pos:])
    return "".join(out)


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _italic(text: str) -> str:
    """``*x*`` -> ``<em>x</em>`` where the opening ``*`` follows no word character or ``*`` and precedes no
    space, and the closing one (the nearest after it on the line) follows no space and precedes no word
    character or ``*`` -- what ``re.sub(r"(?<![*\\w])\\*(?!\\s)(.+?)(?<!\\s)\\*(?![*\\w])", ...)`` gives, in
    linear time (the closing marks and line breaks are listed once, then each opening one is looked up)."""
    n = len(text)
    if "*" not in text:
        return text
    stars = [i for i, ch in enumerate(text) if ch == "*"]
    closers = [q for q in stars if q > 0 and not text[q - 1].isspace()
               and not (q + 1 < n and (text[q + 1] == "*" or _word(text[q + 1])))]
    breaks = [i for i, ch in enumerate(text) if ch == "\n"]
    out, pos = [], 0
    for p in stars:
        if p < pos:
            continue
        if (p > 0 and (text[p - 1] == "*" or _word(text[p - 1]))) or p + 1 >= n or text[p + 1].isspace():
            continue
        k = bisect.bisect_left(closers, p + 2)
        if k == len(closers):
            break  # no closing mark after this one: none after any later one either
        q = closers[k]
        b = bisect.bisect_left(breaks, p + 1)
        if b < len(breaks) and breaks[b] < q:  # every opening mark before that line break meets the same closer
            out.append(text[pos:breaks[b] + 1])
            pos = breaks[b] + 1
            continue
        out.append(text[pos:p] + "<em>" + text[p + 1:q] + "</em>")
        pos = q + 1
    out.append(text[pos:])
    return "".join(out)


def _is_delim(line: str) -> bool:
    """A pipe table's delimiter row (``|---|:---:|---:|``; the outer pipes optional)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return all(_CELL_DELIM.fullmatch(c.strip()) for c in body.split("|"))


def inline(text: str) -> str:
    """Escaped ``text`` with bold, italic and ``<u>`` underline."""
    out = html.escape(text, quote=True)
    out = _underline(out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _italic(out)


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
        if line.lstrip().startswith("|") and i + 1 < len(lines) and _is_delim(lines[i + 1]):
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
