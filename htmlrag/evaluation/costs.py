"""The cost ledger turned into money, and quality against cost as a Pareto front.

Rows hold, per question and system, ``cost.seconds`` / ``cost.gpu_seconds`` per stage and ``cost.tokens`` per
model (:mod:`htmlrag.evaluation.scoring.loop`). A :class:`PriceTable` (the ``cost`` config group) prices them:

    money = sum over models (input tokens x input price + output tokens x output price) / 1e6
          + GPU-seconds x gpu_hour / 3600
          + wall seconds of the stages without GPU time x cpu_hour / 3600

A model without a price is *unpriced*: its tokens are reported, never priced at 0 silently (the table says
which). Per system, :func:`cost_summary` averages over the questions it scored without error.

**Pareto front**: a system is on it when no other system has at least its quality at no more than its cost,
better in one of the two (quality: the run's first metric, higher better; cost: money per question when the
price table prices anything, else wall seconds per question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.evaluation.shapes import system_order


@dataclass
class PriceTable:
    """Prices (see the module docstring): ``models[name] = {"input": per 1M, "output": per 1M}``."""

    models: dict[str, dict[str, float]] = field(default_factory=dict)
    gpu_hour: float = 0.0
    cpu_hour: float = 0.0
    currency: str = "USD"
    name: str = "default"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> PriceTable:
        """From the ``cost`` config (or ``cost.json["prices"]``)."""
        d = dict(d or {})
        models = {str(k): {"input": float((v or {}).get("input", 0) or 0), "output": float((v or {}).get("output", 0) or 0)}
                  for k, v in (d.get("models") or {}).items()}
        return cls(models, float(d.get("gpu_hour", 0) or 0), float(d.get("cpu_hour", 0) or 0),
                   str(d.get("currency", "USD")), str(d.get("name", "default")))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "currency": self.currency, "models": self.models, "gpu_hour": self.gpu_hour,
                "cpu_hour": self.cpu_hour}

    @property
    def prices_anything(self) -> bool:
        return bool(self.gpu_hour or self.cpu_hour or any(v["input"] or v["output"] for v in self.models.values()))

    def money(self, ledger: Mapping[str, Any]) -> tuple[float, list[str]]:
        """Money of one record's ledger, and the models it used that have no price."""
        total, unpriced = 0.0, []
        for model, rec in (ledger.get("tokens") or {}).items():
            price = self.models.get(model)
            if price is None:
                unpriced.append(model)
                continue
            total += (rec.get("input", 0) * price["input"] + rec.get("output", 0) * price["output"]) / 1e6
        gpu = ledger.get("gpu_seconds") or {}
        total += sum(gpu.values()) * self.gpu_hour / 3600
        total += sum(v for k, v in (ledger.get("seconds") or {}).items() if k not in gpu) * self.cpu_hour / 3600
        return total, unpriced


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _ledgers(rows: Sequence[Mapping[str, Any]], system: str) -> list[Mapping[str, Any]]:
    return [e["cost"] for r in rows if not r.get("error")
            for e in [(r.get("systems") or {}).get(system) or {}] if not e.get("error") and e.get("cost")]


def system_cost(ledgers: Sequence[Mapping[str, Any]], prices: PriceTable) -> dict[str, Any]:
    """Means per question of one system's ledgers: seconds (total and per stage), GPU-seconds, tokens per model
    (input, output) and money, with the unpriced models."""
    n = len(ledgers)
    stages = sorted({k for x in ledgers for k in (x.get("seconds") or {})})
    seconds = {k: sum((x.get("seconds") or {}).get(k, 0.0) for x in ledgers) / n for k in stages}
    gpu_all = [sum((x.get("gpu_seconds") or {}).values()) for x in ledgers]
    models = sorted({m for x in ledgers for m in (x.get("tokens") or {})})
    tokens = {m: {k: sum(((x.get("tokens") or {}).get(m) or {}).get(k, 0) for x in ledgers) / n
                  for k in ("input", "output")} for m in models}
    money = [prices.money(x) for x in ledgers]
    unpriced = sorted({m for _, u in money for m in u})
    return {"n": n, "seconds": sum(seconds.values()), "stage_seconds": seconds,
            "gpu_seconds": _mean(gpu_all) if any(gpu_all) else None, "tokens": tokens,
            "money": _mean([m for m, _ in money]), "unpriced": unpriced}


def pareto_front(points: Mapping[str, tuple[float | None, float | None]]) -> set[str]:
    """Names on the Pareto front of ``{name: (quality, cost)}`` (higher quality, lower cost; see the module
    docstring); points without both numbers are left out."""
    ok = {k: v for k, v in points.items() if v[0] is not None and v[1] is not None}
    front = set()
    for k, (q, c) in ok.items():
        dominated = any(q2 >= q and c2 <= c and (q2 > q or c2 < c) for k2, (q2, c2) in ok.items() if k2 != k)
        if not dominated:
            front.add(k)
    return front


def cost_summary(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], prices: PriceTable,
                 metric: str | None = None) -> dict[str, Any]:
    """``cost.json``: the prices, per system its :func:`system_cost`, its quality (``metric``, default the run's
    first) with interval, the cost axis of the front and whether it is on it. ``{}`` when no row has a ledger."""
    systems = system_order(summary)  # (the order of the run's tables, whoever computes them)
    metric = metric or next(iter(summary.get("metric_names") or []), None)
    per = {s: system_cost(led, prices) for s in systems if (led := _ledgers(rows, s))}
    if not per or metric is None:
        return {}
    axis = "money" if prices.prices_anything else "seconds"
    for s, rec in per.items():
        entry = summary["systems"].get(s, {})
        rec["quality"] = (entry.get("metrics") or {}).get(metric)
        rec["interval"] = (entry.get("intervals") or {}).get(metric)
    front = pareto_front({s: (rec["quality"], rec[axis]) for s, rec in per.items()})
    for s, rec in per.items():
        rec["front"] = s in front
    return {"prices": prices.to_dict(), "metric": metric, "axis": axis, "systems": per,
            "definition": "means per question over the questions each system scored without error; see "
                          "htmlrag.evaluation.costs"}
