"""Hardware side of training, apart from recipes: DeepSpeed configs, sequence parallelism, SLURM ranks.

DeepSpeed JSONs live in ``conf/accelerate/deepspeed/`` and are shared by the accelerate configs (``conf/accelerate/
zero3.yaml`` points at ``conf/accelerate/deepspeed/zero3.json``) and by ``deepspeed=zero3`` in the Hydra config (for
launches without accelerate, e.g. SLURM through submitit, where each task is one rank). Values ``"auto"`` are
filled by transformers from the training arguments when training starts; :func:`fill_auto` does the same
for the dry run (the bucket sizes that depend on the model's hidden size stay ``"auto"`` there).

Sequence parallelism (what the installed stack offers, checked by :func:`sequence_parallel_support`):
DeepSpeed Ulysses / ALST through accelerate's ``ParallelismConfig(sp_backend="deepspeed")`` with
``deepspeed>=0.18.2``, accelerate ``>=1.12`` and transformers' Trainer ``parallelism_config``. accelerate's
context parallelism (``cp_size``, ring attention) needs FSDP2 and is not combined with DeepSpeed here.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError
from htmlrag_bench.eval.locations import project_root
from htmlrag_bench.training.schemas import DEEPSPEED_DIR

log = logging.getLogger(__name__)

#: DeepSpeed keys transformers fills from the model (hidden size) at start, not from the training arguments.
MODEL_FILLED = ("zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
                "zero_optimization.stage3_param_persistence_threshold")


def deepspeed_names() -> list[str]:
    """The DeepSpeed configs shipped in ``conf/accelerate/deepspeed/`` (``zero3``, ``zero3_offload``)."""
    return sorted(p.stem for p in DEEPSPEED_DIR.glob("*.json"))


def resolve_deepspeed(value: str | None) -> Path | None:
    """The DeepSpeed JSON that a run uses: ``value`` as a name in ``conf/accelerate/deepspeed/`` or a path (relative to
    the working directory, then ``$HTMLRAG_ROOT``); without it, the one ``accelerate launch`` passes in
    ``ACCELERATE_DEEPSPEED_CONFIG_FILE``; else ``None``.

    Raises:
        HtmlRagError: ``value`` names no config.
    """
    if not value:
        env = os.environ.get("ACCELERATE_DEEPSPEED_CONFIG_FILE")
        return Path(env) if env and os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true" else None
    if value in deepspeed_names():
        return DEEPSPEED_DIR / f"{value}.json"
    for cand in (Path(value).expanduser(), Path(project_root()) / value):
        if cand.is_file():
            return cand.resolve()
    raise HtmlRagError(f"deepspeed={value!r}: neither a name in {DEEPSPEED_DIR} ({', '.join(deepspeed_names())}) "
                       "nor a JSON file")


def load_deepspeed(path: Path) -> dict[str, Any]:
    """Read a DeepSpeed JSON.

    Raises:
        HtmlRagError: unreadable or not a JSON object.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HtmlRagError(f"cannot read the DeepSpeed config {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise HtmlRagError(f"{path}: a DeepSpeed config is a JSON object")
    return data


def _set(cfg: dict[str, Any], dotted: str, value: Any) -> None:
    node = cfg
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.get(key)
        if not isinstance(node, dict):
            return
    if node.get(last) == "auto":
        node[last] = value


def fill_auto(ds: dict[str, Any], hp: dict[str, Any], world_size: int = 1) -> dict[str, Any]:
    """A copy of ``ds`` with the ``"auto"`` values that come from the training arguments filled in, as
    transformers does at start (``HfTrainerDeepSpeedConfig.trainer_config_process``).

    Args:
        ds: the DeepSpeed config.
        hp: training-argument values (``per_device_train_batch_size``, ``gradient_accumulation_steps``,
            ``max_grad_norm``, ``learning_rate``, ``adam_beta1/2``, ``adam_epsilon``, ``weight_decay``,
            ``bf16``, ``fp16``).
        world_size: number of processes (GPUs) in the job.
    """
    out = copy.deepcopy(ds)
    micro, accum = hp["per_device_train_batch_size"], hp["gradient_accumulation_steps"]
    for key, value in (
        ("train_micro_batch_size_per_gpu", micro),
        ("gradient_accumulation_steps", accum),
        ("train_batch_size", world_size * micro * accum),
        ("gradient_clipping", hp["max_grad_norm"]),
        ("optimizer.params.lr", hp["learning_rate"]),
        ("optimizer.params.betas", [hp["adam_beta1"], hp["adam_beta2"]]),
        ("optimizer.params.eps", hp["adam_epsilon"]),
        ("optimizer.params.weight_decay", hp["weight_decay"]),
        ("scheduler.params.warmup_min_lr", 0),
        ("scheduler.params.warmup_max_lr", hp["learning_rate"]),
        ("fp16.enabled", bool(hp.get("fp16", False))),
        ("bf16.enabled", bool(hp.get("bf16", False))),
    ):
        _set(out, key, value)
    return out


def zero_stage(ds: dict[str, Any] | None) -> int:
    """The ZeRO stage of a DeepSpeed config (0 without one)."""
    return int((ds or {}).get("zero_optimization", {}).get("stage", 0))


def sequence_parallel_support() -> tuple[bool, str]:
    """Whether DeepSpeed Ulysses sequence parallelism is usable with the installed packages, and why not."""
    from packaging.version import Version

    try:
        ds_version = version("deepspeed")
    except PackageNotFoundError:
        return False, "DeepSpeed is not installed (pip install 'htmlrag-bench[train]')"
    if Version(ds_version) < Version("0.18.2"):
        return False, f"DeepSpeed {ds_version} < 0.18.2 has no ALST/Ulysses for Hugging Face models"
    try:
        from accelerate.parallelism_config import ParallelismConfig  # noqa: F401
        from accelerate.utils import DeepSpeedSequenceParallelConfig  # noqa: F401
    except ImportError:
        return False, f"accelerate {version('accelerate')} has no DeepSpeed sequence-parallel config (needs >= 1.12)"
    return True, f"DeepSpeed {ds_version} Ulysses (ALST) through accelerate {version('accelerate')}"


def parallelism_config(sp_size: int, attn_implementation: str | None, ds: dict[str, Any] | None) -> Any:
    """accelerate's ``ParallelismConfig`` for DeepSpeed Ulysses with ``sp_size`` GPUs per sequence, or None
    when ``sp_size`` is 1.

    Raises:
        HtmlRagError: ``sp_size`` > 1 without a DeepSpeed config, or the installed packages lack support.
    """
    if sp_size <= 1:
        return None
    if ds is None:
        raise HtmlRagError(f"train.sequence_parallel_size={sp_size} needs DeepSpeed: set deepspeed=zero3 (or launch "
                           "with conf/accelerate/zero3.yaml)")
    ok, why = sequence_parallel_support()
    if not ok:
        raise HtmlRagError(f"train.sequence_parallel_size={sp_size}: {why}")
    from accelerate.parallelism_config import ParallelismConfig
    from accelerate.utils import DeepSpeedSequenceParallelConfig

    handler = DeepSpeedSequenceParallelConfig(sp_seq_length_is_variable=True,
                                              sp_attn_implementation=attn_implementation or "sdpa")
    return ParallelismConfig(sp_backend="deepspeed", sp_size=sp_size, sp_handler=handler)


def export_slurm_env() -> bool:
    """Inside a submitit SLURM job with several tasks, export ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/
    ``MASTER_ADDR``/``MASTER_PORT`` for ``torch.distributed`` (one task per GPU). Returns True if it did."""
    if os.environ.get("SUBMITIT_EXECUTOR") != "slurm" or "RANK" in os.environ:
        return False
    if int(os.environ.get("SLURM_NTASKS", "1")) <= 1:
        return False
    from submitit.helpers import TorchDistributedEnvironment

    env = TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
    log.info("SLURM task: rank %d of %d (local %d), master %s:%d", env.rank, env.world_size, env.local_rank,
             env.master_addr, env.master_port)
    return True


def single_rank_env() -> bool:
    """For DeepSpeed in a plain ``python``/``htmlrag-train`` process (no launcher): export the environment of
    a one-rank ``torch.distributed`` job. Returns True if it did (nothing is changed under a launcher)."""
    if any(k in os.environ for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE")):
        return False
    os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": os.environ.get("MASTER_PORT", "29500")})
    log.info("DeepSpeed without a launcher: running as the single rank of a one-process job")
    return True


def bf16_support() -> bool:
    """Whether bf16 training runs natively here: a CUDA GPU with bf16, or a CPU with AVX512-BF16 or AMX
    (torch's CPU capability report). Elsewhere bf16 would be emulated (slower than float32) or fail."""
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)
