"""Phi-3 (and Phi-3.5 / Phi-4 of ``model_type`` ``phi3``): a Llama-family decoder, every head's attention returned.

Its blocks are Llama's (:class:`~core.model.families.llama.LlamaModel`: RMSNorm, grouped-query attention,
SwiGLU); what differs is how it stores them and how it rotates:

* the checkpoint fuses the query, key and value projections (``qkv_proj``) and the gate and up
  projections (``gate_up_proj``); the reader splits them row-wise into the separate projections, so
  the maps come from the same :class:`~core.model.families.decoder.DecoderAttention` as Llama's;
* the rotation may cover only the first ``rotary_dim`` dimensions of each head (Phi-4-mini: 3/4);
* **LongRoPE** (``rope_scaling`` of type ``longrope``, formerly ``su``): each frequency θ_i is divided
  by its own ``short_factor`` and the cos/sin tables multiplied by an attention factor. Beyond the
  pretraining length a second set (``long_factor``) replaces the first for the whole sequence; the
  model is therefore run only up to that length (``max_len``), where the short factors hold.

Glossary: T length, dk head width, r rotated width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from core.model.families.llama import LlamaConfig, LlamaModel
from core.model.families.rope import frequencies

__all__ = ["Phi3Config", "Phi3Model", "longrope_scale"]


def longrope_scale(factor: float, original_max_len: int) -> float:
    """LongRoPE's scale on cos and sin: √(1 + ln s / ln L₀) for a context stretched s times past L₀, else 1."""
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original_max_len))


@dataclass(frozen=True)
class Phi3Config(LlamaConfig):
    """:class:`LlamaConfig` with Phi-3's defaults and rotary fields (JSON round trip with ``asdict``).

    Attributes:
        rotary_dim: dimensions of each head that are rotated (0: all of them).
        longrope_short_factors: LongRoPE's divisor of each θ_i, r/2 of them (empty: no LongRoPE).
        longrope_attention_factor: LongRoPE's multiplier of the cos/sin tables (1 without LongRoPE).
    """

    tie_embeddings: bool = False
    rotary_dim: int = 0
    longrope_short_factors: tuple[float, ...] = ()
    longrope_attention_factor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "longrope_short_factors", tuple(self.longrope_short_factors))  # a list after JSON
        super().__post_init__()
        if self.rotary_dim < 0 or self.rotary_dim > self.head_dim or self.rotary_dim % 2:
            raise ValueError(f"rotary_dim must be even and within the head width {self.head_dim}, "
                             f"got {self.rotary_dim}")
        factors = self.longrope_short_factors
        if factors and len(factors) != self.rotated // 2:
            raise ValueError(f"LongRoPE needs {self.rotated // 2} short factors (half the rotated width), "
                             f"got {len(factors)}")
        if not all(math.isfinite(f) and f > 0 for f in factors):
            raise ValueError("every LongRoPE short factor must be a finite number above 0")
        self.check_positive("longrope_attention_factor")
        if factors and self.rope_type != "default":
            raise ValueError(f"LongRoPE cannot be combined with rope scaling {self.rope_type!r}")

    @property
    def rotated(self) -> int:
        """r, the rotated width of each head."""
        return self.rotary_dim or self.head_dim


class Phi3Model(LlamaModel):
    """A Phi-3 causal language model: :class:`LlamaModel` with partial rotary and LongRoPE tables."""

    def _embed(self, tgt: Tensor, start: int) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Token embeddings (B, T, D) of ``tgt`` and the (T, r) rotary tables from ``start``."""
        c = self.config
        theta = frequencies(c.rotated, c.rope_base, c.rope_scaling).to(tgt.device)  # (r/2,)
        if c.longrope_short_factors:
            theta = theta / torch.tensor(c.longrope_short_factors, dtype=torch.float32, device=tgt.device)
        positions = torch.arange(start, start + tgt.size(1), dtype=torch.float32, device=tgt.device)  # (T,)
        angles = torch.outer(positions, theta)  # (T, r/2)
        angles = torch.cat([angles, angles], dim=-1)  # (T, r)
        scale = c.longrope_attention_factor
        return self.embed(tgt), (angles.cos() * scale, angles.sin() * scale)
