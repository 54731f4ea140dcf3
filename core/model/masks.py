"""Attention masks. Convention everywhere: ``True`` means "may attend".

Rows are queries (the token attending), columns are keys (the token attended to).
"""

from __future__ import annotations

import torch
from torch import Tensor


def subsequent_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """The decoder's look-ahead mask: query i may attend to keys 0..i.

    Returns:
        bool tensor (n, n), lower-triangular including the diagonal.
    """
    if n < 1:
        raise ValueError(f"mask length must be at least 1, got {n}")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (Tq, Tk)


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """Which keys are real tokens rather than padding.

    Args:
        ids: token ids (B, Tk).
        pad_id: the padding id.

    Returns:
        bool tensor (B, 1, Tk), broadcasting over every query.
    """
    if ids.dim() != 2:
        raise ValueError(f"ids must be (batch, length), got shape {tuple(ids.shape)}")
    return (ids != pad_id).unsqueeze(1)  # (B, 1, Tk)


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of broadcastable masks, skipping ``None``; ``None`` if all are.

    Example: ``combine_masks(subsequent_mask(T), padding_mask(ids, 0))`` → (B, T, T).
    """
    present = [m for m in masks if m is not None]
    if not present:
        return None
    combined = present[0]
    for mask in present[1:]:
        combined = combined & mask
    return combined
