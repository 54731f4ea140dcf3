"""Score functions: how compatible each query is with each key, per head.

The lecture's four: scaled dot (the paper), dot, general and additive. Each maps per-head
queries (B, H, Tq, dk) and keys (B, H, Tk, dk) to scores (B, H, Tq, Tk).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class ScoreFunction(nn.Module):
    """Scores (B, H, Tq, Tk) from per-head queries (B, H, Tq, dk) and keys (B, H, Tk, dk)."""

    #: multiplier applied to q·k when the fused kernel can compute the score, else None
    fused_scale: float | None = None

    def forward(self, q: Tensor, k: Tensor) -> Tensor:  # pragma: no cover - abstract
        """Scores (B, H, Tq, Tk): row = query, column = key."""
        raise NotImplementedError

    def fused_query(self, q: Tensor) -> Tensor:
        """The query the fused kernel should see (a learned map for ``general``)."""
        return q


class ScaledDotScore(ScoreFunction):
    """q·k / √d_k — the paper's choice, so large d_k does not saturate the softmax."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.fused_scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """q·kᵀ / √d_k: (B, H, Tq, Tk)."""
        # Scale the (Tq, dk) queries, not the (Tq, Tk) scores: one small pass instead of a full one.
        return (q * self.fused_scale) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)


class DotScore(ScoreFunction):
    """q·k (Luong's dot): unscaled, so it saturates as d_k grows."""

    fused_scale = 1.0

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """q·kᵀ: (B, H, Tq, Tk)."""
        return q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)


class GeneralScore(ScoreFunction):
    """qᵀ W k (Luong's general), one learned W per head."""

    fused_scale = 1.0

    def __init__(self, n_heads: int, head_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.eye(head_dim).repeat(n_heads, 1, 1))  # (H, dk, dk)

    def fused_query(self, q: Tensor) -> Tensor:
        """q W, so that the fused kernel's q·k computes qᵀ W k: (B, H, Tq, dk)."""
        return q @ self.weight  # (B, H, Tq, dk)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """qᵀ W k: (B, H, Tq, Tk)."""
        return self.fused_query(q) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)


class AdditiveScore(ScoreFunction):
    """vᵀ tanh(W_q q + W_k k) (Bahdanau's additive), one small network per head."""

    def __init__(self, n_heads: int, head_dim: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(head_dim)
        self.w_query = nn.Parameter(torch.empty(n_heads, head_dim, head_dim).uniform_(-bound, bound))
        self.w_key = nn.Parameter(torch.empty(n_heads, head_dim, head_dim).uniform_(-bound, bound))
        self.v = nn.Parameter(torch.empty(n_heads, head_dim).uniform_(-bound, bound))  # (H, dk)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        """vᵀ tanh(W_q q + W_k k) for every (query, key) pair: (B, H, Tq, Tk)."""
        q_part = (q @ self.w_query).unsqueeze(3)  # (B, H, Tq, 1, dk)
        k_part = (k @ self.w_key).unsqueeze(2)  # (B, H, 1, Tk, dk)
        hidden = torch.tanh(q_part + k_part)  # (B, H, Tq, Tk, dk)
        return torch.einsum("bhqkd,hd->bhqk", hidden, self.v)  # (B, H, Tq, Tk)


def make_score(name: str, n_heads: int, head_dim: int) -> ScoreFunction:
    """The score function named by ``ModelConfig.score``."""
    if name == "scaled_dot":
        return ScaledDotScore(head_dim)
    if name == "dot":
        return DotScore()
    if name == "general":
        return GeneralScore(n_heads, head_dim)
    if name == "additive":
        return AdditiveScore(n_heads, head_dim)
    raise ValueError(f"unknown score function {name!r}")
