"""Runs the authors' toolkit (PyPI ``htmlrag==0.1.1``) on the same inputs as our benchmarks.

Run with the Python of a SEPARATE virtual environment where ``htmlrag==0.1.1`` is installed (never ours):
``BENCH_PY -P scripts/peers/htmlrag_toolkit.py clean PAGES.txt OUT.jsonl``. It reads UTF-8 page files listed
one per line (already decoded by the caller), and writes one JSON line per page with timings and outputs.
Errors are caught per page and reported, as the benchmark counts them.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def _clean(pages_file: str, out_file: str, max_words: int) -> None:
    from htmlrag import build_block_tree, clean_html

    with open(pages_file, encoding="utf-8") as fh, open(out_file, "w", encoding="utf-8") as out:
        for path in fh.read().split("\n"):
            if not path:
                continue
            html = open(path, encoding="utf-8").read()
            row = {"path": path}
            try:
                t0 = time.perf_counter()
                cleaned = clean_html(html)
                row["clean_s"] = time.perf_counter() - t0
                row["cleaned"] = cleaned
            except Exception as exc:
                row["clean_error"] = f"{type(exc).__name__}: {exc}"
                out.write(json.dumps(row) + "\n")
                continue
            try:
                t0 = time.perf_counter()
                blocks, _ = build_block_tree(cleaned, max_node_words=max_words)
                row["tree_s"] = time.perf_counter() - t0
                row["blocks"] = len(blocks)
            except Exception as exc:
                row["tree_error"] = f"{type(exc).__name__}: {exc}"
            out.write(json.dumps(row) + "\n")


class _SentencePieceTokenizer:
    """The three tokenizer methods the toolkit calls, on the same SentencePiece model our side uses."""

    def __init__(self, path: str):
        import sentencepiece

        self.sp = sentencepiece.SentencePieceProcessor(model_file=path)

    def encode(self, text, add_special_tokens=False):
        return self.sp.encode(text)

    def tokenize(self, text):
        return self.sp.encode(text, out_type=str)

    def convert_tokens_to_string(self, tokens):
        return self.sp.decode_pieces(tokens)


def _prune(items_file: str, out_file: str, ranker: str, budget: int, max_words: int, tokenizer: str,
           embed_model: str) -> None:
    """Each input line: {"id", "question", "pages": [html]}; the toolkit's own pipeline per question."""
    from transformers import AutoTokenizer

    from htmlrag import BM25HTMLPruner, EmbedHTMLPruner, build_block_tree, clean_html

    if tokenizer.endswith(".model") or ".model." in tokenizer:  # a SentencePiece file (offline Mistral-7B)
        tok = _SentencePieceTokenizer(tokenizer)  # transformers 5 cannot build LlamaTokenizer from a bare file
    else:
        tok = AutoTokenizer.from_pretrained(tokenizer)
    if ranker == "bm25":
        pruner = BM25HTMLPruner()
    else:
        pruner = EmbedHTMLPruner(embed_model=embed_model, local_inference=True)
    with open(items_file, encoding="utf-8") as fh, open(out_file, "w", encoding="utf-8") as out:
        for line in fh:
            item = json.loads(line)
            row = {"id": item["id"]}
            t0 = time.perf_counter()
            try:
                html = "\n".join(clean_html(p) for p in item["pages"])
                block_tree, html2 = build_block_tree(html, max_node_words=max_words)
                rankings = pruner.calculate_block_rankings(item["question"], html2, block_tree)
                context = pruner.prune_HTML(html2, block_tree, rankings, tok, budget)
                row["context"] = context
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["trace"] = traceback.format_exc()[-500:]
            row["seconds"] = time.perf_counter() - t0
            out.write(json.dumps(row) + "\n")
            out.flush()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "clean":
        _clean(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 256)
    elif cmd == "prune":
        _prune(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8])
    else:
        raise SystemExit(f"unknown command {cmd}")
