"""Rotary position embedding (RoFormer, Su et al. 2021), as Llama-family models use it.

Each head's query and key vectors are split into dk/2 pairs, and pair i is rotated by
the angle ``position · θ_i`` with ``θ_i = base^(−2i/dk)``. Because a rotation by a·θ
dotted with a rotation by b·θ depends only on b − a, the score q·k depends on the
*relative* offset of the two tokens, never on where they sit.

Layout: the Hugging Face ("rotate half") convention pairs dimension i with i + dk/2.
llama.cpp's GGUF files store Q and K rows permuted for adjacent pairs (2i, 2i+1);
:func:`unpermute_gguf_rows` undoes that when loading.
"""

from __future__ import annotations

import torch
from torch import Tensor


def rotary_frequencies(head_dim: int, base: float) -> Tensor:
    """θ_i = base^(−2i/dk) for i in [0, dk/2): float32 (dk/2,), fastest rotation first."""
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"rotary needs an even head width >= 2, got {head_dim}")
    if base <= 1.0:
        raise ValueError(f"rotary base must be greater than 1, got {base}")
    exponent = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim  # (dk/2,)
    return (1.0 / base**exponent).float()


def rotary_tables(length: int, head_dim: int, base: float, device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """cos and sin tables (T, dk) for positions 0..T−1, in the rotate-half layout."""
    theta = rotary_frequencies(head_dim, base).to(device)  # (dk/2,)
    positions = torch.arange(length, dtype=torch.float32, device=device)  # (T,)
    angles = torch.outer(positions, theta)  # (T, dk/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, dk): pair i and i + dk/2 share an angle
    return angles.cos(), angles.sin()


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) → (−x2, x1) on the two halves of the last axis."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate queries or keys x (B, H, T, dk) by their position: tables (T, dk)."""
    return x * cos + rotate_half(x) * sin  # (B, H, T, dk)


def unpermute_gguf_rows(weight: Tensor, n_heads: int) -> Tensor:
    """Undo llama.cpp's Q/K row permutation: GGUF (adjacent pairs) → Hugging Face (rotate half).

    llama.cpp's converter reshapes each head's rows as (2, dk/2) and swaps the two axes, so
    that the halves (i, i + dk/2) become neighbours (2i, 2i + 1). This is the inverse.

    Args:
        weight: (H·dk, D) a query or key projection as stored in the GGUF file.
        n_heads: the heads it holds (the key/value head count for keys).
    """
    rows = weight.shape[0]
    head_dim = rows // n_heads
    if rows % n_heads or head_dim % 2:
        raise ValueError(f"cannot split {rows} rows into {n_heads} heads of even width")
    return (
        weight.reshape(n_heads, head_dim // 2, 2, *weight.shape[1:])  # (H, dk/2, 2, D): GGUF pairs
        .transpose(1, 2)  # (H, 2, dk/2, D): the two halves
        .reshape(weight.shape)
    )


def rotary_relative_scores(head_dim: int, base: float, length: int, seed: int = 0) -> Tensor:
    """q·k for one fixed random query and key placed at every pair of positions: (T, T).

    Entry (i, j) depends only on j − i (every diagonal is constant), which is the property
    that makes rotary positions *relative*; a teaching view draws it.
    """
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 1, 1, head_dim, generator=generator)  # (1, 1, 1, dk) each
    cos, sin = rotary_tables(length, head_dim, base)
    q_rot = apply_rotary(q.expand(1, 1, length, head_dim), cos, sin)[0, 0]  # (T, dk)
    k_rot = apply_rotary(k.expand(1, 1, length, head_dim), cos, sin)[0, 0]
    return q_rot @ k_rot.T  # (Tq, Tk)
