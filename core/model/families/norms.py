"""Normalisations of the pretrained decoders: RMSNorm (Llama family, Gemma's ``1 + g`` variant) and LayerNorm."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RMSNorm(nn.Module):
    """x / RMS(x) · g over the last axis, the normalisation in float32 (no mean subtraction, no bias).

    As the reference does: Llama rounds x / RMS(x) to x's dtype before the gain (same result in float32);
    with ``plus_one`` (Gemma) the stored weight is an offset, x / RMS(x) · (1 + g) all in float32.
    """

    def __init__(self, width: int, eps: float, plus_one: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(width) if plus_one else torch.ones(width))
        self.eps, self.plus_one = eps, plus_one

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)  # (..., D)
        if self.plus_one:
            return (normed * (self.weight.float() + 1.0)).to(x.dtype)
        return self.weight * normed.to(x.dtype)


def layer_norm(width: int, eps: float) -> nn.LayerNorm:
    """A LayerNorm with gain and bias (GPT-2, GPT-NeoX, OPT, Phi)."""
    return nn.LayerNorm(width, eps=eps)
