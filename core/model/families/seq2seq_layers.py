"""The parts Marian, BART/mBART and T5 share: their config, attention, feed-forward and layers.

The three families differ in a few switches, all in :class:`Seq2SeqConfig`: where the norm sits
(post-norm Marian and BART, pre-norm mBART and T5), which norm (LayerNorm, or T5's RMSNorm without
the mean), whether projections carry biases, whether scores are scaled by 1/√dk (not in T5), the
feed-forward network (plain or gated) and how positions enter (added to the embeddings, or a
relative bias added to the scores, see the family files).

Glossary: B batch, T length, S source length, H heads, dk head width, D model width, F feed-forward
width, V vocabulary. Masks are boolean with ``True`` = may attend.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.attention import AttentionResult, attention_weights
from core.model.contract import check_positive
from core.model.families.grouped import HeadCall, merged_heads
from core.model.kv_cache import AttentionCache
from core.model.trace import of_kind, put

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
}
POSITIONS = ("sinusoidal", "learned", "relative")


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Sizes and switches of a Marian, BART/mBART or T5 encoder-decoder (JSON round trip with ``asdict``).

    Attributes:
        family: ``marian``, ``bart``, ``mbart`` or ``t5``.
        d_kv: width of one head (T5 may differ from D / H).
        positions: ``sinusoidal`` (Marian), ``learned`` (BART, offset 2) or ``relative`` (T5 buckets).
        pre_norm: norm before each sublayer (mBART, T5) instead of after the residual sum.
        rms_norm: T5's RMSNorm (no mean, no bias) instead of LayerNorm.
        embed_scale: the embeddings' multiplier (√D when the config scales them).
        embedding_norm: LayerNorm right after embeddings + positions (BART's ``layernorm_embedding``).
        final_norm: a norm after each stack's last layer (mBART, T5).
        bias: projections carry biases (not in T5). scaled: scores divided by √dk (not in T5).
        gated: the feed-forward is act(x Wg) ⊙ (x Wu) (T5 v1.1).
        logits_scale: multiplier of the last hidden states before the head (T5 tied: D^-0.5).
        logits_bias: a ``final_logits_bias`` added to the logits (Marian, BART).
        decoder_start_id: the id the decoder starts from. forced_bos_id: the first generated id when
            the config forces one (mBART's language code, BART's ``<s>``), else None.
        never_generated: ids decoding rules out (Marian's pad).
        forced_eos_id: the id decoding must end with when its token budget runs out (the last step of
            ``max_new_tokens``; Hugging Face's ``forced_eos_token_id``), else None.
    """

    family: str
    vocab_size: int
    d_model: int
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    d_kv: int
    d_ff: int
    max_len: int
    pad_id: int
    eos_id: int
    decoder_start_id: int
    activation: str = "gelu"
    positions: str = "learned"
    pre_norm: bool = False
    rms_norm: bool = False
    norm_eps: float = 1e-5
    embed_scale: float = 1.0
    embedding_norm: bool = False
    final_norm: bool = False
    bias: bool = True
    scaled: bool = True
    gated: bool = False
    logits_scale: float = 1.0
    logits_bias: bool = False
    tied_head: bool = True
    relative_buckets: int = 32
    relative_max_distance: int = 128
    forced_bos_id: int | None = None
    never_generated: tuple[int, ...] = ()
    forced_eos_id: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_encoder_layers", "n_decoder_layers", "n_heads", "d_kv", "d_ff",
                     "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_len < 2:
            raise ValueError(f"an encoder-decoder needs at least 2 positions (its start and one generated token), "
                             f"got max_len {self.max_len}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions {self.positions!r} is not one of {', '.join(POSITIONS)}")
        for name in ("pad_id", "eos_id", "decoder_start_id", "forced_bos_id", "forced_eos_id"):
            if getattr(self, name) is not None and not 0 <= getattr(self, name) < self.vocab_size:
                raise ValueError(f"{name} {getattr(self, name)} is outside the vocabulary")
        if any(not 0 <= i < self.vocab_size for i in self.never_generated):
            raise ValueError("an id decoding rules out is outside the vocabulary")
        if self.positions == "relative" and not (4 <= self.relative_buckets
                                                 and self.relative_buckets // 2 < self.relative_max_distance):
            raise ValueError(f"relative positions need at least 4 buckets and a largest distance past the exact "
                             f"ones, got {self.relative_buckets} buckets and distance {self.relative_max_distance}")
        check_positive(self, "norm_eps")
        if not (math.isfinite(self.embed_scale) and math.isfinite(self.logits_scale)):
            raise ValueError("embed_scale and logits_scale must be finite numbers")

    # The same questions core asks a ModelConfig.
    architecture = "encoder-decoder"
    attention_kinds = ("encoder", "decoder", "cross")
    has_encoder = True
    has_decoder = True

    @property
    def head_dim(self) -> int:
        return self.d_kv

    def n_layers(self, kind: str) -> int:
        """Layers holding attention of ``kind`` (as :meth:`ModelConfig.n_layers`)."""
        return self.n_encoder_layers if kind == "encoder" else self.n_decoder_layers

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    """T5's norm: x / √(mean(x²) + ε) · w, with no mean subtracted and no bias."""

    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)  # (B, T, 1)
        return self.weight * (x * torch.rsqrt(variance + self.eps)).to(x.dtype)


def make_norm(c: Seq2SeqConfig) -> nn.Module:
    return RMSNorm(c.d_model, c.norm_eps) if c.rms_norm else nn.LayerNorm(c.d_model, eps=c.norm_eps)


def biased_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, bias: Tensor | None, scale: float,
                     call: HeadCall, head_mask: Tensor | None) -> AttentionResult:
    """softmax(β · (QKᵀ · scale + bias)) V per head.

    Args:
        q: (B, H, Tq, dk). k, v: (B, H, Tk, dk). mask: bool broadcastable to (B, H, Tq, Tk).
        bias: float broadcastable to (B, H, Tq, Tk) added to the scores (T5's relative positions), or None.
        head_mask: (H,) multiplier per head's output.

    Returns:
        output (B, Tq, H·dk); weights/scores (B, H, Tq, Tk) float32 when ``call.need_weights``.
    """
    if not (math.isfinite(call.temperature) and call.temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {call.temperature}")
    batch, n_heads, length, head_dim = q.shape
    weights = scores = None
    if call.site is not None:
        call.site.attention(q, k, v, mask, scale, bias)
    if call.need_weights or call.hard:
        raw = (q @ k.transpose(-2, -1)).float() * scale  # (B, H, Tq, Tk)
        if bias is not None:
            raw = raw + bias
        weights = attention_weights(raw, mask, temperature=call.temperature, hard=call.hard)
        scores = raw * call.temperature
        out = weights.to(v.dtype) @ v  # (B, H, Tq, dk)
    else:
        extra = None if bias is None else bias * call.temperature
        if mask is not None:
            blocked = torch.tensor(float("-inf"), dtype=q.dtype, device=q.device)
            extra = torch.where(mask, torch.zeros_like(blocked) if extra is None else extra.to(q.dtype), blocked)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=extra, scale=scale * call.temperature)
        if mask is not None:  # a fully masked row attends to nothing, as on the explicit path
            out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return merged_heads(out, head_mask, call, weights, scores)


class Attention(nn.Module):
    """Multi-head attention with separate query/key/value/output projections (self or cross)."""

    def __init__(self, c: Seq2SeqConfig) -> None:
        super().__init__()
        inner = c.n_heads * c.d_kv
        self.n_heads, self.head_dim = c.n_heads, c.d_kv
        self.scale = 1.0 / math.sqrt(c.d_kv) if c.scaled else 1.0
        self.q = nn.Linear(c.d_model, inner, bias=c.bias)
        self.k = nn.Linear(c.d_model, inner, bias=c.bias)
        self.v = nn.Linear(c.d_model, inner, bias=c.bias)
        self.o = nn.Linear(inner, c.d_model, bias=c.bias)

    def _heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dk)

    def forward(self, x: Tensor, source: Tensor, mask: Tensor | None, bias: Tensor | None, call: HeadCall,
                head_mask: Tensor | None, cache: AttentionCache | None = None,
                fixed: bool = False) -> tuple[Tensor, AttentionResult]:
        """Queries from ``x`` (B, Tq, D), keys and values from ``source`` (B, Tk, D).

        With a ``cache``, self-attention appends the new positions' keys and values and attends over
        all of them; cross-attention (``fixed``) projects the memory once and reuses it.
        """
        stored = cache.fixed() if cache is not None and fixed else None
        if stored is not None:
            k, v = stored  # (B, H, S, dk)
        else:
            k, v = self._heads(self.k(source)), self._heads(self.v(source))  # (B, H, Tk, dk)
            if cache is not None:
                if fixed:
                    cache.store(k, v)
                else:
                    k, v = cache.append(k, v)  # (B, H, start + Tq, dk)
        result = biased_attention(self._heads(self.q(x)), k, v, mask, bias, self.scale, call, head_mask)
        return self.o(result.output), result  # (B, Tq, D)


class FeedForward(nn.Module):
    """down(act(up x)), or down(act(gate x) ⊙ up x) when gated."""

    def __init__(self, c: Seq2SeqConfig) -> None:
        super().__init__()
        self.gate = nn.Linear(c.d_model, c.d_ff, bias=c.bias) if c.gated else None
        self.up = nn.Linear(c.d_model, c.d_ff, bias=c.bias)
        self.down = nn.Linear(c.d_ff, c.d_model, bias=c.bias)
        self.activation = ACTIVATIONS[c.activation]

    def forward(self, x: Tensor) -> Tensor:
        if self.gate is None:
            return self.down(self.activation(self.up(x)))
        return self.down(self.activation(self.gate(x)) * self.up(x))  # (B, T, D)


class Seq2SeqLayer(nn.Module):
    """Self-attention, cross-attention (decoder layers) and feed-forward, each a residual sublayer."""

    def __init__(self, c: Seq2SeqConfig, cross: bool) -> None:
        super().__init__()
        self.pre_norm = c.pre_norm
        self.self_attn, self.self_norm = Attention(c), make_norm(c)
        self.cross_attn = Attention(c) if cross else None
        self.cross_norm = make_norm(c) if cross else None
        self.ffn, self.ffn_norm = FeedForward(c), make_norm(c)

    def _residual(self, x: Tensor, norm: nn.Module, sublayer, call: HeadCall, out_name: str,
                  resid_name: str) -> tuple[Tensor, AttentionResult | None]:
        out, result = sublayer(norm(x) if self.pre_norm else x)
        x = x + put(call, out_name, out)  # (B, T, D)
        return put(call, resid_name, x if self.pre_norm else norm(x)), result

    def forward(self, x: Tensor, self_mask: Tensor | None, self_bias: Tensor | None, memory: Tensor | None,
                memory_mask: Tensor | None, call: HeadCall, heads: tuple[Tensor | None, Tensor | None],
                cache: tuple[AttentionCache, AttentionCache] | None = None):
        """One layer over ``x`` (B, T, D); returns (x, self-attention result, cross-attention result or None).
        ``cache``: this layer's (self, cross) key/value caches when decoding incrementally."""
        self_cache, cross_cache = (None, None) if cache is None else cache
        x, self_result = self._residual(
            x, self.self_norm, lambda h: self.self_attn(h, h, self_mask, self_bias, call, heads[0], self_cache),
            call, "attn_out", "resid_mid")
        cross_result = None
        if self.cross_attn is not None:
            cross = of_kind(call, "cross")
            x, cross_result = self._residual(x, self.cross_norm, lambda h: self.cross_attn(
                h, memory, memory_mask, None, cross, heads[1], cross_cache, fixed=True), cross, "attn_out", "resid_mid")
        x, _ = self._residual(x, self.ffn_norm, lambda h: (self.ffn(h), None), call, "ffn_out", "resid_out")
        return x, self_result, cross_result
