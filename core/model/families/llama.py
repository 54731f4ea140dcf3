"""A Llama-family decoder (Llama 2/3, SmolLM2, Mistral, Qwen2, Qwen3, Gemma) that returns every head's attention.

Pre-norm blocks: x + Attention(RMSNorm(x)), then x + GatedMLP(RMSNorm(x)); rotary
positions on queries and keys; grouped-query attention (H query heads share Hkv
key/value heads); an output projection optionally tied to the token embedding.
The maps show all H query heads; :attr:`LlamaConfig.kv_head_of` labels each with
the key/value head it reads. The variants are flags of :class:`LlamaConfig`.

Glossary: B batch, T length, L layers, H query heads, Hkv key/value heads, dk head
width, D model width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from core.model.families.decoder import ACTIVATIONS, DecoderAttention, DecoderLM
from core.model.families.grouped import embedding
from core.model.families.llama_config import LlamaConfig
from core.model.families.norms import RMSNorm
from core.model.families.rope import rope_tables
from core.model.trace import put

__all__ = ["LlamaConfig", "LlamaModel"]


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
