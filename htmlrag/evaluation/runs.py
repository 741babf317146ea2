"""The one reader of run folders (``results/<experiment>/<run-id>/``, written by :mod:`htmlrag.evaluation.store`),
used by the harness, the table commands and the web app; and the rules that decide which run fills which table
cell.

Reading: :func:`open_run` reads one folder into a :class:`Run` (``metrics.json``, ``config.yaml``, ``overrides.yaml``;
rows, ``env.json`` and ``timings.json`` on demand). A file that cannot be read, or a ``metrics.json`` of the wrong
shape (:func:`htmlrag.evaluation.shapes.summary_problem`), does not raise: the run is returned with the problem in
:attr:`Run.problems` and without that file's content (a browser lists it flagged; a table command refuses it with
:meth:`Run.check`). Rows are checked as they are read (:meth:`htmlrag.evaluation.store.RunStore.read_rows`). :func:`find_runs` finds every run at or below some folders. Reading never writes.

The rule every table writer follows (``htmlrag-bench-table``, ``htmlrag-paper``, the sweep table):

1. A run's *settings* are its resolved ``config.yaml`` without what does not change results (``paths``,
   ``run``, ``wandb``, ``hydra``, ``caption``). Runs with identical settings are the same experiment run by
   different code versions (the run id also hashes the library code): of those, the run whose
   ``metrics.json`` was written last fills the cells (ties: the larger run id); the others are logged as
   superseded. Runs with different settings never share a cell.
2. Column groups are datasets; runs of one dataset whose settings differ get one column group each, labelled
   by the settings that differ (``ASQA (budget=2000)``). Row groups, where a table has them, are the reader
   model (``Llama-3.1-8B-Instruct``); two runs that would still meet in one cell have their remaining
   differences added to the row-group label.
3. Every table is written with a ``provenance.csv`` naming the run behind each cell by :func:`run_name`:
   ``<experiment>/<run-id>``, the run folder relative to its results root (never an absolute path), so a
   results folder moved or copied elsewhere still names its runs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.core.errors import InputError
from htmlrag.evaluation.shapes import summary_problem
from htmlrag.evaluation.store import RunStore

log = logging.getLogger(__name__)

#: Config keys that do not change results (as htmlrag_bench.eval.schemas.NOT_HASHED).
IGNORED = ("paths", "run", "wandb", "hydra", "caption", "cost", "logger")
#: Short names of common keys in labels.
SHORT = {"pruner.budget": "budget", "pruner.budget1": "budget1", "reader.window": "window",
         "fidelity.name": "fidelity", "reader.model": "reader", "pruner.max_words": "max_words",
         "pruner.max_words2": "max_words2", "pruner.fmt": "fmt", "dataset.limit": "limit"}
MAX_LABEL_KEYS = 4


@dataclass(eq=False)
class Run:
    """One saved run as the tables and the app see it.

    Attributes:
        dir: the run folder.
        summary: ``metrics.json`` (``{}`` while the run is incomplete or when it cannot be read).
        config: the resolved ``config.yaml`` (``{}`` when missing or unreadable).
        mtime: when ``metrics.json`` (else ``config.yaml``) was written.
        overrides: ``overrides.yaml``.
        problems: files that could not be read, each ``"<file>: <why>"``.
        superseded: runs with the same settings that this one replaces in tables (:func:`select`).
    """

    dir: Path
    summary: dict[str, Any]
    config: dict[str, Any]
    mtime: float
    superseded: list[Path] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def dataset(self) -> str:
        """``metrics.json["dataset"]``, else the config's ``dataset.name`` (or ``dataset`` when it is a plain
        value); ``""`` when neither names one (a config of another shape names none)."""
        if self.summary.get("dataset"):
            return str(self.summary["dataset"])
        cfg = self.config.get("dataset")
        if isinstance(cfg, Mapping):
            cfg = cfg.get("name")
        return "" if cfg is None or isinstance(cfg, Mapping | list) else str(cfg)

    @property
    def run_id(self) -> str:
        return str(self.summary.get("run_id", self.dir.name))

    @property
    def experiment(self) -> str:
        return self.dir.parent.name

    @property
    def name(self) -> str:
        """The run relative to its results root (:func:`run_name`): ``quickstart/093ac65d4f21``."""
        return run_name(self.dir)

    @property
    def complete(self) -> bool:
        """``metrics.json`` was written and read."""
        return bool(self.summary)

    def check(self) -> Run:
        """The run itself, or :class:`~htmlrag.core.errors.InputError` naming every file that could not be read."""
        if self.problems:
            raise InputError(f"{self.dir}: " + "; ".join(self.problems))
        return self

    def rows(self) -> list[dict[str, Any]]:
        """The prediction rows (merged file and shards, one per id, in example order); reads only.

        Raises:
            InputError: a row that is not valid JSON or not a JSON object (naming the file and line).
        """
        return RunStore(self.dir.parent.parent, self.experiment, self.dir.name).all_rows()

    def json(self, name: str) -> Any:
        """Another JSON file of the run (``env.json``, ``timings.json``), or ``None`` when missing or unreadable."""
        value, _ = _read_json(self.dir / name)
        return value

    def get(self, dotted: str, default: Any = None) -> Any:
        """A config value by dotted path (``pruner.budget``)."""
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def settings(self) -> dict[str, str]:
        """The flattened settings (dotted key -> JSON of the value), ignored keys left out; the dataset of
        ``metrics.json`` stands in when the config does not name it."""
        flat = flatten({k: v for k, v in self.config.items() if k not in IGNORED})
        flat.setdefault("dataset.name", json.dumps(self.dataset))
        return flat


def run_name(path: str | Path) -> str:
    """How tables, provenance and pointers name a run: its folder relative to its results root,
    ``<experiment>/<run-id>`` (the last two parts of ``results/<experiment>/<run-id>``), with ``/``."""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def resolve_run(name: str, *roots: str | Path) -> Path | None:
    """The folder of run ``name`` (:func:`run_name`; an absolute path from older files is taken as it is) under
    the first of ``roots`` that holds it, or ``None``."""
    p = Path(name)
    if p.is_absolute():
        return p if is_run(p) else None
    for root in roots:
        if is_run(Path(root) / p):
            return Path(root) / p
    return None


def leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b": value}`` for every leaf of a nested mapping (lists and empty mappings are leaves)."""
    if isinstance(node, Mapping) and node:
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: node} if prefix else {}


def flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """``{"a.b": json(value)}`` for every leaf of a nested mapping (:func:`leaves`)."""
    return {k: json.dumps(v, sort_keys=True, default=str) for k, v in leaves(node, prefix).items()}


#: Bounds of a walk through a run folder (:func:`walk`): nesting and entries.
MAX_WALK_DEPTH = 32
MAX_WALK_ENTRIES = 20_000


def _entries(folder: Path) -> list[os.DirEntry]:
    """The entries of one folder (none when it cannot be listed: it holds nothing that will be read)."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def walk(folder: Path, *, max_depth: int = MAX_WALK_DEPTH, max_entries: int = MAX_WALK_ENTRIES) -> list[Path]:
    """Every entry below ``folder``, sorted, found without recursion (``Path.rglob`` recurses once per level:
    a run holding 1,100 nested folders raised ``RecursionError``) and without following links into folders.

    Raises:
        InputError: nesting deeper than ``max_depth`` or more than ``max_entries`` entries (naming the
            first entry past the bound): such a folder is not a run the harness wrote, and what is not walked
            could not be checked (:func:`special_files`).
    """
    out: list[Path] = []
    stack: list[tuple[Path, int]] = [(folder, 1)]
    while stack:
        d, depth = stack.pop()
        for e in _entries(d):
            p = Path(e.path)
            out.append(p)
            if len(out) > max_entries:
                raise InputError(f"{p.relative_to(folder).as_posix()}: the run holds more than {max_entries:,} "
                                 f"files and folders; not read")
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if depth >= max_depth:
                    raise InputError(f"{p.relative_to(folder).as_posix()}: folders nested deeper than {max_depth} "
                                     f"levels; not read")
                stack.append((p, depth + 1))
    return sorted(out)


def special_files(folder: Path) -> list[Path]:
    """Entries below ``folder`` that are neither regular files nor folders once symlinks are followed: FIFOs,
    sockets, devices, broken links. Reading one blocks (a FIFO waits for a writer) or fails, so a run holding
    one is refused naming it before anything is read.

    Raises:
        InputError: the folder is nested too deep or holds too many entries to check (:func:`walk`).
    """
    out = []
    for p in walk(folder):
        try:
            if not (p.is_file() or p.is_dir()):
                out.append(p)
        except OSError:
            out.append(p)
    return out


def is_run(path: Path) -> bool:
    """A run folder: it holds ``metrics.json`` or ``config.yaml``."""
    return path.is_dir() and ((path / "metrics.json").is_file() or (path / "config.yaml").is_file())


def _not_regular(path: Path) -> str | None:
    """A problem when ``path`` exists but is not a regular file (a folder, FIFO, socket, device): it is
    neither read (a FIFO would block) nor taken for missing."""
    try:
        if path.exists() and not path.is_file():
            return f"{path.name}: not a regular file (a folder, FIFO, socket or device)"
    except OSError as exc:
        return f"{path.name}: cannot be read ({exc})"
    return None


def _read_json(path: Path) -> tuple[Any, str | None]:
    if (odd := _not_regular(path)) is not None:
        return None, odd
    if not path.is_file():
        return None, None
    try:
        return json.loads(path.read_text(encoding="utf-8-sig")), None
    except (OSError, ValueError) as exc:
        return None, f"{path.name}: not readable JSON ({exc})"


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` of a run's file, refusing aliases (``*name``): the harness never writes them, and a
    file of nested aliases (a "billion laughs") loads in milliseconds into a structure whose every walk --
    flattening for a diff, listing overrides -- takes exponential time.

    Raises:
        yaml.YAMLError: not YAML, or an alias (the error names its line).
    """
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(None, None, "an alias (*name) is not allowed in a run file",
                                                  event.start_mark)
            return super().compose_node(parent, index)

    return yaml.load(text, Loader=NoAliases)


def config_record(run_dir: Path) -> dict[str, str]:
    """``metrics.json["config"]``: the SHA-256 of the *settings* in ``config.yaml`` and ``overrides.yaml`` (what
    changes results: :data:`IGNORED` groups such as ``run`` and ``paths`` left out, so a rerun without caches
    records the same; canonical JSON, so re-indenting or a comment changes nothing), recorded when a run
    finishes, so that ``htmlrag-paper verify`` tells a settings file edited afterwards (the run id hashes the
    configuration before interpolation, which the stored file cannot give back). A file missing or
    unreadable: ``""``."""
    import hashlib

    out = {}
    for key, name in (("sha256", "config.yaml"), ("overrides_sha256", "overrides.yaml")):
        value, bad = _read_yaml(run_dir / name)
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in IGNORED}
        elif isinstance(value, list):
            value = [o for o in value if str(o).lstrip("+~").split("=", 1)[0].split(".", 1)[0] not in IGNORED]
        blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        out[key] = "" if bad or not (run_dir / name).is_file() else hashlib.sha256(blob.encode("utf-8")).hexdigest()
    return out


def _read_yaml(path: Path) -> tuple[Any, str | None]:
    import yaml

    if (odd := _not_regular(path)) is not None:
        return None, odd
    if not path.is_file():
        return None, None
    try:
        return load_yaml(path.read_text(encoding="utf-8-sig")), None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, f"{path.name}: not readable YAML ({' '.join(str(exc).split())})"


def open_run(path: str | Path) -> Run:
    """Read one run folder (see the module docstring: problems are recorded, not raised).

    Raises:
        InputError: ``path`` is not a run folder.
    """
    d = Path(path)
    if not is_run(d):
        raise InputError(f"{d}: not a run (no metrics.json or config.yaml)")
    if d.name in ("", ".", ".."):  # (`verify .` inside a run folder: its name is the folder's own)
        d = Path(os.path.abspath(d))
    problems: list[str] = []
    summary, bad = _read_json(d / "metrics.json")
    problems += [bad] if bad else []
    if summary is not None and not isinstance(summary, dict):
        problems.append("metrics.json: not a JSON object")
        summary = None
    if summary is not None and (bad := summary_problem(summary)) is not None:
        problems.append(f"metrics.json: {bad}")  # never handed on: no consumer meets a wrong shape
        summary = None
    config, bad = _read_yaml(d / "config.yaml")
    problems += [bad] if bad else []
    if config is not None and not isinstance(config, dict):
        problems.append("config.yaml: not a mapping")
        config = None
    overrides, bad = _read_yaml(d / "overrides.yaml")
    problems += [bad] if bad else []
    overrides = [str(o) for o in overrides] if isinstance(overrides, list) else [] if overrides is None else [str(overrides)]
    stamp = d / "metrics.json" if (d / "metrics.json").is_file() else d / "config.yaml"
    return Run(d, summary or {}, config or {}, stamp.stat().st_mtime, overrides=overrides, problems=problems)


def _folders_holding(root: Path, names: Sequence[str], max_depth: int = MAX_WALK_DEPTH) -> list[Path]:
    """Folders at or below ``root`` holding a file of one of ``names``, sorted; hidden and ``_`` folders (Hydra's
    logs) and links to folders are not entered, nor folders deeper than ``max_depth`` (without recursion:
    ``Path.rglob`` and Python 3.11's ``os.walk`` recurse once per level, and 1,100 nested folders raised
    ``RecursionError``)."""
    out: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        entries = _entries(d)
        if any(e.name in names and e.is_file() for e in entries):
            out.append(d)
        if depth < max_depth:
            for e in entries:
                if not e.name.startswith(("_", ".")) and e.is_dir(follow_symlinks=False):
                    stack.append((Path(e.path), depth + 1))
    return sorted(out)


def find_runs(paths: Iterable[str | Path], *, complete: bool = True) -> list[Run]:
    """Every run at or below ``paths`` (Hydra log folders and hidden folders skipped), in path order.

    Args:
        complete: only runs that wrote ``metrics.json`` (what tables use); ``False`` adds runs in progress.
    """
    found: list[Path] = []
    for p in map(Path, paths):
        if is_run(p):
            found.append(p)
        elif p.is_dir():
            markers = ("metrics.json",) if complete else ("metrics.json", "config.yaml")
            found.extend(_folders_holding(p, markers))
    runs = [open_run(d) for d in found]
    return [r for r in runs if r.complete or r.problems] if complete else runs


def select(runs: Sequence[Run]) -> list[Run]:
    """Of runs with identical settings, the one written last (ties: larger run id); order of first
    appearance. Superseded runs are logged and listed in the winner's :attr:`Run.superseded`."""
    best: dict[str, Run] = {}
    for r in runs:
        key = json.dumps(r.settings(), sort_keys=True)
        old = best.get(key)
        if old is None:
            best[key] = r
            continue
        new, lost = (r, old) if (r.mtime, r.run_id) > (old.mtime, old.run_id) else (old, r)
        new.superseded = [*old.superseded, *r.superseded, lost.dir]
        log.info("run %s superseded by %s (same settings, written later)", lost.dir, new.dir)
        best[key] = new
    return list(best.values())


def differing(runs: Sequence[Run], exclude: Callable[[str], bool] = lambda k: False) -> list[str]:
    """Setting keys whose values differ between ``runs`` (a key missing from a run counts as a value)."""
    flats = [r.settings() for r in runs]
    keys = sorted({k for f in flats for k in f if not exclude(k)})
    return [k for k in keys if len({f.get(k, "<unset>") for f in flats}) > 1]


def _preference(key: str) -> tuple[int, int, str]:
    return (0 if key in SHORT else 1, key.count("."), key)


def deciding(runs: Sequence[Run], keys: Sequence[str]) -> list[str]:
    """The keys of ``keys`` that tell ``runs`` apart, without those another kept key already decides (a key
    whose value follows from a kept key's in every run, e.g. ``baselines.bm25.budget`` interpolated from
    ``pruner.budget``, or a fidelity knob from ``fidelity.name``). Runs that differ in ``keys`` still differ in
    the result; the common keys come first (:data:`SHORT`, then shallow ones)."""
    flats = [r.settings() for r in runs]
    kept: list[str] = []
    for k in sorted(keys, key=_preference):
        follows = False
        for j in kept:
            seen: dict[str, str] = {}
            if all(seen.setdefault(f.get(j, "<unset>"), f.get(k, "<unset>")) == f.get(k, "<unset>") for f in flats):
                follows = True
                break
        if not follows:
            kept.append(k)
    return kept


def _short(keys: Sequence[str]) -> dict[str, str]:
    out = {}
    for k in keys:
        name = SHORT.get(k, k.rsplit(".", 1)[-1])
        out[k] = name if sum(1 for j in keys if SHORT.get(j, j.rsplit(".", 1)[-1]) == name) == 1 else k
    return out


def _value(run: Run, key: str) -> str:
    v = run.settings().get(key)
    if v is None:
        return "unset"
    x = json.loads(v)
    return x if isinstance(x, str) else json.dumps(x)


def settings_label(run: Run, keys: Sequence[str]) -> str:
    """``budget=2000, fidelity=paper`` for ``keys`` (at most :data:`MAX_LABEL_KEYS`, then ``+N more, run
    <id>``, which keeps labels unique)."""
    if not keys:
        return ""
    short = _short(keys)
    parts = [f"{short[k]}={_value(run, k)}" for k in keys[:MAX_LABEL_KEYS]]
    if len(keys) > MAX_LABEL_KEYS:
        parts.append(f"+{len(keys) - MAX_LABEL_KEYS} more, run {run.run_id}")
    return ", ".join(parts)


def label_apart(runs: Sequence[Run], base: Callable[[Run], str],
                exclude: Callable[[str], bool] = lambda k: False) -> dict[Run, str]:
    """``base(run)``, followed by the settings that differ among the runs sharing that base (``exclude``
    leaves keys out, e.g. the reader's when the reader is a row group)."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(base(r), []).append(r)
    out = {}
    for b, rs in groups.items():
        keys = deciding(rs, differing(rs, exclude)) if len(rs) > 1 else []
        for r in rs:
            extra = settings_label(r, keys)
            out[r] = f"{b} ({extra})" if extra and b else (extra or b)
    return out


def reader_label(run: Run) -> str:
    """The reader model of a run (``Llama-3.1-8B-Instruct``), or ``no reader`` / the reader class."""
    target = str(run.get("reader._target_", "") or "")
    if target.endswith("NoneReader"):
        return "no reader"
    if target.endswith("FakeReader"):
        return "fake reader"
    model = run.get("reader.model")
    if model:
        return str(model).rstrip("/").rsplit("/", 1)[-1]
    return target.rsplit(".", 1)[-1]  # "" when the run recorded no reader


def place(runs: Sequence[Run], col: Callable[[Run], str], row: Callable[[Run], str]) -> dict[Run, tuple[str, str]]:
    """``(column group, row group)`` of each run, such that runs with different settings never share one:
    runs that would, get their remaining differences added to the row-group label."""
    at = {r: (col(r), row(r)) for r in runs}
    blocks: dict[tuple[str, str], list[Run]] = {}
    for r, k in at.items():
        blocks.setdefault(k, []).append(r)
    for (c, g), rs in blocks.items():
        if len(rs) < 2:
            continue
        keys = deciding(rs, differing(rs))
        for r in rs:
            extra = settings_label(r, keys) or f"run {r.run_id}"
            at[r] = (c, f"{g} ({extra})" if g else extra)
    return at
