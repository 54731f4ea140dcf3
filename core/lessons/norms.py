"""The Architecture page's maths: LayerNorm against BatchNorm on one batch, and the position-wise
feed-forward network as a 1×1 convolution. Both are computed with ``torch.nn.functional`` and
checked against the formulas by hand.

Axis letters: B sentences, T tokens, F features, D model width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class NormDemo:
    """LayerNorm and BatchNorm of the same input (float64, γ = 1, β = 0).

    Attributes:
        x, layer, batch: (B, T, F) the input and its two normalisations.
        layer_error, batch_error: max |torch − the formula by hand| of each.
    """

    x: np.ndarray
    layer: np.ndarray
    batch: np.ndarray
    layer_error: float
    batch_error: float


def norm_demo(batch: int, tokens: int, features: int, seed: int, eps: float = 1e-5) -> NormDemo:
    """LayerNorm vs BatchNorm on one seeded (batch, tokens, features) tensor.

    LayerNorm: statistics per token over its features. BatchNorm: statistics per feature over
    every token of every sentence (B·T values).
    """
    gen = torch.Generator().manual_seed(seed)
    f64 = dict(dtype=torch.float64)
    # Features with different offsets and scales, so both normalisations visibly do something.
    x = torch.randn(batch, tokens, features, generator=gen, **f64)  # (B, T, F)
    x = x * torch.linspace(0.5, 3.0, features, **f64) + torch.linspace(-2, 2, features, **f64)
    layer = F.layer_norm(x, (features,), eps=eps)  # (B, T, F)
    flat = x.reshape(-1, features)  # (B·T, F): BatchNorm sees every position as one sample
    batch_out = F.batch_norm(flat, None, None, training=True, eps=eps).reshape_as(x)  # (B, T, F)
    mu_row, var_row = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)  # (B, T, 1)
    mu_col, var_col = flat.mean(0), flat.var(0, unbiased=False)  # (F,)
    layer_formula = (x - mu_row) / torch.sqrt(var_row + eps)
    batch_formula = ((flat - mu_col) / torch.sqrt(var_col + eps)).reshape_as(x)
    return NormDemo(x.numpy(), layer.numpy(), batch_out.numpy(),
                    float((layer - layer_formula).abs().max()), float((batch_out - batch_formula).abs().max()))


@dataclass(frozen=True)
class NormStats:
    """Mean and (population) std after each normalisation, per token row (B·T,) and per feature column (F,)."""

    row_mean_layer: np.ndarray
    row_std_layer: np.ndarray
    row_mean_batch: np.ndarray
    row_std_batch: np.ndarray
    col_mean_layer: np.ndarray
    col_std_layer: np.ndarray
    col_mean_batch: np.ndarray
    col_std_batch: np.ndarray


def norm_stats(demo: NormDemo) -> NormStats:
    """LayerNorm makes every row mean 0, std 1; BatchNorm every column."""
    f = demo.x.shape[-1]
    layer, batch = demo.layer.reshape(-1, f), demo.batch.reshape(-1, f)  # (B·T, F)
    return NormStats(layer.mean(1), layer.std(1), batch.mean(1), batch.std(1),
                     layer.mean(0), layer.std(0), batch.mean(0), batch.std(0))


@dataclass(frozen=True)
class FFNDemo:
    """x (T, D), the FFN applied token by token (T, D), the same as a 1×1 convolution (T, D), their gap."""

    x: np.ndarray
    per_token: np.ndarray
    conv: np.ndarray
    max_error: float


def ffn_as_convolution(tokens: int, d_model: int, d_ff: int, seed: int) -> FFNDemo:
    """FFN(x) = max(0, xW₁ + b₁)W₂ + b₂ per token equals two kernel-size-1 convolutions over the sequence."""
    gen = torch.Generator().manual_seed(seed)
    f64 = dict(generator=gen, dtype=torch.float64)
    x = torch.randn(tokens, d_model, **f64)  # (T, D)
    w1, b1 = torch.randn(d_ff, d_model, **f64), torch.randn(d_ff, **f64)
    w2, b2 = torch.randn(d_model, d_ff, **f64), torch.randn(d_model, **f64)
    per_token = torch.stack([torch.relu(x[t] @ w1.T + b1) @ w2.T + b2 for t in range(tokens)])  # (T, D)
    seq = x.T.unsqueeze(0)  # (1, D, T): channels = features, length = tokens
    conv = F.conv1d(torch.relu(F.conv1d(seq, w1.unsqueeze(-1), b1)), w2.unsqueeze(-1), b2)[0].T  # (T, D)
    return FFNDemo(x.numpy(), per_token.numpy(), conv.numpy(), float((per_token - conv).abs().max()))
