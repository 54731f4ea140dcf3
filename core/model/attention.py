"""Attention: softmax (soft) or argmax (hard) weights, and multi-head attention with a fused
path (``F.scaled_dot_product_attention``, no maps) and an explicit one (the maps materialised).

The lecture's score functions live in :mod:`core.model.scores` (re-exported here).

Shapes: B batch, H heads, Tq/Tk query/key length, dk head width, D model width.
Rows are queries (the token attending), columns are keys (the token attended to).
Masks are boolean, ``True`` meaning "may attend".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.contract import masked_heads
from core.model.kv_cache import AttentionCache
from core.model.scores import ScoreFunction, make_score
from core.model.trace import Site

__all__ = ["AttentionResult", "MultiHeadAttention", "ScoreFunction", "attention", "attention_weights", "make_score"]

#: The explicit path works through the queries in blocks of at most this many score cells
#: (16 MB of float32), so its temporaries stay small however long the input is.
BLOCK_CELLS = 1 << 22


def attention_weights(
    scores: Tensor, mask: Tensor | None = None, *, temperature: float = 1.0, hard: bool = False
) -> Tensor:
    """Turn scores into attention weights.

    Args:
        scores: (..., Tq, Tk) compatibility of each query with each key.
        mask: bool, broadcastable to ``scores``; ``True`` = may attend.
        temperature: the lecture's inverse temperature β multiplying the scores
            (0 = uniform, 1 = the paper, large = nearly hard).
        hard: one-hot argmax attention instead of softmax (β does not move the argmax,
            so it is taken on the unscaled scores; β = 0 would otherwise tie every key).

    Returns:
        float32 weights (..., Tq, Tk): every row sums to 1, masked cells are exactly 0
        and a fully masked row is all zero (never NaN).
    """
    _check_temperature(temperature)
    logits = scores.float()  # float32 whatever the input dtype (no copy when already float32)
    owned = logits is not scores
    if not hard and temperature != 1.0:
        logits, owned = logits * temperature, True
    if mask is not None and torch.broadcast_shapes(mask.shape, logits.shape) != logits.shape:
        owned = False  # the mask widens the result: it cannot be written into ``logits``
    return _normalise(logits, *_mask_parts(mask), hard=hard, in_place=owned)


def _mask_parts(mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """(``~mask``, the fully masked rows (..., Tq|1, 1) or None when every row may attend)."""
    if mask is None:
        return None, None
    dead = ~mask.any(dim=-1, keepdim=True)
    return ~mask, (dead if bool(dead.any()) else None)


def _normalise(
    logits: Tensor, blocked: Tensor | None, dead: Tensor | None, *, hard: bool, in_place: bool,
    out: Tensor | None = None,
) -> Tensor:
    """Weights from float32 ``logits`` (..., Tq, Tk), written into ``out`` when given;
    overwrites ``logits`` when ``in_place``.

    ``blocked`` (True = may NOT attend) broadcasts, never expanded per head. Only the fully
    masked rows ``dead`` need zeroing afterwards: every other masked cell is exp(min - max) = 0.
    """
    if blocked is not None:
        fill = torch.finfo(logits.dtype).min
        logits = logits.masked_fill_(blocked, fill) if in_place else logits.masked_fill(blocked, fill)
    if hard:
        weights = torch.zeros_like(logits) if out is None else out.zero_()
        weights.scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    else:
        weights = logits.softmax(dim=-1) if out is None else torch.softmax(logits, -1, out=out)
    if dead is not None:  # they came out uniform (or picked key 0)
        weights = weights.masked_fill_(dead, 0.0)
    return weights


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    temperature: float = 1.0,
    hard: bool = False,
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention, softmax(β · QKᵀ / √d_k) V.

    Args:
        q: (..., Tq, dk) queries. k: (..., Tk, dk) keys. v: (..., Tk, dv) values.
        mask: bool, broadcastable to (..., Tq, Tk); ``True`` = may attend.
        temperature: inverse temperature β (1.0 = the paper).
        hard: one-hot argmax attention.

    Returns:
        ``(output (..., Tq, dv), weights (..., Tq, Tk) float32)``.
    """
    _check_temperature(temperature)
    logits = ((q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)).float()  # (..., Tq, Tk), ours to overwrite
    if not hard and temperature != 1.0:
        logits.mul_(temperature)
    in_place = mask is None or torch.broadcast_shapes(mask.shape, logits.shape) == logits.shape
    weights = _normalise(logits, *_mask_parts(mask), hard=hard, in_place=in_place)
    return weights.to(v.dtype) @ v, weights  # (..., Tq, dv)


def _check_temperature(temperature: float) -> None:
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")


class AttentionResult(NamedTuple):
    """What one multi-head attention call returns."""

    output: Tensor  # (B, Tq, D)
    weights: Tensor | None  # (B, H, Tq, Tk) float32, when asked for
    scores: Tensor | None  # (B, H, Tq, Tk) float32, β-scaled and unmasked, when asked for


class MultiHeadAttention(nn.Module):
    """Multi-head attention with fused input projections.

    Self-attention projects Q, K and V with one (D → 3D) matrix; cross-attention
    projects Q from the decoder and K, V together (D → 2D) from the encoder memory.
    """

    def __init__(
        self, d_model: int, n_heads: int, *, cross: bool, score: str = "scaled_dot", dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.cross = n_heads, d_model // n_heads, cross
        if cross:
            self.q_proj = nn.Linear(d_model, d_model)
            self.kv_proj = nn.Linear(d_model, 2 * d_model)
        else:
            self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.score = make_score(score, n_heads, self.head_dim)
        self.dropout = dropout

    def _split_heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dk)

    def _project(
        self, x: Tensor, memory: Tensor | None, cache: AttentionCache | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Per-head q (B, H, Tq, dk), k and v (B, H, Tk, dk); with a cache, k and v cover every
        position so far (self) or are the memory's, projected once (cross)."""
        if not self.cross:
            batch, length, _ = x.shape
            # one view and one permute for all three (the strides chunk + per-part views would give)
            qkv = self.qkv_proj(x).view(batch, length, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)  # (B, H, T, dk) each
            return (q, *cache.append(k, v)) if cache is not None else (q, k, v)
        q = self._split_heads(self.q_proj(x))  # (B, H, Tq, dk)
        kept = None if cache is None else cache.fixed()
        if kept is not None:
            return (q, *kept)
        if memory is None:
            raise ValueError("cross-attention needs the encoder memory")
        k, v = (self._split_heads(t) for t in self.kv_proj(memory).chunk(2, dim=-1))  # (B, H, Tk, dk) each
        if cache is not None:
            cache.store(k, v)
        return q, k, v

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        temperature: float = 1.0,
        hard: bool = False,
        head_mask: Tensor | None = None,
        need_weights: bool = False,
        need_scores: bool | None = None,
        weights_out: Tensor | None = None,
        cache: AttentionCache | None = None,
        site: Site | None = None,
    ) -> AttentionResult:
        """Attend from ``x`` (B, Tq, D) to itself, or to ``memory`` (B, Tk, D) when cross.

        Args:
            mask: bool (Tq, Tk), (B, Tq, Tk) or (B, 1, Tk); ``True`` = may attend.
            temperature: inverse temperature β on the scores.
            hard: one-hot argmax attention.
            head_mask: (H,) multiplier per head output, or (B, H) per batch row; 0 knocks a head out.
            need_weights: return the weights (runs the explicit softmax path).
            need_scores: return the pre-softmax scores too (default: as ``need_weights``).
            weights_out: float32 (B, H, Tq, Tk) to write the weights into (a caller stacking
                layers passes its slice, so the maps are never copied).
            cache: incremental decoding: ``x`` holds only the new positions; self-attention
                appends their keys and values and attends over every position so far, and
                cross-attention projects ``memory`` once. The mask then covers every key.
            site: where to record q, k, v and the mask (the scale too when the score is a scaled dot
                product, from which a map can be computed again).
        """
        _check_temperature(temperature)
        need_scores = need_weights if need_scores is None else need_scores
        q, k, v = self._project(x, memory, cache)  # (B, H, T, dk)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, Tq|1, Tk), broadcast over heads
        if site is not None:
            dot = self.score.fused_scale is not None and type(self.score).fused_query is ScoreFunction.fused_query
            site.attention(q, k, v, mask, self.score.fused_scale if dot else None)
        drop = self.dropout if self.training else 0.0
        weights = scores = None
        if need_weights or need_scores or hard or self.score.fused_scale is None:
            out, weights, scores = self._explicit(q, k, v, mask, temperature, hard, drop, need_scores, weights_out)
        else:
            out = F.scaled_dot_product_attention(
                self.score.fused_query(q), k, v, attn_mask=mask, dropout_p=drop,
                scale=self.score.fused_scale * temperature,
            )  # (B, H, Tq, dk)
            if mask is not None:
                dead = ~mask.any(dim=-1, keepdim=True)  # (B|1, 1, Tq|1, 1)
                if dead.device.type != "cpu" or torch.compiler.is_compiling() or bool(dead.any()):
                    out = out.masked_fill(dead, 0.0)  # a query row with no key attends to nothing
        out = masked_heads(out, head_mask)
        batch, _, length, _ = out.shape
        out = out.transpose(1, 2).reshape(batch, length, -1)  # (B, Tq, D)
        return AttentionResult(self.out_proj(out), weights if need_weights else None, scores)

    def _explicit(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, temperature: float, hard: bool,
        drop: float, need_scores: bool, weights_out: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """softmax(score(q, k)) v with the weights materialised, in query blocks when large.

        A block only computes the keys its rows may reach (under the causal mask, about half),
        unless the unmasked scores are asked for; the cells past them are exactly 0.

        Returns:
            output (B, H, Tq, dk), weights (B, H, Tq, Tk) float32, scores (same) or None.
        """
        (batch, heads, length, _), keys = q.shape, k.size(-2)
        blocked, dead = _mask_parts(mask)
        rows = max(1, BLOCK_CELLS // (batch * heads * keys))
        if rows >= length:  # one block: the weights go straight into ``weights_out`` when given
            return self._block(q, k, v, blocked, dead, temperature, hard, drop, need_scores, weights_out)
        shape = (batch, heads, length, keys)
        weights = q.new_empty(shape, dtype=torch.float32) if weights_out is None else weights_out
        scores = q.new_empty(shape, dtype=torch.float32) if need_scores else None
        out = v.new_empty(batch, heads, length, v.size(-1))
        for start in range(0, length, rows):
            block = slice(start, start + rows)
            width = keys if need_scores else _reach(_rows(mask, block), keys)  # keys this block may reach
            out[:, :, block], _, block_scores = self._block(
                q[:, :, block], k[:, :, :width], v[:, :, :width], _rows(blocked, block, width),
                _rows(dead, block), temperature, hard, drop, need_scores, weights[:, :, block, :width])
            weights[:, :, block, width:] = 0.0
            if scores is not None:
                scores[:, :, block] = block_scores
        return out, weights, scores

    def _block(
        self, q: Tensor, k: Tensor, v: Tensor, blocked: Tensor | None, dead: Tensor | None,
        temperature: float, hard: bool, drop: float, need_scores: bool, weights_out: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One block of queries (B, H, Tq, dk) against keys (B, H, Tk, dk): (output, weights, scores).

        The weights are written straight into ``weights_out`` when given (no copy when contiguous)."""
        logits = self.score(q, k).float()  # (B, H, Tq, Tk), a fresh tensor: ours to overwrite
        scores = None
        if need_scores:
            scores = logits * temperature if temperature != 1.0 else logits.clone()
        if not hard and temperature != 1.0:
            logits.mul_(temperature)
        weights = _normalise(logits, blocked, dead, hard=hard, in_place=True, out=weights_out)
        mixed = F.dropout(weights, drop) if drop > 0 else weights
        return mixed.to(v.dtype) @ v, weights, scores  # (B, H, Tq, dk)


def _rows(mask: Tensor | None, block: slice, width: int | None = None) -> Tensor | None:
    """The rows ``block`` (and the first ``width`` keys) of a broadcastable (..., Tq|1, Tk|1) mask."""
    if mask is None:
        return None
    if mask.size(-2) > 1:
        mask = mask[..., block, :]
    return mask if width is None or mask.size(-1) == 1 else mask[..., :width]


def _reach(mask: Tensor | None, keys: int) -> int:
    """How many leading keys the rows of ``mask`` (..., Tq, Tk) may need: the last allowed key + 1."""
    if mask is None:
        return keys
    rows = mask.reshape(-1, mask.size(-1)).view(torch.uint8)  # (n, Tk); a column sum is far faster than any()
    allowed = rows.sum(dim=0, dtype=torch.int32).nonzero()  # (n, 1) indices of keys some row may attend
    return int(allowed[-1]) + 1 if len(allowed) else 1
