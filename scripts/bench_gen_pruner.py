"""Benchmark the generative pruner's token-tree walk against the released strategy and a naive scorer (CPU).

On block trees (``--max-words`` 128) of the shared pages (cleaned with :func:`htmlrag.clean_html`), one page
per prompt, it reports:

* the fraction of token-tree nodes skipped by dynamic skipping (only children: probability 1.0, no pass);
* model tokens processed by our walk (prompt once + tree tokens up to the deepest branching node), by the
  released toolkit's strategy (the whole prompt + the node's prefix re-run at every branching node) and by a
  naive scorer (prompt + path per block), counted on every page (no model needed);
* wall time of the three strategies, run for real on ``--time-pages`` pages whose prompt has at most
  ``--time-max-prompt`` tokens, and exactness: the largest difference between our walk's scores (packed, and
  depth-first) and one full forward pass of prompt + path per block (float32), and the released strategy's.

The model is a tiny random Llama by default, or a real one with ``--model`` (a model alias such as
``gemma3-270m``, or a folder; float32), whose own tokenizer then builds the token trees (Gemma 3: 262K
vocabulary, sliding-window layers). Without ``--model`` the tokenizer (``--tokenizer mistral``, default) is
Mistral-7B v0.1's SentencePiece model shipped in ``mistral-common`` (the Phi-3 pruner's 32K Llama-2 family);
``tiny`` uses the test suite's byte-level BPE. The prompt is the released pruners' format
(:func:`htmlrag.rankers.generative.format_pruner_prompt`; Phi-3-style chat template for the two tokenizers
above, the plain ``{bos}{message}\n`` for a model without a template).

``--pages`` takes globs: each is matched as given (absolute, or relative to the current folder) and, when that
matches nothing, under ``--data``. Pages may be plain or gzip-compressed (detected from the content).
``--prune-to N`` first BM25-prunes each cleaned page to N tokens (of the pruner's tokenizer), as step 1 of the
two-step pipeline does before the generative step sees the page.

Usage::

    python scripts/bench_gen_pruner.py [--data ../shared/data] [--pages GLOB ...] [--limit N]
    python scripts/bench_gen_pruner.py --pages 'data/pages/*.html' --tokenizer tiny
    python scripts/bench_gen_pruner.py --model gemma3-270m --pages 'wtq-html-qa/page/*/*.html.gz' --limit 40 \
        --prune-to 1024 --time-pages 3 --time-max-prompt 1400
"""

from __future__ import annotations

import argparse
import glob
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's htmlrag before an installed one

from htmlrag import build_block_tree, clean_html  # noqa: E402
from htmlrag.core.errors import HtmlRagError  # noqa: E402
from htmlrag.core.io import read_page  # noqa: E402
from htmlrag.rankers.generative import block_paths, path_string, pruner_prompt_ids  # noqa: E402
from htmlrag.rankers.token_tree import TokenTree, tree_stats, walk_token_tree  # noqa: E402

log = logging.getLogger("bench_gen_pruner")
DEFAULT_PAGES = ("wtq-html-qa/page/*/*.html.gz", "readability-pages/*/source.html.gz")
QUESTION = "Which part of the page answers the question about the table's first row?"


def load_tokenizer(kind: str) -> Any:
    """``mistral``: the SentencePiece model of mistral-common as a transformers tokenizer; ``tiny``: test BPE."""
    from htmlrag_bench.training.tiny_model import CHAT_TEMPLATE, tiny_tokenizer

    if kind == "tiny":
        return tiny_tokenizer()
    from htmlrag.core.models import mistral_llama_tokenizer

    tok = mistral_llama_tokenizer()
    tok.chat_template = CHAT_TEMPLATE
    return tok


# ---------------------------------------------------------------- the two peers (no cache)


def _children_logprobs(tree: TokenTree, node: int, logits: Any) -> dict[int, float]:
    import torch

    kids = tree.children[node]
    ids = torch.tensor([tree.token[c] for c in kids])
    ls = torch.log_softmax(logits[ids].float(), dim=-1).tolist()
    return {c: max(v, np.log(1e-9)) for c, v in zip(kids, ls, strict=True)}


def released_strategy(model: Any, prompt: list[int], tree: TokenTree) -> np.ndarray:
    """The released toolkit's computation: for every branching node (breadth-first), one forward pass over the
    whole prompt + the node's prefix, no cache; siblings' softmax at the last position."""
    import torch

    lp = np.zeros(len(tree.token))
    for node in tree.branching_nodes():
        prefix, v = [], node
        while v != 0:
            prefix.append(tree.token[v])
            v = tree.parent[v]
        ids = torch.tensor([prompt + prefix[::-1]])
        with torch.inference_mode():
            logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1]
        for c, value in _children_logprobs(tree, node, logits).items():
            lp[c] = value
    return tree.path_scores(lp)


def naive_strategy(model: Any, prompt: list[int], tree: TokenTree, token_paths: list[list[int]]) -> np.ndarray:
    """One forward pass of prompt + path per block, no cache."""
    import torch

    out = np.zeros(len(token_paths))
    for k, path in enumerate(token_paths):
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([prompt + path]), logits_to_keep=len(path) + 1).logits[0]
        node, total = 0, 0.0
        for j, t in enumerate(path):
            child = next(c for c in tree.children[node] if tree.token[c] == t)
            if len(tree.children[node]) > 1:
                total += _children_logprobs(tree, node, logits[j])[child]
            node = child
        out[k] = total
    return out


# ---------------------------------------------------------------- the run


@dataclass
class Totals:
    """Sums over pages."""

    pages: int = 0
    blocks: int = 0
    nodes: int = 0
    skipped: int = 0
    ours: int = 0
    released: int = 0
    naive: int = 0
    calls: dict[str, int] = field(default_factory=lambda: {"ours": 0, "released": 0, "naive": 0})


def _pages(data: Path, globs: list[str], limit: int | None) -> list[Path]:
    """Files of every glob: matched as given (absolute or relative to the current folder), else under ``data``."""
    files: list[Path] = []
    for pattern in globs:
        found = sorted(glob.glob(str(Path(pattern).expanduser())))
        if not found and not Path(pattern).is_absolute():
            found = sorted(glob.glob(str(data / pattern)))
        files.extend(Path(f) for f in found if Path(f).is_file())
    return files[:limit] if limit else files


def load_model(name: str) -> tuple[Any, Any]:
    """A real causal LM (alias or folder) in float32, eval mode, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from htmlrag.core.models.aliases import resolve_model

    path = resolve_model(name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(path)


def _prune_first(html: str, budget: int, tok: Any) -> str:
    """Step 1 of the two-step pipeline: BM25 over 256-word blocks, pruned to ``budget`` tokens of ``tok``."""
    from htmlrag.factory import make_pipeline
    from htmlrag.pruning.tokens import HFCounter

    pipe = make_pipeline("bm25", None, HFCounter(tok, "pruner"), budget2=budget, max_words1=256,
                         clean=False, count_stages=False, keep_stages=False)
    return pipe.run(QUESTION, [html]).context


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="shared data folder")
    ap.add_argument("--pages", nargs="+", default=list(DEFAULT_PAGES),
                    help="globs, as given or under --data (plain or .gz pages)")
    ap.add_argument("--limit", type=int, default=None, help="first N pages only")
    ap.add_argument("--max-words", type=int, default=128, help="block size in words")
    ap.add_argument("--tokenizer", choices=["mistral", "tiny"], default="mistral", help="without --model")
    ap.add_argument("--model", default=None, help="a real pruner LM: alias (gemma3-270m) or folder; float32")
    ap.add_argument("--prune-to", type=int, default=None, help="BM25-prune each page to N tokens first (step 1)")
    ap.add_argument("--batch-size", type=int, default=32, help="segments per forward call of our walk")
    ap.add_argument("--time-pages", type=int, default=5, help="pages on which the three strategies are timed")
    ap.add_argument("--time-max-prompt", type=int, default=4000, help="largest prompt (tokens) of a timed page")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from htmlrag_bench.training.tiny_model import tiny_causal_lm

    if args.model:
        model, tok = load_model(args.model)
    else:
        tok = load_tokenizer(args.tokenizer)
        model = tiny_causal_lm("llama", tok, max_position_embeddings=1 << 18)
    files = _pages(Path(args.data), args.pages, args.limit)
    if not files:
        raise SystemExit(f"no pages match {args.pages} (as given, nor under {args.data})")

    totals = Totals()
    timed: list[dict[str, float]] = []
    for f in files:
        try:
            html = clean_html(read_page(f), name=str(f))
            if args.prune_to:
                html = _prune_first(html, args.prune_to, tok)
        except HtmlRagError as e:
            log.warning("skipped %s: %s", f, e)
            continue
        page = build_block_tree(html, args.max_words)
        if not page.blocks:
            continue
        token_paths = tok([path_string(p) for p in block_paths([page])], add_special_tokens=False)["input_ids"]
        tree = TokenTree.build(token_paths)
        prompt = pruner_prompt_ids(tok, QUESTION, page.html()).ids
        st = tree_stats(tree, len(prompt))
        totals.pages += 1
        totals.blocks += st.blocks
        totals.nodes += st.nodes_total
        totals.skipped += st.nodes_skipped
        totals.ours += st.model_tokens
        totals.released += st.released_tokens
        totals.naive += st.naive_tokens
        totals.calls["ours"] += 1 + -(-len(tree.segments()) // args.batch_size) if st.branching_nodes else 0
        totals.calls["released"] += st.released_calls
        totals.calls["naive"] += st.naive_calls
        if len(timed) < args.time_pages and st.branching_nodes and len(prompt) <= args.time_max_prompt:
            timed.append(_time_page(model, prompt, tree, token_paths, args.batch_size, f))

    _report(args, totals, timed)


def _time_page(model: Any, prompt: list[int], tree: TokenTree, token_paths: list[list[int]], bs: int, f: Path) -> dict:
    walk_token_tree(model, prompt, tree, batch_size=bs)  # warm-up
    t0 = time.perf_counter()
    lp, _ = walk_token_tree(model, prompt, tree, batch_size=bs)
    t1 = time.perf_counter()
    rel = released_strategy(model, prompt, tree)
    t2 = time.perf_counter()
    nai = naive_strategy(model, prompt, tree, token_paths)
    t3 = time.perf_counter()
    ours = tree.path_scores(lp)
    depth_first = tree.path_scores(walk_token_tree(model, prompt, tree, batch_size=1)[0])
    row = {"ours": t1 - t0, "released": t2 - t1, "naive": t3 - t2, "prompt": len(prompt), "blocks": len(token_paths),
           "diff_released": float(np.abs(ours - rel).max()), "diff_naive": float(np.abs(ours - nai).max()),
           "diff_depth_first_naive": float(np.abs(depth_first - nai).max()),
           "spread": float(np.ptp(nai)) if len(nai) else 0.0,
           "same_top1": float(int(np.argmax(ours)) == int(np.argmax(nai)))}
    log.info("timed %s: %s", f, {k: round(v, 4) for k, v in row.items()})
    return row


def _report(args: argparse.Namespace, t: Totals, timed: list[dict]) -> None:
    who = f"model {args.model} (its tokenizer)" if args.model else f"tokenizer {args.tokenizer}"
    step1 = f", pages BM25-pruned to {args.prune_to} tokens first" if args.prune_to else ""
    print(f"\nGenerative pruner token tree — {t.pages} pages, {t.blocks} blocks, blocks of <= {args.max_words} "
          f"words, {who}, batch_size {args.batch_size}{step1}")
    print(f"nodes skipped (dynamic skipping): {t.skipped}/{t.nodes} = {t.skipped / max(t.nodes, 1):.1%}")
    print("\n| strategy | model tokens | forward calls | tokens vs ours |")
    print("|---|---:|---:|---:|")
    for name, tokens in (("ours (cached walk)", t.ours), ("released (prompt per branching node)", t.released),
                         ("naive (prompt + path per block)", t.naive)):
        key = name.split()[0]
        print(f"| {name} | {tokens:,} | {t.calls[key]:,} | {tokens / max(t.ours, 1):.1f}x |")
    if not timed:
        print("\n(no page qualified for timing; raise --time-max-prompt)")
        return
    secs = {k: sum(r[k] for r in timed) for k in ("ours", "released", "naive")}
    print(f"\nCPU wall time, {args.model or 'tiny random Llama'}, {len(timed)} pages (prompts of "
          f"{', '.join(str(r['prompt']) for r in timed)} tokens):")
    print("| strategy | seconds | time vs ours |")
    print("|---|---:|---:|")
    for k in ("ours", "released", "naive"):
        print(f"| {k} | {secs[k]:.3f} | {secs[k] / secs['ours']:.1f}x |")
    print(f"max |ours - released| = {max(r['diff_released'] for r in timed):.2e}, "
          f"max |ours - naive| = {max(r['diff_naive'] for r in timed):.2e} (packed), "
          f"{max(r['diff_depth_first_naive'] for r in timed):.2e} (depth-first); "
          f"score spread across blocks (naive) {min(r['spread'] for r in timed):.2f}-{max(r['spread'] for r in timed):.2f}; "
          f"same top block as naive on {int(sum(r['same_top1'] for r in timed))}/{len(timed)} pages")


if __name__ == "__main__":
    main()
