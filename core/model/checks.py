"""Input checks every model family shares: token ids, and a head mask for a one-stack model."""

from __future__ import annotations

import torch
from torch import Tensor

from core.model.transformer import AttentionControls


def check_ids(ids: Tensor, max_len: int, vocab_size: int) -> None:
    """Refuse ids that are not (B, T >= 1) int64 in [0, vocab_size) or longer than ``max_len``.

    Raises:
        ValueError: naming what is wrong.
    """
    if ids.dim() != 2 or ids.size(0) == 0 or ids.size(1) == 0:
        raise ValueError(f"token ids must be (batch, length >= 1), got shape {tuple(ids.shape)}")
    if ids.size(1) > max_len:
        raise ValueError(f"sequence of {ids.size(1)} tokens exceeds max_len {max_len}")
    if ids.dtype != torch.long or int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise ValueError(f"token ids must be int64 in [0, {vocab_size})")


def single_stack_head_mask(controls: AttentionControls, kind: str, layers: int, heads: int,
                           model: str) -> Tensor | None:
    """The (L, H) head mask of a model with one attention kind (``encoder`` or ``decoder``).

    Raises:
        ValueError: a kind the model lacks, or a mask of the wrong shape.
    """
    unknown = sorted(set(controls.head_mask) - {kind})
    if unknown:
        raise ValueError(f"head_mask has kinds {unknown} that {model} does not have")
    mask = controls.head_mask.get(kind)
    if mask is not None and tuple(mask.shape) != (layers, heads):
        raise ValueError(f"head_mask[{kind!r}] must have shape {(layers, heads)}, got {tuple(mask.shape)}")
    return mask
