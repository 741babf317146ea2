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


@pytest.mark.parametrize("name", ["a%41b", "%25", "%2525", "100%", "%zz", "a%2fb", "~tmp", "run~1", "x\\y", "#1?x=y",
                                  "é 日本", "a b", "'q'"])
def test_odd_names_are_served_as_written(tmp_path: Path, name: str) -> None:
    """Names are taken literally: the route has decoded the link once, nothing decodes them again."""
    (tmp_path / name).mkdir()
    (tmp_path / name / "f.txt").write_text("x", encoding="utf-8")
    (tmp_path / "aAb").mkdir()  # what a%41b would be if it were decoded again
    assert servable_file(tmp_path, f"{name}/f.txt")[0] == (tmp_path / name / "f.txt").resolve()
    assert servable_file(tmp_path, f"{name}/f.txt")[0] != (tmp_path / "aAb" / "f.txt").resolve()


@pytest.mark.parametrize("name", ["%2e%2e", "%2E%2e", "%252e%252e", "%25252e%25252e", "..%5cx", "x\\..", "%2esecret",
                                  "%252esecret", "%00x"])
def test_names_that_read_as_an_escape_once_decoded_are_refused_even_when_they_exist(tmp_path: Path,
                                                                                    name: str) -> None:
    (tmp_path / name).mkdir()
    (tmp_path / name / "f.txt").write_text("x", encoding="utf-8")
    with pytest.raises(PathRefused, match=r"encoded|not allowed|hidden|invalid"):
        servable_file(tmp_path, f"{name}/f.txt")
    with pytest.raises(PathRefused):
        servable_file(tmp_path, f"exp/{name}/f.txt")
    with pytest.raises(PathRefused, match="absolute"):
        servable_file(tmp_path, "%2fetc/passwd")
