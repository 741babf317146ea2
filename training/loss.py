"""The training loss computed only where it is needed: the answer positions.

A causal LM's forward normally applies the output head to every position. With a 262K-token vocabulary
(Gemma 3) and a 2K-token sample that is a 2048 x 262144 float32 logits tensor (2 GiB, and as much again for its
gradient) of which only the few hundred answer positions enter the loss (the prompt's labels are ``-100``).
:func:`answer_loss` asks the model for the logits of those positions only, through the forward's public
``logits_to_keep`` argument (a 1D index tensor: the decoder runs over the whole sequence, the head only on
the kept positions), and computes the same cross-entropy as the full forward would on them.

Definitions: position ``t`` predicts the label at ``t + 1`` (the usual shift); the *answer positions* of a
batch are the ``t`` where some row has a label other than ``-100`` at ``t + 1`` (the union over rows, so one
index tensor serves the batch; other rows' labels there may be ``-100`` and are ignored).
"""

from __future__ import annotations

import time
from typing import Any

from htmlrag_bench.training.data import IGNORE_INDEX


def answer_positions(labels: Any) -> Any:
    """Positions ``t`` (1D long tensor, ascending) whose next label is not ``-100`` in some row."""
    import torch

    needed = (labels[:, 1:] != IGNORE_INDEX).any(dim=0)
    return torch.nonzero(needed, as_tuple=False).flatten()


def answer_loss(model: Any, input_ids: Any, labels: Any, attention_mask: Any = None,
                num_items_in_batch: Any = None) -> tuple[Any, Any]:
    """Cross-entropy of the answer tokens, with the output head applied at the answer positions only.

    Args:
        model: a causal LM whose forward takes ``logits_to_keep`` (transformers >= 4.50; PEFT passes it on).
        input_ids: ``(batch, length)`` token ids.
        labels: ``(batch, length)`` labels, ``-100`` where no loss is wanted (not shifted).
        attention_mask: ``(batch, length)`` padding mask.
        num_items_in_batch: divide the summed loss by this (the label count of the whole accumulated batch,
            as the Trainer passes it); ``None``: the mean over this batch's labels.

    Returns:
        ``(loss, tokens)``: the loss (a scalar tensor) and the number of label tokens it covers.
    """
    import torch

    pos = answer_positions(labels)
    targets = labels[:, pos + 1]
    tokens = (targets != IGNORE_INDEX).sum()
    if pos.numel() == 0:  # no label at all: a zero loss that still depends on the parameters
        out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=1, use_cache=False)
        return out.logits.sum() * 0.0, tokens
    out = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=pos, use_cache=False)
    logits = out.logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                             ignore_index=IGNORE_INDEX, reduction="sum")
    denominator = num_items_in_batch if num_items_in_batch is not None else tokens.clamp(min=1)
    if torch.is_tensor(denominator):
        denominator = denominator.to(loss.device)
    return loss / denominator, tokens


def answer_loss_trainer() -> type:
    """A ``transformers.Trainer`` subclass whose training loss is :func:`answer_loss` (imported lazily)."""
    from transformers import Trainer

    class AnswerLossTrainer(Trainer):
        """``Trainer`` computing the loss on the answer positions only (see :mod:`htmlrag_bench.training.loss`)."""

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            # Normalised by the accumulated batch's label count when the Trainer gives it: already scaled for
            # gradient accumulation (the Trainer must not divide again).
            self.loss_is_scaled_for_ga = num_items_in_batch is not None
            loss, _ = answer_loss(model, inputs["input_ids"], inputs["labels"], inputs.get("attention_mask"),
                                  num_items_in_batch)
            return (loss, None) if return_outputs else loss

    return AnswerLossTrainer


def time_limit_callback(minutes: float) -> Any:
    """A ``TrainerCallback`` that ends training (saving a checkpoint) once ``minutes`` of wall time have passed
    since training started; the run then counts as finished at the step it reached."""
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        def __init__(self) -> None:
            self.start: float | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.start = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if self.start is not None and time.monotonic() - self.start >= minutes * 60:
                control.should_training_stop = True
                control.should_save = True

    return TimeLimit()
