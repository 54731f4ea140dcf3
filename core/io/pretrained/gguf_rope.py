"""Rotary scaling of a GGUF model, as :class:`LlamaConfig` fields.

* ``{arch}.rope.scaling.type`` ``linear`` with ``{arch}.rope.scaling.factor``: every frequency divided by it.
* Llama 3.1+: llama.cpp's converter stores no scaling metadata but a ``rope_freqs`` tensor of per-frequency
  factors f_i, and llama.cpp rotates pair i by θ_i / f_i. Those factors are Llama 3.1's scaling
  (:func:`core.model.families.rope._llama3`): f = factor for long wavelengths, 1 for short ones,
  1 / ((1 − s)/factor + s) between, with s linear in ``original / wavelength``. The factor and the band
  are recovered from the stored factors (the config says what scaling the file holds), and the
  frequencies they give are checked against θ_i / f_i (relative 1e-4): factors of any other shape are
  refused. The model then rotates by θ_i / f_i with the stored f_i themselves, exactly as llama.cpp does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_data import raw_tensor
from core.io.pretrained.gguf_header import GGML_TYPE_NAMES, STRING, GGUFHeader
from core.io.pretrained.gguf_quants import dequantized
from core.model.families.rope import RopeScaling, frequencies

ROPE_FREQS = "rope_freqs.weight"
_F32, _F16 = 0, 1
_TOLERANCE = 1e-4
_DEFAULT_ORIGINAL = 8192  # Llama 3's original_max_position_embeddings


def rope_fields(header: GGUFHeader, path: Path, arch: str, head_dim: int, base: float) -> dict[str, Any]:
    """The ``rope_*`` :class:`LlamaConfig` fields of the file at ``path`` (empty: no scaling).

    Raises:
        CheckpointError: an unsupported scaling type, or ``rope_freqs`` factors that are not Llama 3.1's.
    """
    kind, scaling = header.scalars.get(f"{arch}.rope.scaling.type", (STRING, "none"))
    if kind != STRING or scaling not in ("none", "linear"):
        raise CheckpointError(f"{path.name}: rotary scaling {scaling!r} is not supported; supported: none, "
                              "linear, Llama 3.1's rope_freqs")
    fields: dict[str, Any] = {}
    if scaling == "linear":
        kind, factor = header.scalars.get(f"{arch}.rope.scaling.factor", (6, None))
        if kind not in (6, 12) or not (isinstance(factor, float) and math.isfinite(factor) and factor > 0):
            raise CheckpointError(f"{path.name}: GGUF {arch}.rope.scaling.factor must be a number above 0")
        fields = {"rope_type": "linear", "rope_factor": float(factor)}
    if ROPE_FREQS in header.tensors:
        if fields:
            raise CheckpointError(f"{path.name}: both linear rotary scaling and a rope_freqs tensor")
        kind, original = header.scalars.get(f"{arch}.rope.scaling.original_context_length", (4, _DEFAULT_ORIGINAL))
        if not isinstance(original, int) or original < 1:
            raise CheckpointError(f"{path.name}: GGUF {arch}.rope.scaling.original_context_length must be a "
                                  f"positive integer, got {original!r}")
        fields = llama3_fields(_read_factors(header, path), head_dim, base, original, path.name)
    return fields


def _read_factors(header: GGUFHeader, path: Path) -> np.ndarray:
    """The ``rope_freqs`` tensor (dk/2,) as float64 (its shape and place in the file were checked by the scan)."""
    info = header.tensors[ROPE_FREQS]
    if info.type not in (_F32, _F16):
        got = GGML_TYPE_NAMES.get(info.type, info.type)
        raise CheckpointError(f"{path.name}: rope_freqs must be F32 or F16, got {got}")
    factors = dequantized(raw_tensor(path, header, info), info, path.name).astype(np.float64)  # (dk/2,)
    if not np.isfinite(factors).all() or (factors <= 0).any():
        raise CheckpointError(f"{path.name}: rope_freqs holds factors that are not finite and above 0")
    return factors


def llama3_fields(factors: np.ndarray, head_dim: int, base: float, original: int, name: str) -> dict[str, Any]:
    """Llama 3.1 scaling fields that give θ_i / factors_i (checked), for the band in ``original``'s units.

    Raises:
        CheckpointError: no Llama 3.1 scaling reproduces the factors.
    """
    factor = float(factors.max())
    if factor <= 1.0 + _TOLERANCE:
        fields: dict[str, Any] = {}
    else:
        theta = frequencies(head_dim, base).double().numpy()  # (dk/2,)
        x = original * theta / (2 * math.pi)  # original / wavelength, rising with θ
        share = (1 / factors - 1 / factor) / (1 - 1 / factor)  # s: 0 at the full factor, 1 unscaled
        low, high = _band(x, share)
        fields = {"rope_type": "llama3", "rope_factor": factor, "rope_low_freq_factor": low,
                  "rope_high_freq_factor": high, "rope_original_max_len": original}
    if not (factors == 1.0).all():
        fields["rope_freq_factors"] = tuple(float(f) for f in factors.astype(np.float32))  # the model's divisors
    expected = frequencies(head_dim, base).double() / torch.from_numpy(factors)  # (dk/2,)
    try:
        scaling = RopeScaling(*(fields.get(k, d) for k, d in _DEFAULTS))  # the recovered formula, not the factors
    except ValueError as error:
        raise CheckpointError(f"{name}: rope_freqs are not Llama 3.1's rotary scaling ({error})") from None
    got = frequencies(head_dim, base, scaling).double()
    if not torch.allclose(got, expected, rtol=_TOLERANCE, atol=0.0):
        raise CheckpointError(f"{name}: rope_freqs factors are not Llama 3.1's rotary scaling (the only "
                              "per-frequency scaling supported)")
    return fields


_DEFAULTS = (("rope_type", "default"), ("rope_factor", 1.0), ("rope_low_freq_factor", 1.0),
             ("rope_high_freq_factor", 4.0), ("rope_original_max_len", _DEFAULT_ORIGINAL))


def _band(x: np.ndarray, share: np.ndarray) -> tuple[float, float]:
    """(low, high) with s = (x − low) / (high − low) on the blended pairs, x ≤ low where s = 0 and
    x ≥ high where s = 1 (x = original / wavelength of each pair)."""
    eps = 1e-6
    mid = (share > eps) & (share < 1 - eps)
    scaled_x = x[share <= eps].max(initial=0.0)  # the largest x at the full factor
    kept_x = x[share >= 1 - eps].min(initial=float(x.max()) * 2 + 1)  # the smallest x left unscaled
    if mid.sum() >= 2:
        slope, intercept = np.polyfit(x[mid], share[mid], 1)  # s = slope·x + intercept
        low = -intercept / slope
        return float(low), float(low + 1 / slope)
    if mid.sum() == 1:
        point, s = float(x[mid][0]), float(share[mid][0])
        high = (point + min(kept_x, point + (point - scaled_x) * (1 / s - 1))) / 2  # inside both bounds
        low = (high - point / s) / (1 - 1 / s)
        return low, high
    return scaled_x + (kept_x - scaled_x) / 3, scaled_x + 2 * (kept_x - scaled_x) / 3
