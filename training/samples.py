"""Training samples for the generative pruner: (question, gold answers, HTML pages) -> chat sample.

The pipeline per item (no Hydra, no model; the token counter is any :class:`htmlrag.pruning.tokens.TokenCounter`):

1. every page is cleaned (:func:`htmlrag.clean_html`) and split into a block tree of ``max_words`` words
   (128, HtmlRAG step 2); pages that fail or hold no block are left out (counted in the stats);
2. a block *holds* a gold answer when the answer, SQuAD-normalised (:func:`htmlrag.core.answers.normalize_answer`),
   occurs in the block's normalised text on word boundaries (``"2"`` is not in ``"1992"``). Its score is the
   fraction of gold answers it holds; the target is the first block with the best score in block order
   (breadth-first, pages in order), as the authors' sample maker did. When the item names gold pages
   (``metadata["gold_page"]``, as WTQ-HTML does), only their blocks can be targets;
3. the pages go into one user message built by :func:`htmlrag.rankers.generative.build_pruner_messages`
   (the ranker's own prompt builder), each page as :meth:`BlockTree.html` serialises it, so training and
   ranking see the same text; with several pages the target path's root is ``html{i}`` (see
   :func:`htmlrag.rankers.generative.block_paths`);
4. the assistant answer starts with the target's path (``<html><body><div0><p>``), followed, as in the
   released training data (``zstanjj/HtmlRAG-train``), by the block's HTML after its opening tag
   (``answer="path_html"``), by its text (``"path_text"``), or by nothing (``"path"``);
5. length buckets (2K, 4K, 8K, 16K, 32K tokens, the paper's): a sample's length is the token count of the
   user message plus the answer plus ``template_tokens`` for the chat template. Over the largest bucket,
   ``overlength="truncate"`` removes the largest pages that hold no target until it fits (the authors'
   rule) and ``"drop"`` drops it. ``variants="every_bucket"`` makes one sample per bucket the item can fill
   (distractor pages removed until it fits that bucket), like the released files ``<dataset>-<bucket>.jsonl``.

Rows written (the released format plus fields for analysis): ``id``, ``messages`` (user, assistant),
``target_path``, ``target_paths`` (every block path holding an answer, at most 32), ``score``, ``bucket``,
``tokens``, ``pages``, ``pages_removed``, ``question``, ``answers``, ``source``.
"""

from __future__ import annotations

import logging
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lxml.etree as etree

from htmlrag.core.answers import normalize_answer
from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import read_page
from htmlrag.html.blocktree import Block, BlockTree, build_block_tree
from htmlrag.html.clean import clean_html
from htmlrag.html.text import has_cjk
from htmlrag.pruning.tokens import TokenCounter
from htmlrag.rankers.generative import block_paths, build_pruner_messages, path_string

log = logging.getLogger(__name__)

#: The paper's length buckets in tokens, and their names in file names and stats.
BUCKETS: tuple[int, ...] = (2048, 4096, 8192, 16384, 32768)
ANSWER_FORMATS = ("path", "path_text", "path_html")
OVERLENGTH = ("truncate", "drop")
VARIANTS = ("largest", "every_bucket")
#: Reasons an item gives no sample (keys of :attr:`BuildStats.dropped`).
DROP_REASONS = ("no_answers", "no_pages", "no_answer_block", "over_length")
_MAX_LISTED_PATHS = 32
_OPEN_TAG = re.compile(r"^<[^>]*>")


def bucket_name(tokens: int) -> str:
    """``2048 -> "2k"``, ``32768 -> "32k"``."""
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)


@dataclass(frozen=True)
class BuildSettings:
    """How samples are built (see the module docstring).

    Attributes:
        max_words: block size in words (128 for the step-2 pruner).
        buckets: bucket sizes in tokens, ascending; a sample goes to the smallest that holds it.
        variants: ``"largest"`` (one sample per item) or ``"every_bucket"`` (one per bucket it can fill).
        overlength: ``"truncate"`` (remove distractor pages, largest first) or ``"drop"``.
        answer: ``"path_html"`` (released format), ``"path_text"`` or ``"path"``.
        template_tokens: tokens added for the chat template's role markers (a margin for the estimate).
        use_gold_pages: restrict targets to ``metadata["gold_page"]`` when the item has it.
    """

    max_words: int = 128
    buckets: tuple[int, ...] = BUCKETS
    variants: str = "largest"
    overlength: str = "truncate"
    answer: str = "path_html"
    template_tokens: int = 32
    use_gold_pages: bool = True

    def __post_init__(self) -> None:
        if self.max_words < 1:
            raise InputError(f"max_words must be >= 1, got {self.max_words}")
        if not self.buckets or list(self.buckets) != sorted(set(self.buckets)) or self.buckets[0] < 1:
            raise InputError(f"buckets must be distinct positive sizes in ascending order, got {self.buckets}")
        for name, value, allowed in (("variants", self.variants, VARIANTS), ("overlength", self.overlength, OVERLENGTH),
                                     ("answer", self.answer, ANSWER_FORMATS)):
            if value not in allowed:
                raise InputError(f"{name} must be one of {allowed}, got {value!r}")


@dataclass
class BuildStats:
    """Counts of one build.

    Attributes:
        items: items seen.
        items_labelled: items with at least one block holding a gold answer.
        items_with_sample: items that gave at least one sample.
        samples: samples written.
        per_bucket: samples per bucket name (``"2k"`` ... ``"32k"``).
        dropped: items that gave no sample, per reason (see :data:`DROP_REASONS`).
        truncated: samples from which distractor pages were removed to fit.
        pages_removed: distractor pages removed in all.
        pages_failed: pages that could not be read or cleaned.
        pages_empty: pages without any block (no text).
        examples: the first few dropped item ids per reason.
    """

    items: int = 0
    items_labelled: int = 0
    items_with_sample: int = 0
    samples: int = 0
    per_bucket: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    truncated: int = 0
    pages_removed: int = 0
    pages_failed: int = 0
    pages_empty: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    def drop(self, reason: str, item_id: str, detail: str = "") -> None:
        """Record an item dropped for ``reason``."""
        self.dropped[reason] += 1
        ids = self.examples.setdefault(reason, [])
        if len(ids) < 5:
            ids.append(f"{item_id}: {detail}" if detail else item_id)
        log.debug("dropped %s (%s) %s", item_id, reason, detail)

    def to_dict(self, buckets: Sequence[int] = BUCKETS) -> dict[str, Any]:
        """A JSON-ready report; ``label_coverage`` = items labelled / items, ``sample_coverage`` = items with a
        sample / items (0 when there are no items)."""
        n = self.items or 1
        return {
            "items": self.items,
            "items_labelled": self.items_labelled,
            "items_with_sample": self.items_with_sample,
            "label_coverage": round(self.items_labelled / n, 4) if self.items else 0.0,
            "sample_coverage": round(self.items_with_sample / n, 4) if self.items else 0.0,
            "samples": self.samples,
            "per_bucket": {bucket_name(b): self.per_bucket.get(bucket_name(b), 0) for b in buckets},
            "dropped": {r: self.dropped.get(r, 0) for r in DROP_REASONS},
            "truncated_samples": self.truncated,
            "pages_removed": self.pages_removed,
            "pages_failed": self.pages_failed,
            "pages_empty": self.pages_empty,
            "dropped_examples": self.examples,
        }


@dataclass
class PageTree:
    """A cleaned page's block tree, its serialised HTML and token count (cached per page by the builder)."""

    tree: BlockTree
    html: str
    tokens: int


def contains_answer(text_norm: str, answer_norm: str) -> bool:
    """Containment of two SQuAD-normalised strings: on word boundaries, or as a plain substring when the
    answer has CJK characters (CJK text has no spaces between words)."""
    if not answer_norm:
        return False
    if has_cjk(answer_norm):
        return answer_norm in text_norm
    return f" {answer_norm} " in f" {text_norm} "


_PUNCT_SPACE = str.maketrans({c: " " for c in string.punctuation})


def _normalize_spaced(text: str) -> str:
    """Like :func:`normalize_answer` but punctuation becomes a space (``"330L[7]"`` -> ``"330l 7"``)."""
    return normalize_answer(text.translate(_PUNCT_SPACE))


def answer_scores(blocks: Sequence[Block], answers: Sequence[str]) -> list[float]:
    """Fraction of ``answers`` each block holds (see the module docstring for "holds").

    An answer is held when its normalised form occurs on word boundaries in the block's normalised text, with
    punctuation either removed (SQuAD) or read as a space (so a footnote mark glued to a cell, ``330L[7]``,
    does not hide ``330L``).
    """
    norm_answers = [(a, _normalize_spaced(x)) for x in answers if (a := normalize_answer(x))]
    if not norm_answers:
        return [0.0] * len(blocks)
    out = []
    for block in blocks:
        raw = block.text
        text, spaced = normalize_answer(raw), _normalize_spaced(raw)
        held = sum(contains_answer(text, a) or contains_answer(spaced, b) for a, b in norm_answers)
        out.append(held / len(norm_answers))
    return out


def block_content(block: Block, answer: str, max_words: int) -> str:
    """What follows the path in the assistant answer: the block's HTML after its opening tag (``path_html``),
    its text (``path_text``) or nothing (``path``). A block over ``max_words`` words (an element that cannot be
    split) contributes its first ``max_words`` words of text."""
    if answer == "path":
        return ""
    text = " ".join(block.text.split())
    if answer == "path_text" or not block.is_leaf or block.words > max_words:
        words = text.split()
        return " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")
    html = etree.tostring(block.element, method="html", encoding="unicode", with_tail=False)
    return _OPEN_TAG.sub("", html, count=1)


def load_page_tree(page: str | bytes, counter: TokenCounter, max_words: int, name: str) -> PageTree | None:
    """Clean a page and build its block tree; ``None`` for a page without blocks.

    Raises:
        InputError: the page cannot be parsed or cleaned.
    """
    cleaned = clean_html(page, name=name)
    if not cleaned:
        return None
    tree = build_block_tree(cleaned, max_words=max_words, name=name)
    if tree.root is None or not tree.blocks:
        return None
    html = tree.html()
    return PageTree(tree, html, counter.count(html))


class SampleBuilder:
    """Builds chat samples from items; caches cleaned pages by key (a path or an id) across items.

    Args:
        counter: counts tokens (the target model's tokenizer, or the offline default of
            :func:`htmlrag.pruning.tokens.load_tokenizer`).
        settings: see :class:`BuildSettings`.
        source: recorded in every row (``"wtq-html-qa"``, ...).
    """

    def __init__(self, counter: TokenCounter, settings: BuildSettings | None = None, source: str = ""):
        self.counter = counter
        self.settings = settings or BuildSettings()
        self.source = source
        self.stats = BuildStats()
        self._cache: dict[Any, PageTree | Exception | None] = {}

    def _page(self, key: Any, load: Any, name: str) -> PageTree | Exception | None:
        if key is not None and key in self._cache:
            return self._cache[key]
        try:
            page = load_page_tree(load(), self.counter, self.settings.max_words, name)
        except (HtmlRagError, OSError) as exc:
            page = exc
        if key is not None:
            self._cache[key] = page
        return page

    def build(self, item_id: str, question: str, answers: Sequence[str], pages: Sequence[Any],
              *, gold_pages: Sequence[int] | None = None, page_keys: Sequence[Any] | None = None,
              loaders: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Samples of one item (empty when dropped; the reason goes to :attr:`stats`).

        Args:
            item_id: the item's id (sample ids are ``<id>`` or ``<id>-<bucket>`` with ``every_bucket``).
            question: the question.
            answers: gold short answers (any one counts).
            pages: HTML strings/bytes (used when ``loaders`` is None).
            gold_pages: indices of the pages the answer should come from (None: any page).
            page_keys: cache keys per page (e.g. file paths shared by several items); None: no caching.
            loaders: zero-argument callables returning each page's HTML (lazy reading), instead of ``pages``.
        """
        st, cfg = self.stats, self.settings
        st.items += 1
        if not any(normalize_answer(a) for a in answers):
            st.drop("no_answers", item_id)
            return []
        n = len(loaders) if loaders is not None else len(pages)
        trees: list[PageTree] = []
        orig_index: list[int] = []
        for i in range(n):
            load = loaders[i] if loaders is not None else (lambda p=pages[i]: p)
            key = page_keys[i] if page_keys is not None else None
            page = self._page(key, load, f"{item_id} page {i}")
            if isinstance(page, Exception):
                st.pages_failed += 1
                log.debug("%s page %d failed: %s", item_id, i, page)
            elif page is None:
                st.pages_empty += 1
            else:
                trees.append(page)
                orig_index.append(i)
        if not trees:
            st.drop("no_pages", item_id, f"{n} page(s), none with text")
            return []
        allowed = set(range(len(trees)))
        if cfg.use_gold_pages and gold_pages is not None:
            allowed = {k for k, i in enumerate(orig_index) if i in set(gold_pages)}
        best: tuple[float, int, int] | None = None  # (score, page, block)
        holding: list[tuple[int, int]] = []
        for k, page in enumerate(trees):
            if k not in allowed:
                continue
            for b, score in enumerate(answer_scores(page.tree.blocks, answers)):
                if score > 0:
                    holding.append((k, b))
                    if best is None or score > best[0]:
                        best = (score, k, b)
        if best is None:
            st.drop("no_answer_block", item_id, f"none of {list(answers)[:3]} in any block of {len(allowed)} page(s)")
            return []
        st.items_labelled += 1
        samples = self._variants(item_id, question, answers, trees, best, holding)
        if samples:
            st.items_with_sample += 1
        return samples

    def _variants(self, item_id: str, question: str, answers: Sequence[str], trees: list[PageTree],
                  best: tuple[float, int, int], holding: list[tuple[int, int]]) -> list[dict[str, Any]]:
        st, cfg = self.stats, self.settings
        score, target_page, target_block = best
        budgets = list(cfg.buckets) if cfg.variants == "every_bucket" else [cfg.buckets[-1]]
        may_remove = cfg.overlength == "truncate" or cfg.variants == "every_bucket"
        exact: dict[tuple[int, ...], dict[str, Any]] = {}

        def sample_of(keep: list[int]) -> dict[str, Any]:
            if tuple(keep) not in exact:
                exact[tuple(keep)] = self._sample(item_id, question, answers, trees, keep, target_page, target_block,
                                                  holding, score)
            return exact[tuple(keep)]

        # Cheap estimate to choose pages (pages counted once each, when cached); the chosen set is counted exactly.
        block = trees[target_page].tree.blocks[target_block]
        overhead = (self.counter.count(build_pruner_messages(question, "")[0]["content"]) + len(trees)
                    + self.counter.count(block_content(block, cfg.answer, cfg.max_words)) + 8 * len(block.path)
                    + cfg.template_tokens)
        out: list[dict[str, Any]] = []
        emitted: set[tuple[int, ...]] = set()
        for budget in budgets:
            keep = list(range(len(trees)))
            removable = sorted((k for k in keep if k != target_page), key=lambda k: trees[k].tokens)
            sample = None
            while True:
                if overhead + sum(trees[k].tokens for k in keep) <= budget * 1.02:
                    candidate = sample_of(keep)
                    if candidate["tokens"] <= budget:
                        sample = candidate
                        break
                if not removable or not may_remove:
                    break
                keep.remove(removable.pop())  # the largest page without the target
            if sample is None or tuple(keep) in emitted:
                continue
            emitted.add(tuple(keep))
            sample = dict(sample)
            bucket = next(b for b in cfg.buckets if sample["tokens"] <= b)
            sample["bucket"] = bucket_name(bucket)
            sample["pages_removed"] = len(trees) - len(keep)
            if cfg.variants == "every_bucket":
                sample["id"] = f"{item_id}-{bucket_name(budget)}"
            out.append(sample)
        if not out:
            alone = overhead + trees[target_page].tokens
            st.drop("over_length", item_id,
                    f"about {alone} tokens with the target page alone, over {cfg.buckets[-1]}" if may_remove
                    else f"about {overhead + sum(t.tokens for t in trees)} tokens, over {cfg.buckets[-1]} "
                    "(overlength=drop)")
            return []
        for sample in out:
            st.samples += 1
            st.per_bucket[sample["bucket"]] += 1
            if sample["pages_removed"]:
                st.truncated += 1
                st.pages_removed += sample["pages_removed"]
        return out

    def _sample(self, item_id: str, question: str, answers: Sequence[str], trees: list[PageTree], keep: list[int],
                target_page: int, target_block: int, holding: list[tuple[int, int]], score: float) -> dict[str, Any]:
        """The chat sample over the pages ``keep`` (in order); paths named as the ranker names them."""
        kept = [trees[k].tree for k in keep]
        paths = block_paths(kept)
        offsets, total = {}, 0
        for k in keep:
            offsets[k] = total
            total += len(trees[k].tree.blocks)
        target = path_string(paths[offsets[target_page] + target_block])
        listed = [path_string(paths[offsets[k] + b]) for k, b in holding if k in offsets][:_MAX_LISTED_PATHS]
        block = trees[target_page].tree.blocks[target_block]
        answer = target + block_content(block, self.settings.answer, self.settings.max_words)
        messages = build_pruner_messages(question, [trees[k].html for k in keep])
        messages.append({"role": "assistant", "content": answer})
        tokens = (self.counter.count(messages[0]["content"]) + self.counter.count(answer)
                  + self.settings.template_tokens)
        return {"id": item_id, "messages": messages, "target_path": target, "target_paths": listed,
                "score": score, "bucket": None, "tokens": tokens, "pages": len(keep), "pages_removed": 0,
                "question": question, "answers": list(answers), "source": self.source}


def build_samples(items: Iterable[Any], counter: TokenCounter, settings: BuildSettings | None = None, *,
                  source: str = "", progress: bool = False) -> tuple[list[dict[str, Any]], BuildStats]:
    """Build samples from :class:`htmlrag.data.Example`-like items (``id``, ``question``, ``answers``,
    ``pages`` as HTML or file paths, optional ``metadata["gold_page"]``).

    Returns:
        The samples (in item order) and the build's statistics.
    """
    from tqdm import tqdm

    builder = SampleBuilder(counter, settings, source)
    items = list(items)
    out: list[dict[str, Any]] = []
    for ex in tqdm(items, desc="building samples", disable=not progress, unit="item"):
        keys = [str(p) if isinstance(p, Path) else None for p in ex.pages]
        loaders = [(lambda p=p: read_page(p)) if isinstance(p, Path) else (lambda p=p: p) for p in ex.pages]
        gold = (ex.metadata or {}).get("gold_page")
        gold_pages = None if gold is None else ([gold] if isinstance(gold, int) else list(gold))
        out.extend(builder.build(ex.id, ex.question, ex.answers, [], gold_pages=gold_pages, page_keys=keys,
                                 loaders=loaders))
    return out, builder.stats
