"""A LayerNorm decoder (GPT-2, GPT-NeoX/Pythia, OPT, Phi) that returns every head's attention: its
configuration and the model it builds.

Each block holds a LayerNorm'd self-attention and a two-layer MLP, arranged as :class:`GptConfig`'s
``block`` says:

* ``sequential`` (GPT-2, OPT-125m, non-parallel NeoX): x + Attn(LN₁(x)), then + MLP(LN₂(·));
* ``post_norm`` (OPT-350m, ``do_layer_norm_before: false``): LN₁(x + Attn(x)), then LN₂(· + MLP(·));
* ``parallel`` (GPT-NeoX/Pythia): x + Attn(LN₁(x)) + MLP(LN₂(x));
* ``parallel_shared`` (Phi): x + Attn(LN(x)) + MLP(LN(x)) with one norm.

Positions are ``learned`` (a table added to the token embeddings: GPT-2; OPT with its offset of 2) or
``rotary`` on the first ``rotary_dim`` dimensions of each head (NeoX, Phi).

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.families.decoder import ACTIVATIONS, DecoderAttention, DecoderLM, DecoderSpec
from core.model.families.grouped import embedding, kv_head_of
from core.model.families.norms import layer_norm
from core.model.families.rope import rope_tables
from core.model.trace import put

__all__ = ["GptConfig", "GptModel"]

BLOCKS = ("sequential", "post_norm", "parallel", "parallel_shared")
POSITIONS = ("learned", "rotary")


@dataclass(frozen=True)
class GptConfig(DecoderSpec):
    """Sizes and constants of a LayerNorm decoder (JSON round trip with ``asdict``).

    Attributes:
        n_positions: rows of the learned position table (its offset included).
        position_offset: learned position p is row p + offset (OPT: 2).
        rotary_dim: rotated dimensions of each head (rotary positions).
        qkv_bias / out_bias / mlp_bias / lm_head_bias: which projections have biases.
        final_norm: a LayerNorm after the last block.
    """

    vocab_size: int
    d_model: int
    n_decoder_layers: int
    n_heads: int
    d_ff: int
    max_len: int
    n_kv_heads: int | None = None
    norm_eps: float = 1e-5
    activation: str = "gelu_new"
    block: str = "sequential"
    positions: str = "learned"
    n_positions: int = 0
    position_offset: int = 0
    rotary_dim: int = 0
    rope_base: float = 10000.0
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    final_norm: bool = True
    tie_embeddings: bool = True
    lm_head_bias: bool = False
    pad_id: int = 0
    bos_id: int | None = None
    eos_id: int | None = None

    def __post_init__(self) -> None:
        self.check_sizes("vocab_size", "d_model", "n_decoder_layers", "n_heads", "d_ff", "max_len")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} does not split into {self.n_heads} heads")
        kv_head_of(self.n_heads, self.kv_heads)  # raises when the groups are uneven
        if self.block not in BLOCKS or self.positions not in POSITIONS:
            raise ValueError(f"block must be one of {BLOCKS} and positions one of {POSITIONS}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
        if self.positions == "learned" and self.n_positions < self.max_len + self.position_offset:
            raise ValueError(f"{self.n_positions} learned positions cannot cover max_len {self.max_len} "
                             f"+ offset {self.position_offset}")
        if self.positions == "rotary" and not (2 <= self.rotary_dim <= self.head_dim and self.rotary_dim % 2 == 0):
            raise ValueError(f"rotary_dim must be even and within the head width {self.head_dim}, "
                             f"got {self.rotary_dim}")
        self.check_pad_id()
        self.check_positive("norm_eps", "rope_base")


class MLP(nn.Module):
    """down(act(up(x))): the two-layer feed-forward network."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.down(self.act(self.up(x)))  # (B, T, D)


class GptLayer(nn.Module):
    """One block: attention and MLP, arranged as ``config.block`` says."""

    def __init__(self, c: GptConfig) -> None:
        super().__init__()
        self.block = c.block
        self.attn_norm = layer_norm(c.d_model, c.norm_eps)
        self.attn = DecoderAttention(c.d_model, c.n_heads, c.kv_heads, c.head_dim, qkv_bias=c.qkv_bias,
                                     out_bias=c.out_bias)
        self.ffn_norm = None if c.block == "parallel_shared" else layer_norm(c.d_model, c.norm_eps)
        self.mlp = MLP(c.d_model, c.d_ff, c.activation, c.mlp_bias)

    def forward(self, x, rotary, mask, call, head_mask, cache=None):
        if self.block == "post_norm":
            attended, result = self.attn(x, rotary, mask, call, head_mask, cache)
            x = put(call, "resid_mid", self.attn_norm(x + put(call, "attn_out", attended)))  # (B, T, D)
            return put(call, "resid_out", self.ffn_norm(x + put(call, "ffn_out", self.mlp(x)))), result
        normed = self.attn_norm(x)
        attended, result = self.attn(normed, rotary, mask, call, head_mask, cache)
        mid = put(call, "resid_mid", x + put(call, "attn_out", attended))  # parallel blocks: x + attention alone
        if self.block == "parallel_shared":
            return put(call, "resid_out", mid + put(call, "ffn_out", self.mlp(normed))), result
        if self.block == "parallel":
            return put(call, "resid_out", mid + put(call, "ffn_out", self.mlp(self.ffn_norm(x)))), result
        return put(call, "resid_out", mid + put(call, "ffn_out", self.mlp(self.ffn_norm(mid)))), result


class GptModel(DecoderLM):
    """A LayerNorm causal language model; ``forward`` matches :class:`~core.model.transformer.Transformer`'s."""

    def __init__(self, config: GptConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.position = embedding(c.n_positions, c.d_model) if c.positions == "learned" else None
        self.layers = nn.ModuleList(GptLayer(c) for _ in range(c.n_decoder_layers))
        self.norm = layer_norm(c.d_model, c.norm_eps) if c.final_norm else None
        self._output_head(c.lm_head_bias)

    def _embed(self, tgt: Tensor, start: int) -> tuple[Tensor, tuple[Tensor, Tensor] | None]:
        """Token (+ learned position) embeddings (B, T, D) of ``tgt`` from position ``start``, and the rotary tables."""
        c = self.config
        end = start + tgt.size(1)
        x = self.embed(tgt)  # (B, T, D)
        if self.position is not None:
            return x + self.position(torch.arange(start, end, device=tgt.device) + c.position_offset), None
        cos, sin = rope_tables(end, c.rotary_dim, c.rope_base, device=tgt.device)  # (start + T, r) each
        return x, (cos[start:], sin[start:])
