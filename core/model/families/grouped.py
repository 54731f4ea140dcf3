"""Scaled dot-product attention over grouped key/value heads, fused or explicit, and the
:class:`~core.model.contract.ModelOutput` every family assembles from its layers' results.

Shared by the pretrained families (``bert``, ``llama``): BERT is the special case
with as many key/value heads as query heads; Llama's grouped-query attention (GQA)
lets ``H / Hkv`` consecutive query heads share one key/value head.

Shapes: B batch, H query heads, Hkv key/value heads, Tq/Tk query/key length, dk head width.
Rows are queries, columns keys; masks are boolean with ``True`` = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.attention import AttentionResult, attention_weights
from core.model.contract import ModelOutput, masked_heads
from core.model.trace import Recorder, Site


@dataclass(frozen=True)
class HeadCall:
    """Per-call settings of one attention sublayer (never stored on a module).

    Attributes:
        causal: the mask is exactly the look-ahead mask over every position (passed as ``mask=None``): the
            fused kernel skips the masked blocks, the explicit path builds the mask.
        site: where this sublayer writes its part of the trace, when the call records one.
    """

    temperature: float = 1.0
    hard: bool = False
    need_weights: bool = False
    causal: bool = False
    site: Site | None = None


def kv_head_of(n_heads: int, n_kv_heads: int) -> list[int]:
    """The key/value head each query head reads: query head h uses ``h // (H / Hkv)``."""
    if n_heads % n_kv_heads:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv_heads} key/value heads evenly")
    group = n_heads // n_kv_heads
    return [h // group for h in range(n_heads)]


def grouped_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, call: HeadCall, head_mask: Tensor | None = None,
    *, scale: float | None = None, softcap: float | None = None, bias: Tensor | None = None,
) -> AttentionResult:
    """softmax(β · QKᵀ / √dk) V with key/value heads shared by groups of query heads.

    Args:
        q: (B, H, Tq, dk) queries. k, v: (B, Hkv, Tk, dk) keys and values, H a multiple of Hkv.
        mask: bool broadcastable to (B, H, Tq, Tk), ``True`` = may attend; None = attend to all.
        call: β, hard attention, and whether to return weights and scores (explicit path).
        head_mask: (H,) multiplier per query head's output; 0 knocks the head out.
        scale: the factor on QKᵀ when it is not 1/√dk (Gemma 2/3: ``query_pre_attn_scalar``^−½).
        softcap: c > 0 bounds every score to (−c, c) as c · tanh(s / c) before the mask and β
            (Gemma 2's attention logit softcapping); it always takes the explicit path.
        bias: float broadcastable to (B, H, Tq, Tk) added to the scaled scores before the mask and β
            (MPNet's relative position bias); it always takes the explicit path.

    Returns:
        ``AttentionResult`` whose ``output`` is (B, Tq, H·dk), heads concatenated (before
        the output projection); weights/scores (B, H, Tq, Tk) float32 when asked for (the scores
        the softmax reads, with the bias and the cap, times β).
    """
    if not (math.isfinite(call.temperature) and call.temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {call.temperature}")
    batch, n_heads, length, head_dim = q.shape
    group = n_heads // k.size(1)
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    weights = scores = None
    explicit = call.need_weights or call.hard or softcap is not None or bias is not None
    full = mask
    if call.causal and mask is None and (explicit or call.site is not None):
        full = causal_mask(length, k.size(-2), q.device, call)  # (Tq, Tk)
    if call.site is not None:
        call.site.attention(q, k, v, full, scale, bias, softcap)
    if explicit:
        k_full = k.repeat_interleave(group, dim=1) if group > 1 else k  # (B, H, Tk, dk)
        v_full = v.repeat_interleave(group, dim=1) if group > 1 else v
        raw = (q @ k_full.transpose(-2, -1)) * scale  # (B, H, Tq, Tk): scaled in q's dtype, as the reference
        if bias is not None:  # (bf16 / fp16 models), the bias added and the cap taken there too
            raw = raw + bias.to(raw.dtype)  # (B, H, Tq, Tk)
        if softcap is not None:
            raw = torch.tanh(raw / softcap) * softcap  # (B, H, Tq, Tk), each in (−c, c)
        raw = raw.float()  # float32 for the softmax
        weights = attention_weights(raw, full, temperature=call.temperature, hard=call.hard)
        scores = raw if call.temperature == 1.0 else raw * call.temperature  # raw is never written in place
        out = weights.to(v.dtype) @ v_full  # (B, H, Tq, dk)
    else:
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=scale * call.temperature, enable_gqa=group > 1,
            is_causal=call.causal and mask is None,
        )  # (B, H, Tq, dk)
        if mask is not None:
            # A fully masked query row attends to nothing: its output is zero, as on the explicit path.
            out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return merged_heads(out, head_mask, call, weights, scores)


def causal_mask(queries: int, keys: int, device: torch.device, call: HeadCall) -> Tensor:
    """The (Tq, Tk) look-ahead mask of the last ``queries`` positions (one per pass when recording)."""
    if call.site is not None:
        return call.site.recorder.causal_mask(queries, keys, device)
    return torch.ones(queries, keys, dtype=torch.bool, device=device).tril(keys - queries)


def merged_heads(out: Tensor, head_mask: Tensor | None, call: HeadCall, weights: Tensor | None,
                 scores: Tensor | None) -> AttentionResult:
    """The heads' outputs (B, H, Tq, dk), knocked out where ``head_mask`` (H,) or (B, H) is 0, concatenated into
    (B, Tq, H·dk), with the maps kept only when the call asked for them."""
    batch, n_heads, length, head_dim = out.shape
    out = masked_heads(out, head_mask)
    out = out.transpose(1, 2).reshape(batch, length, n_heads * head_dim)  # (B, Tq, H·dk)
    keep = call.need_weights
    return AttentionResult(out, weights if keep else None, scores if keep else None)


def embedding(count: int, width: int) -> nn.Embedding:
    """An ``nn.Embedding`` drawn from N(0, 1), left uninitialised on the meta device.

    Loaders build models on the meta device and assign the real weights; there,
    ``normal_`` would import ``torch._dynamo`` (about a second) for nothing.
    """
    weight = torch.empty(count, width)  # (count, width) on the current default device
    if weight.device.type != "meta":
        nn.init.normal_(weight)
    return nn.Embedding.from_pretrained(weight, freeze=False)


def stack_field(results: list[AttentionResult], field: str) -> Tensor | None:
    """One field (``weights`` or ``scores``) of per-layer results stacked to (L, B, H, Tq, Tk)."""
    maps = [getattr(r, field) for r in results]
    if not maps or any(m is None for m in maps):
        return None
    return torch.stack(maps)  # (L, B, H, Tq, Tk)


def stacked_output(logits: Tensor, per_kind: dict[str, list[AttentionResult]], return_attention: bool,
                   return_scores: bool, recorder: Recorder | None, loss: Tensor | None = None) -> ModelOutput:
    """A family's :class:`~core.model.contract.ModelOutput`: each kind's per-layer weights and scores stacked
    to (L, B, H, Tq, Tk), only those asked for, and the recorder's trace when one ran."""
    return ModelOutput(
        logits=logits, loss=loss,
        attention={k: stack_field(v, "weights") for k, v in per_kind.items()} if return_attention else None,
        scores={k: stack_field(v, "scores") for k, v in per_kind.items()} if return_scores else None,
        trace=None if recorder is None else recorder.trace,
    )


def padded_loss(logits: Tensor, targets: Tensor, pad_id: int) -> Tensor:
    """Mean cross-entropy (in float32) of ``logits`` (B, T, V) against ``targets`` (B, T), padding left out."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=pad_id)
