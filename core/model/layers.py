"""Encoder and decoder layers and stacks, with Add & Norm in either placement.

``post`` (the paper): x = LayerNorm(x + Sublayer(x)).
``pre`` (the Annotated Transformer): x = x + Sublayer(LayerNorm(x)).
A pre-norm stack ends with a LayerNorm (``ModelConfig.final_norm``); the paper's post-norm stack needs none.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.attention import AttentionResult, MultiHeadAttention
from core.model.kv_cache import AttentionCache
from core.model.trace import Site, of_kind, put


@dataclass(frozen=True)
class LayerCall:
    """Per-call settings every attention sublayer receives (never stored on modules)."""

    temperature: float = 1.0
    hard: bool = False
    need_weights: bool = False
    need_scores: bool = False
    site: Site | None = None  # where the layer writes its part of the trace, when recording


class FeedForward(nn.Module):
    """The position-wise FFN: Linear(D → d_ff) → ReLU → dropout → Linear(d_ff → D)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, D) → (B, T, D), each position on its own."""
        hidden = torch.relu(self.linear1(x))  # (B, T, d_ff)
        return self.linear2(self.dropout(hidden) if self.training else hidden)  # (B, T, D)


class SublayerConnection(nn.Module):
    """Add & Norm around a sublayer, for both layer kinds (the Annotated Transformer's ``SublayerConnection``):
    post-norm ``norm(x + dropout(sublayer(x)))`` as in the paper, or pre-norm ``x + dropout(sublayer(norm(x)))``."""

    def __init__(self, pre_norm: bool, dropout: float) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.dropout = nn.Dropout(dropout)

    def attend(
        self, x: Tensor, norm: nn.LayerNorm, attn: MultiHeadAttention, memory: Tensor | None,
        mask: Tensor | None, call: LayerCall, head_mask: Tensor | None, weights_out: Tensor | None = None,
        cache: AttentionCache | None = None,
    ) -> tuple[Tensor, AttentionResult]:
        """One attention sublayer with its Add & Norm: x (B, Tq, D) → (B, Tq, D), and the attention result."""
        inp = norm(x) if self.pre_norm else x
        result = attn(inp, memory, mask, temperature=call.temperature, hard=call.hard, head_mask=head_mask,
                      need_weights=call.need_weights, need_scores=call.need_scores, weights_out=weights_out,
                      cache=cache, site=call.site)
        return put(call, "resid_mid", self._add(x, put(call, "attn_out", result.output), norm)), result

    def feed_forward(self, x: Tensor, norm: nn.LayerNorm, ff: FeedForward, call: LayerCall) -> Tensor:
        """The FFN sublayer with its Add & Norm: (B, T, D) → (B, T, D)."""
        out = put(call, "ffn_out", ff(norm(x) if self.pre_norm else x))
        return put(call, "resid_out", self._add(x, out, norm))

    def _add(self, x: Tensor, sublayer_out: Tensor, norm: nn.LayerNorm) -> Tensor:
        if self.training:  # in eval dropout is the identity: skip the call (decoding makes thousands)
            sublayer_out = self.dropout(sublayer_out)
        if self.pre_norm:
            return x + sublayer_out
        return norm(x + sublayer_out)


class EncoderLayer(SublayerConnection):
    """Self-attention then the FFN, each wrapped in Add & Norm."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, pre_norm: bool, score: str) -> None:
        super().__init__(pre_norm, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, cross=False, score=score, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(
        self, x: Tensor, mask: Tensor | None, call: LayerCall, head_mask: Tensor | None = None,
        weights_out: Tensor | None = None,
    ) -> tuple[Tensor, AttentionResult]:
        """x (B, S, D) → (B, S, D) and the self-attention result (weights (B, H, S, S) when asked for,
        written into ``weights_out`` when given)."""
        x, attn = self.attend(x, self.norm1, self.self_attn, None, mask, call, head_mask, weights_out)
        return self.feed_forward(x, self.norm2, self.ff, call), attn


class DecoderLayer(SublayerConnection):
    """Masked self-attention, cross-attention to the encoder (when there is one), then the FFN."""

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, dropout: float, pre_norm: bool, score: str, cross: bool
    ) -> None:
        super().__init__(pre_norm, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, cross=False, score=score, dropout=dropout)
        self.cross_attn = (
            MultiHeadAttention(d_model, n_heads, cross=True, score=score, dropout=dropout) if cross else None
        )
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model) if cross else None

    def forward(
        self, x: Tensor, self_mask: Tensor | None, memory: Tensor | None, memory_mask: Tensor | None,
        call: LayerCall, head_mask: tuple[Tensor | None, Tensor | None] = (None, None),
        weights_out: tuple[Tensor | None, Tensor | None] = (None, None),
        cache: tuple[AttentionCache, AttentionCache] | None = None,
    ) -> tuple[Tensor, AttentionResult, AttentionResult | None]:
        """x (B, T, D) → (B, T, D), with the self- (B, H, T, T) and cross-attention (B, H, T, S) results.

        ``weights_out``: where to write the self and cross weights when they are asked for;
        ``cache``: this layer's (self, cross) key/value caches when decoding incrementally."""
        self_cache, cross_cache = (None, None) if cache is None else cache
        x, self_result = self.attend(x, self.norm1, self.self_attn, None, self_mask, call, head_mask[0],
                                     weights_out[0], self_cache)
        cross_result = None
        if self.cross_attn is not None:
            x, cross_result = self.attend(x, self.norm2, self.cross_attn, memory, memory_mask, of_kind(call, "cross"),
                                          head_mask[1], weights_out[1], cross_cache)
        return self.feed_forward(x, self.norm3, self.ff, call), self_result, cross_result


class LayerResults(list):
    """One stack's per-layer :class:`AttentionResult` s (a list), plus, when weights are asked for,
    the (L, B, H, Tq, Tk) float32 tensor every layer writes its weights into: the stacked maps
    exist once, never as L separate tensors plus their copy."""

    def __init__(self, n_layers: int, shape: tuple[int, int, int, int] | None, device: torch.device) -> None:
        super().__init__()
        self.weights = None if shape is None else torch.empty(n_layers, *shape, device=device)

    def slot(self, layer: int) -> Tensor | None:
        """Layer ``layer`` 's (B, H, Tq, Tk) slice to pass as ``weights_out``, or None."""
        return None if self.weights is None else self.weights[layer]


def stack_maps(results: list[AttentionResult | None], field: str) -> Tensor | None:
    """Stack one field (``weights`` or ``scores``) of per-layer results into (L, B, H, Tq, Tk)."""
    maps = [getattr(r, field) for r in results if r is not None]
    if not maps or any(m is None for m in maps):
        return None
    buffer = getattr(results, field, None) if field == "weights" else None
    if buffer is not None and len(maps) == buffer.size(0):
        return buffer  # the layers wrote into it: nothing to copy
    return torch.stack(maps)  # (L, B, H, Tq, Tk)
