"""A LayerNorm decoder (GPT-2, GPT-NeoX/Pythia, OPT, Phi) that returns every head's attention.

Each block holds a LayerNorm'd self-attention and a two-layer MLP, arranged as
:class:`~core.model.families.gpt_config.GptConfig`'s ``block`` says (sequential pre-norm,
post-norm, or attention and MLP in parallel on the same input). Positions are a learned
table added to the token embeddings, or rotary on part of each head.

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from core.model.families.decoder import ACTIVATIONS, DecoderAttention, DecoderLM
from core.model.families.gpt_config import GptConfig
from core.model.families.grouped import embedding
from core.model.families.norms import layer_norm
from core.model.families.rope import rope_tables
from core.model.trace import put

__all__ = ["GptConfig", "GptModel"]


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
