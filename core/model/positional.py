"""Positional encodings: the paper's sinusoids, a learned table, or none."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def sinusoidal_encoding(seq_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The paper's positional encoding.

    PE(pos, 2i) = sin(pos / base^(2i/d_model)), PE(pos, 2i+1) = cos(pos / base^(2i/d_model)).
    For odd ``d_model`` the last (even) column is a sine like the others.

    Returns:
        float32 tensor (seq_len, d_model).
    """
    if seq_len < 0 or d_model < 1:
        raise ValueError(f"need seq_len >= 0 and d_model >= 1, got {seq_len}, {d_model}")
    if base <= 1.0:
        raise ValueError(f"base must be greater than 1, got {base}")
    # float64 so that large positions stay accurate before the cast.
    position = torch.arange(seq_len, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    angle = position / base ** (two_i / d_model)  # (T, ceil(D/2))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


class SinusoidalPositional(nn.Module):
    """Adds the fixed sinusoidal table (a non-persistent buffer: never saved)."""

    def __init__(self, max_len: int, d_model: int, base: float) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, D) → x + PE[:T]."""
        return x + self.table[: x.size(1)]  # (B, T, D)


class LearnedPositional(nn.Module):
    """Adds a learned embedding per position."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, D) → x + E[:T]."""
        return x + self.table.weight[: x.size(1)]  # (B, T, D)


def make_positional(kind: str, max_len: int, d_model: int, base: float) -> nn.Module:
    """The positional module named by ``ModelConfig.positional``."""
    if kind == "sinusoidal":
        return SinusoidalPositional(max_len, d_model, base)
    if kind == "learned":
        return LearnedPositional(max_len, d_model)
    return nn.Identity()
