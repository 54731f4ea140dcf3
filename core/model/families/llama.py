"""A Llama-family decoder (Llama 2/3, SmolLM2, Mistral, Qwen2, Qwen3, Gemma) that returns every head's
attention: its configuration and the model it builds.

Pre-norm blocks: x + Attention(RMSNorm(x)), then x + GatedMLP(RMSNorm(x)); rotary
positions on queries and keys; grouped-query attention (H query heads share Hkv
key/value heads); an output projection optionally tied to the token embedding.
The maps show all H query heads; :attr:`LlamaConfig.kv_head_of` labels each with
the key/value head it reads.

One :class:`LlamaConfig` covers every variant as flags that default to plain Llama: Mistral
(``sliding_window``), Qwen2 (``qkv_bias``), Qwen3 (``qk_norm``, ``explicit_head_dim``) and Gemma
(``norm_plus_one``, ``embed_scale``, ``activation="gelu_pytorch_tanh"``, explicit head width).

Glossary: B batch, T length, L layers, H query heads, Hkv key/value heads, dk head
width, D model width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.families.decoder import ACTIVATIONS, DecoderAttention, DecoderLM, DecoderSpec
from core.model.families.grouped import embedding, kv_head_of
from core.model.families.norms import RMSNorm
from core.model.families.rope import RopeScaling, rope_tables
from core.model.trace import put

__all__ = ["LlamaConfig", "LlamaModel"]


@dataclass(frozen=True)
class LlamaConfig(DecoderSpec):
    """Sizes and constants of a Llama-family decoder (JSON round trip with ``asdict``).

    Attributes:
        max_len: the longest input the model is run on (at most its trained context).
        pad_id: the id padding a batch (never attended to while ``padding`` is on).
        bos_id / eos_id: begin/end of sequence ids (None when the model has none).
        explicit_head_dim: the head width when it is not d_model / n_heads (Gemma, Qwen3).
        qkv_bias / out_bias / mlp_bias: biases on the q/k/v, output and feed-forward projections.
        qk_norm: an RMSNorm on each head's queries and keys before the rotation (Qwen3).
        norm_plus_one: RMSNorm gains stored as offsets from 1 (Gemma).
        embed_scale: token embeddings multiplied by √d_model (Gemma).
        activation: the gated feed-forward's activation (SiLU = SwiGLU; Gemma's tanh GELU = GeGLU).
        sliding_window: each query sees only the last ``sliding_window`` keys (Mistral).
        rope_type … rope_freq_factors: rotary scaling (:class:`~core.model.families.rope.RopeScaling`'s
            fields of the same names; ``rope_freq_factors`` a GGUF's ``rope_freqs``).
    """

    vocab_size: int
    d_model: int
    n_decoder_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    max_len: int = 2048
    tie_embeddings: bool = True
    pad_id: int = 0
    bos_id: int | None = None
    eos_id: int | None = None
    explicit_head_dim: int | None = None
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norm_plus_one: bool = False
    embed_scale: bool = False
    activation: str = "silu"
    sliding_window: int | None = None
    rope_type: str = RopeScaling.kind  # the rope_* defaults are RopeScaling's, written once
    rope_factor: float = RopeScaling.factor
    rope_low_freq_factor: float = RopeScaling.low_freq_factor
    rope_high_freq_factor: float = RopeScaling.high_freq_factor
    rope_original_max_len: int = RopeScaling.original_max_len
    rope_beta_fast: float = RopeScaling.beta_fast
    rope_beta_slow: float = RopeScaling.beta_slow
    rope_truncate: bool = RopeScaling.truncate
    rope_attention_factor: float | None = RopeScaling.attention_factor
    rope_freq_factors: tuple[float, ...] | None = RopeScaling.freq_factors

    def __post_init__(self) -> None:
        self.check_sizes("vocab_size", "d_model", "n_decoder_layers", "n_heads", "n_kv_heads", "d_ff", "max_len")
        if self.explicit_head_dim is None and self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} does not split into {self.n_heads} heads")
        if self.head_dim < 2 or self.head_dim % 2:
            raise ValueError(f"the head width must be even for rotary positions, got {self.head_dim}")
        kv_head_of(self.n_heads, self.n_kv_heads)  # raises when the groups are uneven
        self.check_pad_id()
        self.check_positive("norm_eps", "rope_base")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
        if self.sliding_window is not None and self.sliding_window < 1:
            raise ValueError(f"sliding_window must be at least 1, got {self.sliding_window}")
        if self.rope_freq_factors is not None:  # a list after a JSON round trip
            object.__setattr__(self, "rope_freq_factors", tuple(float(f) for f in self.rope_freq_factors))
            if len(self.rope_freq_factors) != self.head_dim // 2:
                raise ValueError(f"{len(self.rope_freq_factors)} rope frequency factors for a head width of "
                                 f"{self.head_dim}")
        self.rope_scaling  # noqa: B018 (building it raises on an unsupported type or factor)

    @property
    def head_dim(self) -> int:
        """Width of one head: the explicit one, else d_model / n_heads."""
        return self.explicit_head_dim or self.d_model // self.n_heads

    @property
    def rope_scaling(self) -> RopeScaling:
        """The rotary scaling these fields describe."""
        return RopeScaling(self.rope_type, self.rope_factor, self.rope_low_freq_factor, self.rope_high_freq_factor,
                           self.rope_original_max_len, self.rope_beta_fast, self.rope_beta_slow, self.rope_truncate,
                           self.rope_attention_factor, self.rope_freq_factors)


class GatedMLP(nn.Module):
    """down(act(gate(x)) ⊙ up(x)): SwiGLU with SiLU (Llama), GeGLU with tanh GELU (Gemma)."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))  # (B, T, D)


class LlamaLayer(nn.Module):
    """One pre-norm block: attention then the gated MLP, each added to the residual stream."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.norm_eps, c.norm_plus_one)
        self.attn = DecoderAttention(c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, qkv_bias=c.qkv_bias,
                                     out_bias=c.out_bias, qk_norm=RMSNorm if c.qk_norm else None, norm_eps=c.norm_eps)
        self.ffn_norm = RMSNorm(c.d_model, c.norm_eps, c.norm_plus_one)
        self.mlp = GatedMLP(c.d_model, c.d_ff, c.activation, c.mlp_bias)

    def forward(self, x, rotary, mask, call, head_mask, cache=None):
        attended, result = self.attn(self.attn_norm(x), rotary, mask, call, head_mask, cache)
        x = put(call, "resid_mid", x + put(call, "attn_out", attended))  # (B, T, D)
        return put(call, "resid_out", x + put(call, "ffn_out", self.mlp(self.ffn_norm(x)))), result


class LlamaModel(DecoderLM):
    """A Llama-family causal language model; ``forward`` matches :class:`~core.model.transformer.Transformer`'s."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c.n_decoder_layers))
        self.norm = RMSNorm(c.d_model, c.norm_eps, c.norm_plus_one)
        self._output_head(bias=False)

    def _embed(self, tgt: Tensor, start: int) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Token embeddings (B, T, D) of ``tgt`` (scaled by √D for Gemma) and the rotary tables from ``start``."""
        c = self.config
        end = start + tgt.size(1)
        cos, sin = rope_tables(end, c.head_dim, c.rope_base, c.rope_scaling, tgt.device)  # (start + T, dk) each
        x = self.embed(tgt)  # (B, T, D)
        if c.embed_scale:  # √D rounded to the embeddings' dtype first, as the reference
            x = x * torch.tensor(math.sqrt(c.d_model), dtype=x.dtype)
        return x, (cos[start:], sin[start:])
