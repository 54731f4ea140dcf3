"""One optimizer step for any sequence model: schedule → forward → loss → backward → clip → update.

The trainer (``python -m core train`` and the app's training jobs) and ``bench/train_speed.py``
all take their steps through :func:`train_step`, so a recipe change reaches every one of them.
The model is anything called as ``net(src, tgt)`` that returns a :class:`ModelOutput` or bare
logits (B, T, V) / (B, C): Attnscope's :class:`Transformer`, a DDP or compiled wrapper of it, or
a baseline such as PyTorch's ``nn.Transformer``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from core.model.contract import ModelOutput
from core.training.data import Batch
from core.training.objectives import noam_lr, smoothed_loss

SCHEDULES = ("noam", "constant")


@dataclass(frozen=True)
class StepRecipe:
    """How each optimizer step is taken.

    Attributes:
        d_model: the model width the Noam schedule scales by.
        schedule: "noam" (the paper's warm-up, then inverse square root) or "constant".
        lr: the Noam factor, or the constant learning rate.
        warmup: Noam warm-up steps.
        label_smoothing: ε of the smoothed targets, in [0, 1).
        clip_norm: the gradients' global norm is clipped to this.
        pad_id: the padding id of sequence targets (not counted), or None for class targets.
    """

    d_model: int
    schedule: str = "noam"
    lr: float = 1.0
    warmup: int = 400
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    pad_id: int | None = 0

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be 'noam' or 'constant'; got {self.schedule!r}")

    def lr_at(self, step: int) -> float:
        """The learning rate of optimizer step ``step`` (counted from 1)."""
        return noam_lr(step, self.d_model, self.warmup, self.lr) if self.schedule == "noam" else self.lr


@dataclass(frozen=True)
class StepOutcome:
    """What one step did: its loss (summed over micro-batches), learning rate and real tokens."""

    loss: float
    lr: float
    tokens: int


def autocast_for(device: torch.device) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA, nothing elsewhere: the mixed precision every training loop uses."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _logits(output: ModelOutput | Tensor) -> Tensor:
    return output.logits if isinstance(output, ModelOutput) else output


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batches: Sequence[Batch], step: int,
               recipe: StepRecipe, *, net: nn.Module | None = None) -> StepOutcome:
    """Take optimizer step ``step`` on ``batches`` (micro-batches whose gradients accumulate).

    Args:
        model: the module whose parameters are clipped (the bare model, not a wrapper).
        optimizer: its optimizer; every parameter group gets ``recipe.lr_at(step)``.
        batches: one or more micro-batches; each loss is divided by their number.
        net: what is called for the forward pass (a DDP or compiled wrapper); ``model`` by default.
    """
    net = model if net is None else net
    model.train()
    lr = recipe.lr_at(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    total, tokens = 0.0, 0
    for batch in batches:
        with autocast_for(batch.targets.device):
            logits = _logits(net(batch.src, batch.tgt))  # (B, T, V), or (B, C) for a classifier
        loss = smoothed_loss(logits, batch.targets, recipe.label_smoothing, recipe.pad_id) / len(batches)
        loss.backward()
        total += float(loss.detach())
        tokens += batch.tokens
    torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return StepOutcome(total, lr, tokens)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """The paper's Adam (β₁ = 0.9, β₂ = 0.98, ε = 1e-9); the step sets the learning rate."""
    return torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
