"""Read a Hugging Face Phi-3 folder (``model_type`` ``phi3``: Phi-3, Phi-3.5-mini, Phi-4, Phi-4-mini) into a
:class:`~core.model.families.phi3.Phi3Model`.

The fused ``qkv_proj`` rows are split into the query, key and value projections ((H + 2·Hkv)·dk rows:
H·dk, then Hkv·dk, then Hkv·dk) and ``gate_up_proj`` into the gate and up projections (F rows each),
as views of the stored tensors. The rotary settings are Phi-3's: ``partial_rotary_factor``, and
``rope_scaling`` / ``rope_parameters`` of type ``default`` or ``longrope`` (``su`` is its older
name); any other type is refused, named, as ``transformers``' Phi-3 refuses it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from torch import Tensor

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_claims import Claims
from core.io.pretrained.hf_decoder import (MAX_LEN, Layout, build_config, model_type, read_decoder, refuse_unknown_keys,
                                           setting)
from core.io.pretrained.hf_files import FolderRead
from core.io.pretrained.hf_llama import ATTENTION_KEY, UNDERSTOOD, grouped_claims, llama_settings
from core.model.families.phi3 import Phi3Config, Phi3Model, longrope_scale

SUPPORTED_MODEL_TYPES = ("phi3",)
_LONGROPE = ("longrope", "su")
_LAYOUT = Layout(
    "", {"model.embed_tokens": "embed", "model.norm": "norm", "lm_head": "lm_head"},
    re.compile(r"^model\.layers\.(\d+)\.(.+)$"),
    {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
     "self_attn.qkv_proj": "attn.qkv_proj", "self_attn.o_proj": "attn.o_proj",
     "mlp.gate_up_proj": "mlp.gate_up_proj", "mlp.down_proj": "mlp.down_proj"},
    ("rotary_emb.inv_freq",),
)


def _rope_dict(raw: dict[str, Any]) -> dict[str, Any]:
    """The rotary settings: ``rope_parameters`` (transformers 5) over ``rope_scaling`` (older configs)."""
    merged: dict[str, Any] = {}
    for key in ("rope_scaling", "rope_parameters"):
        if isinstance(raw.get(key), dict):
            merged.update(raw[key])
    return merged


def _short_factors(rope: dict[str, Any], folder: Path) -> tuple[float, ...]:
    factors = rope.get("short_factor")
    if not isinstance(factors, list) or not factors or not all(
            isinstance(f, (int, float)) and not isinstance(f, bool) and math.isfinite(f) and f > 0 for f in factors):
        raise CheckpointError(f"{folder.name}: config.json's longrope 'short_factor' must be a list of numbers "
                              f"above 0, got {str(factors)[:60]}")
    return tuple(float(f) for f in factors)


def phi3_settings(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The :class:`Phi3Config` keyword arguments of a Phi-3 config.json (nothing is built).

    Raises:
        CheckpointError: a rope type other than default/longrope, LongRoPE without its factors, a value
            of the wrong type or out of range.
    """
    refuse_unknown_keys(raw, folder, UNDERSTOOD, ATTENTION_KEY)
    rope = _rope_dict(raw)
    kind = str(rope.get("rope_type", rope.get("type", "default")))
    if kind not in ("default", *_LONGROPE):
        raise CheckpointError(f"{folder.name}: rope scaling type {kind!r} is not supported for phi3; supported: "
                              f"default, longrope (su)")
    fraction = setting({**raw, **rope}, folder, "partial_rotary_factor", default=1.0, kind=float)
    outer = setting(raw, folder, "partial_rotary_factor", default=fraction, kind=float)
    if outer != fraction:
        raise CheckpointError(f"{folder.name}: config.json's 'partial_rotary_factor' {outer!r} differs from its "
                              f"rope_parameters' {fraction!r}")
    if not 0 < fraction <= 1:
        raise CheckpointError(f"{folder.name}: config.json's 'partial_rotary_factor' must be in (0, 1], "
                              f"got {fraction!r}")
    theta = setting({**raw, **rope}, folder, "rope_theta", default=10000.0, kind=float)
    view = {k: v for k, v in raw.items()
            if k not in ("rope_scaling", "rope_parameters", "partial_rotary_factor", "sliding_window")}
    view["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    settings = llama_settings(view, "llama", folder)
    head_dim = settings["explicit_head_dim"] or settings["d_model"] // settings["n_heads"]
    settings.update(qkv_bias=False, out_bias=False, mlp_bias=False, rotary_dim=int(head_dim * fraction),
                    sliding_window=setting(raw, folder, "sliding_window", default=0) or None)
    if kind in _LONGROPE:
        original = setting({**raw, **rope}, folder, "original_max_position_embeddings")
        longest = setting(raw, folder, "max_position_embeddings")
        factor = setting(rope, folder, "factor", default=longest / max(original, 1), kind=float)
        attention = setting(rope, folder, "attention_factor", default=0.0, kind=float) or \
            longrope_scale(factor, original)
        settings.update(longrope_short_factors=_short_factors(rope, folder), longrope_attention_factor=attention,
                        max_len=min(MAX_LEN, longest, original))  # within it the short factors hold
    return settings


def phi3_claims(raw: dict[str, Any], folder: Path) -> Claims:
    """What a Phi-3 config.json claims: layers, grouped heads, the embeddings, each layer's fused projections."""
    return grouped_claims(raw, folder, lambda width, inner, heads, groups, head_dim: {
        "attn.qkv_proj.weight": (("(num_attention_heads + 2 × num_key_value_heads) × head_dim",
                                  (heads + 2 * groups) * head_dim), width),
        "mlp.gate_up_proj.weight": (("2 × intermediate_size", 2 * inner[1]), width),
        "mlp.down_proj.weight": (width, inner)})


def split_fused(weights: dict[str, Tensor], config: Phi3Config) -> dict[str, Tensor]:
    """``weights`` with each layer's ``qkv_proj`` and ``gate_up_proj`` replaced by their parts (row views)."""
    q_rows, kv_rows = config.n_heads * config.head_dim, config.kv_heads * config.head_dim
    for i in range(config.n_decoder_layers):
        fused = weights.pop(f"layers.{i}.attn.qkv_proj.weight")  # ((H + 2·Hkv)·dk, D)
        q, k, v = fused.split([q_rows, kv_rows, kv_rows])
        weights.update({f"layers.{i}.attn.q_proj.weight": q, f"layers.{i}.attn.k_proj.weight": k,
                        f"layers.{i}.attn.v_proj.weight": v})
        gate, up = weights.pop(f"layers.{i}.mlp.gate_up_proj.weight").split(config.d_ff)  # (F, D) each
        weights.update({f"layers.{i}.mlp.gate_proj.weight": gate, f"layers.{i}.mlp.up_proj.weight": up})
    return weights


def phi3_config(folder: Path) -> Phi3Config:
    """The :class:`Phi3Config` of ``folder/config.json`` (its sizes not checked against any weights)."""
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a Phi-3 folder")
    return build_config(folder, kind, Phi3Config, **phi3_settings(raw, folder))


def read_phi3(folder: Path) -> FolderRead:
    """Load a Phi-3 folder: the decoder in eval mode and its tokenizer.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a Phi-3 folder")
    settings = phi3_settings(raw, folder)
    return read_decoder(folder, kind, settings, phi3_claims(raw, folder), _LAYOUT, "Phi-3 decoder", Phi3Config,
                        Phi3Model, adapt=split_fused)
