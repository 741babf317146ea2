"""Locations on this machine kept out of what a run stores, so that a run folder means the same anywhere.

A run folder (``results/<experiment>/<run-id>/``) is copied, committed and moved; what it stores must not
name this machine's folders. The rule, for everything the harness writes (``config.yaml``, ``overrides.yaml``,
the sweep pointers ``htmlrag_run.json``, the log file):

- every ``paths.*`` setting (results, cache, data, samples, shared data, the project root) is a location, not
  a choice that shapes a row: it is never part of the run id, ``overrides.yaml`` leaves out the ``paths.*``
  overrides, and ``config.yaml`` keeps only the ``paths.*`` values that are placeholders
  (``${oc.env:HTMLRAG_RESULTS,${paths.root}/results}``), never a resolved folder;
- any other stored value that names a folder under one of those locations is stored as the placeholder it
  came from: ``/home/me/proj/.data/wtq-html-qa`` -> ``${paths.data}/wtq-html-qa``,
  ``docqa.corpus_root`` -> ``${paths.cache}/superrag/corpora`` (also when the absolute folder was typed);
  a folder under the home folder and outside them as ``~/...``;
- a location outside all of these (``reader.model=/models/llama``, a local model folder) is stored as typed:
  it is part of the run's identity (two folders are two models). Keep local models under the project
  (``${paths.root}``) or give a hub name, and the run folder stays portable.

Runs are named relative to the results root (:func:`htmlrag.evaluation.runs.run_name`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from htmlrag.evaluation.runs import load_yaml, run_name
from htmlrag.evaluation.store import atomic_write
from htmlrag.evaluation.tables import metric_column

#: ``paths.*`` keys, the most specific first (a tie in length goes to the earlier key).
ORDER = ("results", "cache", "data", "samples", "shared_data", "root")
_LOCATIONS: list[tuple[str, str]] = []


def locations(paths: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(absolute folder, placeholder)`` pairs for the resolved ``paths`` group (and the home folder, ``~``),
    longest folder first; each folder also in its normalised form (``a/../b`` -> ``b``)."""
    pairs: list[tuple[str, str]] = []
    keys = [k for k in ORDER if k in paths] + sorted(k for k in paths if k not in ORDER)
    for key in keys:
        value = paths.get(key)
        if not isinstance(value, str) or not os.path.isabs(value):
            continue
        for form in dict.fromkeys((value.rstrip("/"), os.path.normpath(value))):
            if form and form != "/":
                pairs.append((form, f"${{paths.{key}}}"))
    home = os.path.expanduser("~")
    if home and home != "/":
        pairs.append((home.rstrip("/"), "~"))
    seen: dict[str, str] = {}
    for folder, holder in pairs:
        seen.setdefault(folder, holder)
    return sorted(seen.items(), key=lambda p: -len(p[0]))


def portable(text: str, locs: Iterable[tuple[str, str]]) -> str:
    """``text`` with every folder of ``locs`` (at a path boundary) replaced by its placeholder."""
    for folder, holder in locs:
        if folder in text:
            text = re.sub(rf"(?<![\w.-]){re.escape(folder)}(?=/|\\|$|[^\w.-])", lambda _m, h=holder: h, text)
    return text


def portable_value(value: Any, locs: list[tuple[str, str]]) -> Any:
    """``value`` (a config container) with :func:`portable` applied to every string in it."""
    if isinstance(value, str):
        return portable(value, locs)
    if isinstance(value, Mapping):
        return {k: portable_value(v, locs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [portable_value(v, locs) for v in value]
    return value


def config_locations(cfg: Any) -> list[tuple[str, str]]:
    """:func:`locations` of a composed config's resolved ``paths`` group."""
    from omegaconf import OmegaConf

    paths = cfg.get("paths") if hasattr(cfg, "get") else None
    if paths is None:
        return locations({})
    return locations(OmegaConf.to_container(paths, resolve=True) if OmegaConf.is_config(paths) else dict(paths))


def stored_config(cfg: Any) -> str:
    """The YAML of ``config.yaml``: the resolved config, ``paths`` kept only as placeholders, and every other
    location written as the placeholder it came from (module docstring)."""
    from omegaconf import OmegaConf

    locs = config_locations(cfg)
    resolved = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    raw = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    out = {k: portable_value(v, locs) for k, v in resolved.items() if k != "paths"}
    if isinstance(raw.get("paths"), Mapping):
        kept = {k: v for k, v in raw["paths"].items() if isinstance(v, str) and "${" in v}
        if kept:
            out = {**out, "paths": kept}
    order = [k for k in resolved if k in out]
    return OmegaConf.to_yaml(OmegaConf.create({k: out[k] for k in order}))


def stored_overrides(overrides: Iterable[str], locs: list[tuple[str, str]]) -> list[str]:
    """The overrides as stored: ``paths.*`` (and ``hydra.*``) left out, locations in the others replaced."""
    out = []
    for o in overrides:
        key = o.partition("=")[0].lstrip("+~")
        if key == "paths" or key.startswith(("paths.", "hydra.", "hydra/")):
            continue
        out.append(portable(o, locs))
    return out


def install(cfg: Any) -> None:
    """Use ``cfg``'s locations in :class:`PortableFormatter` (the run's log file)."""
    _LOCATIONS[:] = config_locations(cfg)


def code_locations() -> list[tuple[str, str]]:
    """``(folder, placeholder)`` pairs for where the code runs from, as a traceback names it: the source tree of
    htmlrag and the harness (``<source>``) and the Python installation (``<python>``: the environment, its
    base), longest first."""
    import htmlrag

    pairs = {str(Path(sys.prefix).resolve()): "<python>", str(Path(sys.base_prefix).resolve()): "<python>",
             str(Path(sys.prefix)): "<python>", str(Path(sys.base_prefix)): "<python>",
             str(Path(htmlrag.__file__).resolve().parent.parent): "<source>",
             str(Path(__file__).resolve().parent.parent): "<source>"}
    return sorted(((f, h) for f, h in pairs.items() if f not in ("/", "")), key=lambda p: -len(p[0]))


class PortableFormatter(logging.Formatter):
    """The log file's formatter (``conf/hydra/default.yaml``): each line with this machine's folders written as
    their placeholders (``${paths.results}/quickstart/093ac65d4f21``), as stored files do, and a traceback's
    files relative to the code's folders (``<source>/eval/app.py``, ``<python>/lib/...``). The console keeps
    the folders as they are."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        locs = sorted([*(_LOCATIONS or locations({})), *code_locations()], key=lambda p: -len(p[0]))
        return portable(text, locs)


def rewrite_file(path: Path, locs: list[tuple[str, str]]) -> None:
    """Rewrite a YAML file Hydra wrote into the results folder (``multirun.yaml``) with its locations replaced,
    the code's folders too (``hydra.runtime.config_sources``: ``<source>/conf``). A location that *is* a
    ``paths.*`` value becomes its placeholder escaped (``\\${paths.results}``), so the file still loads
    instead of referring to itself."""
    if not path.is_file():
        return
    import yaml

    every = sorted([*locs, *code_locations()], key=lambda p: -len(p[0]))
    data = portable_value(load_yaml(path.read_text(encoding="utf-8")), every)
    if isinstance(data, dict) and isinstance(data.get("paths"), dict):
        data["paths"] = {k: "\\" + v if isinstance(v, str) and v.startswith("${paths.") else v
                         for k, v in data["paths"].items()}
    atomic_write(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


# ---------------------------------------------------------------------------------------------------- old runs
def _old_provenance(path: Path, run: str) -> str | None:
    """A provenance file written before runs were named relative to the results root: each cell's run as
    ``run`` and its value as the table prints it. ``None`` when the file is already in the current form."""
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    if not rows or "runs" not in rows[0] or not any(os.path.isabs(r["runs"]) for r in rows):
        return None
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for r in rows:
        r["value"] = metric_column(r["metric"]).format(float(r["value"])) if r.get("value") else ""
        r["runs"] = run
        w.writerow(r)
    return buf.getvalue()


def make_portable(run_dir: Path) -> list[Path]:
    """Rewrite a run folder written before runs were portable (returns the files changed): ``overrides.yaml``
    without ``paths.*``, ``config.yaml`` with locations as placeholders (:func:`stored_config`'s rule, the
    locations read from its own ``paths`` group, which is dropped), and every ``provenance.csv`` that names a
    run by an absolute folder (run-level tables name the run itself: :func:`~htmlrag.evaluation.runs.run_name`)."""
    import yaml

    changed: list[Path] = []
    cfg_path, ov_path = run_dir / "config.yaml", run_dir / "overrides.yaml"
    config = load_yaml(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    locs = locations(config.get("paths") or {})
    if cfg_path.is_file():
        kept = {k: portable_value(v, locs) for k, v in config.items() if k != "paths"}
        text = yaml.safe_dump(kept, sort_keys=False, allow_unicode=True, width=100)
        if text != cfg_path.read_text(encoding="utf-8"):
            atomic_write(cfg_path, text)
            changed.append(cfg_path)
    if ov_path.is_file():
        old = [str(o) for o in load_yaml(ov_path.read_text(encoding="utf-8")) or []]
        new = stored_overrides(old, locs)
        if new != old:
            atomic_write(ov_path, "".join(f"- {json.dumps(o)}\n" for o in new) or "[]\n")
            changed.append(ov_path)
    for prov in sorted(run_dir.glob("**/provenance.csv")):
        text = _old_provenance(prov, run_name(run_dir))
        if text is not None:
            atomic_write(prov, text)
            changed.append(prov)
    return changed
