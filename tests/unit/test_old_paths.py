"""Old module paths (before the stage packages) import, for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from htmlrag import _compat


@pytest.mark.parametrize("old,new", sorted(_compat.MOVED.items()))
def test_old_path_gives_the_new_module_and_warns(old: str, new: str) -> None:
    if new.startswith(("htmlrag.superrag.", "htmlrag.app.")):
        pytest.importorskip("fitz")  # the PDF modules need PyMuPDF
    assert old != new, "an alias must name the path the module had before the move"
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new and importlib.util.find_spec(new).origin  # the real spec stays
    sys.modules.pop(old, None)


def test_the_old_top_level_names_are_the_ones_readers_used() -> None:
    # the README of the previous release showed these; they must keep working for one release
    for old in ("htmlrag.prune", "htmlrag.clean", "htmlrag.blocktree", "htmlrag.metrics", "htmlrag.evaluate"):
        assert old in _compat.MOVED
