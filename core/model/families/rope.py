"""Rotary position tables for the pretrained decoders: full or partial width, plain or scaled.

The rotation itself (rotate-half layout) is :mod:`core.model.rotary`'s. This module adds what the
Hugging Face families and llama.cpp configure on top of it:

* **partial rotary** (GPT-NeoX/Pythia, Phi): only the first ``rotary_dim`` of each head's dk
  dimensions are rotated, the rest pass through unchanged;
* **scaling** of the frequencies for longer contexts, as ``transformers``' ``modeling_rope_utils``
  computes them:

  - ``linear``: every θ_i divided by the factor (positions compressed);
  - ``dynamic`` (dynamic NTK): for a sequence of T > ``original_max_len`` positions the base grows to
    base · (factor·T/original − (factor − 1))^(r/(r−2)); shorter sequences are unscaled;
  - ``llama3`` (Llama 3.1): long wavelengths divided by the factor, short ones kept, a linear blend
    in between;
  - ``yarn``: the same blend by rotation count (β_fast, β_slow over the original context), and the
    cos/sin tables multiplied by an attention factor (0.1·ln(factor) + 1 unless given);
  - per-frequency factors (llama.cpp's ``rope_freqs`` tensor): θ_i / f_i exactly, as llama.cpp rotates.

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
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")


@dataclass(frozen=True)
class RopeScaling:
    """How the rotary frequencies are stretched (``kind`` one of :data:`ROPE_TYPES`).

    Attributes:
        factor: the context extension factor (every type but ``default``).
        low_freq_factor / high_freq_factor: ``llama3``'s band, in units of ``original_max_len``.
        original_max_len: the context the model was pretrained on (``llama3``, ``yarn``; for
            ``dynamic`` the length beyond which the base grows).
        beta_fast / beta_slow / truncate: ``yarn``'s band in rotations, rounded outwards with ``truncate``.
        attention_factor: ``yarn``'s cos/sin multiplier; None = 0.1·ln(factor) + 1 (1 for factor ≤ 1).
        freq_factors: per-frequency divisors (r/2 of them) replacing the formula of ``kind``
            (llama.cpp's ``rope_freqs``; ``kind`` then says which scaling they are).
    """

    kind: str = "default"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_len: int = 8192
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    truncate: bool = True
    attention_factor: float | None = None
    freq_factors: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ROPE_TYPES:
            raise ValueError(f"rope scaling {self.kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"rope scaling factor must be a finite number > 0, got {self.factor}")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor:
            raise ValueError("llama3 rope scaling needs high_freq_factor > low_freq_factor")
        if self.kind in ("llama3", "yarn", "dynamic") and self.original_max_len < 1:
            raise ValueError(f"rope scaling needs original_max_len >= 1, got {self.original_max_len}")
        if self.kind == "yarn" and not (self.beta_fast > 0 and self.beta_slow > 0):
            raise ValueError(f"yarn rope scaling needs beta_fast and beta_slow > 0, got {self.beta_fast}, "
                             f"{self.beta_slow}")
        if self.attention_factor is not None and not (math.isfinite(self.attention_factor)
                                                      and self.attention_factor > 0):
            raise ValueError(f"rope attention_factor must be a finite number > 0, got {self.attention_factor}")
        if self.freq_factors is not None:
            object.__setattr__(self, "freq_factors", tuple(float(f) for f in self.freq_factors))
            if not all(math.isfinite(f) and f > 0 for f in self.freq_factors):
                raise ValueError("rope frequency factors must be finite numbers > 0")

    @property
    def table_scale(self) -> float:
        """What the cos and sin tables are multiplied by (``yarn``'s attention factor, else 1)."""
        if self.kind != "yarn":
            return 1.0
        if self.attention_factor is not None:
            return self.attention_factor
        return yarn_mscale(self.factor)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction 0.1·mscale·ln(factor) + 1 (1 for factor ≤ 1)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _theta(rotary_dim: int, base: float) -> Tensor:
    """base^(−2i/r) (r/2,) float32, computed in float64 first."""
    exponent = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim  # (r/2,)
    return (1.0 / base**exponent).float()


def frequencies(rotary_dim: int, base: float, scaling: RopeScaling = RopeScaling(),
                length: int | None = None) -> Tensor:
    """θ_i (rotary_dim/2,) float32: base^(−2i/rotary_dim), then scaled (``length``: the positions the
    table covers, which ``dynamic`` scaling depends on)."""
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"rotary needs an even width >= 2, got {rotary_dim}")
    if base <= 1.0:
        raise ValueError(f"rotary base must be greater than 1, got {base}")
    theta = _theta(rotary_dim, base)  # (r/2,): in float64 first, so SmolLM2's maps stay bit-identical
    if scaling.freq_factors is not None:
        if len(scaling.freq_factors) != theta.numel():
            raise ValueError(f"{len(scaling.freq_factors)} rope frequency factors for {theta.numel()} frequencies")
        return theta / torch.tensor(scaling.freq_factors, dtype=torch.float32)
    if scaling.kind == "linear":
        return theta / scaling.factor
    if scaling.kind == "dynamic":
        return _dynamic(rotary_dim, base, scaling, length)
    if scaling.kind == "llama3":
        return _llama3(theta, scaling)
    if scaling.kind == "yarn":
        return _yarn(theta, rotary_dim, base, scaling)
    return theta


def _dynamic(rotary_dim: int, base: float, s: RopeScaling, length: int | None) -> Tensor:
    """Dynamic NTK: the base raised for a sequence longer than ``original_max_len`` (unscaled otherwise)."""
    if length is None or length <= s.original_max_len:
        return _theta(rotary_dim, base)
    grown = base * ((s.factor * length / s.original_max_len) - (s.factor - 1)) ** (rotary_dim / (rotary_dim - 2))
    return _theta(rotary_dim, grown)


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


def _yarn(theta: Tensor, rotary_dim: int, base: float, s: RopeScaling) -> Tensor:
    """YaRN: pair i interpolated (θ_i / factor) below the band, kept (extrapolated) above it, blended by a
    linear ramp over pair indices between the dimensions that make β_fast and β_slow rotations over the
    original context."""
    def correction_dim(rotations: float) -> float:  # the pair index that turns ``rotations`` times
        return rotary_dim * math.log(s.original_max_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(s.beta_fast), correction_dim(s.beta_slow)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rotary_dim - 1)
    if low == high:
        high += 0.001  # the reference's guard against a zero-width ramp
    ramp = ((torch.arange(rotary_dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)  # (r/2,)
    kept = 1 - ramp  # 1: extrapolated (θ kept), 0: interpolated (θ / factor)
    return theta / s.factor * (1 - kept) + theta * kept


def rope_tables(length: int, rotary_dim: int, base: float, scaling: RopeScaling = RopeScaling(),
                device: torch.device | None = None) -> tuple[Tensor, Tensor]:
    """cos and sin tables (T, rotary_dim) float32 for positions 0..T−1 in the rotate-half layout
    (multiplied by :attr:`RopeScaling.table_scale`)."""
    theta = frequencies(rotary_dim, base, scaling, length).to(device)  # (r/2,)
    positions = torch.arange(length, dtype=torch.float32, device=device)  # (T,)
    angles = torch.outer(positions, theta)  # (T, r/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, r)
    scale = scaling.table_scale
    if scale == 1.0:
        return angles.cos(), angles.sin()
    return angles.cos() * scale, angles.sin() * scale


def rotate_partial(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the first r = cos.size(-1) dims of x (B, H, T, dk) by position; the rest pass through.

    The tables are cast to x's dtype first (as the reference does for bf16 and fp16 models)."""
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    rotary_dim = cos.size(-1)
    if rotary_dim == x.size(-1):
        return apply_rotary(x, cos, sin)
    rotated = apply_rotary(x[..., :rotary_dim], cos, sin)  # (B, H, T, r)
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)  # (B, H, T, dk)
