"""Checkpoints and the final export.

A checkpoint ``<output_dir>/checkpoint-<step>`` counts as complete once its ``trainer_state.json`` (which the
Trainer writes after the weights, optimizer, scheduler and RNG states) parses and names the same step; a run
killed while writing one resumes from the previous complete checkpoint.

The export is a plain ``save_pretrained`` folder (weights, config, tokenizer with its chat template) that
``AutoModelForCausalLM`` and :class:`htmlrag.rankers.generative.GenerativeRanker` load directly; LoRA adapters
are merged into the base weights first.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from htmlrag.core.cache import content_key

log = logging.getLogger(__name__)

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_step(path: Path) -> int | None:
    """The step of a complete checkpoint folder, or None (not a checkpoint, or incomplete)."""
    m = _CHECKPOINT.match(path.name)
    if not m or not path.is_dir():
        return None
    try:
        state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return int(m.group(1)) if state.get("global_step") == int(m.group(1)) else None


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The complete checkpoint with the highest step in ``output_dir`` (None when there is none)."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    steps = [(s, p) for p in root.iterdir() if (s := checkpoint_step(p)) is not None]
    incomplete = [p.name for p in root.iterdir() if _CHECKPOINT.match(p.name) and checkpoint_step(p) is None]
    if incomplete:
        log.warning("%s: skipping incomplete checkpoint(s) %s", root, ", ".join(sorted(incomplete)))
    return max(steps)[1] if steps else None


def merge_lora(base_model: str, adapter_dir: Path, export_dir: Path, tokenizer: Any, *, dtype: Any,
               revision: str | None = None, trust_remote_code: bool = False) -> Path:
    """Load ``base_model``, apply the adapter in ``adapter_dir``, merge it and save a plain model folder."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(base_model, dtype=dtype, revision=revision,
                                                trust_remote_code=trust_remote_code)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    merged.save_pretrained(str(export_dir))
    tokenizer.save_pretrained(str(export_dir))
    log.info("merged LoRA adapter %s into %s -> %s", adapter_dir, base_model, export_dir)
    return export_dir


def export_model(trainer: Any, tokenizer: Any, export_dir: Path, *, lora: bool, base_model: str, dtype: Any,
                 adapter_dir: Path, revision: str | None = None, trust_remote_code: bool = False) -> Path:
    """Save the trained model for the ranker (all ranks call this; rank 0 writes).

    Full fine-tuning: ``trainer.save_model`` (under ZeRO-3 it gathers the 16-bit weights, which the shipped
    DeepSpeed configs enable). LoRA: the adapter is saved, then merged on rank 0.
    """
    if not lora:
        trainer.save_model(str(export_dir))
        if trainer.is_world_process_zero():
            tokenizer.save_pretrained(str(export_dir))
        return export_dir
    trainer.save_model(str(adapter_dir))
    trainer.accelerator.wait_for_everyone()
    if trainer.is_world_process_zero():
        merge_lora(base_model, adapter_dir, export_dir, tokenizer, dtype=dtype, revision=revision,
                   trust_remote_code=trust_remote_code)
    trainer.accelerator.wait_for_everyone()
    return export_dir


#: Config keys that do not change what a run trains (left out of :func:`run_key`).
NOT_RUN_KEYS = ("resume", "dry_run", "progress", "report_to", "output_dir", "export_dir")  # the last two: locations


def run_key(cfg: Any) -> str | None:
    """A hash of the settings that define a training run (the config without :data:`NOT_RUN_KEYS`); ``None``
    for a config that is not an OmegaConf node (no finished-run check then)."""
    from omegaconf import OmegaConf

    if not OmegaConf.is_config(cfg):
        return None
    data = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    return content_key({k: v for k, v in data.items() if k not in NOT_RUN_KEYS})


def finished_run(output_dir: str | Path, key: str | None, export_dir: str | Path | None = None) -> dict | None:
    """The recorded result of a finished run with settings ``key`` in ``output_dir``, or None.

    Finished means: ``train_result.json`` parses, names the same ``run_key``, and its export folder holds a
    model (``config.json``).
    """
    if key is None:
        return None
    try:
        done = json.loads((Path(output_dir) / "train_result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    recorded = str(done.get("export_dir") or "")
    if recorded.startswith("./"):  # written relative to the output folder (a run folder that can move)
        recorded = str(Path(output_dir) / recorded[2:])
    export = Path(export_dir or recorded or Path(output_dir) / "final")
    if done.get("run_key") != key or not (export / "config.json").is_file():
        return None
    return done
