"""PyTorch's own ``nn.MultiheadAttention`` loaded with a model's weights: the library call a student
would write, checked against the model's own layer-0 encoder self-attention on one sentence.

Our :class:`~core.model.attention.MultiHeadAttention` keeps W_q, W_k, W_v stacked in one (3D, D)
``qkv_proj`` (the stacked W_qkv) and W^O in ``out_proj``; ``nn.MultiheadAttention`` keeps exactly
that layout in ``in_proj_weight``/``in_proj_bias`` and ``out_proj``, so the weights are copied as they
are, and both must give the same per-head maps and the same output.

Axis letters: B batch (1 here), H heads, T tokens, D model width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from core.io.checkpoint import Checkpoint
from core.model.attention import MultiHeadAttention
from core.model.scores import ScaledDotScore


@dataclass(frozen=True)
class TorchMHA:
    """``nn.MultiheadAttention`` beside the model's own attention sublayer, on the same input.

    Attributes:
        tokens: the sentence's tokens (rows and columns of the maps).
        embed_dim, num_heads: the arguments ``nn.MultiheadAttention`` was built with (d_model, h).
        in_proj_shape / out_proj_shape: the copied weights' shapes, (3D, D) and (D, D).
        torch_maps / own_maps: (H, T, T) per-head maps from ``nn.MultiheadAttention``
            (``average_attn_weights=False``) and from the model's forward pass.
        torch_output / own_output: (T, D) the sublayer's output (after W^O, before Add & Norm).
        map_error / output_error: max |difference| between the two.
    """

    tokens: tuple[str, ...]
    embed_dim: int
    num_heads: int
    in_proj_shape: tuple[int, int]
    out_proj_shape: tuple[int, int]
    torch_maps: np.ndarray
    own_maps: np.ndarray
    torch_output: np.ndarray
    own_output: np.ndarray
    map_error: float
    output_error: float


def _np(x: Tensor) -> np.ndarray:
    return x.detach().double().cpu().numpy()


def as_torch_mha(attn: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)`` holding ``attn``'s weights.

    Raises:
        ValueError: ``attn`` is a cross-attention (its W_q and W_kv are separate matrices) or does not score
            by scaled dot product (the only score ``nn.MultiheadAttention`` has).
    """
    if attn.cross:
        raise ValueError("only a self-attention sublayer keeps W_q, W_k, W_v stacked as nn.MultiheadAttention does")
    if not isinstance(attn.score, ScaledDotScore):
        raise ValueError("nn.MultiheadAttention only scores by scaled dot product; this model scores otherwise")
    d_model = attn.out_proj.in_features
    mha = nn.MultiheadAttention(d_model, attn.n_heads, batch_first=True, device=attn.out_proj.weight.device)
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv_proj.weight)  # (3D, D) = [W_q; W_k; W_v]
        mha.in_proj_bias.copy_(attn.qkv_proj.bias)  # (3D,)
        mha.out_proj.weight.copy_(attn.out_proj.weight)  # (D, D) = W^O
        mha.out_proj.bias.copy_(attn.out_proj.bias)  # (D,)
    return mha.eval()


def compare_torch_mha(model: nn.Module, src: Tensor, tokens: tuple[str, ...] = ()) -> TorchMHA:
    """Run ``model``'s encoder on ``src`` (1, T), catch layer 0's self-attention input, output and maps
    from that forward pass, and run ``nn.MultiheadAttention`` with the same weights on the same input."""
    attn = model.encoder_layers[0].self_attn
    caught: dict[str, Tensor] = {}

    def catch(_module, args, kwargs, result) -> None:
        caught["x"], caught["mask"] = args[0], args[2] if len(args) > 2 else kwargs.get("mask")
        caught["output"] = result.output  # (1, T, D)

    hook = attn.register_forward_hook(catch, with_kwargs=True)
    try:
        with torch.inference_mode():
            _, _, layers = model.encode(src, need_weights=True)
    finally:
        hook.remove()
    own_maps = layers[0].weights[0]  # (H, T, T)
    mha = as_torch_mha(attn)
    mask = caught["mask"]  # (1, 1, T) True = may attend, or None
    key_padding = None if mask is None else ~mask[:, 0, :]  # (1, T) True = ignore, PyTorch's convention
    with torch.inference_mode():
        out, maps = mha(caught["x"], caught["x"], caught["x"], key_padding_mask=key_padding, need_weights=True,
                        average_attn_weights=False)  # (1, T, D), (1, H, T, T)
    torch_maps, own, torch_out, own_out = _np(maps[0]), _np(own_maps), _np(out[0]), _np(caught["output"][0])
    return TorchMHA(tokens=tokens, embed_dim=mha.embed_dim, num_heads=mha.num_heads,
                    in_proj_shape=tuple(mha.in_proj_weight.shape), out_proj_shape=tuple(mha.out_proj.weight.shape),
                    torch_maps=torch_maps, own_maps=own, torch_output=torch_out, own_output=own_out,
                    map_error=float(np.abs(torch_maps - own).max()),
                    output_error=float(np.abs(torch_out - own_out).max()))


def torch_mha(ckpt: Checkpoint, source: str) -> TorchMHA:
    """:func:`compare_torch_mha` on ``ckpt``'s encoder for the sentence ``source``.

    Raises:
        ValueError: a model without an encoder or a tokenizer, or a sentence with no tokens.
    """
    cfg, tokenizer = ckpt.config, ckpt.source_tokenizer
    if not cfg.has_encoder or tokenizer is None:
        raise ValueError("nn.MultiheadAttention is compared on an encoder's self-attention; this model has none.")
    ids = tokenizer.encode(source).ids[:cfg.max_len]
    if not ids:
        raise ValueError("the sentence has no tokens")
    src = torch.tensor([ids], device=next(ckpt.model.parameters()).device)  # (1, T)
    return compare_torch_mha(ckpt.model, src, tuple(tokenizer.token_strings(ids)))
