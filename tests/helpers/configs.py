"""Config names the tests iterate over."""

from __future__ import annotations

from htmlrag_bench.eval.schemas import CONF_DIR


def experiments() -> list[str]:
    """Every ``experiment=`` option, sub-folders included (``paper/table1_main``)."""
    root = CONF_DIR / "experiment"
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml"))
