"""Read a Hugging Face LayerNorm-decoder folder (GPT-2, GPT-NeoX/Pythia, OPT, Phi) into a
:class:`~core.model.families.gpt.GptModel`.

Their checkpoints differ in names and in two layouts undone here: GPT-2's ``Conv1D`` weights are
stored transposed (in × out) with q, k and v fused side by side in ``c_attn``; GPT-NeoX fuses them
per head (``query_key_value`` rows: head 0's q, k, v, then head 1's …).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from torch import Tensor

from core.io.pretrained.hf_claims import Claims, Stack, count
from core.io.pretrained.hf_decoder import (MAX_LEN, Layout, build_config, model_type, read_decoder, refuse_if,
                                           rope_settings, setting, special_ids)
from core.io.pretrained.hf_files import FolderRead
from core.model.families.gpt import GptConfig, GptModel


_ATTN = {"self_attn.q_proj": "attn.q_proj", "self_attn.k_proj": "attn.k_proj", "self_attn.v_proj": "attn.v_proj"}
LAYOUTS = {
    "gpt2": Layout("transformer.", {"wte": "embed", "wpe": "position", "ln_f": "norm", "lm_head": "lm_head"},
                   re.compile(r"^h\.(\d+)\.(.+)$"),
                   {"ln_1": "attn_norm", "attn.c_attn": "attn.qkv", "attn.c_proj": "attn.o_proj", "ln_2": "ffn_norm",
                    "mlp.c_fc": "mlp.up", "mlp.c_proj": "mlp.down"}, (".attn.bias", ".attn.masked_bias")),
    "gpt_neox": Layout("gpt_neox.", {"embed_in": "embed", "final_layer_norm": "norm", "embed_out": "lm_head"},
                       re.compile(r"^layers\.(\d+)\.(.+)$"),
                       {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                        "attention.query_key_value": "attn.qkv", "attention.dense": "attn.o_proj",
                        "mlp.dense_h_to_4h": "mlp.up", "mlp.dense_4h_to_h": "mlp.down"},
                       (".attention.bias", ".attention.masked_bias", "rotary_emb.inv_freq")),
    "opt": Layout("model.", {"decoder.embed_tokens": "embed", "decoder.embed_positions": "position",
                             "decoder.final_layer_norm": "norm", "lm_head": "lm_head"},
                  re.compile(r"^decoder\.layers\.(\d+)\.(.+)$"),
                  {**_ATTN, "self_attn.out_proj": "attn.o_proj", "self_attn_layer_norm": "attn_norm",
                   "fc1": "mlp.up", "fc2": "mlp.down", "final_layer_norm": "ffn_norm"}),
    "phi": Layout("model.", {"embed_tokens": "embed", "final_layernorm": "norm", "lm_head": "lm_head"},
                  re.compile(r"^layers\.(\d+)\.(.+)$"),
                  {**_ATTN, "self_attn.dense": "attn.o_proj", "input_layernorm": "attn_norm",
                   "mlp.fc1": "mlp.up", "mlp.fc2": "mlp.down"}, ("rotary_emb.inv_freq",)),
}
SUPPORTED_MODEL_TYPES = tuple(sorted(LAYOUTS))


def _sizes(raw: dict[str, Any], folder: Path, *keys: str) -> dict[str, Any]:
    """vocab_size, d_model, n_decoder_layers, n_heads from config.json's ``keys`` (in that order)."""
    names = ("vocab_size", "d_model", "n_decoder_layers", "n_heads")
    return {ours: count(raw, folder, theirs) for ours, theirs in zip(names, keys)}


def _gpt2(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    refuse_if(setting(raw, folder, "scale_attn_by_inverse_layer_idx", default=False, kind=bool), folder,
              "scale_attn_by_inverse_layer_idx")
    refuse_if(not setting(raw, folder, "scale_attn_weights", default=True, kind=bool), folder, "unscaled attention")
    refuse_if(setting(raw, folder, "add_cross_attention", default=False, kind=bool), folder, "cross-attention")
    sizes = _sizes(raw, folder, "vocab_size", "n_embd", "n_layer", "n_head")
    positions = setting(raw, folder, "n_positions")
    return dict(**sizes, d_ff=setting(raw, folder, "n_inner", default=4 * sizes["d_model"]),
                max_len=min(MAX_LEN, positions), n_positions=positions,
                norm_eps=setting(raw, folder, "layer_norm_epsilon", default=1e-5, kind=float),
                activation=str(raw.get("activation_function", "gelu_new")))


def _rotary(raw: dict[str, Any], folder: Path, head_dim: int) -> dict[str, Any]:
    rope = rope_settings(raw, folder)
    refuse_if(rope["type"] != "default", folder, f"rope scaling type {rope['type']!r} in this family")
    return dict(positions="rotary", rotary_dim=int(head_dim * rope["fraction"]), rope_base=rope["base"])


def _neox(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    sizes = _sizes(raw, folder, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    bias = setting(raw, folder, "attention_bias", default=True, kind=bool)
    parallel = setting(raw, folder, "use_parallel_residual", default=True, kind=bool)
    return dict(**sizes, d_ff=setting(raw, folder, "intermediate_size"),
                max_len=min(MAX_LEN, setting(raw, folder, "max_position_embeddings", default=MAX_LEN)),
                norm_eps=setting(raw, folder, "layer_norm_eps", default=1e-5, kind=float),
                activation=str(raw.get("hidden_act", "gelu")), block="parallel" if parallel else "sequential",
                qkv_bias=bias, out_bias=bias, **_rotary(raw, folder, sizes["d_model"] // sizes["n_heads"]))


def _opt(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    sizes = _sizes(raw, folder, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    refuse_if(setting(raw, folder, "word_embed_proj_dim", default=sizes["d_model"]) != sizes["d_model"], folder,
              "an OPT embedding projection (word_embed_proj_dim ≠ hidden_size)")
    refuse_if(not setting(raw, folder, "layer_norm_elementwise_affine", default=True, kind=bool), folder,
              "LayerNorm without gain and bias")
    before = setting(raw, folder, "do_layer_norm_before", default=True, kind=bool)
    positions = setting(raw, folder, "max_position_embeddings")
    bias = setting(raw, folder, "enable_bias", default=True, kind=bool)
    return dict(**sizes, d_ff=setting(raw, folder, "ffn_dim"), max_len=min(MAX_LEN, positions),
                n_positions=positions + 2, position_offset=2, activation=str(raw.get("activation_function", "relu")),
                block="sequential" if before else "post_norm", qkv_bias=bias, out_bias=bias, mlp_bias=bias,
                final_norm=before and not setting(raw, folder, "_remove_final_layer_norm", default=False, kind=bool))


def _phi(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    refuse_if(setting(raw, folder, "qk_layernorm", default=False, kind=bool), folder, "Phi's qk_layernorm")
    sizes = _sizes(raw, folder, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    return dict(**sizes, d_ff=setting(raw, folder, "intermediate_size"),
                n_kv_heads=setting(raw, folder, "num_key_value_heads", default=sizes["n_heads"]),
                max_len=min(MAX_LEN, setting(raw, folder, "max_position_embeddings", default=MAX_LEN)),
                norm_eps=setting(raw, folder, "layer_norm_eps", default=1e-5, kind=float),
                activation=str(raw.get("hidden_act", "gelu_new")), block="parallel_shared", lm_head_bias=True,
                **_rotary(raw, folder, sizes["d_model"] // sizes["n_heads"]))


_SETTINGS = {"gpt2": _gpt2, "gpt_neox": _neox, "opt": _opt, "phi": _phi}
#: config.json's keys of vocab_size, d_model, n_decoder_layers, n_heads and d_ff, by model_type.
_KEYS = {"gpt2": ("vocab_size", "n_embd", "n_layer", "n_head", "n_inner"),
         "gpt_neox": ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"),
         "opt": ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "ffn_dim"),
         "phi": ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")}
_TIED_BY_DEFAULT = {"gpt2": True, "opt": True, "gpt_neox": False, "phi": False}


def gpt_claims(kind: str, values: dict[str, Any]) -> Claims:
    """What a ``kind`` config.json's ``values`` claim: layers, heads, the token (and learned position) embeddings
    and each layer's attention input, up and down projections (in their stored layout: GPT-2 (in, out), fused q/k/v)."""
    vocab, width, layers, heads, inner = (
        (key, values[ours]) for key, ours in zip(_KEYS[kind], ("vocab_size", "d_model", "n_decoder_layers",
                                                              "n_heads", "d_ff")))
    fused = (f"3 × {width[0]}", 3 * width[1])
    layer = {"gpt2": {"attn.qkv.weight": (width, fused), "mlp.up.weight": (width, inner),
                      "mlp.down.weight": (inner, width)},
             "gpt_neox": {"attn.qkv.weight": (fused, width)}}.get(kind, {"attn.q_proj.weight": (width, width)})
    splits = ((heads, width),)
    if kind == "phi":
        groups = ("num_key_value_heads", values["n_kv_heads"])
        layer["attn.k_proj.weight"] = (("num_key_value_heads × head_dim", groups[1] * (width[1] // heads[1])), width)
        splits += ((groups, heads),)
    if kind != "gpt2":
        layer.update({"mlp.up.weight": (inner, width), "mlp.down.weight": (width, inner)})
    tensors = {"embed.weight": (vocab, width)}
    if kind in ("gpt2", "opt"):  # learned positions (OPT's table starts two rows on)
        rows = ("n_positions" if kind == "gpt2" else "max_position_embeddings + 2", values["n_positions"])
        tensors["position.weight"] = (rows, width)
    return Claims((Stack("layers.", layers, layer),), tensors, splits=splits)


def gpt_settings(raw: dict[str, Any], kind: str, folder: Path) -> dict[str, Any]:
    """The :class:`GptConfig` keyword arguments of a ``kind`` config.json (nothing is built).

    Raises:
        CheckpointError: a setting this model cannot reproduce, or a value of the wrong type.
    """
    values = _SETTINGS[kind](raw, folder)
    tied = setting(raw, folder, "tie_word_embeddings", default=_TIED_BY_DEFAULT[kind], kind=bool)
    return dict(values, tie_embeddings=tied, **special_ids(raw, folder, values["vocab_size"]))


def gpt_config(folder: Path) -> GptConfig:
    """The :class:`GptConfig` of ``folder/config.json`` (its sizes not checked against any weights).

    Raises:
        CheckpointError: another model_type, a setting this model cannot reproduce, or invalid sizes.
    """
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a LayerNorm decoder")
    return build_config(folder, kind, GptConfig, **gpt_settings(raw, kind, folder))


def _split_qkv(fused: Tensor, n_heads: int, per_head: bool) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v rows of a fused (3·D, …) projection: side by side (GPT-2) or per head (GPT-NeoX)."""
    if not per_head:
        return fused.chunk(3, dim=0)  # 3 × (D, …)
    rows = fused.shape[0] // 3
    heads = fused.reshape(n_heads, 3, rows // n_heads, *fused.shape[1:])  # (H, 3, dk, …)
    return tuple(heads[:, i].reshape(rows, *fused.shape[1:]) for i in range(3))


def _unfuse(weights: dict[str, Tensor], kind: str, n_heads: int) -> dict[str, Tensor]:
    """GPT-2's Conv1D weights transposed to (out, in), and every fused qkv split into q/k/v projections.

    ``weights`` is emptied as it goes, so each stored tensor is freed once its replacement exists.
    """
    out = {}
    for name in list(weights):
        tensor = weights.pop(name)
        if kind == "gpt2" and name.endswith(".weight") and tensor.dim() == 2 and name.startswith("layers."):
            tensor = tensor.t()  # Conv1D stores (in, out)
        if ".attn.qkv." in name:
            for part, piece in zip("qkv", _split_qkv(tensor, n_heads, per_head=kind == "gpt_neox")):
                out[name.replace(".attn.qkv.", f".attn.{part}_proj.")] = piece.contiguous()
        else:
            out[name] = tensor.contiguous()
    return out


def read_gpt(folder: Path) -> FolderRead:
    """Load a GPT-2, GPT-NeoX, OPT or Phi folder: the decoder in eval mode and its tokenizer.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, kind = model_type(folder, SUPPORTED_MODEL_TYPES, "a LayerNorm decoder")
    layout = LAYOUTS[kind]
    model = f"{layout.prefix.rstrip('.') or 'decoder'} model"
    settings = gpt_settings(raw, kind, folder)  # unsupported settings refused from config.json alone
    return read_decoder(folder, kind, settings, gpt_claims(kind, settings), layout, model, GptConfig, GptModel,
                        adapt=lambda weights, config: _unfuse(weights, kind, config.n_heads), keep_dtype=False)
