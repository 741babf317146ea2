"""GPU check of the generative pruner walk: a randomly initialised ~1B Llama-shaped model in bf16 (sdpa).

For prompts of 8K and 32K tokens (``--lengths``) it reports milliseconds per document for our cached walk
(packed tree attention, ``--batch-size`` segments per call, and depth-first with ``batch_size`` 1), the peak
GPU memory, and the ratio to the released strategy (the whole prompt + prefix re-run at every branching
node). The released strategy is timed on ``--released-samples`` branching nodes and scaled to all of them
(every one of its passes is a full prompt pass of about the same length, so the scaling is tight).

Documents are the shared pages (``--data``, cleaned, block trees of 128 words, several pages concatenated
as the ranker does) when present, else deterministic synthetic HTML (tables, lists, sections) of the same
kind. Exits 0 with a message when CUDA is absent. Meant to finish within 8 minutes on one H200.

Usage: ``bash scripts/gpu_check_gen_pruner.sh [--lengths 8192 32768] [--out results/gpu_check.json]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

log = logging.getLogger("gpu_check_gen_pruner")
WORDS = ("river season table player album station league county record release population team final "
         "county winner votes district episode title year town score round").split()


def synthetic_page(rng: random.Random, i: int) -> str:
    """A page with a heading, a table, a list and sections: realistic block paths, no shared data needed."""
    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    rows = "".join(f"<tr><td>{text(3)}</td><td>{rng.randint(1, 9999)}</td><td>{text(8)}</td></tr>"
                   for _ in range(rng.randint(8, 30)))
    items = "".join(f"<li>{text(rng.randint(5, 25))}</li>" for _ in range(rng.randint(3, 12)))
    sections = "".join(f"<div><h2>{text(3)}</h2><p>{text(rng.randint(40, 160))}</p><p>{text(60)}</p></div>"
                       for _ in range(rng.randint(2, 6)))
    return (f"<html><head><title>Page {i} {text(3)}</title></head><body><h1>{text(4)}</h1>"
            f"<table><tbody>{rows}</tbody></table><ul>{items}</ul>{sections}</body></html>")


def load_pages(data: Path) -> list[str]:
    """Cleaned shared pages (WTQ then readability), or an empty list when the data is absent."""
    from htmlrag import clean_html

    files = sorted(data.glob("wtq-html-qa/page/*/*.html.gz")) + sorted(data.glob("readability-pages/*/source.html.gz"))
    pages = []
    for f in files:
        try:
            pages.append(clean_html(gzip.open(f, "rb").read(), name=str(f)))
        except Exception as e:  # a broken page is skipped, the check goes on
            log.warning("skipped %s: %s", f, e)
    return pages


def load_tokenizer() -> Any:
    """Mistral-7B's SentencePiece tokenizer (mistral-common) when installed, else the tests' tiny BPE."""
    from htmlrag_bench.training.tiny_model import CHAT_TEMPLATE, tiny_tokenizer

    try:
        from htmlrag.core.models import mistral_llama_tokenizer

        tok = mistral_llama_tokenizer()
        tok.chat_template = CHAT_TEMPLATE
        return tok
    except Exception as e:
        log.warning("Mistral tokenizer unavailable (%s); using the tiny test BPE", e)
        return tiny_tokenizer()


def build_document(tok: Any, pages: list[str], target: int, question: str) -> tuple[list[int], Any]:
    """Concatenate pages until the pruner prompt reaches ``target`` tokens; returns (prompt ids, token tree)."""
    from htmlrag import build_block_tree
    from htmlrag.rankers.generative import block_paths, path_string, pruner_prompt_ids
    from htmlrag.rankers.token_tree import TokenTree

    trees, total = [], 0
    for html in pages:
        tree = build_block_tree(html, 128, page=len(trees))
        if not tree.blocks:
            continue
        trees.append(tree)
        total += len(tok.encode(html, add_special_tokens=False))
        if total >= target:
            break
    prompt = pruner_prompt_ids(tok, question, [t.html() for t in trees], max_tokens=target, truncation="right")
    paths = tok([path_string(p) for p in block_paths(trees)], add_special_tokens=False)["input_ids"]
    return prompt.ids, TokenTree.build(paths)


#: Llama-3.2-1B's shape (16 layers, hidden 2048, 32 heads, 8 KV heads); ``smoke`` is a CPU test size.
SHAPES = {
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8),
    "smoke": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2),
}


def make_model(vocab: int, window: int, shape: str = "1b", device: str = "cuda") -> Any:
    """A random Llama-shaped causal LM in bf16 with sdpa attention on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    cfg = LlamaConfig(vocab_size=vocab, max_position_embeddings=window, rope_theta=500000.0,
                      tie_word_embeddings=True, **SHAPES[shape])
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    return model.eval()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(fn: Any) -> tuple[float, Any]:
    _sync()
    t = time.perf_counter()
    out = fn()
    _sync()
    return (time.perf_counter() - t) * 1000, out


def check_length(model: Any, prompt: list[int], tree: Any, batch_size: int, repeats: int, samples: int) -> dict:
    """Time our walk (packed and depth-first) and the released strategy on one document."""
    import torch

    from htmlrag.rankers.token_tree import walk_token_tree

    cuda = model.device.type == "cuda"
    walk_token_tree(model, prompt, tree, batch_size=batch_size)  # warm-up at this length
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if cuda else 0
    runs = [_timed(lambda: walk_token_tree(model, prompt, tree, batch_size=batch_size)) for _ in range(repeats)]
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    ms = sorted(r[0] for r in runs)[len(runs) // 2]
    stats = runs[0][1][1]
    ms_dfs, _ = _timed(lambda: walk_token_tree(model, prompt, tree, batch_size=1))

    branching = tree.branching_nodes()
    sample = branching[:: max(1, len(branching) // samples)][:samples]
    rel_ms = []
    for node in sample:
        prefix, v = [], node
        while v != 0:
            prefix.append(tree.token[v])
            v = tree.parent[v]
        ids = torch.tensor([prompt + prefix[::-1]], device=model.device)
        with torch.inference_mode():
            t, _ = _timed(lambda ids=ids: model(input_ids=ids, logits_to_keep=1))
        rel_ms.append(t)
    released_ms = sum(rel_ms) / len(rel_ms) * len(branching)
    return {
        "prompt_tokens": len(prompt), "blocks": stats.blocks, "nodes_total": stats.nodes_total,
        "skip_fraction": round(stats.skip_fraction, 4), "branching_nodes": len(branching),
        "forward_calls": stats.forward_calls, "model_tokens": stats.model_tokens,
        "released_tokens": stats.released_tokens, "tokens_ratio": round(stats.released_ratio, 2),
        "ms_per_doc": round(ms, 1), "ms_per_doc_depth_first": round(ms_dfs, 1),
        "peak_mem_gib": round(peak / 2**30, 2), "peak_mem_above_weights_gib": round((peak - base) / 2**30, 2),
        "released_ms_est": round(released_ms, 1), "released_samples": len(rel_ms),
        "time_ratio": round(released_ms / ms, 1),
    }


def main(argv: list[str] | None = None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", type=int, nargs="+", default=[8192, 32768], help="prompt lengths in tokens")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--released-samples", type=int, default=6)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b", help="model shape (smoke: CPU test)")
    ap.add_argument("--device", default="cuda", help="cuda (the check); cpu only with --shape smoke")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        import torch
    except ImportError:
        print("gpu_check_gen_pruner: torch is not installed; nothing to check")
        return None
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check_gen_pruner: CUDA is not available on this machine; skipping the GPU check")
        return None

    start = time.perf_counter()
    tok = load_tokenizer()
    pages = load_pages(Path(args.data))
    source = "shared pages" if pages else "synthetic pages"
    rng = random.Random(0)
    chars = sum(len(p) for p in pages)
    while chars < 8 * max(args.lengths):  # HTML has well under 8 characters per token: enough pages
        pages.append(synthetic_page(rng, len(pages)))
        chars += len(pages[-1])
    model = make_model(len(tok), window=max(args.lengths) + 4096, shape=args.shape, device=args.device)
    device = torch.cuda.get_device_name() if model.device.type == "cuda" else str(model.device)
    log.info("model: %.2fB parameters, %s, tokenizer vocab %d, documents from %s",
             sum(p.numel() for p in model.parameters()) / 1e9, device, len(tok), source)
    question = "Which row of the table gives the final score?"
    results = {"device": device, "shape": args.shape, "source": source, "lengths": {}}
    for length in args.lengths:
        prompt, tree = build_document(tok, pages, length, question)
        results["lengths"][str(length)] = row = check_length(
            model, prompt, tree, args.batch_size, args.repeats, args.released_samples)
        log.info("%d tokens: %s", length, row)
    results["seconds"] = round(time.perf_counter() - start, 1)

    print("\n| prompt tokens | blocks | skipped | ours ms/doc | depth-first ms | released ms (est.) | time ratio "
          "| tokens ratio | peak GiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in results["lengths"].values():
        print(f"| {row['prompt_tokens']} | {row['blocks']} | {row['skip_fraction']:.1%} | {row['ms_per_doc']} "
              f"| {row['ms_per_doc_depth_first']} | {row['released_ms_est']} | {row['time_ratio']}x "
              f"| {row['tokens_ratio']}x | {row['peak_mem_gib']} |")
    print(f"total {results['seconds']} s on {results['device']} ({source})")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
