"""The README and docs/ link only to files and headings that exist; runnable marks are well formed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.docs import anchors, fenced_blocks, links, slug

#: Pages still being written; a link to one of them is checked once it exists (empty: every page exists).
PENDING_PAGES: set[str] = set()
RUNNABLE_LANGS = {"bash", "sh", "python"}


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def broken_links(path: Path) -> list[str]:
    """Relative links of ``path`` whose file, or heading anchor, does not exist (pending pages aside)."""
    bad = []
    for line, target in links(path):
        if "://" in target or target.startswith(("mailto:", "#!")):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.exists():
            if rel not in PENDING_PAGES:
                bad.append(f"{path.name}:{line}: {target} (no such file)")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{path.name}:{line}: {target} (no heading #{anchor} in {rel})")
    return bad


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path: Path):
    assert broken_links(path) == []


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_runnable_blocks_are_well_formed(path: Path):
    for block in fenced_blocks(path):  # raises on a dangling mark or an open fence
        if block.runnable:
            assert block.lang in RUNNABLE_LANGS, f"{block.name}: runnable block in {block.lang!r}"


def test_link_checker_catches_missing_files_and_anchors(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("tests.unit.test_doc_links.ROOT", tmp_path)
    monkeypatch.setattr("tests.unit.test_doc_links.PENDING_PAGES", {"docs/pending.md"})
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Top\n\n## Pruning to a budget (`htmlrag.prune`)\n\ntext\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md) [ok](docs/a.md#pruning-to-a-budget-htmlragprune) [ok](#intro) [web](https://x.org/y)\n"
        "# Intro\n"
        "[gone](docs/b.md) [bad anchor](docs/a.md#pruning) [pending](docs/pending.md)\n"
        "```bash\n[in code](docs/c.md)\n```\n"
        "`[inline](docs/d.md)`\n"
    )
    assert broken_links(page) == [
        "README.md:3: docs/b.md (no such file)",
        "README.md:3: docs/a.md#pruning (no heading #pruning in docs/a.md)",
    ]


def test_slug_follows_github():
    assert slug("Pruning to a token budget (`htmlrag.prune`, `htmlrag.pipeline`)") == \
        "pruning-to-a-token-budget-htmlragprune-htmlragpipeline"
    assert slug("htmlrag clean, htmlrag tree") == "htmlrag-clean-htmlrag-tree"
    assert slug("Set-up: the two commands") == "set-up-the-two-commands"


def test_runnable_mark_must_precede_a_block(tmp_path: Path):
    page = tmp_path / "x.md"
    page.write_text("<!-- runnable -->\nsome prose\n```bash\nls\n```\n")
    with pytest.raises(ValueError, match="not followed by a fenced block"):
        fenced_blocks(page)
    page.write_text("<!-- runnable -->\n\n```bash\nls\n```\n\n```python\nprint(1)\n```\n")
    blocks = fenced_blocks(page)
    assert [(b.lang, b.runnable, b.line) for b in blocks] == [("bash", True, 3), ("python", False, 7)]
