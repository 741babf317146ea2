"""Experiment trackers fed when a run ends (the ``logger`` config group; nothing here changes a result).

- ``logger=mlflow``: one MLflow run per ``htmlrag-bench`` run, in a local file store (``logger.tracking_uri``,
  ``<paths.results>/mlruns`` by default: no server), in the experiment ``logger.experiment`` (default: the run's
  experiment name), named ``<experiment>-<run id>``. It logs the flattened config as params, every system's
  metric means with their interval bounds and frontier areas as metrics (``<system>/<metric>``,
  ``<system>/<metric>_ci_low``, ``_ci_high``, ``<system>/<metric>_auc``; a key is never a prefix path of another,
  which the file store cannot hold), and the run folder's ``metrics.json``, ``cost.json``, ``tables/`` and
  ``plots/`` as artifacts. View with ``MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri results/mlruns``
  (MLflow 3 keeps its file store in maintenance mode and refuses it unless ``MLFLOW_ALLOW_FILE_STORE`` is set;
  this logger sets it for a local path. ``logger.tracking_uri=sqlite:///results/mlflow.db`` uses MLflow's
  database store instead, also without a server).
- ``logger=wandb`` (or ``wandb.enabled=true`` with any logger): the W&B run as before (project, entity, mode
  from ``wandb.*``), metric means logged.

A tracker that is not installed is skipped with a warning; a tracker error is logged, never raised (the run's
folder is the record).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from htmlrag.evaluation.runs import flatten

log = logging.getLogger(__name__)
_KEY = re.compile(r"[^A-Za-z0-9_\-./ ]")


def _key(text: str) -> str:
    """An MLflow-safe metric/param name (``bm25@1024/em`` -> ``bm25_1024/em``: MLflow refuses ``@``)."""
    return _KEY.sub("_", text)[:250]


def flat_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """``{"<system>/<metric>": mean, "..._ci_low", "..._ci_high", "<system>/<metric>_auc"}`` of a ``metrics.json``."""
    out: dict[str, float] = {}
    for s, e in (summary.get("systems") or {}).items():
        for m, v in (e.get("metrics") or {}).items():
            if isinstance(v, (int, float)):
                out[_key(f"{s}/{m}")] = float(v)
            ci = (e.get("intervals") or {}).get(m)
            if ci:
                out[_key(f"{s}/{m}_ci_low")], out[_key(f"{s}/{m}_ci_high")] = float(ci[0]), float(ci[1])
    for s, by_metric in ((summary.get("frontier") or {}).get("systems") or {}).items():
        for m, c in by_metric.items():
            if c.get("auc") is not None:
                out[_key(f"{s}/{m}_auc")] = float(c["auc"])
    return out


def flat_params(cfg: DictConfig) -> dict[str, str]:
    """The resolved config flattened to ``{"a.b": value}`` (paths left out: they are machine-specific)."""
    node = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    node = {k: v for k, v in node.items() if k not in ("paths", "hydra")}  # type: ignore[union-attr]
    out = {}
    for k, v in flatten(node).items():  # values as JSON; strings shown as themselves
        x = json.loads(v)
        out[_key(k)] = (x if isinstance(x, str) else v)[:500]
    return out


def log_mlflow(cfg: DictConfig, run_dir: Path, summary: Mapping[str, Any]) -> str | None:
    """Log the run to MLflow (module docstring); returns the MLflow run id (``None`` when skipped)."""
    try:
        import mlflow
    except ImportError:
        log.warning("logger=mlflow but mlflow is not installed (pip install mlflow); skipped")
        return None
    uri = str(cfg.logger.tracking_uri)
    if "://" not in uri:
        uri = Path(uri).resolve().as_uri()
    if uri.startswith("file:"):  # the local file store (see the module docstring)
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(str(cfg.logger.experiment or cfg.name))
    with mlflow.start_run(run_name=f"{cfg.name}-{summary.get('run_id', run_dir.name)}") as active:
        params = flat_params(cfg)
        keys = sorted(params)
        for i in range(0, len(keys), 100):  # MLflow takes at most 100 params per call
            mlflow.log_params({k: params[k] for k in keys[i : i + 100]})
        mlflow.log_metrics(flat_metrics(summary))
        mlflow.set_tags({"htmlrag.run_dir": run_dir.name, "htmlrag.experiment": str(cfg.name),
                         "htmlrag.dataset": str(summary.get("dataset", ""))})
        for name in ("metrics.json", "cost.json", "judge.json"):
            if (run_dir / name).is_file():
                mlflow.log_artifact(str(run_dir / name))
        for sub in ("tables", "plots"):
            if (run_dir / sub).is_dir():
                mlflow.log_artifacts(str(run_dir / sub), artifact_path=sub)
        return str(active.info.run_id)


def log_wandb(cfg: DictConfig, summary: Mapping[str, Any]) -> None:
    """Log the metric means to W&B (``wandb.*`` settings)."""
    try:
        import wandb
    except ImportError:
        log.warning("wandb logging is on but wandb is not installed; skipped")
        return
    wb = wandb.init(project=cfg.wandb.project, entity=cfg.wandb.entity, mode=cfg.wandb.mode,
                    name=f"{cfg.name}-{summary['run_id']}",
                    config=OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    wb.log({f"{s}/{m}": v for s, e in summary["systems"].items() for m, v in e["metrics"].items() if v is not None})
    wb.finish()


def log_run(cfg: DictConfig, run_dir: Path, summary: Mapping[str, Any]) -> None:
    """Feed the configured trackers (``logger.name``; ``wandb.enabled`` too). Errors are logged, not raised."""
    name = str(cfg.get("logger", {}).get("name", "none")) if cfg.get("logger") is not None else "none"
    todo = []
    if name == "mlflow":
        todo.append(("mlflow", lambda: log_mlflow(cfg, run_dir, summary)))
    elif name not in ("none", "wandb"):
        log.warning("unknown logger %r (none | mlflow | wandb); nothing logged", name)
    if name == "wandb" or cfg.wandb.enabled:
        todo.append(("wandb", lambda: log_wandb(cfg, summary)))
    for what, fn in todo:
        try:
            fn()
        except Exception as exc:  # a tracker must not fail a finished run
            log.warning("%s logging failed: %s: %s", what, type(exc).__name__, exc)
