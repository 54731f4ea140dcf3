"""Import the weights of PyTorch's own ``nn.Transformer`` (either ``norm_first``).

``nn.Transformer`` holds only the two stacks; embeddings and the output projection
live outside it in user code, so they can be passed in separately. The attention
projections map directly: ``in_proj_weight`` (3D, D) is our fused ``qkv_proj``, and
for cross-attention its first D rows are ``q_proj`` and the last 2D rows ``kv_proj``.
"""

from __future__ import annotations

import os
import re

import torch
from torch import Tensor, nn

from core.config import ModelConfig
from core.model.transformer import Transformer

_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.+)$")
_SHARED = {"linear1": "ff.linear1", "linear2": "ff.linear2", "norm1": "norm1", "norm2": "norm2", "norm3": "norm3"}


def config_for_nn_transformer(
    module: nn.Transformer, *, src_vocab_size: int, tgt_vocab_size: int, max_len: int = 512,
    positional: str = "sinusoidal",
) -> ModelConfig:
    """The :class:`ModelConfig` matching an ``nn.Transformer``'s sizes and norm placement.

    Raises:
        ValueError: a feature Attnscope cannot reproduce (activation other than ReLU,
            no biases, a custom LayerNorm epsilon).
    """
    enc = module.encoder.layers[0]
    if enc.activation_relu_or_gelu != 1:
        raise ValueError("only ReLU feed-forward networks can be imported (the paper's choice)")
    if enc.linear1.bias is None or enc.norm1.eps != 1e-5:
        raise ValueError("only nn.Transformer with biases and the default LayerNorm epsilon can be imported")
    return ModelConfig(
        architecture="encoder-decoder", src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
        n_encoder_layers=len(module.encoder.layers), n_decoder_layers=len(module.decoder.layers),
        d_model=module.d_model, n_heads=module.nhead, d_ff=enc.linear1.out_features,
        dropout=float(enc.dropout.p), max_len=max_len, norm="pre" if enc.norm_first else "post",
        positional=positional, final_norm=True,  # nn.Transformer ends both stacks with a LayerNorm
    )


def _convert(state: dict[str, Tensor], d_model: int) -> dict[str, Tensor]:
    """Rename ``nn.Transformer`` keys to ours, splitting cross-attention's fused projection."""
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        if key in ("encoder.norm.weight", "encoder.norm.bias", "decoder.norm.weight", "decoder.norm.bias"):
            stack, _, param = key.split(".")
            out[f"{stack}_norm.{param}"] = value
            continue
        match = _LAYER.match(key)
        if match is None:
            raise ValueError(f"unexpected nn.Transformer key {key!r}")
        stack, index, rest = match.groups()
        prefix = f"{stack}_layers.{index}."
        module, _, param = rest.partition(".")
        if module in _SHARED:
            out[prefix + f"{_SHARED[module]}.{param}"] = value
        elif module == "self_attn":
            out[prefix + "self_attn." + param.replace("in_proj_", "qkv_proj.")] = value
        elif module == "multihead_attn" and param.startswith("in_proj_"):
            kind = param[len("in_proj_"):]  # weight (3D, D) or bias (3D,)
            out[prefix + f"cross_attn.q_proj.{kind}"] = value[:d_model]
            out[prefix + f"cross_attn.kv_proj.{kind}"] = value[d_model:]
        elif module == "multihead_attn":
            out[prefix + "cross_attn." + param] = value
        else:
            raise ValueError(f"unexpected nn.Transformer key {key!r}")
    return out


def from_nn_transformer(
    source: nn.Transformer | dict[str, Tensor], config: ModelConfig, *, src_embed: Tensor | None = None,
    tgt_embed: Tensor | None = None, lm_head: Tensor | None = None, lm_head_bias: Tensor | None = None,
) -> Transformer:
    """Build an Attnscope model carrying an ``nn.Transformer``'s weights.

    Args:
        source: the module, or its ``state_dict()``.
        config: sizes and norm placement (see :func:`config_for_nn_transformer`).
        src_embed, tgt_embed: (V, D) embedding tables from the user's model, if any.
        lm_head: (V_tgt, D) output projection weight, if any.
        lm_head_bias: (V_tgt,) its bias, if any (needs ``config.output_bias``).

    Raises:
        ValueError: keys or shapes that do not fit ``config``.
    """
    state = source.state_dict() if isinstance(source, nn.Module) else source
    model = Transformer(config)
    ours = model.state_dict()
    converted = _convert(state, config.d_model)
    for name, tensor in (("src_embed.weight", src_embed), ("tgt_embed.weight", tgt_embed),
                         ("lm_head.weight", lm_head), ("lm_head.bias", lm_head_bias)):
        if tensor is not None:
            converted[name] = tensor
    missing_stack = sorted(k for k in ours if "layers" in k or k.endswith("_norm.weight") or k.endswith("_norm.bias"))
    absent = [k for k in missing_stack if k not in converted]
    extra = sorted(set(converted) - set(ours))
    if absent or extra:
        raise ValueError(f"nn.Transformer weights do not fit the config: missing {absent[:5]}, unexpected {extra[:5]}")
    for name, tensor in converted.items():
        if tuple(tensor.shape) != tuple(ours[name].shape):
            raise ValueError(f"{name}: shape {tuple(tensor.shape)} does not fit the config's {tuple(ours[name].shape)}")
    model.load_state_dict({**ours, **converted}, strict=True)
    return model.eval()


def load_state_dict_file(path: str | os.PathLike) -> dict[str, Tensor]:
    """Read a ``.pt`` state dict saved by plain PyTorch, safely (``weights_only=True``).

    Raises:
        ValueError: the file holds anything but a dict of tensors, or cannot be read.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types here (UnpicklingError, RuntimeError, EOFError…)
        raise ValueError(f"cannot read {os.fspath(path)} as a PyTorch state dict: {error}") from None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise ValueError(f"{os.fspath(path)} does not hold a state dict of tensors")
    return state
