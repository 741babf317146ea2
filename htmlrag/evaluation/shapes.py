"""The shapes of what a run folder holds, checked once where it is read (:meth:`htmlrag.evaluation.store.RunStore.read_rows`
for prediction rows, :func:`htmlrag.evaluation.runs.open_run` for ``metrics.json``), so that no consumer -- the
summary, the t-tests, the table commands, the web app -- meets a score that is a string or a system that is a list.

Each checker returns the first problem as ``"<dotted field>: <what is wrong>"``, or ``None``. Only fields that
consumers read are checked; other fields may hold anything. Numbers are ints or floats, never booleans; a
number field may be ``null`` (a metric that was not computed) and, in ``metrics.json``, ``"inf"``/``"-inf"``
(how :func:`htmlrag.evaluation.summary.summarize` writes infinities).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_INF = ("inf", "-inf")


def _what(x: Any) -> str:
    text = repr(x)
    return f"{type(x).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _number(x: Any, *, inf_text: bool = False) -> bool:
    if x is None or (inf_text and x in _INF):
        return True
    return isinstance(x, int | float) and not isinstance(x, bool)


def _numbers(node: Any, where: str, *, inf_text: bool = False) -> str | None:
    """``node`` is a mapping of names to numbers (or null)."""
    if node is None:
        return None
    if not isinstance(node, Mapping):
        return f"{where}: must be an object of numbers, got {_what(node)}"
    for k, v in node.items():
        if not _number(v, inf_text=inf_text):
            return f"{where}.{k}: must be a number, got {_what(v)}"
    return None


def _typed(node: Mapping[str, Any], where: str, fields: Mapping[str, tuple[type, ...]]) -> str | None:
    for name, types in fields.items():
        v = node.get(name)
        if v is not None and (not isinstance(v, types) or (isinstance(v, bool) and bool not in types)):
            kinds = " or ".join(t.__name__ for t in types)
            return f"{where}{name}: must be {kinds}, got {_what(v)}"
    return None


_ROW = {"index": (int,), "question": (str,), "answers": (list,), "error": (str,), "systems": (dict,)}
_SYSTEM = {"response": (str,), "context": (str,), "error": (str,), "cached": (bool,), "page_errors": (dict,),
           "truncated": (bool,)}


def _system_problem(name: str, rec: Any) -> str | None:
    where = f"systems.{name}"
    if not isinstance(rec, Mapping):
        return f"{where}: must be an object, got {_what(rec)}"
    bad = _typed(rec, f"{where}.", _SYSTEM)
    for key in ("tokens", "seconds"):
        if bad is None and not _number(rec.get(key)):
            bad = f"{where}.{key}: must be a number, got {_what(rec.get(key))}"
    for key in ("scores", "stage_tokens", "reader_tokens"):
        bad = bad or _numbers(rec.get(key), f"{where}.{key}")
    stats = rec.get("metric_stats")
    if bad is None and stats is not None:
        if not isinstance(stats, Mapping):
            return f"{where}.metric_stats: must be an object, got {_what(stats)}"
        for m, vals in stats.items():
            if vals is not None and not (isinstance(vals, list) and all(_number(v) for v in vals)):
                return f"{where}.metric_stats.{m}: must be a list of numbers, got {_what(vals)}"
    return bad


def row_problem(row: Any) -> str | None:
    """What is wrong with one prediction row (see the module docstring), or ``None``."""
    if not isinstance(row, Mapping):
        return f"a row must be a JSON object with an 'id', got {type(row).__name__}"
    rid = row.get("id")
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        return f"a row must be a JSON object with an 'id' (a string or an integer), got id {_what(rid)}"
    bad = _typed(row, "", _ROW)
    if bad is None and isinstance(row.get("answers"), list):
        bad = next((f"answers: must be a list of strings, got {_what(a)}" for a in row["answers"]
                    if not isinstance(a, str)), None)
    if bad is None and isinstance(row.get("systems"), Mapping):
        bad = next((p for name, rec in row["systems"].items() if (p := _system_problem(str(name), rec))), None)
    return bad


def _fidelity_problem(rec: Any) -> str | None:
    """``fidelity`` is a name or ``{"name": str, "deviations": [str, ...]}`` (either may be missing or null)."""
    if not isinstance(rec, Mapping):
        return None  # a string, or missing; other types are refused by the caller's type check
    bad = _typed(rec, "fidelity.", {"name": (str,), "deviations": (list,)})
    if bad is None and isinstance(rec.get("deviations"), list):
        bad = next((f"fidelity.deviations: must be a list of strings, got {_what(d)}" for d in rec["deviations"]
                    if not isinstance(d, str)), None)
    return bad


def _intervals_problem(node: Any, where: str) -> str | None:
    """A system's ``intervals``: metric -> ``[low, high]`` (numbers) or null."""
    if node is None:
        return None
    if not isinstance(node, Mapping):
        return f"{where}: must be an object of [low, high] intervals, got {_what(node)}"
    for k, v in node.items():
        if v is not None and not (isinstance(v, list) and len(v) == 2 and all(_number(x, inf_text=True) for x in v)):
            return f"{where}.{k}: must be [low, high] (two numbers) or null, got {_what(v)}"
    return None


def summary_problem(summary: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``metrics.json`` object (see the module docstring), or ``None``."""
    for key in ("metric_names", "system_order"):
        v = summary.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            return f"{key}: must be a list of strings, got {_what(v)}"
    bad = _typed(summary, "", {"n_examples": (int,), "n_failed_examples": (int,), "experiment": (str,),
                               "dataset": (str,), "ours": (str,), "run_id": (str,), "tests": (dict,),
                               "fidelity": (dict, str), "reader": (dict,)})
    if bad:
        return bad
    bad = _fidelity_problem(summary.get("fidelity")) or _typed(summary, "", {"intervals": (dict,)})
    if bad:
        return bad
    systems = summary.get("systems")
    if systems is None:
        return None
    if not isinstance(systems, Mapping):
        return f"systems: must be an object, got {_what(systems)}"
    for name, entry in systems.items():
        where = f"systems.{name}"
        if not isinstance(entry, Mapping):
            return f"{where}: must be an object, got {_what(entry)}"
        bad = (_typed(entry, f"{where}.", {"n": (int,), "n_errors": (int,), "n_truncated": (int,)})
               or _numbers(entry.get("unusable_scores"), f"{where}.unusable_scores")
               or _numbers(entry.get("metrics"), f"{where}.metrics", inf_text=True)
               or _numbers(entry.get("stage_tokens"), f"{where}.stage_tokens", inf_text=True)
               or _numbers(entry.get("reader_tokens"), f"{where}.reader_tokens", inf_text=True)
               or _intervals_problem(entry.get("intervals"), f"{where}.intervals"))
        if bad:
            return bad
    order = summary.get("system_order") or []
    missing = [s for s in order if s not in systems]
    return f"system_order: names systems that are not in systems: {missing[:3]}" if missing else None


def system_order(summary: Mapping[str, Any]) -> list[str]:
    """The order every table and plot of a run lists its systems in, whoever writes them (the run itself,
    ``htmlrag-paper report``, ``htmlrag-paper verify`` recomputing or rewriting them): ``metrics.json["system_order"]``
    (the order the systems ran, as :func:`htmlrag.evaluation.summary.summarize` records it), then any system it does
    not name, by name. A run written before ``system_order`` was recorded: its systems by name, the system under test
    (``ours``) last -- what ``summarize`` records for them, so verify (which re-summarizes such a run's rows in this
    order) and the writers agree.

    Never the order of ``summary["systems"]``: the run holds that mapping in memory in the order its systems ran,
    a reader of ``metrics.json`` by name (the file is written with sorted keys), so a table written from the one and
    rewritten or checked from the other listed its rows in another order."""
    systems = summary.get("systems")
    names = [str(s) for s in systems] if isinstance(systems, Mapping) else []
    recorded = summary.get("system_order")
    if isinstance(recorded, list) and recorded:
        order = list(dict.fromkeys(str(s) for s in recorded))
        seen = set(order)
        return order + sorted(s for s in names if s not in seen)
    ours = summary.get("ours")
    return [s for s in sorted(names) if s != ours] + ([str(ours)] if ours in names else [])


def in_system_order(summary: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """``names`` (systems of the run: the keys of its waterfall or cost summary) in :func:`system_order`; any it
    does not hold after them, by name."""
    wanted = list(dict.fromkeys(str(n) for n in names))
    known = set(wanted)
    order = [s for s in system_order(summary) if s in known]
    placed = set(order)
    return order + sorted(s for s in wanted if s not in placed)
