"""docs/app.md lists every JSON endpoint the app serves (and nothing it does not)."""

from __future__ import annotations

import re
from pathlib import Path

from htmlrag.app.server import create_app
from htmlrag.app.settings import AppSettings
from tests.conftest import ROOT


def test_every_api_endpoint_is_documented(tmp_path: Path) -> None:
    app = create_app(AppSettings(db=tmp_path / "db", results=tmp_path))
    served = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    doc = (ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(GET|POST|PUT|DELETE)` \| `(/api/[^`]*)` \|", doc, re.M))
    assert listed == served
