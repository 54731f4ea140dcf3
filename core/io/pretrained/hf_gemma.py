"""Read a Hugging Face Gemma 2 or Gemma 3 text folder (``model_type`` ``gemma2`` / ``gemma3_text``) into a
:class:`~core.model.families.gemma.GemmaModel`.

The sizes, biases, GeGLU and the global layers' rotary settings are read as a Gemma folder's
(:func:`~core.io.pretrained.hf_llama.llama_settings`); then the Gemma 2/3 keys: ``layer_types`` (or,
in configs written before it, Gemma 2's every-other-layer pattern and Gemma 3's
``sliding_window_pattern``), ``sliding_window``, ``query_pre_attn_scalar``, the two softcaps and
(Gemma 3) the local layers' rotary base — ``rope_parameters["sliding_attention"]`` or the older
``rope_local_base_freq``. Gemma 3 has no attention softcap (``transformers`` ignores the key there): a
Gemma 3 config giving one is refused. A key absent from config.json takes ``transformers``' default for the
model_type; a key present with a value the model cannot reproduce is refused, named.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_decoder import (Layout, build_config, model_type, read_decoder, refuse_if,
                                           refuse_unknown_keys, setting)
from core.io.pretrained.hf_files import FolderRead
from core.io.pretrained.hf_llama import ATTENTION_KEY, UNDERSTOOD, llama_claims, llama_settings
from core.model.families.gemma import LAYER_TYPES, GemmaConfig, GemmaModel

SUPPORTED_MODEL_TYPES = ("gemma2", "gemma3_text")
#: ``transformers``' defaults for the keys a config.json may leave out, per model_type.
_DEFAULTS = {
    "gemma2": {"sliding_window": 4096, "query_pre_attn_scalar": 256, "final_logit_softcapping": 30.0,
               "attn_logit_softcapping": 50.0, "sliding_window_pattern": 2},
    "gemma3_text": {"sliding_window": 4096, "query_pre_attn_scalar": 256, "final_logit_softcapping": None,
                    "attn_logit_softcapping": None, "sliding_window_pattern": 6},
}
_LAYOUT = Layout(
    "", {"model.embed_tokens": "embed", "model.norm": "norm", "lm_head": "lm_head"},
    re.compile(r"^model\.layers\.(\d+)\.(.+)$"),
    {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attn_norm",
     "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffn_norm",
     "self_attn.q_proj": "attn.q_proj", "self_attn.k_proj": "attn.k_proj", "self_attn.v_proj": "attn.v_proj",
     "self_attn.o_proj": "attn.o_proj", "self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm",
     "mlp.gate_proj": "mlp.gate_proj", "mlp.up_proj": "mlp.up_proj", "mlp.down_proj": "mlp.down_proj"},
    ("rotary_emb.inv_freq",),
)
#: The Gemma 2/3 attention keys read here (beside the Llama family's, :data:`~hf_llama.UNDERSTOOD`) …
_GEMMA_KEYS = {"query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping", "sliding_window_pattern",
               "_sliding_window_pattern", "rope_local_base_freq"}
#: … and every key handled here rather than by the Llama-family settings.
_HANDLED = _GEMMA_KEYS | {"sliding_window", "layer_types", "use_bidirectional_attention"}


def _value(raw: dict[str, Any], kind: str, key: str) -> Any:
    """config.json's ``key``, or ``transformers``' default for ``kind`` when the key is absent."""
    return raw[key] if key in raw else _DEFAULTS[kind][key]


def _optional_number(raw: dict[str, Any], kind: str, key: str, folder: Path) -> float | None:
    """A softcap: None (off) or a finite number above 0."""
    value = _value(raw, kind, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise CheckpointError(f"{folder.name}: config.json's {key!r} must be null or a number above 0, got {value!r}")
    return float(value)


def _layer_types(raw: dict[str, Any], kind: str, folder: Path, layers: int) -> tuple[str, ...]:
    """``layer_types`` as listed, else from the local/global pattern (every ``pattern``-th layer global)."""
    listed = raw.get("layer_types")
    if listed is not None:
        if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
            raise CheckpointError(f"{folder.name}: config.json's 'layer_types' must be a list of layer names")
        unknown = sorted(set(listed) - set(LAYER_TYPES))
        if unknown:
            raise CheckpointError(f"{folder.name}: config.json's 'layer_types' has {unknown[0]!r}; supported: "
                                  f"{', '.join(LAYER_TYPES)}")
        return tuple(listed)
    pattern = _value(raw, kind, "sliding_window_pattern")
    if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
        raise CheckpointError(f"{folder.name}: config.json's 'sliding_window_pattern' must be a whole number of at "
                              f"least 1, got {pattern!r}")
    return tuple("sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers))


def _rope_views(raw: dict[str, Any], kind: str, folder: Path) -> tuple[dict[str, Any], float | None]:
    """(config.json seen as its global layers' rotary settings, the local layers' base or None).

    Gemma 3 keeps one ``rope_parameters`` entry per layer type (or, before, ``rope_theta`` with
    ``rope_scaling`` for the global layers and ``rope_local_base_freq`` for the local ones).
    """
    params = raw.get("rope_parameters")
    nested = isinstance(params, dict) and any(t in params for t in LAYER_TYPES)
    if kind == "gemma2":
        refuse_if(nested, folder, "per-layer-type rope_parameters in a Gemma 2 config")
        return raw, None
    if not nested:
        view = {**raw, "rope_theta": raw.get("rope_theta", 1_000_000.0)}
        return view, setting(raw, folder, "rope_local_base_freq", default=10_000.0, kind=float)
    for entry in params:
        refuse_if(entry not in LAYER_TYPES, folder, f"rope_parameters entry {entry!r}")
    local = params.get("sliding_attention") or {}
    local_type = local.get("rope_type", local.get("type", "default"))
    refuse_if(local_type != "default", folder,
              f"rope_parameters['sliding_attention'] of rope_type {local_type!r} (the local layers' rotary scaling)")
    view = {k: v for k, v in raw.items() if k not in ("rope_parameters", "rope_scaling")}
    view["rope_parameters"] = {"rope_theta": 1_000_000.0, **(params.get("full_attention") or {})}
    return view, setting(local, folder, "rope_theta", default=10_000.0, kind=float)


def gemma_settings(raw: dict[str, Any], kind: str, folder: Path) -> dict[str, Any]:
    """The :class:`GemmaConfig` keyword arguments of a ``gemma2`` / ``gemma3_text`` config.json (nothing built).

    Raises:
        CheckpointError: bidirectional attention, an unknown layer type or rotary entry, a value out of range.
    """
    refuse_unknown_keys(raw, folder, UNDERSTOOD | _GEMMA_KEYS, ATTENTION_KEY)
    refuse_if(bool(raw.get("use_bidirectional_attention")), folder, "use_bidirectional_attention (a Gemma encoder)")
    attn_softcap = _optional_number(raw, kind, "attn_logit_softcapping", folder)
    refuse_if(kind == "gemma3_text" and attn_softcap is not None, folder,
              "attn_logit_softcapping in a Gemma 3 model (transformers' Gemma 3 never applies it)")
    view, local_base = _rope_views(raw, kind, folder)
    settings = llama_settings({k: v for k, v in view.items() if k not in _HANDLED}, "gemma", folder)
    window = _value(raw, kind, "sliding_window")
    settings.update(
        sliding_window=None if window is None else setting({"sliding_window": window}, folder, "sliding_window"),
        layer_types=_layer_types(raw, kind, folder, settings["n_decoder_layers"]),
        query_pre_attn_scalar=setting({"query_pre_attn_scalar": _value(raw, kind, "query_pre_attn_scalar")}, folder,
                                      "query_pre_attn_scalar", kind=float),
        attn_softcap=attn_softcap,
        final_softcap=_optional_number(raw, kind, "final_logit_softcapping", folder),
        local_rope_base=local_base, qk_norm=kind == "gemma3_text",
    )
    return settings


def gemma_config(folder: Path) -> GemmaConfig:
    """The :class:`GemmaConfig` of ``folder/config.json`` (its sizes not checked against any weights)."""
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a Gemma 2/3 text folder")
    return build_config(folder, kind, GemmaConfig, **gemma_settings(raw, kind, folder))


def read_gemma(folder: Path) -> FolderRead:
    """Load a Gemma 2 or Gemma 3 text folder: the decoder in eval mode and its tokenizer.

    Every count and shape config.json claims is checked against the headers before anything is built.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a Gemma 2/3 text folder")
    settings = gemma_settings(raw, kind, folder)
    return read_decoder(folder, kind, settings, llama_claims(raw, folder), _LAYOUT, f"{kind} decoder", GemmaConfig,
                        GemmaModel)
