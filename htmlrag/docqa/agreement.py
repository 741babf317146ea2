"""How much an LLM judge agrees with itself (``judge.draws`` > 1: each answer judged several times) and with a
second judge model.

**Agreement** is Krippendorff's alpha for nominal data (``krippendorff.alpha(reliability_data,
level_of_measurement="nominal")``) over the verdicts, raters x answers: each draw of a judge is a rater, each
judged answer a unit, a missing verdict (unparsable reply, failed request) a missing value. alpha = 1 means
every draw gave every answer the same verdict; 0, agreement no better than chance given how often each verdict
occurs. Answers with fewer than two valid verdicts do not enter it (as in Krippendorff's definition). It is
undefined (``None``, with the reason) with fewer than two raters, when no answer has two valid verdicts, or when
the answers that do hold only one verdict value (then there is nothing to disagree on).

An answer is **flagged** when its valid verdicts are not all equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def krippendorff_alpha(verdicts: Sequence[Sequence[int | None]]) -> tuple[float | None, str]:
    """Alpha (nominal) of ``verdicts[item][rater]`` (0/1, ``None`` missing), and why it is ``None`` when it is."""
    items = [list(v) for v in verdicts]
    raters = max((len(v) for v in items), default=0)
    if raters < 2:
        return None, "fewer than two draws per answer"
    # only answers with two or more valid verdicts can be compared (the package raises without one, and gives
    # NaN when those answers' verdicts are all one value although other answers hold another)
    pairable = [v for v in items if sum(x is not None for x in v) >= 2]
    if not pairable:
        return None, "no answer has two valid verdicts (the others' replies were unparsable or failed)"
    values = {x for v in pairable for x in v if x is not None}
    if len(values) < 2:
        return None, "every verdict is the same value (nothing to disagree on)"
    import krippendorff
    import numpy as np

    data = np.full((raters, len(items)), np.nan)
    for j, v in enumerate(items):
        for i, x in enumerate(v):
            if x is not None:
                data[i, j] = float(x)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")), ""


def disagreements(verdicts: Sequence[Sequence[int | None]]) -> list[int]:
    """Indices of the items whose valid verdicts are not all equal."""
    return [i for i, v in enumerate(verdicts) if len({x for x in v if x is not None}) > 1]


def agreement(verdicts: Sequence[Sequence[int | None]]) -> dict[str, Any]:
    """``{"alpha", "alpha_undefined", "raters", "items", "disagreements"}`` of ``verdicts[item][rater]``."""
    alpha, why = krippendorff_alpha(verdicts)
    return {"alpha": alpha, "alpha_undefined": why or None, "raters": max((len(v) for v in verdicts), default=0),
            "items": len(verdicts), "disagreements": len(disagreements(verdicts))}
