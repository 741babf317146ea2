"""The pruning playground: one page, one question, one budget, one ranker; every stage shown.

Stages are the library's: :func:`htmlrag.html.clean.clean_html`, :func:`htmlrag.html.blocktree.build_block_tree`,
a ranker's scores, :func:`htmlrag.pruning.prune.prune_to_budget` with the options of a pipeline built by
:func:`htmlrag.factory.make_pipeline` (:meth:`~htmlrag.pruning.pipeline.HtmlRagPipeline.walk_options`), so a page
prunes here as one step of ``htmlrag prune`` prunes it. Rankers come from :func:`htmlrag.factory.make_ranker`. With
ranker ``none`` the cleaned page is cut to the budget (what the ``cleaned`` baseline of the quickstart does).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from htmlrag.app.pages import mark_blocks, standalone
from htmlrag.core.errors import InputError
from htmlrag.core.io import read_page
from htmlrag.factory import make_pipeline, make_ranker
from htmlrag.html.blocktree import build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.encoding import decode_html
from htmlrag.pruning.prune import prune_to_budget, rank_blocks
from htmlrag.pruning.tokens import load_tokenizer

RANKERS = ("bm25", "embed", "none")
MAX_BLOCKS_SHOWN = 2000


class Rankers:
    """Rankers by name, built once (the embedding model is loaded on first use)."""

    def __init__(self, embed_model: str) -> None:
        self.embed_model = embed_model
        self._made: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Any:
        if name not in ("bm25", "embed"):
            raise InputError(f"unknown ranker {name!r}; choose one of bm25, embed")
        with self._lock:
            if name not in self._made:
                self._made[name] = (make_ranker("bm25") if name == "bm25"
                                    else make_ranker("embedding", model=self.embed_model))
            return self._made[name]


def samples(folder: Path) -> list[str]:
    """Names of the sample pages (``*.html``, ``*.html.gz``) in ``folder``."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.endswith((".html", ".htm", ".html.gz")))


def sample_bytes(folder: Path, name: str) -> bytes:
    """A sample page by name (only names :func:`samples` lists)."""
    if name not in samples(folder):
        raise InputError(f"unknown sample {name!r}; choose one of {', '.join(samples(folder)) or '(none)'}")
    return read_page(folder / name)


def prune_page(raw: bytes, question: str, *, budget: int, ranker: str, max_words: int, rankers: Rankers,
               tokenizer: str | None = None, name: str = "page") -> dict[str, Any]:
    """Every stage for one page; see ``docs/app.md`` for the fields.

    Raises:
        InputError: bad settings, or a page that cannot be parsed.
    """
    if ranker not in RANKERS:
        raise InputError(f"unknown ranker {ranker!r}; choose one of {', '.join(RANKERS)}")
    if not 16 <= budget <= 32768:
        raise InputError(f"budget must be within 16-32768 tokens, got {budget}")
    if not 8 <= max_words <= 1024:
        raise InputError(f"block size must be within 8-1024 words, got {max_words}")
    if ranker != "none" and not question.strip():
        raise InputError("a question is needed to rank blocks (or choose ranker 'none')")
    tok = load_tokenizer(tokenizer)
    t0 = time.perf_counter()
    cleaned = clean_html(raw, name=name)
    t1 = time.perf_counter()
    tree = build_block_tree(cleaned, max_words, pack_siblings=ranker != "none", name=name)
    seconds = {"clean": t1 - t0}
    if ranker == "none":
        pruned = tok.truncate(cleaned, budget)
        trees, scores, kept, pruned_html, tokens = [tree], None, [], pruned, tok.count(pruned)
        seconds["prune"] = time.perf_counter() - t1
    else:
        r = rankers.get(ranker)
        t2 = time.perf_counter()
        sc = r.score(question.strip(), [tree])
        t3 = time.perf_counter()
        walk = make_pipeline(r, None, tok).walk_options(bool(getattr(r, "needs_paths", False)))
        res = prune_to_budget([tree], sc, budget, tok, ranker=r, question=question.strip(), **walk)
        seconds.update(rank=t3 - t2, prune=time.perf_counter() - t3)
        trees, scores, kept, pruned_html, tokens = res.trees, res.scores, res.kept, res.pages[0], res.tokens
    final = trees[0]
    kept_idx = [bi for _, bi in kept]
    ranks = {bi: r for r, (_, bi) in enumerate(rank_blocks(trees, scores), start=1)} if scores is not None else {}
    blocks = [{
        "index": b.index, "path": b.path_str, "depth": b.depth, "words": b.words, "is_leaf": b.is_leaf,
        "score": None if scores is None else round(float(scores[0][b.index]), 5), "rank": ranks.get(b.index),
        "kept": b.index in set(kept_idx), "text": " ".join(b.text.split())[:160],
    } for b in final.blocks[:MAX_BLOCKS_SHOWN]]
    marks = {final.blocks[bi]: ("kept" if final.blocks[bi].is_leaf else "own") for bi in kept_idx}
    return {
        "ranker": ranker, "budget": budget, "max_words": max_words, "question": question,
        "tokens": {"raw": tok.count(decode_html(raw, name)), "cleaned": tok.count(cleaned), "pruned": tokens},
        "blocks_total": len(final.blocks), "blocks_kept": len(kept_idx), "blocks": blocks,
        "kept_order": kept_idx,
        "cleaned_html": cleaned, "pruned_html": pruned_html,
        "cleaned_marked": mark_blocks(final, marks), "pruned_page": standalone(pruned_html),
        "seconds": {k: round(v, 4) for k, v in seconds.items()},
    }
