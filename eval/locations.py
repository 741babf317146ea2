"""Where the harness finds its configs and samples and where it writes, in a checkout and in an installed wheel.

- configs: the package ``htmlrag_bench.conf`` (the repository's ``conf/``; in a wheel, package data);
- samples: the package ``htmlrag_bench.samples`` (the repository's ``data/``), or ``$HTMLRAG_SAMPLES``;
- the working root (``${project_root:}``: results, caches, downloads): ``$HTMLRAG_ROOT``, else the folder the
  command runs in, never the folder of the installed code. ``paths.results`` also follows ``$HTMLRAG_RESULTS``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def conf_dir() -> Path:
    """The folder of the Hydra configs (``conf/`` in a checkout)."""
    return Path(str(resources.files("htmlrag_bench.conf")))


def samples_dir() -> str:
    """``$HTMLRAG_SAMPLES``, else the shipped sample data (``data/`` in a checkout)."""
    return os.environ.get("HTMLRAG_SAMPLES") or str(resources.files("htmlrag_bench.samples"))


def project_root() -> str:
    """``$HTMLRAG_ROOT``, else the current folder: results, caches and downloads go where the user works."""
    return os.environ.get("HTMLRAG_ROOT") or os.getcwd()


def source_root() -> Path | None:
    """The repository checkout the code runs from (a folder holding ``pyproject.toml`` beside ``conf/``), or
    ``None`` for an installed wheel; used for the git commit in ``env.json``."""
    root = conf_dir().parent
    return root if (root / "pyproject.toml").is_file() and (root / "htmlrag").is_dir() else None


def register_resolvers() -> None:
    """``${project_root:}`` and ``${samples_dir:}`` (idempotent)."""
    from omegaconf import OmegaConf

    for name, fn in (("project_root", project_root), ("samples_dir", samples_dir)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
