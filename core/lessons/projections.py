"""Q, K and V of one head of a loaded model, from its own weights: the Attention playground's
"projections" section on real numbers.

:func:`model_projection` takes one attention sublayer of layer 0 (encoder self-attention,
decoder masked self-attention or cross-attention), slices one head's W_q, W_k, W_v (and
biases) out of the fused projection matrices, applies them to that sublayer's real input and
redoes softmax(QKᵀ/√d_k) by hand; the model's own forward pass must give the same map.

Axis letters: Tq queries, Tk keys, D model width, dk head width. Rows are queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from core.inspect.records import row_labels
from core.lessons.walkthrough import HeadTrace
from core.io.checkpoint import Checkpoint
from core.text.tokenizer import BOS_ID
from core.model.attention import attention_weights
from core.model.masks import subsequent_mask

MODES = ("encoder self", "decoder self", "cross")


@dataclass(frozen=True, kw_only=True)  # after HeadTrace's defaulted fields
class ModelProjection(HeadTrace):
    """One head of one layer-0 attention sublayer of a loaded model, every step by hand: a
    :class:`HeadTrace` (q, k, v, dot, scaled, mask, weights, output; here float64) with its inputs.

    Attributes:
        mode: one of :data:`MODES`. head: the head. query_tokens / key_tokens: row and column labels.
        x: (Tq, D) the sublayer's input on the query side (after the LayerNorm for pre-norm models).
        source: (Tk, D) the input keys and values come from (x itself, or the encoder's output).
        w_q, w_k, w_v: (D, dk) this head's slice of the learned matrices (so Q = x @ w_q + b_q).
        b_q, b_k, b_v: (dk,) their biases.
        max_error: max |weights − the model's own map for this head| from its forward pass.
        row_labels: what each row does: decoder and cross rows read "after ‹input› → predicts ‹output›"
            (the model's own most likely next token at that row), encoder rows are their tokens.
    """

    mode: str
    head: int
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    x: np.ndarray
    source: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    b_q: np.ndarray
    b_k: np.ndarray
    b_v: np.ndarray
    max_error: float
    row_labels: tuple[str, ...]


def _np(x: Tensor) -> np.ndarray:
    return x.detach().float().cpu().numpy().astype(np.float64)


def _head_slices(weight: Tensor, bias: Tensor, part: int, head: int, d_model: int, dk: int) -> tuple:
    """(D, dk) weight and (dk,) bias of ``head`` in block ``part`` of a fused (n·D, D) nn.Linear."""
    rows = slice(part * d_model + head * dk, part * d_model + (head + 1) * dk)
    return _np(weight[rows].T), _np(bias[rows])


#: The residual streams each mode's sublayer reads, from the forward pass's trace.
STREAMS = ("encoder.embed", "encoder.final", "decoder.embed", "decoder.0.resid_mid")


def _inputs(ckpt: Checkpoint, mode: str, traced: dict[str, Tensor]):
    """(query input (Tq, D), key/value input (Tk, D), fused projections, mask (Tq, Tk), map index), the streams
    read from the forward pass's ``traced`` names (:data:`STREAMS`)."""
    model, cfg = ckpt.model, ckpt.config
    if mode == "encoder self":
        layer = model.encoder_layers[0]
        x = traced["encoder.embed"][0]  # (S, D)
        inp = layer.norm1(x) if cfg.norm == "pre" else x
        attn = layer.self_attn
        return inp, inp, (attn.qkv_proj, 0, attn.qkv_proj, 1, attn.qkv_proj, 2), None, "encoder"
    layer = model.decoder_layers[0]
    y = traced["decoder.embed"][0]  # (T, D)
    causal = subsequent_mask(y.size(0), y.device)  # (T, T)
    if mode == "decoder self":
        inp = layer.norm1(y) if cfg.norm == "pre" else y
        attn = layer.self_attn
        return inp, inp, (attn.qkv_proj, 0, attn.qkv_proj, 1, attn.qkv_proj, 2), causal, "decoder"
    after_self = traced["decoder.0.resid_mid"][0]  # (T, D) after the masked self-attention's Add & Norm
    inp = layer.norm2(after_self) if cfg.norm == "pre" else after_self
    attn = layer.cross_attn
    return inp, traced["encoder.final"][0], (attn.q_proj, 0, attn.kv_proj, 0, attn.kv_proj, 1), None, "cross"


def model_projection(ckpt: Checkpoint, source: str, target: str, mode: str, head: int = 0) -> ModelProjection:
    """Q, K, V, scores and weights of ``head`` in layer 0 of ``ckpt`` for one sentence pair.

    Args:
        ckpt: an ``encoder-decoder`` checkpoint with the paper's scaled dot-product score.
        source: the encoder's sentence. target: the decoder's sentence (``<bos>`` is put first).
        mode: ``"encoder self"``, ``"decoder self"`` (with the look-ahead mask) or ``"cross"``.

    Raises:
        ValueError: another architecture or score, an unknown mode, a head out of range or no tokens.
    """
    cfg = ckpt.config
    if cfg.architecture != "encoder-decoder" or cfg.score != "scaled_dot":
        raise ValueError("Real projections need an encoder-decoder model with scaled dot-product attention.")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not 0 <= head < cfg.n_heads:
        raise ValueError(f"head must be in 0..{cfg.n_heads - 1}, got {head}")
    src_ids = ckpt.source_tokenizer.encode(source).ids[:cfg.max_len]
    tgt_ids = ([BOS_ID] + ckpt.target_tokenizer.encode(target).ids)[:cfg.max_len]
    if not src_ids:
        raise ValueError("the source sentence has no tokens")
    device = next(ckpt.model.parameters()).device
    src, tgt = torch.tensor([src_ids], device=device), torch.tensor([tgt_ids], device=device)  # (1, S), (1, T)
    d, dk = cfg.d_model, cfg.head_dim
    with torch.inference_mode():
        traced = ckpt.model(src, tgt, record=list(STREAMS)).trace
        inp, kv_in, (pq, iq, pk, ik, pv, iv), mask, kind = _inputs(ckpt, mode, traced)
        w_q, b_q = _head_slices(pq.weight, pq.bias, iq, head, d, dk)
        w_k, b_k = _head_slices(pk.weight, pk.bias, ik, head, d, dk)
        w_v, b_v = _head_slices(pv.weight, pv.bias, iv, head, d, dk)
        out = ckpt.model(src, tgt, return_attention=True)
        own = out.attention[kind][0, 0, head]  # (Tq, Tk)
        predicted = out.logits[0].argmax(-1).tolist()  # (T,) what each decoder row predicts
    x, s = _np(inp), _np(kv_in)
    q, k, v = x @ w_q + b_q, s @ w_k + b_k, s @ w_v + b_v  # (Tq, dk), (Tk, dk), (Tk, dk)
    dot = q @ k.T  # (Tq, Tk)
    scaled = dot / math.sqrt(dk)
    allowed = np.ones(dot.shape, dtype=bool) if mask is None else mask.cpu().numpy()
    weights = attention_weights(torch.from_numpy(scaled), torch.from_numpy(allowed)).double().numpy()
    src_tokens = tuple(ckpt.source_tokenizer.token_strings(src_ids))
    tgt_tokens = tuple(ckpt.target_tokenizer.token_strings(tgt_ids))
    rows = src_tokens if mode == "encoder self" else tgt_tokens
    cols = tgt_tokens if mode == "decoder self" else src_tokens
    labels = rows if mode == "encoder self" else row_labels(tgt_tokens, ckpt.target_tokenizer.token_strings(predicted))
    return ModelProjection(q=q, k=k, v=v, dot=dot, scaled=scaled, mask=allowed, weights=weights, output=weights @ v,
                           mode=mode, head=head, query_tokens=rows, key_tokens=cols, x=x, source=s, w_q=w_q, w_k=w_k,
                           w_v=w_v, b_q=b_q, b_k=b_k, b_v=b_v, max_error=float(np.abs(weights - _np(own)).max()),
                           row_labels=tuple(labels))
