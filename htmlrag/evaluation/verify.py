"""Check that a run's numbers follow from its rows: ``htmlrag-paper verify RUN_DIR...`` (or a results root).

For each run folder:

1. **Rows.** The rows of ``predictions.jsonl`` (and shards) are read as the tables read them and compared with
   the run's records: their number with ``metrics.json["rows"]["n"]`` (older runs: ``n_examples``), their
   SHA-256 with ``metrics.json["rows"]["sha256"]``, and each row with ``rows.sha256``, which names a missing,
   added or edited row; a duplicated id (two lines) is named too.
2. **Metric code.** ``metrics.json["metric_code"]`` (the fingerprint of the per-example metric code when the run
   finished) against the current one.
3. **Per-example scores.** Every row is re-scored with the current metric code where it holds the metric's
   inputs (:mod:`htmlrag.evaluation.rescore`); a score that comes out differently is named.
4. **metrics.json.** The aggregates and paired t-tests are recomputed from the (re-scored) rows
   (:func:`htmlrag.evaluation.summary.summarize`) and compared with the stored file: exactly, except t and p
   of the t-tests (9 significant digits: SciPy's last digits may differ).
5. **Tables.** Every table under ``tables/`` is recomputed (:func:`htmlrag.evaluation.run_tables.run_tables`)
   and compared cell by cell to the printed precision (:mod:`htmlrag.evaluation.table_diff`).
6. **Plots.** PNG bytes differ between matplotlib and FreeType releases, so no plot is redrawn and compared.
   The harness records in ``plots/plots.json`` (:mod:`htmlrag.evaluation.plots`), per PNG it draws, the SHA-256
   of the data it drew it from and of the PNG file. Each plot's data is rebuilt from the run's ``metrics.json``
   and ``cost.json`` by the writer's own function (:func:`htmlrag.evaluation.report.run_plots`) and its digest
   compared with the record (a plot drawn from other numbers: stale, or swapped in from another run with its
   record); each PNG's SHA-256 is compared with the record (replaced or edited); a listed PNG missing, a file
   in ``plots/`` the record does not list, a plot the run draws that is not listed, and a record of another
   shape are named. The data is also rebuilt from the recomputed numbers and compared leaf by leaf (to
   :data:`~htmlrag.evaluation.table_diff.REL_TOL`), so a plot drawn from numbers that no longer follow from
   the rows (an edited row) is named with the tables. The harness also says in ``metrics.json``
   (``"plot_record"``) that it wrote the record, so a deleted record is named; a run without either (written
   before the record) gets a note: its plots are not checked.

Each difference is reported with the stored and the recomputed value and its cause: the rows (missing,
duplicated, edited), the metric code (its fingerprint changed), a dependency (same rows and metric code, a
different score), or the file itself (it does not follow from the rows or from ``metrics.json``). A run whose
metric code changed but whose numbers agree verifies, with a note. What cannot be checked is said in the
notes (runs written before these records existed, metrics whose inputs the rows do not hold).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.fingerprint import METRICS, fingerprint
from htmlrag.core.io import sha256_file
from htmlrag.docqa.judge import judge_report, judgments_record
from htmlrag.evaluation.costs import PriceTable
from htmlrag.evaluation.plots import (
    PLOT_RECORD_KEY,
    PLOT_RECORD_PATH,
    PLOT_RECORDS,
    Plot,
    read_plot_records,
    write_plots,
)
from htmlrag.evaluation.report import judge_grid, recorded_prices, run_plots, run_report_tables
from htmlrag.evaluation.rescore import Rescored, judgments, rescore
from htmlrag.evaluation.run_tables import recorded_settings, run_tables, subset_value
from htmlrag.evaluation.runs import (
    Run,
    config_record,
    find_runs,
    is_run,
    leaves,
    load_yaml,
    open_run,
    special_files,
    walk,
)
from htmlrag.evaluation.shapes import system_order
from htmlrag.evaluation.store import (
    MANIFEST,
    PREDICTIONS,
    RunStore,
    atomic_write,
    manifest_text,
    read_manifest,
    row_digest,
    rows_record,
)
from htmlrag.evaluation.summary import fidelity_caption, summarize
from htmlrag.evaluation.table_diff import close, diff_table

log = logging.getLogger(__name__)

#: metrics.json keys that are records of the run, not numbers recomputed from its rows.
RECORDS = ("rows", "metric_code")
#: metrics.json keys copied from the stored file (the run's identity, not computed from rows).
IDENTITY = ("experiment", "run_id", "dataset", "ours", "alpha", "metric_names", "fidelity", "reader")
#: Every top-level key of ``metrics.json`` the harness writes (now or in the committed older runs); any other is a
#: finding ("not written by the harness").
KNOWN_KEYS = frozenset({*RECORDS, *IDENTITY, PLOT_RECORD_KEY, "config", "frontier", "intervals", "n_examples", "n_failed_examples",
                        "system_order", "systems", "tests", "waterfall"})
#: ``metrics.json["intervals"]`` keys and the ``metric.*`` setting of ``config.yaml`` each records.
INTERVAL_SETTINGS = {"confidence": "confidence", "n_resamples": "n_resamples", "method": "ci_method",
                     "seed": "bootstrap_seed", "correction": "correction", "power": "power"}
#: What marks a run of the current format: the harness's finalize always writes both keys and ``rows.sha256``;
#: a run holding any of them must hold all (a run holding none was written before verify existed).
MISSING = "the file is missing"


@dataclass
class Finding:
    """One thing that differs: where, the stored and the recomputed value, and why."""

    where: str
    stored: str
    recomputed: str
    cause: str


@dataclass
class Report:
    """What :func:`verify_run` found in one run."""

    run: str
    dir: Path
    rows: int = 0
    tables: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, where: str, stored: Any, recomputed: Any, cause: str) -> None:
        self.findings.append(Finding(where, _show(stored), _show(recomputed), cause))


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class Causes:
    """Why numbers of a run may differ: problems of its rows, a changed metric code."""

    rows: list[str] = field(default_factory=list)
    code: str = ""
    judgments: str = ""  # judgments.jsonl differs from the digest judge.json recorded
    records: bool = False  # the run recorded a row checksum (so a clean check means: rows unchanged)

    def of_metrics(self, rescored: bool) -> str:
        """The cause of a ``metrics.json`` difference (``rescored``: per-example scores changed too)."""
        if self.rows:
            return "rows: " + "; ".join(self.rows)
        if self.judgments:
            return self.judgments
        if rescored:
            return self.code or ("per-example scores differ with the same rows and metric code: a dependency "
                                 "(rouge-score, sacrebleu) or the derivation of a metric's input differs")
        if self.records:
            return "metrics.json was edited: the rows and the metric code match the run's records"
        return "metrics.json does not follow from its rows (no row checksum recorded to tell why)"


# ---------------------------------------------------------------------------------------------------- rows
def _read_rows(report: Report, run: Run) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """The run's rows (``None`` when it has none, or they cannot be read: then a finding says why) and the ids
    that appear on more than one line."""
    store = RunStore(run.dir.parent.parent, run.experiment, run.dir.name)
    files = store.row_files()
    record = run.summary.get("rows") if isinstance(run.summary.get("rows"), Mapping) else None
    if not files:
        if record is not None:  # the run recorded its rows: they are gone
            report.add(PREDICTIONS, f"{record.get('n')} rows (checksum recorded)", "0 rows",
                       f"rows: {record.get('n')} missing ({PREDICTIONS}: {MISSING})")
            return None, []
        report.notes.append(f"no {PREDICTIONS}: rows not re-scored and metrics.json not recomputed; tables are "
                            "checked against metrics.json")
        return None, []
    try:
        for f in files:
            if not f.is_file():
                report.add(f.relative_to(run.dir).as_posix(), "a file of rows", "not a file (a folder?)",
                           "rows: the file cannot be read")
                return None, []
            data = f.read_bytes()
            torn = len(data) - data.rfind(b"\n") - 1
            if torn and _is_object(data[len(data) - torn:]):
                report.add(f.relative_to(run.dir).as_posix(), "rows that each end with a newline",
                           f"a last line of {torn} bytes without one that holds a whole row",
                           "rows: a row was appended (the harness ends every row it writes with a newline; only a "
                           "killed writer leaves a line without one, and never a whole row)")
            elif torn:
                report.notes.append(f"{f.relative_to(run.dir).as_posix()}: an incomplete last line ({torn} bytes, "
                                    "no newline: a killed writer's) is not read")
        ids = [str(r["id"]) for f in files for r in store.read_rows(f)]
        rows = run.rows()
    except InputError as exc:
        report.add(PREDICTIONS, "readable rows", str(exc), "rows: a line is not a row")
        return None, []
    except OSError as exc:
        report.add(PREDICTIONS, "readable rows", f"{type(exc).__name__}: {exc}", "rows: the file cannot be read")
        return None, []
    dup = sorted(i for i, n in Counter(ids).items() if n > 1)
    return rows, dup


def _is_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False


def _check_rows(report: Report, run: Run, rows: list[dict[str, Any]], dup: Sequence[str], causes: Causes) -> None:
    """Compare the rows with the run's records (count, checksum, per-row digests, duplicates); one finding
    ``rows`` names what differs."""
    record = run.summary.get("rows") if isinstance(run.summary.get("rows"), Mapping) else None
    n_stored = record.get("n") if record else run.summary.get("n_examples")
    causes.rows += [f"duplicated row {i} (two lines with this id; one is read)" for i in dup]
    if record is None:
        report.notes.append("no row checksum recorded (written before verify existed): rows checked only by "
                            "their count")
    else:
        causes.records = True
        if rows_record(rows)["sha256"] != record.get("sha256"):
            causes.rows += _name_rows(run, rows) or ["the rows differ from their recorded checksum (no rows.sha256 "
                                                     "to name them)"]
    manifest = run.dir / MANIFEST
    # the rows match their checksum: rows.sha256 must list them (a missing rows.sha256 is named by _check_records)
    if record is not None and not causes.rows and manifest.is_file():
        text = manifest.read_text(encoding="utf-8-sig", errors="replace")
        if text != manifest_text(rows) and read_manifest(manifest) != {str(r["id"]): row_digest(r) for r in rows}:
            report.add(MANIFEST, f"{len(read_manifest(manifest) or {})} digests", f"{len(rows)} digests of the rows",
                       f"{MANIFEST} was edited: it does not list the rows, which match metrics.json's checksum")
    if n_stored is not None and n_stored != len(rows) and not any("missing" in c or "added" in c for c in causes.rows):
        causes.rows.append(f"{len(rows)} rows where the run recorded {n_stored}")
    if causes.rows:
        report.add("rows", f"{n_stored} rows" + (" (checksum recorded)" if record else ""), f"{len(rows)} rows",
                   "rows: " + "; ".join(causes.rows))


def _name_rows(run: Run, rows: list[dict[str, Any]]) -> list[str]:
    """Missing, added and edited rows by ``rows.sha256`` (empty when the manifest is missing)."""
    manifest = read_manifest(run.dir / MANIFEST)
    if manifest is None:
        return []
    now = {str(r["id"]): row_digest(r) for r in rows}
    missing = [i for i in manifest if i not in now]
    added = [i for i in now if i not in manifest]
    edited = [i for i in now if i in manifest and manifest[i] != now[i]]
    out = [f"{len(ids)} {what} ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})"
           for what, ids in (("missing", missing), ("added", added), ("edited", edited)) if ids]
    return out


def _check_code(report: Report, run: Run, causes: Causes) -> None:
    stored, now = run.summary.get("metric_code"), fingerprint(METRICS)
    if stored is None:
        report.notes.append("no metric-code fingerprint recorded: a changed score cannot be told from edited code")
    elif stored != now:
        causes.code = f"the metric code changed since the run (fingerprint {stored} -> {now})"


# ---------------------------------------------------------------------------------------------------- records
def _current(run: Run) -> bool:
    """Whether the run has the marks of the current format (see :data:`MISSING`)."""
    return any(k in run.summary for k in RECORDS) or (run.dir / MANIFEST).exists()


def _check_records(report: Report, run: Run) -> None:
    """The run's own records: a run of the current format holds all of them; ``metrics.json`` holds no key the
    harness does not write."""
    if _current(run):
        for key in RECORDS:
            if key not in run.summary:
                report.add(f"metrics.json {key}", "(missing)", "recorded by the harness",
                           f"metrics.json was edited: its {key!r} record was deleted (the run has the other records "
                           "of the current format)")
        if not (run.dir / MANIFEST).exists():
            report.add(MANIFEST, MISSING, "a digest per row", f"{MANIFEST} deleted: the harness writes it with "
                       "metrics.json's row checksum")
    for key in sorted(k for k in run.summary if k not in KNOWN_KEYS):
        report.add(f"metrics.json {key}", run.summary[key], "(missing)", "metrics.json was edited: a key not "
                   "written by the harness")


def _stored_run_names(run: Run) -> set[str]:
    path = run.dir / "tables" / "provenance.csv"
    try:
        lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
    except OSError:
        return set()
    return {line.rsplit(",", 1)[-1] for line in lines[1:] if line.strip()}


def _name(report: Report, run: Run) -> str:
    """The run's name in its tables' provenance: :attr:`Run.name`, or the name its tables were written under
    when only its parents differ (a run moved into another experiment folder or results root). A folder renamed
    away from its run id (``metrics.json``'s, or the one its tables name) is one finding, whatever the
    provenance says."""
    rid = str(run.summary.get("run_id") or "")
    stored = _stored_run_names(run)
    name = next(iter(stored)) if len(stored) == 1 else run.name
    last = name.rsplit("/", 1)[-1]
    if rid and run.dir.name != rid and not run.dir.name.endswith(f"_{rid}"):
        report.add("run folder", f"the folder is named {run.dir.name}", f"the run's id is {rid}",
                   "the run folder was renamed (metrics.json names the run by its id); rename it back to its id")
        return name.rsplit("/", 1)[0] + "/" + rid if "/" in name and last != run.dir.name else run.name
    if len(stored) != 1:
        return run.name
    if last == run.dir.name:
        return name
    if last == rid and run.dir.name != rid:
        report.add("run folder", f"the folder is named {run.dir.name}", f"the run's id is {rid}",
                   "the run folder was renamed (its tables name it by its id); rename it back to its id")
        return name
    return run.name


def _config_value(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return KeyError
        node = node[part]
    return node


def _reader_model(config: Mapping[str, Any]) -> str | None:
    """The reader model ``metrics.json`` records for this ``config.yaml`` (``None``: cannot be told)."""
    reader = config.get("reader")
    if not isinstance(reader, Mapping):
        return None
    target = str(reader.get("_target_") or "")
    if target.endswith("NoneReader"):
        return "none"
    if reader.get("model"):
        return str(reader["model"])
    if target.endswith("FakeReader") and reader.get("max_words") is not None:
        return f"fake-{reader['max_words']}w"
    return None


def _check_config_digest(report: Report, run: Run) -> None:
    """``config.yaml`` and ``overrides.yaml`` against the digests ``metrics.json["config"]`` recorded when the run
    finished (runs written before the record: a note)."""
    recorded = run.summary.get("config")
    if recorded is None:
        if _current(run):
            report.notes.append("metrics.json records no digest of config.yaml (written before the record): a "
                                "settings edit that nothing else repeats cannot be told")
        return
    now = config_record(run.dir)
    for key, name in (("sha256", "config.yaml"), ("overrides_sha256", "overrides.yaml")):
        want = recorded.get(key) if isinstance(recorded, Mapping) else None
        if want != now[key]:
            report.add(name, f"content sha256 {now[key][:16] or '(missing)'}", f"sha256 {str(want)[:16]} (the "
                       "digest metrics.json recorded)", f"{name} was edited after the run (its content differs from the digest the "
                       "harness recorded when the run finished)")


def _check_config(report: Report, run: Run) -> None:
    """``config.yaml`` and ``overrides.yaml`` against the run: present in a run of the current format, the
    identity fields of ``metrics.json`` (experiment, dataset, system under test, alpha, metrics, reader,
    fidelity) agree with them, and every ``key=value`` override holds in ``config.yaml``."""
    cfg_path = run.dir / "config.yaml"
    if not cfg_path.is_file():
        if _current(run):
            report.add("config.yaml", MISSING, "the run's resolved configuration",
                       "config.yaml deleted: the harness writes it when the run starts")
        else:
            report.notes.append("no config.yaml (written before runs kept it): the run's identity is not checked")
        return
    config = run.config
    if not isinstance(config, Mapping) or not config:
        report.add("config.yaml", "(unreadable)", "the run's resolved configuration", "config.yaml was edited")
        return
    _check_config_digest(report, run)
    s = run.summary
    metric_names = _config_value(config, "metric.names")
    if isinstance(metric_names, list):
        metric_names = [str(m.get("name") if isinstance(m, Mapping) else m) for m in metric_names]
    expect = {"experiment": _config_value(config, "name"), "dataset": _config_value(config, "dataset.name"),
              "ours": _config_value(config, "system_name"), "alpha": _config_value(config, "metric.alpha"),
              "metric_names": metric_names, "fidelity.name": _config_value(config, "fidelity.name"),
              "reader.model": _reader_model(config),
              **{f"intervals.{k}": _config_value(config, f"metric.{c}") for k, c in INTERVAL_SETTINGS.items()}}
    for key, want in expect.items():
        if want is KeyError or want is None:
            continue
        have = _config_value(s, key)
        if key == "metric_names" and isinstance(have, list):  # the judge adds its metrics after the configured
            have = [m for m in have if not str(m).startswith("judge") or m in want]
        if key.startswith("intervals.") and "intervals" not in s:
            continue  # (runs written before intervals)
        if have is KeyError or (have != want and not (isinstance(want, float) and close(have, want))):
            report.add(f"metrics.json {key}", have if have is not KeyError else "(missing)", want,
                       f"metrics.json was edited: its {key} does not agree with config.yaml")
    env = run.dir / "env.json"
    recorded = None
    if "fidelity" in s and _current(run):  # the harness writes env.json with the fidelity, in the same call
        try:
            recorded = json.loads(env.read_text(encoding="utf-8-sig")).get("fidelity")
        except (OSError, ValueError, AttributeError) as exc:
            report.add("env.json", MISSING if not env.exists() else "(unreadable)", "the run's environment",
                       f"env.json {'deleted' if not env.exists() else 'was edited'}: the harness writes it with the "
                       f"fidelity metrics.json records ({type(exc).__name__})")
        else:
            if recorded is None:
                report.add("env.json fidelity", "(missing)", s["fidelity"], "env.json was edited: its fidelity "
                           "record was deleted")
    elif env.is_file() and "fidelity" in s:  # a run from before the records: checked where it has env.json
        try:
            recorded = json.loads(env.read_text(encoding="utf-8-sig")).get("fidelity")
        except (OSError, ValueError, AttributeError):
            recorded = None
    if recorded is not None and recorded != s["fidelity"]:
        for key in sorted(set(leaves(recorded)) | set(leaves(s["fidelity"]))):
            a, b = leaves(s["fidelity"]).get(key, "(missing)"), leaves(recorded).get(key, "(missing)")
            if a != b and not key.startswith("name"):  # the name is checked against config.yaml above
                report.add(f"metrics.json fidelity.{key}", a, b, "metrics.json was edited: its fidelity does "
                           "not agree with env.json's, written by the same call")
    over = run.dir / "overrides.yaml"
    if over.is_file():
        try:
            items = load_yaml(over.read_text(encoding="utf-8-sig"))
        except Exception as exc:  # any YAML error: a finding naming the file
            report.add("overrides.yaml", "(unreadable)", str(exc), "overrides.yaml was edited")
            return
        for item in items or []:
            key, sep, value = str(item).partition("=")
            key = key.lstrip("+~")
            if not sep or "." not in key or str(item).startswith("~"):
                continue  # a config group's choice: composed into config.yaml, not a value of it
            have = _config_value(config, key)
            want = load_yaml(value) if value else None
            if have is KeyError or (have != want and str(have) != value):
                report.add(f"overrides.yaml {key}", value, "(missing)" if have is KeyError else _show(have),
                           "overrides.yaml or config.yaml was edited: the override does not hold in config.yaml")
    else:
        report.notes.append("no overrides.yaml: config.yaml checked against metrics.json only")


# ---------------------------------------------------------------------------------------------------- scores
def _fmt_of(run: Run) -> Any:
    """The context format of a system from ``config.yaml`` (rows written before they recorded it)."""
    def fmt(system: str) -> str | None:
        spec = run.get("pruner") if system == run.summary.get("ours") else run.get(f"baselines.{system}")
        if not isinstance(spec, Mapping) or spec.get("refiner") or spec.get("graph"):
            return None  # a refiner or a graph system may choose its own format
        value = spec.get("fmt")
        return str(value) if value else None
    return fmt


def _rescore(report: Report, run: Run, rows: list[dict[str, Any]], causes: Causes) -> Rescored:
    names = list(run.summary.get("metric_names") or [])
    res = rescore(rows, names, _fmt_of(run), judgments(run.dir))
    for m, n in sorted(res.rescored.items()):
        if m not in res.skipped:
            report.notes.append(f"{m}: re-scored on all {n} saved scores")
    for m, (why, n) in sorted(res.skipped.items()):
        done = res.rescored.get(m, 0)
        report.notes.append(f"{m}: {n} saved scores not re-scored ({why}){f'; {done} re-scored' if done else ''}; "
                            "the aggregates are recomputed from the saved scores")
    shown: dict[tuple[str, str], int] = {}
    for d in res.differences:
        k = (d.system, d.metric)
        shown[k] = shown.get(k, 0) + 1
        if shown[k] <= 3:
            report.add(f"score {d.metric} of {d.system} on {d.id}", d.stored, d.recomputed, _score_cause(d.id, causes))
    for (system, metric), n in shown.items():
        if n > 3:
            report.add(f"score {metric} of {system}", "...", f"{n - 3} more examples differ", _score_cause("", causes))
    return res


def _score_cause(rid: str, causes: Causes) -> str:
    if any(rid and rid in c for c in causes.rows):
        return "rows: this row was edited"
    return causes.code or ("same rows and metric code: a dependency (rouge-score, sacrebleu) or the derivation of "
                           "the metric's input (HTML to text) differs")


# ---------------------------------------------------------------------------------------------------- metrics.json
def strip_intervals(summary: dict[str, Any]) -> None:
    """Remove what a run written before intervals did not record: the settings, each cell's interval, each
    test's ``sd_diff`` and ``diff_ci`` (its tables are then printed as they were, :attr:`Table.legacy`)."""
    summary.pop("intervals", None)
    for entry in (summary.get("systems") or {}).values():
        if isinstance(entry, dict):
            entry.pop("intervals", None)
    for by in (summary.get("tests") or {}).values():
        for t in (by or {}).values():
            if isinstance(t, dict):
                t.pop("sd_diff", None)
                t.pop("diff_ci", None)


def recompute(run: Run, res: Rescored) -> dict[str, Any]:
    """``metrics.json`` as the rows give it: :func:`~htmlrag.evaluation.summary.summarize` of the re-scored rows,
    with the run's identity and records taken from the stored file; metrics the rows cannot be aggregated on
    (``res.unscored``) keep their stored values."""
    stored = run.summary
    names = [m for m in stored.get("metric_names") or [] if m not in res.unscored]
    systems = system_order(stored)  # (the writers' order: htmlrag.evaluation.shapes.system_order)
    new = summarize(res.rows, systems, names, ours=str(stored.get("ours")), experiment=str(stored.get("experiment", "")),
                    run_id=str(stored.get("run_id", "")), dataset=str(stored.get("dataset", "")),
                    alpha=float(stored.get("alpha", 0.05)), fidelity=stored.get("fidelity"), reader=stored.get("reader"),
                    intervals=recorded_settings(stored))
    new = json.loads(json.dumps(new))  # as read back from the file (NaN -> null, ints stay ints)
    if "intervals" not in stored:  # written before intervals were recorded: compare what it recorded
        strip_intervals(new)
    for key in IDENTITY:
        if key in stored:
            new[key] = stored[key]
        else:
            new.pop(key, None)
    for m in res.unscored:
        for s, entry in new["systems"].items():
            entry["metrics"][m] = ((stored.get("systems") or {}).get(s) or {}).get("metrics", {}).get(m)
        if m in (stored.get("tests") or {}):
            new["tests"][m] = stored["tests"][m]
    for key in (*RECORDS, "config", PLOT_RECORD_KEY):  # records, checked against the files (_check_rows,
        # _check_config_digest, _check_plots)
        if key in stored:
            new[key] = stored[key]
    return new


#: Relative difference two stored floats may have and still be the same number: numpy and scipy releases round
#: the last bit of a bootstrap bound or a p-value differently (0.0009312481719849166 vs ...165).
LAST_BITS = 1e-12


def _equal(x: Any, y: Any) -> bool:
    """Equal, floats up to :data:`LAST_BITS` (also inside lists: intervals)."""
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_equal(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, float) and isinstance(y, float) and math.isfinite(x) and math.isfinite(y):
        return math.isclose(x, y, rel_tol=LAST_BITS, abs_tol=1e-300)
    return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))


def _check_metrics(report: Report, stored: Mapping[str, Any], new: Mapping[str, Any], res: Rescored,
                   causes: Causes) -> None:
    """Compare the stored ``metrics.json`` with the recomputed one (exactly, floats up to their last bits:
    :data:`LAST_BITS`; t-tests' t and p to 9 digits)."""
    extra = [k for k in stored if k not in new]
    if extra:
        report.notes.append(f"metrics.json keys not recomputed from rows (not checked): {', '.join(sorted(extra))}")
    a = leaves({k: v for k, v in stored.items() if k in new})
    b = leaves(new)
    changed = {d.metric.split(":")[0] for d in res.differences}
    for key in [*b, *(k for k in a if k not in b)]:
        x, y = a.get(key, "(missing)"), b.get(key, "(missing)")
        same = close(x, y) if key.startswith("tests.") and key.rsplit(".", 1)[-1] in ("p", "t") else _equal(x, y)
        if not same:
            rescored = any(f".{m}." in f".{key}." for m in changed)
            report.add(f"metrics.json {key}", x, y, causes.of_metrics(rescored))


# ---------------------------------------------------------------------------------------------------- tables
def _caption(run: Run, summary: Mapping[str, Any], report: Report) -> str:
    """The experiment's caption: ``config.yaml``'s, else read back from the stored ``results.md``."""
    if "caption" in run.config:
        return str(run.config.get("caption") or "")
    path = run.dir / "tables" / "results.md"
    first = path.read_text(encoding="utf-8-sig", errors="replace").split("\n", 1)[0] if path.is_file() else ""
    if not (first.startswith("**") and first.endswith("**")):
        return ""
    text, fid = first[2:-2], fidelity_caption([summary])
    report.notes.append("caption read from the stored results.md (no config.yaml)")
    return text[: -len(fid)].strip() if text.endswith(fid) else text


def _subsets(report: Report, run: Run, rows: list[dict[str, Any]] | None, res: Rescored | None
             ) -> tuple[list[str], bool, set[str]]:
    """The subset keys and pairwise flag of the stored tables, and the table files that cannot be recomputed."""
    tables = run.dir / "tables"
    found = {d.name[3:] for d in tables.glob("by_*") if d.is_dir()} if tables.is_dir() else set()
    # in the run's order (``docqa.subsets`` of its config.yaml), so the pairwise groups line up; the harness writes
    # a table for each of them (one missing is a finding)
    subsets = run.get("docqa.subsets")
    order = [str(k) for k in subsets] if isinstance(subsets, list) else []
    keys = order + sorted(found - set(order))
    pairwise = (tables / "pairwise.md").is_file() or (tables / "pairwise.json").is_file() or \
        bool(run.get("docqa.pairwise"))
    unknown: set[str] = set()
    for key in keys:
        why = ("no rows" if rows is None else "the rows do not record it (written before rows kept subset values)"
               if any(subset_value(r, key) is None for r in rows) else
               "some metrics cannot be aggregated from the rows" if res is not None and res.unscored else "")
        if why:
            report.notes.append(f"tables/by_{key}/: not checked ({why})")
            unknown.add(f"by_{key}/")
    if pairwise and (rows is None or unknown):
        report.notes.append("tables/pairwise.*: not checked (needs every subset value in the rows)")
        unknown.add("pairwise.")
    return [k for k in keys if f"by_{k}/" not in unknown], pairwise and "pairwise." not in unknown, unknown


def _formats(obj: Any, stem: str) -> dict[str, str]:
    """The texts :func:`htmlrag.evaluation.grid.write_formats` writes for ``obj``."""
    out = {f"{stem}.md": obj.to_markdown(), f"{stem}.csv": obj.to_csv(), f"{stem}.tex": obj.to_latex()}
    if hasattr(obj, "provenance_csv"):
        out[f"{stem}.provenance.csv"] = obj.provenance_csv()
    return out


def _prices(run: Run) -> PriceTable:
    """The price table of the run: ``config.yaml``'s ``cost`` group (what the harness used), else the one
    ``cost.json`` recorded."""
    if isinstance(run.config.get("cost"), Mapping):
        return PriceTable.from_dict(run.config["cost"])
    return recorded_prices(run.dir)


def report_tables(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], run: Run, name: str
                  ) -> tuple[dict[str, str], dict[str, Any]]:
    """The frontier, waterfall and cost tables as :func:`htmlrag.evaluation.report.write_run_report` writes them
    (``{path under tables/: text}``), and the ``cost.json`` it writes (``{}``: none)."""
    made, cost = run_report_tables(summary, rows, _prices(run), name)
    out: dict[str, str] = {}
    for stem, table in made.items():
        out.update(_formats(table, stem))
    return out, json.loads(json.dumps(cost))


JUDGMENTS, JUDGE = "judgments.jsonl", "judge.json"


def _judge_records(run: Run) -> list[dict[str, Any]]:
    """The lines of ``judgments.jsonl`` (``ValueError`` naming a line that is not a verdict record)."""
    records = []
    for i, line in enumerate((run.dir / JUDGMENTS).read_text(encoding="utf-8-sig").split("\n"), 1):
        if line.strip():
            rec = json.loads(line)
            if not isinstance(rec, dict) or "system" not in rec or "id" not in rec:
                raise ValueError(f"{JUDGMENTS} line {i}: not a verdict record")
            records.append(rec)
    return records


def _check_judgments(report: Report, run: Run, causes: Causes) -> None:
    """``judgments.jsonl`` against the digest ``judge.json`` recorded (runs judged before the record: a note)."""
    if not (run.dir / JUDGMENTS).is_file() or not (run.dir / JUDGE).is_file():
        return
    try:
        stored = json.loads((run.dir / JUDGE).read_text(encoding="utf-8-sig"))
        records = _judge_records(run)
    except (OSError, ValueError):
        return  # (named by _judge_tables)
    want = stored.get("judgments") if isinstance(stored, Mapping) else None
    if not isinstance(want, Mapping):
        report.notes.append(f"{JUDGE} records no digest of {JUDGMENTS} (judged before the record): an edited "
                            "verdict shows as judged scores that differ, not by its line")
        return
    now = judgments_record(records)
    if now != dict(want):
        causes.judgments = (f"{JUDGMENTS} was edited: {now['n']} lines, sha256 {now['sha256'][:16]}, where {JUDGE} "
                            f"recorded {want.get('n')} lines, sha256 {str(want.get('sha256'))[:16]}")
        report.add(JUDGMENTS, f"{want.get('n')} verdict lines (digest recorded)", f"{now['n']} lines, another digest",
                   causes.judgments)


def _judge_tables(report: Report, run: Run, summary: Mapping[str, Any]) -> dict[str, str]:
    """``judge.json`` recomputed from ``judgments.jsonl`` (:func:`htmlrag.docqa.judge.judge_report`) and
    compared; the texts of ``tables/judge_agreement.*`` from the recomputed report (``{}``: the run has no judge)."""
    lines_path, report_path = run.dir / JUDGMENTS, run.dir / JUDGE
    if not lines_path.exists() and not report_path.exists():
        return {}
    if not lines_path.is_file():
        report.add(JUDGMENTS, MISSING, "the judge's verdicts, one line per answer",
                   f"{JUDGMENTS} deleted: {JUDGE} and the judged scores cannot be recomputed")
        return {}
    try:
        stored = json.loads(report_path.read_text(encoding="utf-8-sig"))
    except OSError:
        report.add(JUDGE, MISSING, "the judge's counts and agreement", f"{JUDGE}: {MISSING} (the harness writes it "
                   f"with {JUDGMENTS})")
        return {}
    except ValueError as exc:
        report.add(JUDGE, "(unreadable)", str(exc), f"{JUDGE} was edited")
        return {}
    records = _judge_records(run)
    stored = stored if isinstance(stored, Mapping) else {}
    config = run.config.get("judge") if isinstance(run.config.get("judge"), Mapping) else {}
    draws = config.get("draws", stored.get("draws"))
    name = config.get("name", stored.get("judge"))
    second = stored.get("second_model") if any("second" in r for r in records) else None
    if second is not None and isinstance(config.get("second"), Mapping) and config["second"].get("model"):
        second = str(config["second"]["model"])
    new = json.loads(json.dumps(judge_report(records, judge=str(name), model=str(stored.get("model")),
                                             draws=int(draws or 1), second_model=second)))
    per_draw_cache = all("cached" in d for r in records for d in (r.get("draws") or []))
    a, b = leaves(stored), leaves(new)
    for key in [*b, *(k for k in a if k not in b)]:
        if key.startswith("judgments."):
            continue  # (the digest: _check_judgments)
        if key.endswith(".cached") and not per_draw_cache:
            continue  # (lines written before each draw recorded whether it came from the cache)
        x, y = a.get(key, "(missing)"), b.get(key, "(missing)")
        if not close(x, y):
            report.add(f"{JUDGE} {key}", x, y, f"{JUDGE} does not follow from {JUDGMENTS} and config.yaml (edited)")
    if not per_draw_cache:
        report.notes.append(f"{JUDGE}: the cached counts of draws after the first are not checked ({JUDGMENTS} "
                            "written before each draw recorded it)")
    return _formats(judge_grid(new, summary), "judge_agreement")


def _check_cost(report: Report, run: Run, cost: Mapping[str, Any], cause: str) -> None:
    path = run.dir / "cost.json"
    if not cost:
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError:
        report.add("cost.json", MISSING, "the cost ledger's summary", f"cost.json: {MISSING}")
        return
    except ValueError as exc:
        report.add("cost.json", "(unreadable)", str(exc), "cost.json was edited")
        return
    a, b = leaves(stored if isinstance(stored, Mapping) else {}), leaves(cost)
    for key in [*b, *(k for k in a if k not in b)]:
        x, y = a.get(key, "(missing)"), b.get(key, "(missing)")
        if not close(x, y):
            report.add(f"cost.json {key}", x, y, cause)


def _check_tables(report: Report, run: Run, summary: Mapping[str, Any], rows: list[dict[str, Any]] | None,
                  res: Rescored | None, cause: str, write: bool, name: str) -> dict[str, Any]:
    """Recompute every table file under ``tables/`` and compare (or, with ``write``, rewrite them); a table the
    harness writes for this run that is not stored is a finding. Returns the recomputed cost summary (what
    ``cost.json`` should hold; ``{}``: none), which the plots' check uses too."""
    keys, pairwise, unknown = _subsets(report, run, rows, res)
    used = (res.rows if res else rows) or []
    texts = run_tables(summary, used, run=name, caption=_caption(run, summary, report), subsets=keys,
                       pairwise=pairwise)
    extra, cost = report_tables(summary, used, run, name)
    texts.update(extra)
    texts.update(_judge_tables(report, run, summary))
    folder = run.dir / "tables"
    if write and folder.exists() and (folder.is_symlink() or not folder.resolve().is_relative_to(run.dir.resolve())):
        report.add("tables", "the run's own folder", f"a link to {folder.resolve()}", "tables/ is a link out of "
                   "the run folder: nothing is written through it (it would overwrite another folder's files)")
        write = False
    stored = sorted(p.relative_to(folder).as_posix() for p in walk(folder) if p.is_file()) if folder.is_dir() else []
    for rel in stored:
        if rel not in texts:
            if not any(rel.startswith(u) for u in unknown):
                report.notes.append(f"tables/{rel}: not checked (not a table of the run's own)")
            continue
        if write:
            atomic_write(folder / rel, texts[rel])
            continue
        report.tables += 1
        try:
            text = (folder / rel).read_text(encoding="utf-8-sig", errors="replace")
        except OSError as exc:
            report.add(f"tables/{rel}", "(unreadable)", str(exc), "the file cannot be read")
            continue
        for d in diff_table(f"tables/{rel}", text, texts[rel]):
            report.add(d.where, d.stored, d.recomputed, cause)
    if not write and rows is not None:
        _check_cost(report, run, cost, cause)
    for rel in sorted(set(texts) - set(stored)):
        if write:
            atomic_write(folder / rel, texts[rel])
        elif folder.exists() and not folder.is_dir():
            report.add(f"tables/{rel}", MISSING, "the table the harness writes", "tables is not a folder: "
                       f"{MISSING}")
        else:
            report.add(f"tables/{rel}", MISSING, "the table the harness writes", MISSING)
    return cost


# ---------------------------------------------------------------------------------------------------- plots
PLOTS = "plots"
#: The cause of a plot whose recorded data is not the data the run's files give.
STALE_CAUSE = ("the plot is stale: it was drawn from other numbers than the run's metrics.json and cost.json hold "
               "(they were rewritten after it was drawn, the plot and its record came from another run, or "
               f"{PLOTS}/{PLOT_RECORDS} was edited; htmlrag-paper verify --write-tables redraws it)")
#: The cause of a PNG whose bytes are not the ones the harness wrote.
PNG_CAUSE = (f"the PNG was replaced or edited after the harness drew it: its bytes differ from the SHA-256 "
             f"{PLOTS}/{PLOT_RECORDS} recorded (an image from another run, or an edited one)")


def _stored_cost(run: Run) -> dict[str, Any]:
    """``cost.json`` as stored (``{}`` when missing or unreadable: :func:`_check_cost` names it)."""
    try:
        cost = json.loads((run.dir / "cost.json").read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return {}
    return cost if isinstance(cost, dict) else {}


def _keyed(node: Any) -> Any:
    """A plot's data with its lists as mappings, so :func:`~htmlrag.evaluation.runs.leaves` enters them: an item
    that has a label by it (a frontier line, a Pareto point: ``lines.bm25.means.1``), others by their index."""
    if isinstance(node, Mapping):
        return {str(k): _keyed(v) for k, v in node.items()}
    if isinstance(node, list) and node:
        return {str(v["label"]) if isinstance(v, Mapping) and "label" in v else str(i): _keyed(v)
                for i, v in enumerate(node)}
    return node


def _plot_differences(drawn: Mapping[str, Plot], now: Mapping[str, Plot]) -> dict[str, tuple[str, Any, str]]:
    """Per plot whose data from the stored numbers (``drawn``) is not the one from the recomputed numbers
    (``now``), to :data:`~htmlrag.evaluation.table_diff.REL_TOL`: where the first difference is, its stored and
    its recomputed value, with how many more differ (a plot only one of them draws: ``("", ...)``)."""
    out: dict[str, tuple[str, Any, str]] = {}
    for name in [*drawn, *(n for n in now if n not in drawn)]:
        if name not in now or name not in drawn:
            out[name] = ("", "drawn" if name in drawn else "(not drawn)", "drawn" if name in now else "(not drawn)")
            continue
        a, b = leaves(_keyed(drawn[name].data)), leaves(_keyed(now[name].data))
        keys = [k for k in [*b, *(k for k in a if k not in b)] if not close(a.get(k, "(missing)"), b.get(k, "(missing)"))]
        if keys:
            more = f" (and {len(keys) - 1} more values differ)" if len(keys) > 1 else ""
            out[name] = (keys[0], a.get(keys[0], "(missing)"), _show(b.get(keys[0], "(missing)")) + more)
    return out


def _plot_files(folder: Path) -> list[str]:
    """The files below ``plots/`` by their path under it, but its record."""
    if not folder.is_dir():
        return []
    return [rel for p in walk(folder) if p.is_file() and (rel := p.relative_to(folder).as_posix()) != PLOT_RECORDS]


def _check_plots(report: Report, run: Run, now: Mapping[str, Plot] | None, cause: str, write: bool) -> None:
    """Check ``plots/`` against ``plots/plots.json`` (module docstring, 6), or, with ``write``, redraw the plots
    and rewrite the record. ``now``: the plots' data from the recomputed numbers (``None``: no rows to
    recompute them from); ``cause``: why the recomputed numbers differ from the stored ones, if they do."""
    folder = run.dir / PLOTS
    records_path = folder / PLOT_RECORDS
    said = run.summary.get(PLOT_RECORD_KEY)
    if said is not None and said != PLOT_RECORD_PATH:
        report.add(f"metrics.json {PLOT_RECORD_KEY}", said, PLOT_RECORD_PATH, "metrics.json was edited: the harness "
                   "records there where it wrote the plots' record")
    if not write and not records_path.exists():
        if said is None:
            report.notes.append(f"plots not checked: written before plot records (no {PLOTS}/{PLOT_RECORDS}, and "
                                f"metrics.json does not say that one was written)")
        else:
            report.add(PLOT_RECORD_PATH, MISSING, "the harness's record of the plots it drew (metrics.json's "
                       f"{PLOT_RECORD_KEY!r} says it was written)", f"{PLOT_RECORD_PATH} deleted: the plots cannot "
                       "be checked without it (htmlrag-paper verify --write-tables redraws them and writes it)")
        return
    drawn = run_plots(run.summary, _stored_cost(run))  # the data each plot is drawn from, by the writer's code
    differ = _plot_differences(drawn, now) if now is not None else {}
    if write:
        _write_plots(report, run, drawn, differ, cause)
        return
    try:
        records = read_plot_records(records_path)
    except (OSError, ValueError) as exc:
        report.add(f"{PLOTS}/{PLOT_RECORDS}", "(unreadable)", "the harness's record of the plots it drew",
                   f"{PLOTS}/{PLOT_RECORDS} was edited: {exc}")
        return
    for rel in _plot_files(folder):
        if rel not in records:
            report.add(f"{PLOTS}/{rel}", "a file in plots/", f"not listed in {PLOTS}/{PLOT_RECORDS}",
                       f"a file not written by the harness: {PLOTS}/{PLOT_RECORDS} lists every plot it draws")
    for name, rec in records.items():
        where, path = f"{PLOTS}/{name}", folder / name
        if not path.is_file():
            report.add(where, MISSING, f"the PNG {PLOTS}/{PLOT_RECORDS} lists", f"{where} deleted: the harness drew "
                       f"it and recorded it in {PLOTS}/{PLOT_RECORDS}")
            continue
        try:
            png = sha256_file(path)
        except OSError as exc:
            report.add(where, "(unreadable)", str(exc), "the file cannot be read")
            continue
        if png != rec["png_sha256"]:
            report.add(where, f"content sha256 {png[:16]}", f"sha256 {rec['png_sha256'][:16]} (the digest "
                       f"{PLOTS}/{PLOT_RECORDS} recorded)", PNG_CAUSE)
        plot = drawn.get(name)
        if plot is None:
            report.add(where, f"drawn from data sha256 {rec['data_sha256'][:16]}", "a plot the run's metrics.json "
                       "and cost.json do not draw", STALE_CAUSE)
        elif plot.kind != rec["kind"] or plot.digest() != rec["data_sha256"]:
            report.add(where, f"drawn from data sha256 {rec['data_sha256'][:16]}", f"data sha256 "
                       f"{plot.digest()[:16]} (rebuilt from the run's metrics.json and cost.json)", STALE_CAUSE)
        elif name in differ:
            _add_difference(report, name, differ[name], cause)
    for name in drawn:
        if name not in records:
            report.add(f"{PLOTS}/{name}", f"not listed in {PLOTS}/{PLOT_RECORDS}", "a plot the harness draws for the "
                       "run's numbers", f"{PLOTS}/{PLOT_RECORDS} was edited, or written for other numbers: the "
                       "harness records every plot it draws")


def _add_difference(report: Report, name: str, diff: tuple[str, Any, str], cause: str) -> None:
    key, stored, now = diff
    report.add(f"{PLOTS}/{name}" + (f" {key}" if key else ""), stored, now,
               f"the plot is stale: the numbers it was drawn from do not follow from the rows: {cause}")


def _write_plots(report: Report, run: Run, drawn: Mapping[str, Plot], differ: Mapping[str, Any], cause: str) -> None:
    """``--write-tables``: redraw every plot the run's numbers give and rewrite ``plots/plots.json``, unless
    those numbers do not follow from the rows (then each plot that differs is a finding) or ``plots/`` is not a
    folder of the run's own. A file in ``plots/`` the harness does not draw is not deleted: it is a finding."""
    folder = run.dir / PLOTS
    if folder.exists() and (folder.is_symlink() or not folder.resolve().is_relative_to(run.dir.resolve())):
        report.add(PLOTS, "the run's own folder", f"a link to {folder.resolve()}", "plots/ is a link out of the run "
                   "folder: nothing is written through it (it would overwrite another folder's files)")
        return
    if folder.exists() and not folder.is_dir():
        report.add(PLOTS, "a folder", "a file", "plots is not a folder: the plots cannot be drawn")
        return
    if differ:
        for name, diff in differ.items():
            _add_difference(report, name, diff, cause)
        report.notes.append("plots not redrawn: the numbers they are drawn from (metrics.json, cost.json) do not "
                            "follow from the rows")
        return
    try:
        write_plots(folder, drawn)
    except ImportError:
        report.notes.append("plots not redrawn: matplotlib is not installed")
        return
    for rel in _plot_files(folder):
        if rel not in drawn:
            report.add(f"{PLOTS}/{rel}", "a file in plots/", f"not drawn (not listed in {PLOTS}/{PLOT_RECORDS})",
                       "a file not written by the harness (not deleted by --write-tables)")


# ---------------------------------------------------------------------------------------------------- runs
TABLE_CAUSE = ("the table does not follow from metrics.json (edited, or written by older table code; "
               "htmlrag-paper verify --write-tables rewrites it)")


#: What a row or file of an unexpected shape raises while numbers are recomputed from it.
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, HtmlRagError, UnicodeDecodeError)


def verify_run(path: str | Path, *, write_tables: bool = False) -> Report:
    """Verify one run folder (module docstring). ``write_tables``: rewrite ``tables/`` from the recomputed
    numbers instead of comparing, and redraw ``plots/`` with its record, when ``metrics.json`` agrees with the
    rows. A row or file of a shape the
    numbers cannot be recomputed from is a finding naming it, never a traceback."""
    run = open_run(path)
    report = Report(run.name, run.dir)
    try:
        special = special_files(run.dir)
    except InputError as exc:  # nested too deep or too many entries: not a folder the harness wrote
        report.add("run", "a run folder as the harness writes it", str(exc), "a folder was added to the run")
        return report
    if special:  # a FIFO blocks whoever reads it: nothing more is read
        for p in special:
            report.add(p.relative_to(run.dir).as_posix(), "a regular file", "a FIFO, socket, device or broken link",
                       "a file was replaced (not written by the harness)")
        return report
    if run.problems or not run.complete:
        report.add("run", "a finished run", "; ".join(run.problems) or "no metrics.json", "the run cannot be read")
        return report
    causes = Causes()
    try:
        name = _name(report, run)
        _check_records(report, run)
        _check_config(report, run)
    except SHAPE_ERRORS as exc:
        report.add("run", "records of the shape the harness writes", f"{type(exc).__name__}: {exc}",
                   "a file has a shape the harness does not write (edited, or another tool's)")
        name = run.name
    rows, dup = _read_rows(report, run)
    res, summary = None, run.summary
    try:
        if rows is not None:
            report.rows = len(rows)
            _check_rows(report, run, rows, dup, causes)
            _check_code(report, run, causes)
            _check_judgments(report, run, causes)
            res = _rescore(report, run, rows, causes)
            summary = recompute(run, res)
            _check_metrics(report, run.summary, summary, res, causes)
        metrics_ok = not any(f.where.startswith(("metrics.json", "rows", "score", PREDICTIONS, JUDGMENTS))
                             for f in report.findings)
        cause = TABLE_CAUSE if metrics_ok else causes.of_metrics(bool(res and res.differences))
        if any(f.where.startswith("metrics.json") and f.cause.startswith("metrics.json was edited")
               for f in report.findings):  # (not "rows: 1 edited": the tables then follow the rows' fault)
            cause = "metrics.json was edited (the tables follow from the file as the harness wrote it)"
        if write_tables and report.findings:
            report.notes.append("tables not rewritten: " + ("metrics.json does not follow from the rows" if not
                                metrics_ok else "the run's files disagree with its records (findings above)"))
            write_tables = False
        cost = _check_tables(report, run, summary, rows, res, cause, write_tables, name)
        plot_cause = (causes.of_metrics(bool(res and res.differences)) if not metrics_ok else
                      "cost.json does not follow from the rows (edited)")
        _check_plots(report, run, run_plots(summary, cost) if rows is not None else None, plot_cause,
                     write_tables and report.ok)
    except SHAPE_ERRORS as exc:
        report.add("run", "rows and metrics.json of the shape the harness writes", f"{type(exc).__name__}: {exc}",
                   "a row or file has a shape the numbers cannot be recomputed from (edited, or another tool's)")
    if report.ok and causes.code:
        report.notes.append(f"{causes.code}; its numbers still agree")
    return report


def runs_below(paths: Iterable[str | Path]) -> list[Path]:
    """The run folders given, or found below the folders given (a results root)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"{p}: no such folder")
        if is_run(p):
            out.append(p)
            continue
        found = [r.dir for r in find_runs([p])]
        if not found:
            raise InputError(f"{p}: no runs (metrics.json) at or below it")
        out += found
    return out


def verify(paths: Iterable[str | Path], *, write_tables: bool = False) -> list[Report]:
    """:func:`verify_run` on every run at or below ``paths``."""
    return [verify_run(p, write_tables=write_tables) for p in runs_below(paths)]
