"""A fixed train / held-out split of questions by id, so that a trained pruner is measured on questions it
never saw.

A question is *held out* when ``sha256("htmlrag-heldout-v1:" + id)``, read as a fraction in [0, 1) from its
first 8 hex digits, is below ``fraction`` (default 1/3). The split depends on the id alone: the same in every
run, on every machine, whatever the order or subset of questions (on the shared WTQ-HTML set's 300 questions,
about 100 are held out).
"""

from __future__ import annotations

import hashlib

SALT = "htmlrag-heldout-v1"
#: Default share of held-out questions.
HELDOUT_FRACTION = 1 / 3
SPLITS = ("all", "train", "heldout")


def is_heldout(item_id: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether question ``item_id`` is held out (see the module docstring)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"held-out fraction must be in [0, 1], got {fraction}")
    digest = hashlib.sha256(f"{SALT}:{item_id}".encode()).hexdigest()
    return int(digest[:8], 16) / 0x1_0000_0000 < fraction


def in_split(item_id: str, split: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether ``item_id`` belongs to ``split`` (``all``, ``train`` or ``heldout``)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split == "all" or is_heldout(item_id, fraction) == (split == "heldout")
