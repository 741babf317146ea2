"""The results browser serves files under its folder only: every escape route is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from htmlrag.app.files import PathRefused, resolve_under, servable_file


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    (root / "exp" / "run").mkdir(parents=True)
    (root / "exp" / "run" / "metrics.json").write_text("{}")
    (root / "exp" / "figure5.png").write_bytes(b"\x89PNG")
    (root / "exp" / "page.html").write_text("<script>alert(1)</script>")
    (root / ".secret").write_text("x")
    (tmp_path / "outside.json").write_text('{"secret": 1}')
    os.symlink(tmp_path / "outside.json", root / "exp" / "link.json")
    os.symlink(tmp_path, root / "exp" / "up")
    return root


def test_serves_files_inside(tree: Path) -> None:
    path, media = servable_file(tree, "exp/run/metrics.json")
    assert path == (tree / "exp/run/metrics.json").resolve() and media.startswith("text/plain")
    assert servable_file(tree, "exp/figure5.png")[1] == "image/png"


@pytest.mark.parametrize("rel", [
    "../outside.json", "exp/../../outside.json", "/etc/passwd", "~/x", "exp/link.json", "exp/up/outside.json",
    "%2e%2e/outside.json", "%252e%252e/outside.json", "exp/%2e%2e/%2e%2e/outside.json", ".secret",
    "exp\\..\\..\\outside.json", "exp/run/metrics.json\x00.png", "exp/nothing.json",
])
def test_escapes_are_refused(tree: Path, rel: str) -> None:
    with pytest.raises(PathRefused):
        servable_file(tree, rel)


def test_html_and_unknown_types_are_not_served(tree: Path) -> None:
    with pytest.raises(PathRefused, match="not served"):
        servable_file(tree, "exp/page.html")  # would run in the app's origin
    with pytest.raises(PathRefused, match="not a file"):
        servable_file(tree, "exp/run")


def test_resolve_under_keeps_the_root_out_of_messages(tree: Path) -> None:
    with pytest.raises(PathRefused) as e:
        resolve_under(tree, "../outside.json")
    assert str(tree) not in str(e.value)
