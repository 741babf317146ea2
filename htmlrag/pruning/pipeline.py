"""The HtmlRAG context pipeline: clean -> block tree -> rank -> prune (x2) -> format.

Step 1 (coarse): block tree at ``max_words1`` (256) words, ranked by ``ranker1`` (the embedding ranker in
the paper), pruned to ``budget1`` tokens (the paper's code uses 6K or 8K). Step 2 (fine): the pruned pages
are re-split at ``max_words2`` (128) words, ranked by ``ranker2`` (the generative pruner in the paper; any
ranker works), pruned to ``budget2`` (the reader's window, 4K in the paper), then converted to ``fmt``.
Either ranker may be ``None`` to skip its step (the paper's ablations). Every number is an argument.
"""

from __future__ import annotations

import hashlib
import numbers
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag.core.clock import Clock, add_usage, usage_delta, usage_of
from htmlrag.core.errors import BudgetError, InputError
from htmlrag.html.blocktree import BlockTree, build_block_tree
from htmlrag.html.clean import clean_page_counted
from htmlrag.html.formats import FORMATS, convert
from htmlrag.pruning.prune import PruneResult, WalkMemo, prune_to_budget
from htmlrag.pruning.tokens import TokenCounter
from htmlrag.rankers.base import Ranker


@dataclass
class PipelineResult:
    """Output of :meth:`HtmlRagPipeline.run`.

    Attributes:
        context: final context in the pipeline's format, at most ``budget2`` tokens.
        tokens: tokens of ``context``.
        seconds: wall time of the whole run.
        stages: HTML after each stage: ``cleaned``, ``step1`` (if ranker1), ``step2`` (if ranker2), pages
            joined with newlines.
        stage_tokens: tokens of each stage's HTML.
        stage_seconds: wall time per stage (``clean``, ``step1``, ``step2``, ``format``).
        errors: pages that could not be cleaned (index -> message); they are left out, the rest go on.
        ranker_stats: the step-2 ranker's counters of this question (the generative ranker's ``last_stats``).
        stage_gpu_seconds: GPU seconds per stage where CUDA was used (:class:`htmlrag.core.clock.Clock`).
        model_tokens: ``{model: {"input", "output"}}`` tokens the stages' models read and wrote (the cost ledger).
        stage_formats: the format of each entry of ``stages`` that is not HTML (``text``), for the stage-loss
            waterfall (:mod:`htmlrag.evaluation.waterfall`).
    """

    context: str
    tokens: int
    seconds: float
    stages: dict[str, str] = field(default_factory=dict)
    stage_tokens: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    ranker_stats: dict = field(default_factory=dict)
    stage_gpu_seconds: dict[str, float] = field(default_factory=dict)
    model_tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    stage_formats: dict[str, str] = field(default_factory=dict)


class HtmlRagPipeline:
    """Two-step block-tree pruning with plain arguments (usable from a notebook).

    Args:
        ranker1: ranker of step 1 (``None`` skips step 1).
        ranker2: ranker of step 2 (``None`` skips step 2).
        tokenizer: token counter for the budgets (the reader's tokenizer).
        budget1: step-1 budget in tokens.
        budget2: final budget in tokens.
        max_words1: block size of step 1, in words.
        max_words2: block size of step 2, in words.
        fmt: ``html``, ``text`` or ``markdown`` (converted after pruning).
        clean: clean pages first (turn off for pages that are already clean).
        fill: see :func:`htmlrag.pruning.prune.prune_to_budget`.
        pack_siblings: pack runs of small sibling blocks (see :func:`htmlrag.build_block_tree`) for rankers
            that do not need one element per path (BM25, embedding; never for the generative pruner).
        split_to_fill: our extension: up to this many blocks that do not fit the room left are split so that
            their best parts fill it instead of lower-ranked blocks (see :func:`htmlrag.pruning.prune.prune_to_budget`;
            0: the paper's rule). Not for rankers that read paths (the generative pruner: scoring the parts
            would cost a forward pass each).
        cache_pages: keep the cleaned HTML and block trees of this many recent pages, keyed by content
            (SHA-1 of the page) and tree parameters, so a page retrieved for several questions is cleaned and
            split once (0: no cache). Trees are never modified by pruning, so sharing them is safe.
        count_stages: fill :attr:`PipelineResult.stage_tokens` (tokenizes every stage's whole HTML, the
            cleaned pages included: a third of a BM25 run's time; the CLI turns it off).
        keep_stages: keep the cleaned pages' HTML in ``stages["cleaned"]`` (always with ``count_stages``);
            off, the cleaned pages are not serialised when nothing else needs them (the first ranker reads
            the cleaned trees): ~3% of a BM25 run; the CLI turns it off.
        keep_hidden: cleaning keeps text hidden by markup (:func:`htmlrag.html.clean.is_hidden`; dropped by default).
        split_oversize: our extension: a block larger than the whole budget, met while half the budget is free,
            is split and its parts ranked (:func:`htmlrag.pruning.prune.prune_to_budget`, ``split_min_room``); ``False``
            never splits (the authors' code: the context is truncated when nothing fits).
    """

    def __init__(
        self,
        ranker1: Ranker | None,
        ranker2: Ranker | None,
        tokenizer: TokenCounter,
        budget1: int = 6144,
        budget2: int = 4096,
        max_words1: int = 256,
        max_words2: int = 128,
        fmt: str = "html",
        clean: bool = True,
        fill: str = "skip",
        pack_siblings: bool = True,
        cache_pages: int = 0,
        count_stages: bool = True,
        split_to_fill: int = 4,
        keep_stages: bool = True,
        keep_hidden: bool = False,
        split_oversize: bool = True,
    ):
        if fmt not in FORMATS:
            raise InputError(f"unknown context format {fmt!r}; choose one of {', '.join(FORMATS)}")
        self.ranker1, self.ranker2, self.tokenizer = ranker1, ranker2, tokenizer
        self.budget1, self.budget2 = budget1, budget2
        self.max_words1, self.max_words2 = max_words1, max_words2
        self.fmt, self.clean, self.fill, self.pack_siblings = fmt, clean, fill, pack_siblings
        self.cache_pages = cache_pages
        self.count_stages = count_stages
        self.keep_stages = keep_stages or count_stages
        self.keep_hidden = keep_hidden
        if split_to_fill < 0:
            raise InputError(f"split_to_fill must be >= 0, got {split_to_fill}")
        self.split_to_fill = split_to_fill
        self.split_oversize = split_oversize
        self._cache: OrderedDict[tuple, object] = OrderedDict()

    def _cached(self, key, make):
        """``make()``, remembered under ``key()`` (a callable: hashing a page costs time when nothing is kept)."""
        if not self.cache_pages:
            return make()
        key = key()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        value = make()
        self._cache[key] = value
        while len(self._cache) > 2 * self.cache_pages:  # cleaned pages + trees
            self._cache.popitem(last=False)
        return value

    def _rank(self, question: str, pages: Sequence[str], ranker: Ranker, max_words: int,
              roots: Sequence[object] | None = None) -> tuple[list[BlockTree], list]:
        """The block trees of ``pages`` at ``max_words`` and the ranker's scores: the ranking every budget of
        :meth:`run_budgets` is filled from."""
        needs_paths = bool(getattr(ranker, "needs_paths", False))
        pack = self.pack_siblings and not needs_paths

        def tree(i: int, p: str) -> BlockTree:
            def key() -> tuple:
                return ("tree", hashlib.sha1(p.encode()).digest(), max_words, pack, i)

            # The cleaned tree when we have it (no second parse; trees never modify their root). Not for
            # rankers that read paths: they get the parse of the HTML, as before issue 36, when the cleaned
            # tree could nest elements the parser would not (a <p> in a <p>: other sibling numbers). Cleaned
            # HTML now parses back to the cleaned tree (clean_page), so this exception could go.
            use_root = roots is not None and roots[i] is not None and not needs_paths
            src = roots[i][0] if use_root else p
            counts = roots[i][1] if use_root else None
            def make() -> BlockTree:
                t = build_block_tree(src, max_words, page=i, pack_siblings=pack, word_counts=counts)
                if counts is not None:
                    counts.release()  # the proxies of every element of a cached page would stay alive
                return t

            return self._cached(key, make)

        trees = [tree(i, p) for i, p in enumerate(pages)]
        return trees, ranker.score(question, trees)

    def _fill(self, question: str, trees: Sequence[BlockTree], scores: Sequence, ranker: Ranker, budget: int,
              fmt: str, memo: WalkMemo | None = None) -> PruneResult:
        """The greedy budget walk over one ranking (:func:`~htmlrag.pruning.prune.prune_to_budget`)."""
        needs_paths = bool(getattr(ranker, "needs_paths", False))
        return prune_to_budget(trees, scores, budget, self.tokenizer, fmt=fmt, ranker=ranker, question=question,
                               memo=memo, **self.walk_options(needs_paths))

    def _step(self, question: str, pages: Sequence[str], ranker: Ranker, max_words: int, budget: int,
              fmt: str, roots: Sequence[object] | None = None) -> tuple[PruneResult, list[BlockTree]]:
        """Rank, then fill one budget."""
        trees, scores = self._rank(question, pages, ranker, max_words, roots)
        return self._fill(question, trees, scores, ranker, budget, fmt), trees

    def walk_options(self, needs_paths: bool = False) -> dict[str, Any]:
        """The options of the budget walk (:func:`~htmlrag.pruning.prune.prune_to_budget`) this pipeline uses;
        a face that prunes one step itself (the web app's playground) passes them, so it prunes exactly as
        ``htmlrag prune`` does. ``needs_paths``: the ranker reads block paths (no splitting to fill)."""
        return {"fill": self.fill, "split_min_room": 0.5 if self.split_oversize else 2.0,
                "split_to_fill": 0 if needs_paths else self.split_to_fill}

    def run(self, question: str, pages: Sequence[str | bytes]) -> PipelineResult:
        """Build the context for ``question`` from its retrieved ``pages`` (HTML ``str`` or ``bytes``)."""
        return self.run_budgets(question, pages, [self.budget2])[self.budget2]

    def run_budgets(self, question: str, pages: Sequence[str | bytes], budgets: Sequence[int]
                    ) -> dict[int, PipelineResult]:
        """The context at every final budget of ``budgets`` from one ranking (a budget frontier).

        Pages are cleaned once, step 1 (with a step-2 ranker) runs once at ``budget1``, the last step's blocks
        are ranked once (the generative ranker's scores too), and the greedy walk fills each budget from that
        ranking. Each result equals :meth:`run` of a pipeline whose ``budget2`` is that budget; its
        ``stage_seconds`` count the shared stages in full plus its own walk (the cost of that budget alone).

        Raises:
            BudgetError: a budget is not a positive integer.
            InputError: with two steps, a budget above ``budget1`` (step 1 would not leave it enough).
        """
        wanted = sorted({self._budget(b) for b in budgets})
        if self.ranker1 is not None and self.ranker2 is not None and wanted[-1] > self.budget1:
            raise InputError(f"budget {wanted[-1]} exceeds the step-1 budget budget1={self.budget1}: raise budget1 "
                             "to at least the largest budget")
        before = usage_of((self.ranker1, self.ranker2))
        shared = PipelineResult("", 0, 0.0)
        t0 = time.perf_counter()
        current, roots = self._clean_pages(pages, shared)
        last = self._last_step(question, current, roots, shared)
        if last is None:
            results = {b: self._truncated(shared, b) for b in wanted}
        else:
            results = self._fill_budgets(question, shared, last, wanted)
        shared_tokens = usage_delta(before, usage_of((self.ranker1, self.ranker2)))
        counted = {k: self.tokenizer.count(v) for k, v in shared.stages.items()} if self.count_stages else {}
        for res in results.values():
            if self.count_stages:
                res.stage_tokens = {k: counted[k] if res.stages[k] is shared.stages.get(k)
                                    else self.tokenizer.count(v) for k, v in res.stages.items()}
            for model, rec in shared_tokens.items():
                add_usage(res.model_tokens, model, rec["input"], rec["output"])
            res.seconds = sum(res.stage_seconds.values()) or time.perf_counter() - t0
        return results

    def _budget(self, b: Any) -> int:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b <= 0:
            raise BudgetError(f"budget must be a positive number of tokens, got {b!r}")
        return int(b)

    def _clean_pages(self, pages: Sequence[str | bytes], res: PipelineResult
                     ) -> tuple[list[str], list[object] | None]:
        """Cleaned pages (and their trees when cleaning here), recorded in ``res`` (stage, errors, seconds)."""
        with Clock() as clock:
            cleaned: list[str] = []
            roots: list[object] | None = [] if self.clean else None
            # The cleaned HTML is needed for the stages, as cache keys, and by rankers that parse it (paths).
            r1 = self.ranker1 if self.ranker1 is not None else self.ranker2
            need_html = (self.keep_stages or self.cache_pages > 0 or r1 is None
                         or bool(getattr(r1, "needs_paths", False)))
            for i, page in enumerate(pages):
                try:
                    if not self.clean:
                        cleaned.append(page.decode("utf-8", "replace") if isinstance(page, bytes) else page)
                        continue
                    html, root, counts = self._cached(
                        lambda page=page: ("clean", self.keep_hidden, hashlib.sha1(
                            page if isinstance(page, bytes) else page.encode("utf-8", "surrogatepass")).digest()),
                        lambda page=page, i=i: clean_page_counted(page, name=f"page {i}", serialize_html=need_html,
                                                                  keep_hidden=self.keep_hidden))
                    cleaned.append(html if html is not None else "")  # "" = not serialised (never read then)
                    roots.append((root, counts) if root is not None else None)
                except InputError as exc:
                    res.errors[i] = str(exc)
                    cleaned.append("")
                    if roots is not None:
                        roots.append(None)
            if need_html:
                res.stages["cleaned"] = "\n".join(p for p in cleaned if p)
        _record(res, "clean", clock)
        return cleaned, roots

    def _last_step(self, question: str, current: list[str], roots: list[object] | None, shared: PipelineResult
                   ) -> tuple[str, Ranker, list[BlockTree], list, float, float | None] | None:
        """Step 1 when a step 2 follows (recorded in ``shared``), then the ranking of the last step:
        ``(stage, ranker, trees, scores, seconds, gpu seconds)``; ``None`` without rankers."""
        if self.ranker1 is not None and self.ranker2 is not None:
            with Clock() as clock:
                pr, _ = self._step(question, current, self.ranker1, self.max_words1, self.budget1, "html", roots)
                current = pr.pages
                shared.stages["step1"] = "\n".join(p for p in current if p)
            _record(shared, "step1", clock)
            roots = None
        if self.ranker1 is None and self.ranker2 is None:
            return None
        stage, ranker, words = (("step2", self.ranker2, self.max_words2) if self.ranker2 is not None
                                else ("step1", self.ranker1, self.max_words1))
        with Clock() as clock:
            trees, scores = self._rank(question, current, ranker, words, roots)
        stats = getattr(ranker, "last_stats", None) if ranker is self.ranker2 else None
        if stats is not None:
            shared.ranker_stats = stats if isinstance(stats, dict) else getattr(stats, "__dict__", {})
        return stage, ranker, trees, scores, clock.seconds, clock.gpu_seconds

    def _fill_budgets(self, question: str, shared: PipelineResult, last: tuple, budgets: Sequence[int]
                      ) -> dict[int, PipelineResult]:
        """One result per budget: the shared stages, and the walk over the last step's ranking (largest budget
        first: the smaller ones reuse the token counts it made, :class:`~htmlrag.pruning.prune.WalkMemo`)."""
        stage, ranker, trees, scores, rank_s, rank_gpu = last
        memo = WalkMemo(trees) if len(budgets) > 1 else None
        out = {}
        for b in sorted(budgets, reverse=True):
            res = _copy_shared(shared)
            before = usage_of((ranker,))
            with Clock() as clock:
                pr = self._fill(question, trees, scores, ranker, b, self.fmt, memo)
            add_tokens = usage_delta(before, usage_of((ranker,)))  # split parts ranked by a model
            for model, rec in add_tokens.items():
                add_usage(res.model_tokens, model, rec["input"], rec["output"])
            res.stages[stage] = "\n".join(p for p in pr.pages if p)
            res.context, res.tokens = pr.context, pr.tokens
            res.stage_seconds[stage] = rank_s + clock.seconds
            if rank_gpu is not None or clock.gpu_seconds is not None:
                res.stage_gpu_seconds[stage] = (rank_gpu or 0.0) + (clock.gpu_seconds or 0.0)
            out[b] = res
        return {b: out[b] for b in budgets}

    def _truncated(self, shared: PipelineResult, budget: int) -> PipelineResult:
        """No pruning: the cleaned pages cut to ``budget``."""
        res = _copy_shared(shared)
        with Clock() as clock:
            text = convert(res.stages["cleaned"], self.fmt)
            res.context = self.tokenizer.truncate(text, budget)
            res.tokens = self.tokenizer.count(res.context)
        _record(res, "format", clock)
        return res


def _record(res: PipelineResult, stage: str, clock: Clock) -> None:
    res.stage_seconds[stage] = clock.seconds
    if clock.gpu_seconds is not None:
        res.stage_gpu_seconds[stage] = clock.gpu_seconds


def _copy_shared(shared: PipelineResult) -> PipelineResult:
    """A result holding the shared stages (the same strings: they are counted once)."""
    return PipelineResult("", 0, 0.0, stages=dict(shared.stages), stage_seconds=dict(shared.stage_seconds),
                          errors=dict(shared.errors), ranker_stats=dict(shared.ranker_stats),
                          stage_gpu_seconds=dict(shared.stage_gpu_seconds))
