"""Rotary position tables for the pretrained decoders: full or partial width, plain or scaled.

The rotation itself (rotate-half layout) is :mod:`core.model.rotary`'s. This module adds what the
Hugging Face families configure on top of it:

* **partial rotary** (GPT-NeoX/Pythia, Phi): only the first ``rotary_dim`` of each head's dk
  dimensions are rotated, the rest pass through unchanged;
* **scaling** of the frequencies for longer contexts: ``linear`` (every θ_i divided by the
  factor, i.e. positions compressed) and ``llama3`` (Llama 3.1: long wavelengths divided by the
  factor, short ones kept, a smooth blend in between).

Frequencies are computed in float64 and rounded to float32 once (within one ulp of the reference's
float32 computation; it keeps the GGUF models' maps bit-identical to earlier releases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from core.model.rotary import apply_rotary

#: Scaling types the tables reproduce (``default`` = none).
ROPE_TYPES = ("default", "linear", "llama3")


@dataclass(frozen=True)
class RopeScaling:
    """How the rotary frequencies are stretched (``kind`` one of :data:`ROPE_TYPES`)."""

    kind: str = "default"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_len: int = 8192

    def __post_init__(self) -> None:
        if self.kind not in ROPE_TYPES:
            raise ValueError(f"rope scaling {self.kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")
        if not self.factor > 0:
            raise ValueError(f"rope scaling factor must be > 0, got {self.factor}")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor:
            raise ValueError("llama3 rope scaling needs high_freq_factor > low_freq_factor")


def frequencies(rotary_dim: int, base: float, scaling: RopeScaling = RopeScaling()) -> Tensor:
    """θ_i (rotary_dim/2,) float32: base^(−2i/rotary_dim), then scaled."""
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"rotary needs an even width >= 2, got {rotary_dim}")
    if base <= 1.0:
        raise ValueError(f"rotary base must be greater than 1, got {base}")
    exponent = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim  # (r/2,)
    theta = (1.0 / base**exponent).float()  # (r/2,): in float64 first, so SmolLM2's maps stay bit-identical
    if scaling.kind == "linear":
        return theta / scaling.factor
    if scaling.kind == "llama3":
        return _llama3(theta, scaling)
    return theta


def _llama3(theta: Tensor, s: RopeScaling) -> Tensor:
    """Llama 3.1's scaling: wavelengths above original/low_freq_factor divided by the factor, those below
    original/high_freq_factor kept, the band between blended linearly in original/wavelength."""
    wavelength = 2 * math.pi / theta  # (dk/2,)
    low_wavelength = s.original_max_len / s.low_freq_factor
    high_wavelength = s.original_max_len / s.high_freq_factor
    scaled = torch.where(wavelength > low_wavelength, theta / s.factor, theta)
    smooth = (s.original_max_len / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    blended = (1 - smooth) * scaled / s.factor + smooth * scaled
    medium = (wavelength >= high_wavelength) & (wavelength <= low_wavelength)
    return torch.where(medium, blended, scaled)


def rope_tables(length: int, rotary_dim: int, base: float, scaling: RopeScaling = RopeScaling(),
                device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """cos and sin tables (T, rotary_dim) for positions 0..T−1 in the rotate-half layout."""
    theta = frequencies(rotary_dim, base, scaling).to(device)  # (r/2,)
    positions = torch.arange(length, dtype=torch.float32, device=device)  # (T,)
    angles = torch.outer(positions, theta)  # (T, r/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, r)
    return angles.cos(), angles.sin()


def rotate_partial(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the first r = cos.size(-1) dims of x (B, H, T, dk) by position; the rest pass through."""
    rotary_dim = cos.size(-1)
    if rotary_dim == x.size(-1):
        return apply_rotary(x, cos, sin)
    rotated = apply_rotary(x[..., :rotary_dim], cos, sin)  # (B, H, T, r)
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)  # (B, H, T, dk)
