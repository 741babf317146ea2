"""Typed schema of ``htmlrag-train``'s config (``conf/train_config.yaml``), registered in Hydra's ConfigStore.

Recipes (``conf/train/<pruner>.yaml``) fill :class:`TrainRecipe`; hardware stays apart: accelerate configs in
``conf/accelerate/`` (``accelerate launch --config_file ...``) and DeepSpeed JSONs in ``conf/accelerate/deepspeed/``
(selected with ``deepspeed=zero3``, which also serves launches without accelerate, e.g. SLURM through
submitit). A misspelt key or a wrong type fails when the config composes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from htmlrag_bench.eval.locations import conf_dir, register_resolvers

CONF_DIR = conf_dir()
DEEPSPEED_DIR = CONF_DIR / "accelerate" / "deepspeed"


@dataclass
class LoraSettings:
    """LoRA through PEFT (off: full fine-tuning). Adapters are merged into the base weights at export.

    ``target_modules``: module names, or ``["all-linear"]`` for every linear layer except the output head.
    """

    enabled: bool = False
    r: int = 64
    alpha: int = 128
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["all-linear"])


@dataclass
class TrainRecipe:
    """One pruner recipe: the base model and the optimisation settings (HtmlRAG Appendix B by default).

    Lengths are in tokens of the model's tokenizer; ``max_length`` caps prompt + answer (longer samples are
    dropped, or raise with ``data.overlength=error``). ``warmup_ratio`` is a fraction of the optimizer steps.
    ``sequence_parallel_size`` > 1 splits each sequence over that many GPUs with DeepSpeed Ulysses (ALST);
    it needs a DeepSpeed config and ``deepspeed>=0.18.2`` (see README, "Training a pruner").
    ``max_minutes``: stop (saving a checkpoint) after this much training wall time, whatever ``max_steps`` says;
    the run then counts as finished. ``answer_logits_only``: apply the output head on the answer positions only
    (:mod:`htmlrag_bench.training.loss`; the same loss, far less memory with a large vocabulary).
    ``model`` may be a hub name, a folder, or a model alias (``gemma3-270m``).
    """

    name: str = MISSING
    model: str = MISSING
    revision: str | None = None
    trust_remote_code: bool = False
    attn_implementation: str | None = "sdpa"
    max_length: int = 35000
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 8
    num_train_epochs: float = 3.0
    max_steps: int = -1
    learning_rate: float = 2e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_ratio: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_epsilon: float = 1e-8
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch"
    bf16: bool = True
    gradient_checkpointing: bool = True
    logging_steps: int = 10
    save_steps: int = 200
    save_total_limit: int | None = 3
    dataloader_num_workers: int = 0
    sequence_parallel_size: int = 1
    max_minutes: float | None = None
    answer_logits_only: bool = True
    lora: LoraSettings = field(default_factory=LoraSettings)


@dataclass
class TrainData:
    """Where the samples come from (see :func:`htmlrag_bench.training.data.load_records`).

    ``paths``: local ``.jsonl``/``.json`` files, folders or globs; ``hub``: e.g. ``zstanjj/HtmlRAG-train``
    (with ``revision`` and ``data_files`` patterns); ``sample_rates``: ``{file pattern: rate}`` (the released
    mix); ``overlength``: ``drop`` or ``error`` for samples over ``train.max_length``.
    """

    paths: list[str] = field(default_factory=list)
    hub: str | None = None
    revision: str | None = None
    data_files: list[str] | None = None
    sample_rates: dict[str, float] = field(default_factory=dict)
    max_samples: int | None = None
    overlength: str = "drop"


@dataclass
class TrainConfig:
    """The whole ``htmlrag-train`` configuration.

    Attributes:
        train: the recipe (``train=phi35_pruner``, ``train=llama32_1b_pruner``, ``train=tiny``).
        data: the samples.
        deepspeed: ``null`` (none, or the one ``accelerate launch`` names), a name in ``conf/accelerate/deepspeed/``
            (``zero3``, ``zero3_offload``) or a path to a DeepSpeed JSON.
        output_dir: checkpoints go to ``<output_dir>/checkpoint-<step>``.
        export_dir: the final model (LoRA merged), loadable by ``GenerativeRanker``; default
            ``<output_dir>/final``.
        resume: continue from the latest complete checkpoint in ``output_dir`` when there is one.
        dry_run: log the effective hyper-parameters and the DeepSpeed config, load nothing, train nothing.
        report_to: Trainer loggers (``none``, ``wandb``, ``tensorboard``).
        progress: progress bars.
    """

    train: TrainRecipe = field(default_factory=TrainRecipe)
    data: TrainData = field(default_factory=TrainData)
    deepspeed: str | None = None
    output_dir: str = "${project_root:}/results/train/${train.name}"
    export_dir: str | None = None
    resume: bool = True
    seed: int = 0
    dry_run: bool = False
    report_to: str = "none"
    progress: bool = True


def register_configs() -> None:
    """Register the schema and the ``project_root`` resolver (idempotent)."""
    from hydra.core.config_store import ConfigStore

    register_resolvers()
    ConfigStore.instance().store(name="train_schema", node=TrainConfig)
