"""``htmlrag-bench``: the Hydra entry point of the evaluation harness.

    htmlrag-bench experiment=quickstart
    htmlrag-bench --help                                   # lists the config groups
    htmlrag-bench -m experiment=quickstart pruner.max_words=64,128,256,512
    accelerate launch --num_processes 2 --cpu -m htmlrag_bench.eval.app experiment=quickstart   # sharded

Sharding: each process takes the examples ``i % WORLD_SIZE == RANK`` (``RANK``/``WORLD_SIZE`` as set by
``accelerate launch`` or ``torchrun``), appends to its own shard file, and rank 0 merges the shards and
writes ``metrics.json`` once every rank is done; the merged result equals a single-process run.

Exit status: 0 when every example has a row without an error; 1 when any row is an error row -- an example or a
system whose context or answer failed, a page that could not be cleaned included (the rows, ``metrics.json``
and tables are still written, and the tables' caption counts the error rows; ``run.allow_errors=true`` accepts
them and exits 0) -- when a service the run needs is down or a cache file cannot be used
(:class:`~htmlrag.core.errors.ServiceError`, :class:`~htmlrag.core.errors.CacheError`: it stops at once, naming the
service or file; saved rows are kept), or on any other error. A rerun recomputes error rows
(``run.retry_failed``, on by default) and resumes the rest. Log lines, error messages and rows never hold a
configured secret (:mod:`htmlrag.core.redact`).
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import hydra
from hydra.experimental.callback import Callback as _Callback
from omegaconf import DictConfig

from htmlrag.core import redact
from htmlrag.core.errors import HtmlRagError, user_error
from htmlrag.core.fingerprint import METRICS, fingerprint
from htmlrag.core.logs import quiet_third_party
from htmlrag.evaluation.costs import PriceTable
from htmlrag.evaluation.plots import PLOT_RECORD_KEY, PLOT_RECORD_PATH
from htmlrag.evaluation.report import write_run_report
from htmlrag.evaluation.run_tables import run_tables
from htmlrag.evaluation.runs import config_record, run_name
from htmlrag.evaluation.scoring.loop import EvalSettings, evaluate
from htmlrag.evaluation.scoring.stages import resolve_rule
from htmlrag.evaluation.store import atomic_write, has_error, rows_record
from htmlrag.evaluation.summary import summarize
from htmlrag_bench.eval import portable
from htmlrag_bench.eval.loggers import log_run
from htmlrag_bench.eval.schemas import CONF_DIR, allow_errors, interval_settings, register_configs, validate
from htmlrag_bench.eval.systems import build, docqa, fidelity
from htmlrag_bench.eval.systems.common import plain
from htmlrag_bench.eval.systems.refiners import precompute_heavy

log = logging.getLogger("htmlrag-bench")


def _rank_world() -> tuple[int, int]:
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")) or 0)
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")) or 1)
    if not 0 <= rank < world:
        raise HtmlRagError(f"RANK={rank} is not in [0, WORLD_SIZE={world})")
    return rank, world


def _seed(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover
        pass

    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def _overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except (ImportError, ValueError):
        return []


def _point_hydra_job_to(run_dir: Path, overrides: list[str]) -> None:
    """In a Hydra job, write ``htmlrag_run.json`` (the run, relative to the results root, and the stored
    overrides) into the job's output folder, so that the sweep's combined table
    (:class:`htmlrag_bench.eval.table.SweepTable`) finds every job's run."""
    try:
        from hydra.core.hydra_config import HydraConfig

        out = Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return

    atomic_write(out / "htmlrag_run.json", json.dumps({"run": run_name(run_dir), "overrides": overrides}) + "\n")


def finalize(cfg: DictConfig, store: Any, systems: list[str], metrics: list[str],
             reader: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge rows, write ``rows.sha256``, ``metrics.json`` (with the rows' checksum and the metric code's
    fingerprint, for ``htmlrag-paper verify``), ``tables/`` and ``plots/`` (rank 0, or the single process):
    ``results.*`` (with intervals and corrected marks), and with budgets, stage checks or a cost ledger the
    frontier, waterfall and cost tables (:mod:`htmlrag.evaluation.report`, the price table of the ``cost`` group)."""
    rows = store.merge()
    store.write_manifest(rows)
    record = rows_record(rows)  # the rows as saved: the judge below adds its scores in memory only
    rows, metrics = docqa.judge_rows(cfg, store, rows, metrics)  # LLM judge scores (judge.enabled)
    summary = summarize(rows, systems, metrics, ours=cfg.system_name, experiment=cfg.name, run_id=store.run_id,
                        dataset=cfg.dataset.name, alpha=cfg.metric.alpha, fidelity=fidelity.describe(cfg),
                        reader=reader, intervals=interval_settings(cfg.metric))
    summary |= {"rows": record, "metric_code": fingerprint(METRICS), "config": config_record(store.dir),
                PLOT_RECORD_KEY: PLOT_RECORD_PATH}  # written by write_run_report below
    store.write_json("metrics.json", summary)
    try:  # per type/domain tables and pairwise t-tests (docqa.*) come from the values the rows recorded
        tables = run_tables(summary, rows, run=run_name(store.dir), caption=cfg.caption,
                            subsets=list(cfg.docqa.subsets), pairwise=bool(cfg.docqa.pairwise))
    finally:
        docqa.close_handles()
    for rel, text in tables.items():
        atomic_write(store.dir / "tables" / rel, text)
    write_run_report(store.dir, summary, rows, PriceTable.from_dict(plain(cfg.cost)))
    docqa.write_judge_table(cfg, store, summary)  # judge.enabled: the judged score and its agreement
    log.info("results: %s\n%s", store.dir, tables["results.md"])
    return summary


class RunFailedError(HtmlRagError):
    """Some rows are error rows and ``run.allow_errors`` is off (the results are written all the same)."""


def _first_error(row: dict[str, Any]) -> str:
    if row.get("error"):
        return str(row["error"])
    for name, s in (row.get("systems") or {}).items():
        if isinstance(s, dict) and (s.get("error") or s.get("page_errors")):
            return f"{name}: {s.get('error') or s.get('page_errors')}"
    return "an error"


def _check_failures(cfg: DictConfig, store: Any) -> None:
    rows = store.all_rows()
    failed = [r for r in rows if has_error(r)]
    if not failed or allow_errors(cfg):
        if failed:
            log.warning("%d of %d examples have error rows (run.allow_errors=true; the tables' caption counts them)",
                        len(failed), len(rows))
        return
    raise RunFailedError(f"{len(failed)} of {len(rows)} examples failed (first: {failed[0]['id']}: "
                         f"{_first_error(failed[0])}); results are in {store.dir}. Rerun to retry the failed ones, "
                         "or set run.allow_errors=true to accept them")


def run(cfg: DictConfig) -> float | None:
    """Run one configuration; returns the system under test's first metric (for sweepers).

    Raises:
        RunFailedError: some rows are error rows and ``run.allow_errors`` is false (results are written first).
        ServiceError: the reader's service is down, or a cache file cannot be used (``CacheError``); the run
            stopped (saved rows are kept).
    """
    redact.install()
    portable.install(cfg)  # the log file names this machine's folders by their placeholders
    t0 = time.perf_counter()
    validate(cfg)
    rank, world = _rank_world()
    _seed(cfg.seed)
    metrics = build.metric_names(cfg)
    store = build.make_store(cfg)
    examples = build.load_examples(cfg)
    cache_dir = Path(cfg.paths.cache) if cfg.run.use_cache else None
    env = build.environment(examples, cfg.dataset.name, world)
    env["fidelity"] = fidelity.describe(cfg)
    env_path = store.dir / "env.json"
    if env_path.exists():
        before = json.loads(env_path.read_text(encoding="utf-8")).get("dataset", {}).get("sha256")
        if before and before != env["dataset"]["sha256"] and store.done_ids():
            raise HtmlRagError(f"{store.dir}: the dataset changed since this run started (hash {before[:12]} -> "
                               f"{env['dataset']['sha256'][:12]}); move the run folder away to start over")
    if rank == 0:  # locations on this machine are stored as placeholders (htmlrag_bench.eval.portable)
        overrides = portable.stored_overrides(_overrides(), portable.config_locations(cfg))
        store.write_config(portable.stored_config(cfg), overrides)
        store.write_json("env.json", env)
        _point_hydra_job_to(store.dir, overrides)
    log.info("run %s/%s: %d examples, rank %d of %d", cfg.name, store.run_id, len(examples), rank, world)
    caches = build.build_caches(cache_dir)  # opened now: a cache that cannot work stops the run before any work
    systems = build.build_systems(cfg, cache_dir)

    waterfall = resolve_rule(cfg.metric.waterfall, metrics)
    precompute_heavy(examples, systems, caches, store, rank=rank, world=world, retry_failed=cfg.run.retry_failed,
                     progress=cfg.run.progress, waterfall=waterfall)
    reader = build.build_reader(cfg, cache_dir)
    if hasattr(reader, "max_consecutive_failures"):  # the retry bound of endpoint readers
        reader.max_consecutive_failures = cfg.run.max_consecutive_failures
    build.fit_reader_window(cfg, reader, systems, examples)  # derive the window, or refuse one that cuts contexts
    settings = EvalSettings(metrics=metrics, short_answer=fidelity.short_answer(cfg), chunk_size=cfg.run.chunk_size,
                            progress=cfg.run.progress, save_contexts=cfg.run.save_contexts, rank=rank, world=world,
                            retry_failed=cfg.run.retry_failed,
                            max_consecutive_failures=cfg.run.max_consecutive_failures,
                            row_metadata=tuple(str(k) for k in cfg.docqa.subsets), waterfall=waterfall)
    stats = evaluate(examples, systems, reader, store, settings, caches)
    log.info("rank %d: %d evaluated (%d saved before), %d failed examples, %d failed system contexts, %.1fs",
             rank, stats.evaluated, stats.done_before, stats.failed_examples, stats.failed_systems, stats.seconds)
    if world > 1:
        store.mark_done(rank, world)
        if rank != 0:
            return None
        deadline = time.monotonic() + cfg.run.shard_timeout_s
        while not store.shards_done(world):
            if time.monotonic() > deadline:
                raise HtmlRagError(f"{store.dir}: not every shard finished within {cfg.run.shard_timeout_s}s")
            time.sleep(0.5)
    summary = finalize(cfg, store, build.row_names(systems), metrics, build.reader_info(cfg, reader))
    store.write_json("timings.json", {"seconds": round(time.perf_counter() - t0, 3), "rank0_eval_seconds":
                                      round(stats.seconds, 3), "cache_hits": stats.cache_hits, "world_size": world})
    log_run(cfg, store.dir, summary)  # logger=mlflow|wandb (and wandb.enabled)
    _check_failures(cfg, store)
    return _objective(summary, cfg.system_name, metrics)


def _objective(summary: dict[str, Any], ours: str, metrics: list[str]) -> float | None:
    """The system under test's first metric (for sweepers); for a budget frontier, its area under the frontier."""
    if not metrics:
        return None
    if ours in summary["systems"]:
        first = summary["systems"][ours]["metrics"].get(metrics[0])
    else:
        first = ((summary.get("frontier") or {}).get("systems", {}).get(ours, {}).get(metrics[0]) or {}).get("auc")
    return None if first is None else float(first)


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    quiet_third_party()  # only our INFO lines; other packages' warnings and errors still show
    try:
        return run(cfg)
    except Exception as exc:
        known = user_error(exc)
        if known is None:
            log.exception("run failed")  # the traceback goes through the redacting log record factory
            sys.exit(1)
        # a user's mistake or a failed service: the message, no traceback; secrets redacted
        log.error("%s", known)
        print(f"htmlrag-bench: error: {redact.redact(known)}", file=sys.stderr)
        sys.exit(1)


class CheckFolders(_Callback):  # type: ignore[misc, valid-type]
    """Hydra callback: before Hydra makes its log folder, a file standing where a results or cache folder must
    go stops the run with one line naming it (Hydra's own error was a traceback)."""

    def _check(self, config: Any, key: str) -> None:
        from omegaconf import OmegaConf

        places = [OmegaConf.select(config, key, default=None), OmegaConf.select(config, "paths.results", default=None),
                  OmegaConf.select(config, "paths.cache", default=None)]
        for place in places:
            if not place:
                continue
            p = Path(str(place))
            for q in (p, *p.parents):
                if q.exists():
                    if not q.is_dir():
                        print(f"htmlrag-bench: error: {q}: a file where the folder {p} must go", file=sys.stderr)
                        sys.exit(1)
                    break

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        self._check(config, "hydra.run.dir")

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        self._check(config, "hydra.sweep.dir")


def main() -> None:
    """Console-script entry point: register the schemas, then hand over to Hydra."""
    redact.install()
    register_configs()
    _hydra_main()


if __name__ == "__main__":
    main()
