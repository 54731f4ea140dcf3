"""Read a Hugging Face Llama-family folder (Llama, Mistral, Qwen2, Qwen3, Gemma) into a
:class:`~core.model.families.llama.LlamaModel`.

The weights keep the Hugging Face layout (query and key rows in the rotate-half order; no
GGUF permutation) and their stored precision: a bf16 or fp16 folder runs in it, as ``transformers`` runs it
(norms, softmax and the rotary tables computed in float32). Each ``model_type`` maps to the
:class:`LlamaConfig` flags of its variant.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_claims import Claims, Dim, Stack, count
from core.io.pretrained.hf_decoder import (MAX_LEN, Layout, build_config, model_type, read_decoder, refuse_if,
                                           refuse_unknown_keys, rope_settings, setting, special_ids)
from core.io.pretrained.hf_files import FolderRead
from core.model.families.llama import LlamaConfig, LlamaModel

SUPPORTED_MODEL_TYPES = ("gemma", "llama", "mistral", "qwen2", "qwen3")
_LAYOUT = Layout(
    "", {"model.embed_tokens": "embed", "model.norm": "norm", "lm_head": "lm_head"},
    re.compile(r"^model\.layers\.(\d+)\.(.+)$"),
    {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
     "self_attn.q_proj": "attn.q_proj", "self_attn.k_proj": "attn.k_proj", "self_attn.v_proj": "attn.v_proj",
     "self_attn.o_proj": "attn.o_proj", "self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm",
     "mlp.gate_proj": "mlp.gate_proj", "mlp.up_proj": "mlp.up_proj", "mlp.down_proj": "mlp.down_proj"},
    ("rotary_emb.inv_freq",),  # recomputed
)
#: config.json keys that would change the attention or positions (:func:`refuse_unknown_keys`) …
ATTENTION_KEY = re.compile(r"rope|rotary|attn|attention|window|softcap|scalar|chunk|layer_types|position_ids")
#: … and the ones this reader understands (read, or checked to have no effect).
UNDERSTOOD = {"rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "num_attention_heads",
               "attention_bias", "attention_dropout", "sliding_window", "use_sliding_window", "max_window_layers",
               "layer_types", "use_bidirectional_attention", "original_max_position_embeddings",
               "_attn_implementation", "_attn_implementation_autoset", "attn_implementation",  # kernels: same maths
               "chunk_size_feed_forward", "output_attentions", "add_cross_attention",  # generic config fields the
               "cross_attention_hidden_size"}  # Llama family's forward never reads


def _variant(kind: str, raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The :class:`LlamaConfig` flags of one model_type."""
    bias = setting(raw, folder, "attention_bias", default=False, kind=bool)
    flags: dict[str, Any] = {"qkv_bias": bias, "out_bias": bias,
                             "mlp_bias": setting(raw, folder, "mlp_bias", default=False, kind=bool)}
    if kind in ("qwen2", "qwen3"):
        refuse_if(setting(raw, folder, "use_sliding_window", default=False, kind=bool), folder,
                  f"{kind} with use_sliding_window")
    if kind == "qwen2":
        flags.update(qkv_bias=True, out_bias=False)
    elif kind == "qwen3":
        flags.update(qk_norm=True)
    elif kind == "mistral":
        window = raw.get("sliding_window")
        flags.update(sliding_window=None if window is None else setting(raw, folder, "sliding_window"))
    elif kind == "gemma":
        flags.update(norm_plus_one=True, embed_scale=True, activation=str(
            raw.get("hidden_activation") or raw.get("hidden_act") or "gelu_pytorch_tanh"))
    if kind != "gemma":
        flags["activation"] = str(raw.get("hidden_act", "silu"))
    return flags


def _check_attention_keys(raw: dict[str, Any], kind: str, folder: Path) -> None:
    """Refuse the attention settings this reader does not reproduce, each named."""
    refuse_unknown_keys(raw, folder, UNDERSTOOD, ATTENTION_KEY)
    layer_types = raw.get("layer_types")
    if layer_types is not None and (not isinstance(layer_types, list) or set(layer_types) - {"full_attention"}):
        raise CheckpointError(f"{folder.name}: config.json's layer_types {layer_types!r} is not supported; "
                              "supported: every layer 'full_attention'")
    refuse_if(bool(raw.get("use_bidirectional_attention")), folder, "use_bidirectional_attention")
    refuse_if(kind not in ("mistral", "qwen2", "qwen3") and raw.get("sliding_window") is not None, folder,
              f"a sliding_window in a {kind} config")


def llama_settings(raw: dict[str, Any], kind: str, folder: Path) -> dict[str, Any]:
    """The :class:`LlamaConfig` keyword arguments of a ``kind`` config.json (nothing is built).

    Raises:
        CheckpointError: an unsupported rope scaling or setting, or a value of the wrong type.
    """
    _check_attention_keys(raw, kind, folder)
    rope = rope_settings(raw, folder)
    refuse_if(rope["fraction"] != 1.0, folder, "partial rotary in a Llama-family model")
    vocab = setting(raw, folder, "vocab_size")
    n_heads = setting(raw, folder, "num_attention_heads")
    trained = setting(raw, folder, "max_position_embeddings", default=MAX_LEN)
    if rope["type"] == "dynamic":  # the scaling extends the context past the trained one
        trained = int(trained * max(rope["factor"], 1.0))
    return dict(
        vocab_size=vocab, d_model=setting(raw, folder, "hidden_size"),
        n_decoder_layers=setting(raw, folder, "num_hidden_layers"), n_heads=n_heads,
        n_kv_heads=setting(raw, folder, "num_key_value_heads", default=n_heads),
        d_ff=setting(raw, folder, "intermediate_size"), rope_base=rope["base"],
        norm_eps=setting(raw, folder, "rms_norm_eps", default=1e-6, kind=float),
        max_len=min(MAX_LEN, trained),
        tie_embeddings=setting(raw, folder, "tie_word_embeddings", default=kind == "gemma", kind=bool),
        explicit_head_dim=raw.get("head_dim") if isinstance(raw.get("head_dim"), int) else None,
        rope_type=rope["type"], rope_factor=rope["factor"], rope_low_freq_factor=rope["low"],
        rope_high_freq_factor=rope["high"], rope_original_max_len=rope["original"],
        rope_beta_fast=rope["beta_fast"], rope_beta_slow=rope["beta_slow"], rope_truncate=rope["truncate"],
        rope_attention_factor=rope["attention_factor"],
        **special_ids(raw, folder, vocab), **_variant(kind, raw, folder),
    )


def llama_config(folder: Path) -> LlamaConfig:
    """The :class:`LlamaConfig` of ``folder/config.json`` (its sizes not checked against any weights).

    Raises:
        CheckpointError: another model_type, an unsupported rope scaling or setting, or invalid sizes.
    """
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a Llama-family folder")
    return build_config(folder, kind, LlamaConfig, **llama_settings(raw, kind, folder))


#: One layer's claimed tensors from (hidden_size, intermediate_size, query heads, key/value heads, head width).
LayerClaims = Callable[[Dim, Dim, int, int, int], dict[str, tuple[Dim, ...]]]


def grouped_claims(raw: dict[str, Any], folder: Path, layer: LayerClaims) -> Claims:
    """What a grouped-query decoder's config.json claims: its layers (``layer`` names one layer's tensors), the
    embeddings, and heads that split evenly (the key/value groups among the query heads; the query heads across
    ``hidden_size`` unless config.json states ``head_dim``)."""
    width, inner = ("hidden_size", count(raw, folder, "hidden_size")), ("intermediate_size",
                                                                       count(raw, folder, "intermediate_size"))
    heads = ("num_attention_heads", count(raw, folder, "num_attention_heads"))
    groups = ("num_key_value_heads", count(raw, folder, "num_key_value_heads", heads[1]))
    explicit = isinstance(raw.get("head_dim"), int)
    head_dim = count(raw, folder, "head_dim") if explicit else width[1] // heads[1]
    tensors = layer(width, inner, heads[1], groups[1], head_dim)
    return Claims((Stack("layers.", ("num_hidden_layers", count(raw, folder, "num_hidden_layers")), tensors),),
                  {"embed.weight": (("vocab_size", count(raw, folder, "vocab_size")), width)},
                  splits=((groups, heads),) + (() if explicit else ((heads, width),)))


def llama_claims(raw: dict[str, Any], folder: Path) -> Claims:
    """What a Llama-family config.json claims: layers, grouped heads, the embeddings, each layer's q/k/up/down."""
    return grouped_claims(raw, folder, lambda width, inner, heads, groups, head_dim: {
        "attn.q_proj.weight": (("num_attention_heads × head_dim", heads * head_dim), width),
        "attn.k_proj.weight": (("num_key_value_heads × head_dim", groups * head_dim), width),
        "mlp.up_proj.weight": (inner, width), "mlp.down_proj.weight": (width, inner)})


def read_llama(folder: Path) -> FolderRead:
    """Load a Llama-family folder: the decoder in eval mode and its tokenizer.

    Every count and shape config.json claims is checked against the headers before anything is built.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, family = model_type(folder, SUPPORTED_MODEL_TYPES, "a Llama-family folder")
    settings = llama_settings(raw, family, folder)  # unsupported settings refused from config.json alone
    return read_decoder(folder, family, settings, llama_claims(raw, folder), _LAYOUT, "Llama-family decoder",
                        LlamaConfig, LlamaModel)
