"""``htmlrag-train``: supervised fine-tuning of a generative HTML pruner (one linear :func:`train`).

    htmlrag-train train=tiny train.model=/path/to/model data.paths=[results/train/data/wtq-demo]
    htmlrag-train train=phi35_pruner deepspeed=zero3 dry_run=true          # print settings, load nothing
    accelerate launch --config_file conf/accelerate/zero3.yaml -m htmlrag_bench.training.train train=phi35_pruner data.paths=[...]
    htmlrag-train -m train_launcher=slurm train=phi35_pruner deepspeed=zero3 data.paths=[...]

Steps, top to bottom: resolve the DeepSpeed config -> (dry run: log and stop) -> hold ``output_dir`` (a
second run on the same folder stops here: :func:`hold_output_dir`) -> a finished run with the same
settings stops here (see below) -> load the samples (an empty set stops here, before any model or GPU work) ->
training arguments (this starts torch.distributed when launched on several GPUs) -> tokenize (loss on the
assistant's tokens only; samples over ``max_length`` dropped) -> load the model (+ LoRA) -> ``Trainer.train``
(resuming from the latest complete checkpoint; the output head runs on the answer positions only, see
:mod:`htmlrag_bench.training.loss`) -> export (LoRA merged) to ``export_dir`` -> ``train_result.json``.

A finished run is done: when ``<output_dir>/train_result.json`` records the same settings (the whole config
except ``resume``, ``dry_run``, ``progress``, ``report_to``) and the exported model is in place, a rerun logs
that and returns the recorded result without touching checkpoints or the export. Change a setting (e.g. raise
``train.max_steps`` or ``train.max_minutes``: the run continues from its latest checkpoint) or pass
``resume=false`` (train again from scratch) to train more.

``train.model`` may be a model alias (``gemma3-270m``, :mod:`htmlrag.core.models.aliases`): converted once to a
cached folder, which is then the base model (and the LoRA merge's base).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from htmlrag.core.errors import HtmlRagError, user_error
from htmlrag.core.locks import hold_or_refuse
from htmlrag.core.models.aliases import resolve_model
from htmlrag_bench.training.checkpoints import export_model, finished_run, latest_checkpoint, run_key
from htmlrag_bench.training.data import (
    Collator,
    TokenizeReport,
    TrainDataError,
    load_records,
    tokenize_records,
)
from htmlrag_bench.training.hardware import (
    MODEL_FILLED,
    bf16_support,
    export_slurm_env,
    fill_auto,
    load_deepspeed,
    parallelism_config,
    resolve_deepspeed,
    sequence_parallel_support,
    single_rank_env,
    zero_stage,
)
from htmlrag_bench.training.loss import answer_loss_trainer, time_limit_callback
from htmlrag_bench.training.schemas import CONF_DIR, register_configs

log = logging.getLogger("htmlrag-train")


@dataclass
class TrainResult:
    """What a finished run reports (also written to ``<output_dir>/train_result.json`` by rank 0).

    Attributes:
        export_dir: the final model folder (loads with ``GenerativeRanker(export_dir)``).
        global_step: optimizer steps done in all, resumed ones included.
        resumed_from: the checkpoint the run continued from (None: from scratch).
        losses: ``(step, training loss)`` as logged every ``logging_steps`` (this run's and the resumed ones').
        samples: samples trained on; ``dropped_over_length``: samples over ``max_length``.
        seconds: wall time of ``Trainer.train``.
    """

    export_dir: str
    global_step: int
    resumed_from: str | None
    losses: list[tuple[int, float]] = field(default_factory=list)
    samples: int = 0
    dropped_over_length: int = 0
    train_tokens: int = 0
    seconds: float = 0.0
    already_finished: bool = False


def training_arguments(cfg: Any) -> dict[str, Any]:
    """The ``transformers.TrainingArguments`` keywords of a config (DeepSpeed and parallelism excluded)."""
    r = cfg.train
    return {
        "output_dir": str(cfg.output_dir),
        "per_device_train_batch_size": r.per_device_train_batch_size,
        "gradient_accumulation_steps": r.gradient_accumulation_steps,
        "num_train_epochs": float(r.num_train_epochs),
        "max_steps": r.max_steps,
        "learning_rate": r.learning_rate,
        "lr_scheduler_type": r.lr_scheduler_type,
        "warmup_steps": r.warmup_ratio,  # transformers 5: a float < 1 is a ratio of the optimizer steps
        "adam_beta1": r.adam_beta1,
        "adam_beta2": r.adam_beta2,
        "adam_epsilon": r.adam_epsilon,
        "weight_decay": r.weight_decay,
        "max_grad_norm": r.max_grad_norm,
        "optim": r.optim,
        "bf16": r.bf16,
        "gradient_checkpointing": r.gradient_checkpointing,
        "gradient_checkpointing_kwargs": {"use_reentrant": False} if r.gradient_checkpointing else None,
        "logging_steps": r.logging_steps,
        "save_strategy": "steps",
        "save_steps": r.save_steps,
        "save_total_limit": r.save_total_limit,
        "seed": cfg.seed,
        "data_seed": cfg.seed,
        "report_to": cfg.report_to,
        "dataloader_num_workers": r.dataloader_num_workers,
        "remove_unused_columns": False,
        "disable_tqdm": not cfg.progress,
    }


def dry_run_report(cfg: Any, ds_path: Path | None, ds: dict[str, Any] | None) -> dict[str, Any]:
    """What the run would use: training arguments, DeepSpeed config with ``auto`` filled, LoRA, data."""
    hp = training_arguments(cfg)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    sp = cfg.train.sequence_parallel_size
    sp_ok, sp_why = sequence_parallel_support()
    resume = latest_checkpoint(cfg.output_dir) if cfg.resume else None
    return {
        "recipe": cfg.train.name,
        "model": cfg.train.model,
        "max_length": cfg.train.max_length,
        "training_arguments": hp,
        "world_size": world,
        "effective_batch_size": world // max(sp, 1) * hp["per_device_train_batch_size"]
        * hp["gradient_accumulation_steps"],
        "lora": OmegaConf.to_container(cfg.train.lora) if isinstance(cfg.train.lora, DictConfig) else asdict(
            cfg.train.lora),
        "deepspeed_file": str(ds_path) if ds_path else None,
        "deepspeed": fill_auto(ds, hp, world) if ds else None,
        "deepspeed_filled_at_start": [k for k in MODEL_FILLED if ds and _get(ds, k) == "auto"],
        "sequence_parallel": {"size": sp, "supported": sp_ok, "backend": sp_why},
        "data": OmegaConf.to_container(cfg.data) if isinstance(cfg.data, DictConfig) else asdict(cfg.data),
        "output_dir": str(cfg.output_dir),
        "export_dir": str(cfg.export_dir or Path(cfg.output_dir) / "final"),
        "resume_from": str(resume) if resume else None,
    }


def _relative(value: Any, root: Path) -> Any:
    """``value`` relative to ``root`` (``./...``) when it is an absolute path inside it; as given otherwise."""
    if not isinstance(value, str) or not os.path.isabs(value):
        return value
    try:
        rel = Path(value).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return value
    return "." if rel == "." else "./" + rel


def portable_result(record: dict[str, Any], output_dir: Path) -> dict[str, Any]:
    """``train_result.json`` as written: the export folder, the checkpoint resumed from and the config's own
    ``output_dir``/``export_dir`` named relative to the output folder (``./final``) when they lie inside it, so
    a finished run folder moved elsewhere still reads as finished there (:func:`resolved_result`)."""
    rec = dict(record)
    for k in ("export_dir", "resumed_from"):
        rec[k] = _relative(rec.get(k), output_dir)
    if isinstance(rec.get("config"), dict):
        rec["config"] = {**rec["config"], **{k: _relative(rec["config"].get(k), output_dir) for k in
                                             ("output_dir", "export_dir") if k in rec["config"]}}
    return rec


def resolved_result(record: dict[str, Any], output_dir: Path) -> dict[str, Any]:
    """The inverse of :func:`portable_result` for this machine: ``./...`` paths under ``output_dir``."""
    rec = dict(record)
    for k in ("export_dir", "resumed_from"):
        v = rec.get(k)
        if isinstance(v, str) and v.startswith("./"):
            rec[k] = str(output_dir / v[2:])
    return rec


def _get(d: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def train(cfg: Any, callbacks: list[Any] | None = None) -> TrainResult | dict[str, Any]:
    """Fine-tune a pruner as configured (see the module docstring); a dry run returns its report instead.

    Args:
        cfg: a composed ``train_config`` (or an object with the same fields).
        callbacks: extra ``transformers.TrainerCallback`` objects (timers, loggers).

    Raises:
        TrainDataError: no samples, or none within ``max_length`` (before any model is loaded).
        HtmlRagError: a bad DeepSpeed/parallelism setting, bf16 asked for without a GPU, or another run
            writing ``output_dir``.
    """
    recipe = cfg.train
    ds_path = resolve_deepspeed(cfg.deepspeed)
    ds = load_deepspeed(ds_path) if ds_path else None
    if cfg.dry_run:
        parallelism_config(recipe.sequence_parallel_size, recipe.attn_implementation, ds)  # validates only
        report = dry_run_report(cfg, ds_path, ds)
        log.info("dry run of recipe %s (nothing loaded):\n%s", recipe.name, json.dumps(report, indent=2, default=str))
        return report
    key = run_key(cfg)
    held = hold_output_dir(cfg.output_dir)
    try:
        return _train(cfg, key, ds_path, ds, callbacks)
    finally:
        if held is not None:
            held.release()


def hold_output_dir(output_dir: str | Path) -> Any:
    """Lock ``<output_dir>/.htmlrag-train.lock`` for this run (its rank 0; ``RANK``/``SLURM_PROCID``), released
    when it ends or dies. A second run on the same folder (a job resubmitted while the first still runs) stops
    at once instead of writing checkpoints into the first's; its other ranks end with it (torchrun, srun).

    Returns:
        The held ``filelock.FileLock`` (None on other ranks).

    Raises:
        HtmlRagError: another run holds the folder.
    """
    rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
    if rank.strip() not in ("", "0"):
        return None
    out = Path(output_dir)
    lock = out / ".htmlrag-train.lock"
    return hold_or_refuse(lock, f"output_dir={out}: another htmlrag-train run is writing it (lock {lock} held); "
                                "wait for it to end, or choose another output_dir")


def _train(cfg: Any, key: str, ds_path: Path | None, ds: dict[str, Any] | None, callbacks: list | None) -> TrainResult:
    """:func:`train` past the dry run, with the output folder held."""
    recipe = cfg.train
    if cfg.resume and (done := finished_run(cfg.output_dir, key, cfg.export_dir)) is not None:
        log.info("this run is already finished: %d steps, model in %s (%s/train_result.json); nothing to do. "
                 "To train more, raise train.max_steps or train.max_minutes (continues from the last checkpoint) "
                 "or pass resume=false (from scratch)", done["global_step"], done["export_dir"], cfg.output_dir)
        done = resolved_result(done, Path(cfg.output_dir))
        fields = {k: done[k] for k in TrainResult.__dataclass_fields__ if k in done}
        return TrainResult(**{**fields, "losses": [tuple(x) for x in done.get("losses", [])],
                              "already_finished": True})

    # 1. The samples, before any model or GPU work.
    data = cfg.data
    rows = load_records(list(data.paths), hub=data.hub, revision=data.revision,
                        data_files=list(data.data_files) if data.data_files else None,
                        sample_rates=dict(data.sample_rates), max_samples=data.max_samples, seed=cfg.seed)
    if not rows:
        hint = ("; set data.paths=[files or folders of .jsonl samples] (htmlrag-train-data builds them) or "
                "data.hub=zstanjj/HtmlRAG-train") if not data.paths and not data.hub else ""
        raise TrainDataError(f"no training samples in data.paths={list(data.paths)} hub={data.hub!r} (after sampling "
                             f"rates {dict(data.sample_rates)}, max_samples={data.max_samples}); nothing to train on"
                             + hint)

    # 2. Training arguments (starts torch.distributed under accelerate/torchrun/SLURM).
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments, set_seed

    if recipe.bf16 and not bf16_support():
        raise HtmlRagError("train.bf16=true needs a GPU with bf16 support or a CPU with native bf16 (AVX512-BF16 or "
                           "AMX); set train.bf16=false here")
    if not export_slurm_env() and ds is not None:
        single_rank_env()
    args = TrainingArguments(**training_arguments(cfg), deepspeed=str(ds_path) if ds_path else None,
                             parallelism_config=parallelism_config(recipe.sequence_parallel_size,
                                                                   recipe.attn_implementation, ds))
    set_seed(cfg.seed)
    if ds is not None:
        log.info("DeepSpeed %s (ZeRO stage %d)", ds_path, zero_stage(ds))

    # 3. Tokenizer and samples (prompt tokens masked; over-length samples dropped).
    model_path = resolve_model(recipe.model)  # an alias -> its converted folder
    tokenizer = AutoTokenizer.from_pretrained(model_path, revision=recipe.revision,
                                              trust_remote_code=recipe.trust_remote_code)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    encoded, rep = tokenize_records(rows, tokenizer, recipe.max_length, overlength=data.overlength,
                                    progress=cfg.progress and args.process_index == 0)
    if not encoded:
        raise TrainDataError(f"all {len(rows)} samples are over train.max_length={recipe.max_length} tokens; raise "
                             "it or rebuild the samples with smaller buckets")
    log.info("%d samples (%d tokens, longest %d); %d over max_length=%d dropped", rep.kept, rep.tokens, rep.longest,
             rep.over_length, recipe.max_length)

    # 4. The model (+ LoRA).
    # bf16 weights only where float32 master weights live elsewhere: DeepSpeed keeps them in its optimizer, LoRA
    # trains float32 adapters on frozen weights. Otherwise float32 weights + bf16 autocast (Trainer bf16=True):
    # an update of lr 2e-5 is below bf16's precision (2^-8 relative) and would be lost on bf16 weights.
    dtype = torch.bfloat16 if recipe.bf16 and (ds is not None or recipe.lora.enabled) else torch.float32
    model_kwargs: dict[str, Any] = {"dtype": dtype, "revision": recipe.revision,
                                    "trust_remote_code": recipe.trust_remote_code}
    if recipe.attn_implementation:
        model_kwargs["attn_implementation"] = recipe.attn_implementation
    model = AutoModelForCausalLM.from_pretrained(model_path, **model_kwargs)
    if recipe.gradient_checkpointing:
        model.config.use_cache = False
    if recipe.lora.enabled:
        from peft import LoraConfig, get_peft_model

        targets = list(recipe.lora.target_modules)
        model = get_peft_model(model, LoraConfig(
            r=recipe.lora.r, lora_alpha=recipe.lora.alpha, lora_dropout=recipe.lora.dropout, task_type="CAUSAL_LM",
            target_modules=targets[0] if targets == ["all-linear"] else targets))
        trainable, total = model.get_nb_trainable_parameters()
        log.info("LoRA r=%d: %d of %d parameters trainable", recipe.lora.r, trainable, total)

    # 5. Train, resuming from the latest complete checkpoint.
    # The output head on the answer positions only (training/loss.py); DeepSpeed's sequence parallelism keeps the
    # Trainer's own loss (it splits sequences across GPUs).
    trainer_cls = Trainer if recipe.sequence_parallel_size > 1 or not recipe.answer_logits_only else (
        answer_loss_trainer())
    callbacks = list(callbacks or [])
    if recipe.max_minutes:
        callbacks.append(time_limit_callback(recipe.max_minutes))
    trainer = trainer_cls(model=model, args=args, train_dataset=encoded,
                          data_collator=Collator(tokenizer.pad_token_id), processing_class=tokenizer,
                          callbacks=callbacks)
    resume = latest_checkpoint(args.output_dir) if cfg.resume else None
    if resume is not None:
        log.info("resuming from %s", resume)
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    seconds = time.perf_counter() - start

    # 6. Export (LoRA merged) and report.
    export_dir = Path(cfg.export_dir or Path(args.output_dir) / "final")
    export_model(trainer, tokenizer, export_dir, lora=recipe.lora.enabled, base_model=model_path, dtype=dtype,
                 adapter_dir=Path(args.output_dir) / "adapter", revision=recipe.revision,
                 trust_remote_code=recipe.trust_remote_code)
    return _report(trainer, cfg, export_dir, resume, rep, seconds, key)


def _report(trainer: Any, cfg: Any, export_dir: Path, resume: Path | None, rep: TokenizeReport,
            seconds: float, key: str) -> TrainResult:
    losses = [(int(e["step"]), float(e["loss"])) for e in trainer.state.log_history if "loss" in e]
    result = TrainResult(str(export_dir), int(trainer.state.global_step), str(resume) if resume else None, losses,
                         rep.kept, rep.over_length, rep.tokens, round(seconds, 3))
    if trainer.is_world_process_zero():
        config = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else None
        out = Path(cfg.output_dir)
        (out / "train_result.json").write_text(
            json.dumps(portable_result({**asdict(result), "run_key": key, "config": config}, out), indent=2,
                       default=str) + "\n", encoding="utf-8")
        log.info("trained %d steps (%s) in %.1fs; first/last loss %s / %s; model -> %s", result.global_step,
                 f"resumed from {resume.name}" if resume else "from scratch", seconds,
                 losses[0][1] if losses else None, losses[-1][1] if losses else None, export_dir)
    return result


def _main(cfg: DictConfig) -> None:
    try:
        train(cfg)
    except Exception as exc:
        known = user_error(exc)  # a library error (also one Hydra wrapped), or a file in the way: one line
        if known is None:
            raise
        log.error("%s", known)
        raise SystemExit(1) from exc


def main() -> None:
    """Console-script entry point: register the schema, then hand over to Hydra."""
    import hydra

    register_configs()
    hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="train_config")(_main)()


if __name__ == "__main__":
    main()
