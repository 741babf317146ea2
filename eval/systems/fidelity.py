"""The ``fidelity`` config group: the paper's behaviour (``fidelity=paper``) or ours (``fidelity=ours``).

Every place where this project does something the HtmlRAG paper (or the authors' released code, where the
paper is silent) does not, is one *knob* of :class:`FidelityConfig`. The fields of the other groups that a
knob governs default to it through an interpolation (``cleaner.keep_hidden: ${fidelity.keep_hidden}``), so
``fidelity=paper`` switches every extension off at once and ``fidelity=ours`` switches on the ones we
measured to help (docs/fidelity.md has the list and the measurements). Two knobs are *applied* to the rankers
and the reader instead (:func:`apply`), because their options carry our speed settings as their own values:
the embedding models' input length and dtype, and the reader's answer length.

A field set explicitly against its knob (``fidelity=paper cleaner.keep_hidden=false``) is allowed, and it is
never silent: :func:`describe` lists it as a deviation, the run records it (``config.yaml``, ``env.json``,
``metrics.json``) and every table caption shows it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf, open_dict

from htmlrag.evaluation.summary import fidelity_label
from htmlrag_bench.eval.locations import conf_dir

log = logging.getLogger(__name__)

FILLS = ("stop", "skip")


@dataclass
class FidelityConfig:
    """What a run does where the paper and this project differ. Defaults are the paper's.

    Attributes:
        name: ``paper`` or ``ours`` (the preset the values come from).
        keep_hidden: cleaning keeps text hidden by markup (``display:none``, ``hidden``); the paper's cleaning
            does (it never looks at styles); ours drops it (no reader sees it).
        pack_siblings: pack runs of small sibling elements into one block (ours); the paper's Algorithm 1
            makes every child its own block.
        split_to_fill: blocks that miss the room left may be split so their best parts fill it (ours: 4;
            paper: 0).
        split_oversize: a block larger than the whole budget, met while half the budget is free, is split
            into parts that are ranked (ours); the authors' code never splits (it truncates the context).
        fill: ``stop`` (the authors' code: keep the top-ranked blocks up to the first that does not fit) or
            ``skip`` (ours: smaller lower-ranked blocks may still fill the room).
        ranking_context: rankers read each block with its nearest heading and, for table rows, the table's
            first row (ours); the authors rank the block's own text (``tag.get_text()``).
        page_prior: BM25 / embedding rankers add this x the page's best block score to its blocks (ours).
        short_answer_instruction: append "Answer with a short phrase only ..." to the reader prompt of
            short-answer datasets (ours); the authors' prompt has no such sentence.
        max_new_tokens: the reader's answer length (the authors' code: 1024); ``None`` keeps the reader
            option's own.
        embedding_max_seq_length: input length (tokens) of each embedding model by name (the paper: the
            model's own, BGE-large-en 512); models not listed, or an empty mapping, keep the ranker option's.
        embedding_dtype: dtype of embedding models (the paper: float32); ``None`` keeps the ranker option's.
        embedding_candidates: embedding rankers embed only the blocks BM25 ranks highest, this many (ours;
            :class:`~htmlrag.rankers.embedding.EmbeddingRanker` ``candidates``); ``None``: every block (the paper).
    """

    name: str = MISSING
    keep_hidden: bool = True
    pack_siblings: bool = False
    split_to_fill: int = 0
    split_oversize: bool = False
    fill: str = "stop"
    ranking_context: bool = False
    page_prior: float = 0.0
    short_answer_instruction: bool = False
    max_new_tokens: int | None = 1024
    embedding_max_seq_length: dict[str, int] = field(default_factory=dict)
    embedding_dtype: str | None = "float32"
    embedding_candidates: int | None = None


#: Knobs in the order docs and captions list them.
KNOBS = ("keep_hidden", "pack_siblings", "split_to_fill", "split_oversize", "fill", "ranking_context",
         "page_prior", "short_answer_instruction", "max_new_tokens", "embedding_max_seq_length", "embedding_dtype",
         "embedding_candidates")


def preset(name: str) -> dict[str, Any]:
    """The knob values of the preset ``conf/fidelity/<name>.yaml`` (schema defaults under its own values)."""
    path = conf_dir() / "fidelity" / f"{name}.yaml"
    if not path.is_file():
        return {}
    own = OmegaConf.load(path)
    own = {k: v for k, v in OmegaConf.to_container(own).items() if k != "defaults"}
    merged = OmegaConf.merge(OmegaConf.structured(FidelityConfig), own)
    return OmegaConf.to_container(merged, resolve=True)


# ---------------------------------------------------------------- where the knobs act
def _rankers(cfg: DictConfig) -> list[tuple[str, Any]]:
    """``(dotted path, node)`` of every ranker in the config (system under test, step 2, baselines)."""
    out = [("ranker", cfg.get("ranker")), ("pruner.ranker2", cfg.pruner.get("ranker2"))]
    for name, b in (cfg.get("baselines") or {}).items():
        if b is None:
            continue
        out += [(f"baselines.{name}.ranker1", b.get("ranker1")), (f"baselines.{name}.ranker2", b.get("ranker2"))]
    return [(p, n) for p, n in out if n is not None and OmegaConf.is_config(n)]


def _target(node: Any) -> str:
    return str(node.get("_target_", "")) if OmegaConf.is_config(node) else ""


def governed(cfg: DictConfig) -> list[tuple[str, str, Any]]:
    """``(dotted path, knob, value)`` of every config field a knob governs (resolved values)."""
    out: list[tuple[str, str, Any]] = []
    if cfg.get("cleaner") is not None and cfg.cleaner.get("enabled", True):
        out.append(("cleaner.keep_hidden", "keep_hidden", cfg.cleaner.keep_hidden))
    systems = [("pruner", cfg.pruner)]
    systems += [(f"baselines.{n}", b) for n, b in (cfg.get("baselines") or {}).items() if b is not None]
    for path, node in systems:
        refiner = node.get("refiner")
        graph = node.get("graph") if path != "pruner" else None
        if graph is not None:
            continue
        if refiner is None:
            for knob in ("pack_siblings", "split_to_fill", "split_oversize"):
                if knob in node:
                    out.append((f"{path}.{knob}", knob, node[knob]))
        elif _target(refiner).endswith("CostedPipeline"):
            for knob in ("pack_siblings", "split_to_fill"):
                out.append((f"{path}.refiner.{knob}", knob, refiner[knob]))
    out.append(("pruner.fill", "fill", cfg.pruner.fill))
    for path, node in _rankers(cfg):
        target = _target(node)
        if target.endswith(("BM25Ranker", "EmbeddingRanker")):
            out.append((f"{path}.contextual", "ranking_context", node.contextual))
            out.append((f"{path}.page_prior", "page_prior", node.page_prior))
        if target.endswith("EmbeddingRanker"):
            out.append((f"{path}.candidates", "embedding_candidates", node.get("candidates")))
    return out


def apply(cfg: DictConfig) -> list[str]:
    """Set the applied knobs (embedding input length and dtype, reader answer length) on every node they
    concern; returns what was changed (``path: old -> new``), which is logged."""
    fid = cfg.fidelity
    changed: list[str] = []
    lengths = dict(fid.embedding_max_seq_length or {})
    with open_dict(cfg):
        for path, node in _rankers(cfg):
            if not _target(node).endswith("EmbeddingRanker"):
                continue
            model = str(node.model)
            if model in lengths and node.get("max_seq_length") != lengths[model]:
                changed.append(f"{path}.max_seq_length: {node.get('max_seq_length')} -> {lengths[model]}")
                node.max_seq_length = int(lengths[model])
            if fid.embedding_dtype is not None and node.get("dtype") != fid.embedding_dtype:
                changed.append(f"{path}.dtype: {node.get('dtype')} -> {fid.embedding_dtype}")
                node.dtype = str(fid.embedding_dtype)
        gen = cfg.reader.get("generation") if cfg.get("reader") is not None else None
        if fid.max_new_tokens is not None and gen is not None and gen.max_new_tokens != fid.max_new_tokens:
            changed.append(f"reader.generation.max_new_tokens: {gen.max_new_tokens} -> {fid.max_new_tokens}")
            gen.max_new_tokens = int(fid.max_new_tokens)
    for c in changed:
        log.info("fidelity=%s sets %s", fid.name, c)
    return changed


def deviations(cfg: DictConfig) -> list[str]:
    """Where the run departs from its fidelity preset: knobs changed from the preset
    (``fidelity.split_to_fill=4 (paper: 0)``) and governed fields set against their knob
    (``cleaner.keep_hidden=false (fidelity: true)``)."""
    fid = OmegaConf.to_container(cfg.fidelity, resolve=True)
    want = preset(str(fid.get("name")))
    out = [f"fidelity.{k}={_fmt(fid.get(k))} ({fid.get('name')}: {_fmt(want[k])})"
           for k in KNOBS if want and k in want and fid.get(k) != want[k]]
    for path, knob, value in governed(cfg):
        if value != fid.get(knob):
            out.append(f"{path}={_fmt(value)} (fidelity: {_fmt(fid.get(knob))})")
    return out


def describe(cfg: DictConfig) -> dict[str, Any]:
    """What a run records about its fidelity: ``{"name", "deviations", "knobs"}``."""
    return {"name": str(cfg.fidelity.name), "deviations": deviations(cfg),
            "knobs": {k: OmegaConf.to_container(cfg.fidelity, resolve=True).get(k) for k in KNOBS}}


def label(record: Any) -> str:
    """A one-line label of a recorded fidelity (see :func:`htmlrag.evaluation.summary.fidelity_label`)."""
    return fidelity_label(record)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def short_answer(cfg: DictConfig) -> bool:
    """Whether reader prompts get the short-answer instruction: a short-answer dataset and the knob on."""
    return bool(cfg.dataset.short_answer) and bool(cfg.fidelity.short_answer_instruction)
