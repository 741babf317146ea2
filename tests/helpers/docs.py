"""Reading the project's Markdown: fenced blocks marked runnable, relative links, GitHub heading anchors.

A block is runnable when the line just before its opening fence (blank lines aside) is ``<!-- runnable -->``;
its language is the fence's info string (``bash``/``sh`` or ``python``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

RUNNABLE_MARK = "<!-- runnable -->"
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its file, 1-based line of the opening fence, language and code."""

    path: Path
    line: int
    lang: str
    code: str
    runnable: bool

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order.

    Raises:
        ValueError: a runnable mark not followed by a fence, or a fence left open.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    marked_at: int | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        m = FENCE.match(stripped)
        if m:
            fence, lang, start = m.group(1), m.group(2).lower(), i
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"{path}:{start + 1}: fence never closed")
            blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n", marked_at is not None))
            marked_at = None
        elif stripped == RUNNABLE_MARK:
            marked_at = i
        elif stripped and marked_at is not None:
            raise ValueError(f"{path}:{marked_at + 1}: {RUNNABLE_MARK} is not followed by a fenced block")
        i += 1
    if marked_at is not None:
        raise ValueError(f"{path}:{marked_at + 1}: {RUNNABLE_MARK} at the end of the file")
    return blocks


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, text) of the lines outside fenced blocks."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line.strip())
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            out.append((n, line))
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link and image outside code (fences and inline code spans)."""
    found = []
    for n, line in prose_lines(path):
        line = re.sub(r"`[^`]*`", "", line)
        found.extend((n, m.group(1)) for m in LINK.finditer(line))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: Markdown emphasis and code marks dropped, lower case, punctuation
    removed (letters, digits, ``_``, ``-`` and spaces kept), spaces turned into ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").lower()
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (duplicates numbered ``-1``, ``-2``... as GitHub does)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in prose_lines(path):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        k = seen.get(base, 0)
        out.add(base if k == 0 else f"{base}-{k}")
        seen[base] = k + 1
    return out
