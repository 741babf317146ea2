"""Training data for the pruner: read/write sample files, load the released set, tokenize chat samples.

Format (the released ``zstanjj/HtmlRAG-train`` rows and ours): one JSON object per line with ``messages``, a
list of ``{"role", "content"}`` ending with the assistant's answer (the block path, then the block's HTML);
our rows add ``target_path`` and analysis fields (see :mod:`htmlrag_bench.training.samples`). Released files are named
``<dataset>-<bucket>.jsonl`` (``asqa-2k.jsonl`` ... ``musique-32k.jsonl``) and were mixed with one sampling
rate per file; :func:`load_records` takes the same ``{pattern: rate}`` mix.

Tokenization (:func:`encode_chat`) reproduces what :class:`htmlrag.rankers.generative.GenerativeRanker` feeds
the model, so the trained pruner is scored on the token sequence it learned: the prompt is the chat template
over the messages before the answer with a generation prompt (``{bos}{message}\\n`` without a template, as
:func:`~htmlrag.rankers.generative.format_pruner_prompt`), tokenized with ``add_special_tokens=False``; the
path is tokenized on its own, then the rest of the answer, then the template's end-of-turn text (EOS without a
template). Labels are ``-100`` on the prompt (loss on the assistant's tokens only).

No Hydra here; ``datasets`` and ``transformers`` are imported lazily.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import json
import logging
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag.core.errors import HtmlRagError, InputError
from htmlrag.core.io import atomic_file
from htmlrag.core.options import check_output_file
from htmlrag.data.schema import open_text, read_records

log = logging.getLogger(__name__)

IGNORE_INDEX = -100
#: The released training set on the hub.
HUB_DATASET = "zstanjj/HtmlRAG-train"
_LEADING_TAGS = re.compile(r"^(?:<[^<>/\s]+>)+")
_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".jsonl.bz2")


class TrainDataError(HtmlRagError):
    """The training data is missing, empty or malformed (raised before any model is loaded)."""


# ------------------------------------------------------------------------------------------------ files
def write_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write rows atomically (a temporary file of this call's own, then a rename); returns the number written.

    Raises:
        InputError: ``path`` cannot be written (a folder, device or FIFO there, a file where its folder goes, a
            read-only folder, a full disk): names the file and the reason.
    """
    check_output_file(path, "output")
    n = 0
    try:
        with atomic_file(path) as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    return n


def write_buckets(samples: Sequence[dict[str, Any]], out_dir: str | Path, name: str) -> dict[str, Path]:
    """Write samples into ``<out_dir>/<name>-<bucket>.jsonl`` (the released layout); returns bucket -> file."""
    by_bucket: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        by_bucket.setdefault(s.get("bucket") or "all", []).append(s)
    files = {}
    for bucket, rows in by_bucket.items():
        files[bucket] = Path(out_dir) / f"{name}-{bucket}.jsonl"
        write_jsonl(rows, files[bucket])
    return files


def is_sample_file(path: Path) -> bool:
    """Whether a file found in a data folder holds samples: ``.jsonl`` files (optionally ``.gz``/``.bz2``)
    do; a ``.json`` file does only when it holds a JSON list (so the builder's ``stats.json``, a dict, and
    other reports next to the samples are not read as samples)."""
    name = path.name
    if not name.endswith(_SUFFIXES):
        return False
    if ".jsonl" in name:
        return True
    try:
        for chunk in open_text(path):
            head = chunk.lstrip()
            if head:
                return head.startswith("[")
    except InputError:
        return False
    return False


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files named by ``paths``: files as they are, globs expanded, and a folder's sample files
    (:func:`is_sample_file`: ``*.jsonl`` files and ``*.json`` files holding a list; others are skipped and
    logged).

    Raises:
        TrainDataError: a path matches nothing.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file())
            found = [f for f in files if is_sample_file(f)]
            skipped = [f.name for f in files if f not in found]
            if skipped:
                log.info("training data %s: not sample files, skipped: %s", p, ", ".join(skipped))
        elif any(c in str(raw) for c in "*?["):
            found = sorted(Path(f) for f in glob.glob(str(p)) if Path(f).is_file())
        else:
            found = [p] if p.is_file() else []
        if not found:
            raise TrainDataError(f"training data: {raw!s} matches no file of samples (expected .jsonl files, .json "
                                 "files holding a list, or a folder of them)")
        out.extend(found)
    return out


def _stem(name: str) -> str:
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _rate(name: str, rates: dict[str, float]) -> float:
    for pattern, rate in rates.items():
        if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name, pattern + "*"):
            return float(rate)
    return 1.0


def mix(rows: list[dict[str, Any]], rate: float, rng: random.Random) -> list[dict[str, Any]]:
    """Resample a file's rows by ``rate``: whole copies for the integer part, a random subset for the rest."""
    if rate < 0:
        raise InputError(f"sampling rate must be >= 0, got {rate}")
    whole, frac = int(rate), rate - int(rate)
    out = [r for _ in range(whole) for r in rows]
    if frac > 0 and rows:
        out.extend(rng.sample(rows, round(len(rows) * frac)))
    return out


def load_records(paths: Sequence[str | Path] = (), *, hub: str | None = None, revision: str | None = None,
                 data_files: Sequence[str] | None = None, sample_rates: dict[str, float] | None = None,
                 max_samples: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Load chat samples from local files and/or the hub, mixed by per-file rates.

    Args:
        paths: local ``.jsonl``/``.json`` files, folders or globs.
        hub: a hub dataset (``zstanjj/HtmlRAG-train``), read through ``datasets.load_dataset``.
        revision: the hub revision (branch, tag, commit).
        data_files: hub file patterns, each read (and rated) as one file (None: the whole dataset).
        sample_rates: ``{file-name pattern: rate}`` (fnmatch on the file name without suffix, e.g.
            ``"asqa-32k": 0.1``); unmatched files keep rate 1.
        max_samples: keep at most this many rows (after mixing and shuffling; None: all).
        seed: seed of the sampling and the shuffle.

    Returns:
        Rows with ``messages`` (shuffled when mixed with rates or capped).

    Raises:
        TrainDataError: a file is missing, a row has no usable ``messages``, or the hub is unreachable.
    """
    rates = dict(sample_rates or {})
    rng = random.Random(seed)
    sources: list[tuple[str, list[dict[str, Any]]]] = []
    for f in expand_paths(paths):
        try:
            sources.append((_stem(f.name), read_records(f)))
        except InputError as exc:
            raise TrainDataError(str(exc)) from exc
    if hub:
        sources.extend(_hub_sources(hub, revision, data_files))
    rows: list[dict[str, Any]] = []
    for name, recs in sources:
        for i, r in enumerate(recs):
            check_row(r, f"{name} row {i}")
        picked = mix(recs, _rate(name, rates), rng) if rates else recs
        log.info("training data %s: %d rows -> %d", name, len(recs), len(picked))
        rows.extend(picked)
    if rates or max_samples:
        rng.shuffle(rows)
    if max_samples is not None and max_samples >= 0:
        rows = rows[:max_samples]
    return rows


def _hub_sources(hub: str, revision: str | None, data_files: Sequence[str] | None) -> list[tuple[str, list[dict]]]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is in the [eval] extra
        raise TrainDataError("reading the hub needs `datasets` (pip install 'htmlrag-bench[eval]')") from exc
    out = []
    for pattern in list(data_files or [None]):  # type: ignore[list-item]
        try:
            ds = datasets.load_dataset(hub, revision=revision, data_files=pattern, split="train")
        except Exception as exc:  # datasets raises many types (connection, not found, offline)
            raise TrainDataError(
                f"cannot read {hub!r} (revision {revision}, files {pattern}) from the hub: {exc}. Offline, download "
                "the files elsewhere and pass them as data.paths=[...]") from exc
        out.append((_stem(Path(pattern).name) if pattern else hub, [dict(r) for r in ds]))
    return out


def check_row(row: dict[str, Any], where: str) -> None:
    """Raise TrainDataError unless ``row["messages"]`` is a list of role/content dicts ending with the
    assistant."""
    msgs = row.get("messages")
    if not isinstance(msgs, list) or len(msgs) < 2:
        raise TrainDataError(f"{where}: expected 'messages' with a user turn and an assistant answer")
    for m in msgs:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in (
                "system", "user", "assistant"):
            raise TrainDataError(f"{where}: every message needs a role (system/user/assistant) and text content")
    if msgs[-1]["role"] != "assistant":
        raise TrainDataError(f"{where}: the last message must be the assistant's answer")


# ------------------------------------------------------------------------------------------------ tokens
def render_prompt(tokenizer: Any, messages: Sequence[dict[str, str]]) -> str:
    """The prompt text up to the answer, exactly as :func:`htmlrag.rankers.generative.format_pruner_prompt`
    renders it for a one-user-turn pruner prompt (checked by the tests)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise TrainDataError("a tokenizer without a chat template can only take one user message per sample")
    return f"{tokenizer.bos_token or ''}{messages[0]['content']}\n"


@functools.lru_cache(maxsize=8)
def _end_text(tokenizer: Any) -> str:
    if not getattr(tokenizer, "chat_template", None):
        return tokenizer.eos_token or ""
    marker = "\x00ANSWER\x00"
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": marker}]
    text = tokenizer.apply_chat_template(msgs, tokenize=False)
    end = text.split(marker, 1)[1] if marker in text else ""
    return end if end.strip() else (tokenizer.eos_token or "")


def end_of_turn(tokenizer: Any) -> str:
    """The text the chat template puts after an assistant answer (``<|end|>\\n`` for Phi-3, ``<|eot_id|>`` for
    Llama 3); the EOS token when the template adds nothing or there is no template."""
    try:
        return _end_text(tokenizer)
    except TypeError:  # unhashable tokenizer object
        return _end_text.__wrapped__(tokenizer)


def split_answer(content: str, target_path: str | None = None) -> tuple[str, str]:
    """Split an answer into its block path and the rest: at ``target_path`` when given and the answer starts
    with it, else after the leading run of tags (for released rows without ``target_path``)."""
    if target_path and content.startswith(target_path):
        return target_path, content[len(target_path):]
    m = _LEADING_TAGS.match(content)
    return (m.group(0), content[m.end():]) if m else ("", content)


@dataclass
class Encoded:
    """Token ids and labels of one sample (labels ``-100`` on the prompt)."""

    input_ids: list[int]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.input_ids)


def encode_chat(tokenizer: Any, messages: Sequence[dict[str, str]], target_path: str | None = None) -> Encoded:
    """Tokenize one sample (see the module docstring); loss only on the final assistant answer."""
    prompt = tokenizer(render_prompt(tokenizer, messages[:-1]), add_special_tokens=False)["input_ids"]
    path, rest = split_answer(messages[-1]["content"], target_path)
    answer: list[int] = []
    for part in (path, rest, end_of_turn(tokenizer)):
        if part:
            answer.extend(tokenizer(part, add_special_tokens=False)["input_ids"])
    return Encoded(list(prompt) + answer, [IGNORE_INDEX] * len(prompt) + answer)


@dataclass
class TokenizeReport:
    """What tokenization kept: ``kept`` samples, ``over_length`` dropped, the longest kept, tokens in all."""

    kept: int = 0
    over_length: int = 0
    longest: int = 0
    tokens: int = 0


def tokenize_records(rows: Sequence[dict[str, Any]], tokenizer: Any, max_length: int, *,
                     overlength: str = "drop", progress: bool = False) -> tuple[list[dict[str, list[int]]],
                                                                                   TokenizeReport]:
    """Tokenize rows for the Trainer; samples over ``max_length`` tokens are dropped (``overlength="drop"``)
    or raise (``"error"``).

    Raises:
        TrainDataError: a sample is too long and ``overlength="error"``.
    """
    from tqdm import tqdm

    if overlength not in ("drop", "error"):
        raise InputError(f"overlength must be 'drop' or 'error', got {overlength!r}")
    out, rep = [], TokenizeReport()
    for i, row in enumerate(tqdm(rows, desc="tokenizing", disable=not progress, unit="sample")):
        enc = encode_chat(tokenizer, row["messages"], row.get("target_path"))
        if len(enc) > max_length:
            if overlength == "error":
                raise TrainDataError(f"sample {row.get('id', i)!r} has {len(enc)} tokens, over max_length={max_length}")
            rep.over_length += 1
            continue
        out.append({"input_ids": enc.input_ids, "labels": enc.labels})
        rep.kept += 1
        rep.longest = max(rep.longest, len(enc))
        rep.tokens += len(enc)
    return out, rep


class Collator:
    """Pads a batch to its longest sample (right padding; labels padded with ``-100``)."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, batch: Sequence[dict[str, list[int]]]) -> dict[str, Any]:
        import torch

        width = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, b in enumerate(batch):
            n = len(b["input_ids"])
            ids[i, :n] = torch.tensor(b["input_ids"])
            labels[i, :n] = torch.tensor(b["labels"])
            mask[i, :n] = 1
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}
