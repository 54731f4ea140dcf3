"""Marian (the Helsinki-NLP opus-mt translation models): the paper's own encoder-decoder.

Post-norm layers, embeddings scaled by √D, and fixed sinusoidal positions in Marian's layout:
the sines of all frequencies in the first half of each vector, the cosines in the second half
(not interleaved as in the paper's formula). The decoder starts from the pad id and never
produces it; a ``final_logits_bias`` is added to the tied head's logits. The shared layers are
:mod:`core.model.families.seq2seq_layers`, the model :mod:`core.model.families.seq2seq`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def marian_sinusoids(positions: Tensor, width: int) -> Tensor:
    """(T, D) float32 encodings of ``positions`` (T,): sin(p / 10000^(2i/D)) in columns [0, ⌈D/2⌉),
    cos(…) of the same frequencies in [⌈D/2⌉, D), computed in float64 as Marian's table is."""
    j = torch.arange(width, dtype=torch.float64)
    angles = positions.to(torch.float64)[:, None] / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor")
                                                             / width)  # (T, D)
    return torch.cat([torch.sin(angles[:, 0::2]), torch.cos(angles[:, 1::2])], dim=-1).float()


class SinusoidalPositions(nn.Module):
    """Marian's fixed position table, computed for the positions asked (no stored weights)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def forward(self, start: int, length: int, device: torch.device) -> Tensor:
        """(T, D) encodings of positions start … start + T − 1."""
        return marian_sinusoids(torch.arange(start, start + length, device=device), self.width)
