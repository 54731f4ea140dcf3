"""The paper's training objective: the warm-up learning-rate schedule and label smoothing.

Both are pure functions so the app can plot them (the Annotated Transformer's two
teaching figures) and the trainer can use the very same code.
"""

from __future__ import annotations

import torch
from torch import Tensor


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), with step counted from 1.

    It rises linearly for ``warmup`` steps, then decays with the inverse square root of the step.
    """
    if d_model < 1 or warmup < 1:
        raise ValueError(f"d_model and warmup must be at least 1, got {d_model}, {warmup}")
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def smoothed_targets(targets: Tensor, n_classes: int, smoothing: float, pad_id: int | None = None) -> Tensor:
    """The label-smoothed target distribution of the Annotated Transformer.

    The true class gets 1 - smoothing; the rest is spread evenly over the other classes
    except padding. Rows whose target is padding are all zero (they do not count).

    Args:
        targets: (N,) class ids.
        n_classes: V, the number of classes.
        smoothing: in [0, 1).
        pad_id: the padding id for sequence targets, or None for plain classification.

    Returns:
        float32 (N, V), each counted row summing to 1.
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"label smoothing must be in [0, 1), got {smoothing}")
    others = n_classes - (2 if pad_id is not None else 1)
    dist = torch.full((targets.numel(), n_classes), smoothing / max(others, 1), device=targets.device)
    dist.scatter_(1, targets.reshape(-1, 1), 1.0 - smoothing)  # (N, V)
    if pad_id is not None:
        dist[:, pad_id] = 0.0
        dist[targets.reshape(-1) == pad_id] = 0.0
    return dist


def smoothed_loss(logits: Tensor, targets: Tensor, smoothing: float, pad_id: int | None = None) -> Tensor:
    """Cross-entropy against :func:`smoothed_targets`, averaged over counted (non-pad) targets.

    With ``smoothing=0`` this is the ordinary cross-entropy.

    Args:
        logits: (..., V) scores. targets: (...) class ids.
    """
    flat = logits.reshape(-1, logits.size(-1)).float()  # (N, V)
    dist = smoothed_targets(targets.reshape(-1), flat.size(-1), smoothing, pad_id)  # (N, V)
    per_row = -(dist * flat.log_softmax(-1)).sum(-1)  # (N,)
    counted = (targets.reshape(-1) != pad_id) if pad_id is not None else torch.ones_like(per_row, dtype=torch.bool)
    return per_row.sum() / counted.sum().clamp(min=1)
