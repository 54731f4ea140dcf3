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

from torch import Tensor, nn

from core.model.contract import AttentionControls
from core.model.families.decoder import ACTIVATIONS, DecoderAttention, DecoderLM, decoder_mask
from core.model.families.grouped import HeadCall, embedding
from core.model.families.llama_config import LlamaConfig
from core.model.families.norms import RMSNorm
from core.model.families.rope import rope_tables
from core.model.kv_cache import KVCache

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
        x = x + attended  # (B, T, D)
        return x + self.mlp(self.ffn_norm(x)), result


class LlamaModel(DecoderLM):
    """A Llama-family causal language model; ``forward`` matches :class:`~core.model.transformer.Transformer`'s."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c.n_decoder_layers))
        self.norm = RMSNorm(c.d_model, c.norm_eps, c.norm_plus_one)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def decode(self, tgt: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, cache: KVCache | None = None) -> tuple[Tensor, list]:
        """Hidden states (B, T, D) after the final norm, and per-layer attention results.

        Args:
            key_mask: (B, T) bool, ``False`` on right-padding (used while ``controls.padding``).
            cache: with a KV cache (causal decoding), ``tgt`` holds only the positions after those it has seen.
        """
        c = self.config
        start = self._begin(tgt, cache)
        end = start + tgt.size(1)
        mask = decoder_mask(tgt.size(1), controls, key_mask, c.sliding_window, tgt.device, start)
        cos, sin = rope_tables(end, c.head_dim, c.rope_base, c.rope_scaling, tgt.device)  # (start + T, dk) each
        call = HeadCall(controls.temperature, controls.hard, need_weights)
        heads = self._head_mask(controls)
        x, results = self.embed(tgt), []  # (B, T, D)
        if c.embed_scale:
            x = x * math.sqrt(c.d_model)
        for i, layer in enumerate(self.layers):
            x, result = layer(x, (cos[start:], sin[start:]), mask, call, None if heads is None else heads[i],
                              None if cache is None else cache.layers[i][0])
            results.append(result)
        return self.norm(x), results
