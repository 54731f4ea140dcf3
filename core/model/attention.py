"""Attention: the lecture's score functions, softmax (soft) or argmax (hard), and multi-head.

Shapes: B batch, H heads, Tq/Tk query/key length, dk head width, D model width.
Rows are queries (the token attending), columns are keys (the token attended to).
Masks are boolean, ``True`` meaning "may attend".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def attention_weights(
    scores: Tensor, mask: Tensor | None = None, *, temperature: float = 1.0, hard: bool = False
) -> Tensor:
    """Turn scores into attention weights.

    Args:
        scores: (..., Tq, Tk) compatibility of each query with each key.
        mask: bool, broadcastable to ``scores``; ``True`` = may attend.
        temperature: the lecture's inverse temperature β multiplying the scores
            (0 = uniform, 1 = the paper, large = nearly hard).
        hard: one-hot argmax attention instead of softmax (β does not move the argmax,
            so it is taken on the unscaled scores; β = 0 would otherwise tie every key).

    Returns:
        float32 weights (..., Tq, Tk): every row sums to 1, masked cells are exactly 0
        and a fully masked row is all zero (never NaN).
    """
    _check_temperature(temperature)
    logits = scores.float() if hard else scores.float() * temperature  # float32 whatever the input dtype
    if mask is not None:
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
    if hard:
        weights = F.one_hot(logits.argmax(dim=-1), logits.size(-1)).to(logits.dtype)
    else:
        weights = logits.softmax(dim=-1)
    if mask is not None:
        # Fully masked rows came out uniform (or picked key 0): zero them like every masked cell.
        weights = weights.masked_fill(~mask, 0.0)
    return weights


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    temperature: float = 1.0,
    hard: bool = False,
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention, softmax(β · QKᵀ / √d_k) V.

    Args:
        q: (..., Tq, dk) queries. k: (..., Tk, dk) keys. v: (..., Tk, dv) values.
        mask: bool, broadcastable to (..., Tq, Tk); ``True`` = may attend.
        temperature: inverse temperature β (1.0 = the paper).
        hard: one-hot argmax attention.

    Returns:
        ``(output (..., Tq, dv), weights (..., Tq, Tk) float32)``.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    weights = attention_weights(scores, mask, temperature=temperature, hard=hard)
    return weights.to(v.dtype) @ v, weights  # (..., Tq, dv)


def _check_temperature(temperature: float) -> None:
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")


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
        return q @ k.transpose(-2, -1) * self.fused_scale  # (B, H, Tq, Tk)


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


class AttentionResult(NamedTuple):
    """What one multi-head attention call returns."""

    output: Tensor  # (B, Tq, D)
    weights: Tensor | None  # (B, H, Tq, Tk) float32, when asked for
    scores: Tensor | None  # (B, H, Tq, Tk) float32, β-scaled and unmasked, when asked for


class MultiHeadAttention(nn.Module):
    """Multi-head attention with fused input projections.

    Self-attention projects Q, K and V with one (D → 3D) matrix; cross-attention
    projects Q from the decoder and K, V together (D → 2D) from the encoder memory.
    """

    def __init__(
        self, d_model: int, n_heads: int, *, cross: bool, score: str = "scaled_dot", dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.cross = n_heads, d_model // n_heads, cross
        if cross:
            self.q_proj = nn.Linear(d_model, d_model)
            self.kv_proj = nn.Linear(d_model, 2 * d_model)
        else:
            self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.score = make_score(score, n_heads, self.head_dim)
        self.dropout = dropout

    def _split_heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dk)

    def _project(self, x: Tensor, memory: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        if self.cross:
            if memory is None:
                raise ValueError("cross-attention needs the encoder memory")
            q = self.q_proj(x)  # (B, Tq, D)
            k, v = self.kv_proj(memory).chunk(2, dim=-1)  # (B, Tk, D) each
        else:
            q, k, v = self.qkv_proj(x).chunk(3, dim=-1)  # (B, T, D) each
        return self._split_heads(q), self._split_heads(k), self._split_heads(v)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        temperature: float = 1.0,
        hard: bool = False,
        head_mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> AttentionResult:
        """Attend from ``x`` (B, Tq, D) to itself, or to ``memory`` (B, Tk, D) when cross.

        Args:
            mask: bool (Tq, Tk), (B, Tq, Tk) or (B, 1, Tk); ``True`` = may attend.
            temperature: inverse temperature β on the scores.
            hard: one-hot argmax attention.
            head_mask: (H,) multiplier per head output; 0 knocks a head out.
            need_weights: return weights and scores (runs the explicit softmax path).
        """
        _check_temperature(temperature)
        q, k, v = self._project(x, memory)  # (B, H, T, dk)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, Tq|1, Tk), broadcast over heads
        drop = self.dropout if self.training else 0.0
        fused = not (need_weights or hard) and self.score.fused_scale is not None
        weights = scores = None
        if fused:
            out = F.scaled_dot_product_attention(
                self.score.fused_query(q), k, v, attn_mask=mask, dropout_p=drop,
                scale=self.score.fused_scale * temperature,
            )  # (B, H, Tq, dk)
            if mask is not None:
                # A fully masked query row attends to nothing: its output is zero.
                out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        else:
            raw = self.score(q, k).float()  # (B, H, Tq, Tk)
            scores = raw * temperature
            weights = attention_weights(raw, mask, temperature=temperature, hard=hard)
            out = F.dropout(weights, drop).to(v.dtype) @ v  # (B, H, Tq, dk)
        if head_mask is not None:
            if head_mask.shape != (self.n_heads,):
                raise ValueError(f"head_mask must have shape ({self.n_heads},), got {tuple(head_mask.shape)}")
            out = out * head_mask.to(out.dtype).view(1, -1, 1, 1)
        batch, _, length, _ = out.shape
        out = out.transpose(1, 2).reshape(batch, length, -1)  # (B, Tq, D)
        return AttentionResult(self.out_proj(out), weights if need_weights else None,
                               scores if need_weights else None)
