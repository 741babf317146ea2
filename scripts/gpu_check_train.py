"""GPU check of pruner training: DeepSpeed ZeRO-3 on one GPU, a randomly initialised ~0.5B Llama-shaped model,
samples of about 8K tokens built by the real sample builder, 20 optimizer steps through ``htmlrag_bench.training.train``.

Reports tokens/s (overall, and steady state from step 3 on), peak GPU memory, first/last loss and the
model size; writes them as JSON with ``--out``. Exits 0 with a message when CUDA is absent. Meant to finish
within 8 minutes on one H200; launched by ``scripts/gpu_check_train.sh`` through ``accelerate launch`` with
``conf/accelerate/zero3.yaml`` (one process), or directly with ``python`` (``htmlrag_bench.training.train`` then runs
DeepSpeed as the single rank of a one-process job).

Samples: synthetic Wikipedia-like pages (tables, lists, sections), several per question, the answer in one
table cell; the builder keeps them under ``--seq-len`` tokens of the offline test tokenizer
(``htmlrag_bench.training.tiny_model``; the model's vocabulary is larger, ids above the tokenizer's are never used).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

log = logging.getLogger("gpu_check_train")
WORDS = ("river season table player album station league county record release population team final "
         "winner votes district episode title year town score round").split()


def synthetic_item(rng: random.Random, i: int, pages: int) -> Any:
    """A question whose answer is one cell of a table on the first of ``pages`` pages."""
    from htmlrag.data import Example

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def page(k: int, answer: str | None) -> str:
        rows = [f"<tr><td>{text(2)}</td><td>{rng.randint(10, 9999)}</td><td>{text(6)}</td></tr>"
                for _ in range(rng.randint(20, 40))]
        if answer:
            rows[len(rows) // 2] = f"<tr><td>champion</td><td>{answer}</td><td>{text(6)}</td></tr>"
        sections = "".join(f"<div><h2>{text(3)}</h2><p>{text(rng.randint(60, 160))}</p></div>"
                           for _ in range(rng.randint(3, 6)))
        items = "".join(f"<li>{text(rng.randint(5, 20))}</li>" for _ in range(8))
        return (f"<html><head><title>Page {i}-{k}</title></head><body><h1>{text(4)}</h1><table>{''.join(rows)}"
                f"</table><ul>{items}</ul>{sections}</body></html>")

    answer = f"Zorbat {i}"
    return Example(id=f"gpu-{i}", question=f"Who was the champion in season {i}?", answers=[answer],
                   pages=[page(k, answer if k == 0 else None) for k in range(pages)])


def make_model(folder: Path, hidden: int, layers: int, vocab: int) -> int:
    """Save a random Llama-shaped model (bf16) and the offline test tokenizer; returns the parameter count."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from htmlrag_bench.training.tiny_model import tiny_tokenizer

    tok = tiny_tokenizer()
    config = LlamaConfig(vocab_size=max(vocab, len(tok)), hidden_size=hidden, intermediate_size=hidden * 4,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=hidden // 128,
                         max_position_embeddings=32768, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--deepspeed", default="zero3", help="a name in conf/accelerate/deepspeed/ or a JSON path")
    p.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    import torch

    if not torch.cuda.is_available():
        log.warning("gpu_check_train: no CUDA device; nothing to check")
        return {"skipped": "no CUDA"}
    from hydra import compose, initialize_config_dir
    from transformers import TrainerCallback

    from htmlrag.pruning.tokens import HFCounter
    from htmlrag_bench.training.data import write_jsonl
    from htmlrag_bench.training.samples import BuildSettings, build_samples
    from htmlrag_bench.training.schemas import CONF_DIR, register_configs
    from htmlrag_bench.training.tiny_model import tiny_tokenizer
    from htmlrag_bench.training.train import train

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []

        def on_step_end(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self.times.append(time.perf_counter())

    tmp = tempfile.TemporaryDirectory(prefix="gpu_check_train_")
    work = args.workdir or Path(tmp.name)
    t0 = time.perf_counter()
    params = make_model(work / "model", args.hidden, args.layers, args.vocab)
    rng = random.Random(0)
    counter = HFCounter(tiny_tokenizer(), "tiny")
    settings = BuildSettings(max_words=128, buckets=(args.seq_len,), overlength="truncate")
    samples, stats = build_samples([synthetic_item(rng, i, pages=8) for i in range(args.steps + 4)], counter, settings)
    samples = samples[: args.steps]
    if len(samples) < args.steps:
        raise SystemExit(f"only {len(samples)} samples built ({stats.to_dict()['dropped']}); need {args.steps}")
    write_jsonl(samples, work / "data" / "gpu-check.jsonl")
    log.info("model %.2fB parameters, %d samples of %d-%d tokens, set up in %.1fs", params / 1e9, len(samples),
             min(s["tokens"] for s in samples), max(s["tokens"] for s in samples), time.perf_counter() - t0)

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train_config", overrides=[
            "train=tiny", f"train.model={work / 'model'}", f"data.paths=[{work / 'data'}]", f"output_dir={work / 'out'}",
            f"deepspeed={args.deepspeed}", f"train.max_steps={args.steps}", "train.bf16=true",
            "train.gradient_checkpointing=true", f"train.max_length={args.seq_len + 1024}", "train.learning_rate=1e-4",
            "train.save_steps=100000", "train.logging_steps=1", "progress=false", "train.name=gpu_check"])
    timer = StepTimer()
    torch.cuda.reset_peak_memory_stats()
    result = train(cfg, callbacks=[timer])
    steady = timer.times[-1] - timer.times[1] if len(timer.times) > 2 else result.seconds
    mean_tokens = result.train_tokens / max(result.samples, 1)
    figures = {
        "device": torch.cuda.get_device_name(0),
        "deepspeed": args.deepspeed,
        "model_parameters": params,
        "steps": result.global_step,
        "mean_tokens_per_sample": round(mean_tokens),
        "tokens_per_s_overall": round(result.train_tokens / result.seconds),
        "tokens_per_s_steady": round(mean_tokens * (len(timer.times) - 2) / steady) if len(timer.times) > 2 else None,
        "train_seconds": round(result.seconds, 1),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "first_loss": result.losses[0][1] if result.losses else None,
        "last_loss": result.losses[-1][1] if result.losses else None,
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    log.info("gpu_check_train: %s", json.dumps(figures))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    tmp.cleanup()
    return figures


if __name__ == "__main__":
    main()
