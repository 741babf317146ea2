"""``htmlrag-bench``: the Hydra entry point of the evaluation harness.

    htmlrag-bench experiment=quickstart
    htmlrag-bench --help                                   # lists the config groups
    htmlrag-bench -m experiment=quickstart pruner.max_words=64,128,256,512
    accelerate launch --num_processes 2 --cpu -m eval.app experiment=quickstart   # sharded

Sharding: each process takes the examples ``i % WORLD_SIZE == RANK`` (``RANK``/``WORLD_SIZE`` as set by
``accelerate launch`` or ``torchrun``), appends to its own shard file, and rank 0 merges the shards and
writes ``metrics.json`` once every rank is done; the merged result equals a single-process run.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from eval.schemas import CONF_DIR, register_configs

log = logging.getLogger("htmlrag-bench")


def _rank_world() -> tuple[int, int]:
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")) or 0)
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")) or 1)
    if not 0 <= rank < world:
        from htmlrag.errors import HtmlRagError

        raise HtmlRagError(f"RANK={rank} is not in [0, WORLD_SIZE={world})")
    return rank, world


def _seed(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover
        pass
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def _overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except (ImportError, ValueError):
        return []


def _point_hydra_job_to(run_dir: Path) -> None:
    """In a Hydra job, write ``htmlrag_run.json`` (the run folder) into the job's output folder, so that the
    sweep's combined table (:class:`eval.table.SweepTable`) finds every job's run."""
    try:
        from hydra.core.hydra_config import HydraConfig

        out = Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return
    from htmlrag.results import atomic_write

    atomic_write(out / "htmlrag_run.json", json.dumps({"run_dir": str(run_dir), "overrides": _overrides()}) + "\n")


def finalize(cfg: DictConfig, store: Any, systems: list[str], metrics: list[str],
             reader: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge rows, write ``metrics.json`` and ``tables/`` (rank 0, or the single process)."""
    from eval import docqa, fidelity
    from htmlrag.summary import summarize, write_tables

    rows = store.merge()
    rows, metrics = docqa.judge_rows(cfg, store, rows, metrics)  # LLM judge scores (judge.enabled)
    summary = summarize(rows, systems, metrics, ours=cfg.system_name, experiment=cfg.name, run_id=store.run_id,
                        dataset=cfg.dataset.name, alpha=cfg.metric.alpha, fidelity=fidelity.describe(cfg),
                        reader=reader)
    store.write_json("metrics.json", summary)
    paths = write_tables([summary], store.dir / "tables", metrics, caption=cfg.caption, run_dirs=[store.dir])
    docqa.write_subset_tables(cfg, store, rows, systems, metrics)  # per type/domain, pairwise t-tests (docqa.*)
    log.info("results: %s\n%s", store.dir, paths["md"].read_text(encoding="utf-8"))
    return summary


def run(cfg: DictConfig) -> float | None:
    """Run one configuration; returns the system under test's first metric (for sweepers)."""
    from eval import build, fidelity
    from eval.schemas import validate
    from htmlrag.evaluate import EvalSettings, evaluate

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
            from htmlrag.errors import HtmlRagError

            raise HtmlRagError(f"{store.dir}: the dataset changed since this run started (hash {before[:12]} -> "
                               f"{env['dataset']['sha256'][:12]}); move the run folder away to start over")
    if rank == 0:
        store.write_config(OmegaConf.to_yaml(cfg, resolve=True), _overrides())
        store.write_json("env.json", env)
        _point_hydra_job_to(store.dir)
    log.info("run %s/%s: %d examples, rank %d of %d", cfg.name, store.run_id, len(examples), rank, world)
    systems = build.build_systems(cfg, cache_dir)
    caches = build.build_caches(cache_dir)
    from eval.refiners import precompute_heavy  # large refiner models run and are released before the reader

    precompute_heavy(examples, systems, caches, store, rank=rank, world=world, retry_failed=cfg.run.retry_failed,
                     progress=cfg.run.progress)
    reader = build.build_reader(cfg, cache_dir)
    settings = EvalSettings(metrics=metrics, short_answer=fidelity.short_answer(cfg), chunk_size=cfg.run.chunk_size,
                            progress=cfg.run.progress, save_contexts=cfg.run.save_contexts, rank=rank, world=world,
                            retry_failed=cfg.run.retry_failed)
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
                from htmlrag.errors import HtmlRagError

                raise HtmlRagError(f"{store.dir}: not every shard finished within {cfg.run.shard_timeout_s}s")
            time.sleep(0.5)
    summary = finalize(cfg, store, [s.name for s in systems], metrics, build.reader_info(cfg, reader))
    store.write_json("timings.json", {"seconds": round(time.perf_counter() - t0, 3), "rank0_eval_seconds":
                                      round(stats.seconds, 3), "cache_hits": stats.cache_hits, "world_size": world})
    if cfg.wandb.enabled:
        _wandb(cfg, summary)
    first = summary["systems"][cfg.system_name]["metrics"].get(metrics[0]) if metrics else None
    return None if first is None else float(first)


def _wandb(cfg: DictConfig, summary: dict[str, Any]) -> None:
    try:
        import wandb
    except ImportError:
        log.warning("wandb.enabled=true but wandb is not installed; skipped")
        return
    wb = wandb.init(project=cfg.wandb.project, entity=cfg.wandb.entity, mode=cfg.wandb.mode,
                    name=f"{cfg.name}-{summary['run_id']}",
                    config=OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    wb.log({f"{s}/{m}": v for s, e in summary["systems"].items() for m, v in e["metrics"].items() if v is not None})
    wb.finish()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    return run(cfg)


def main() -> None:
    """Console-script entry point: register the schemas, then hand over to Hydra."""
    register_configs()
    _hydra_main()


if __name__ == "__main__":
    main()
