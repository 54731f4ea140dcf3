"""Read Hugging Face BART / mBART folders (and the BART tensor layout Marian shares).

``config.json``'s ``model_type`` is ``bart`` (post-norm, ``layernorm_embedding``) or ``mbart``
(pre-norm with a final norm per stack); positions are a learned table read two rows on. Generation
settings come from ``config.json`` overridden by ``generation_config.json``: the decoder start id,
``forced_bos_token_id``, ``forced_eos_token_id`` (the last token when the budget runs out) and
single-token ``bad_words_ids`` (ids never generated).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_claims import Claims, Stack, count
from core.io.pretrained.hf_claims import check_folder
from core.io.pretrained.hf_files import FolderRead, folder_config, read_json, read_tokenizer, read_weights
from core.model.families.seq2seq import Seq2SeqModel
from core.model.families.seq2seq_layers import ACTIVATIONS, Seq2SeqConfig

_LAYER = re.compile(r"^model\.(encoder|decoder)\.layers\.(\d+)\.(.+)$")
_LAYER_NAMES = {
    "self_attn.q_proj": "self_attn.q", "self_attn.k_proj": "self_attn.k", "self_attn.v_proj": "self_attn.v",
    "self_attn.out_proj": "self_attn.o", "self_attn_layer_norm": "self_norm",
    "encoder_attn.q_proj": "cross_attn.q", "encoder_attn.k_proj": "cross_attn.k",
    "encoder_attn.v_proj": "cross_attn.v", "encoder_attn.out_proj": "cross_attn.o",
    "encoder_attn_layer_norm": "cross_norm", "fc1": "ffn.up", "fc2": "ffn.down", "final_layer_norm": "ffn_norm",
}
_STACK_NAMES = {"embed_positions": "positions.table", "layernorm_embedding": "embedding_norm",
                "layer_norm": "final_norm"}


def generation_settings(folder: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """``config.json`` with ``generation_config.json``'s entries on top (they rule generation)."""
    path = folder / "generation_config.json"
    return {**raw, **read_json(path, folder)} if path.is_file() else dict(raw)


def banned_ids(settings: dict[str, Any]) -> tuple[int, ...]:
    """The single-token ``bad_words_ids`` (Marian bans its pad id this way)."""
    bad = settings.get("bad_words_ids") or []
    return tuple(sorted({int(w[0]) for w in bad if isinstance(w, list) and len(w) == 1}))


def bart_style_config(folder: Path, raw: dict[str, Any], family: str, **layout: Any) -> Seq2SeqConfig:
    """The :class:`Seq2SeqConfig` of a Marian, BART or mBART ``config.json`` (``layout``: the family's switches).

    Raises:
        CheckpointError: settings this model cannot reproduce, or a broken config.
    """
    settings = generation_settings(folder, raw)
    try:
        heads, ffn = int(raw["encoder_attention_heads"]), int(raw["encoder_ffn_dim"])
        if heads != int(raw.get("decoder_attention_heads", heads)) or ffn != int(raw.get("decoder_ffn_dim", ffn)):
            raise CheckpointError(f"{folder.name}: encoder and decoder of different widths are not supported")
        if raw.get("activation_function", "gelu") not in ACTIVATIONS:
            raise CheckpointError(f"{folder.name}: activation {raw.get('activation_function')!r} is not supported")
        d_model, pad = int(raw["d_model"]), int(raw.get("pad_token_id", 1))
        start = settings.get("decoder_start_token_id")
        start = settings.get("bos_token_id", 0) if start is None else start
        forced, forced_eos = settings.get("forced_bos_token_id"), settings.get("forced_eos_token_id")
        return Seq2SeqConfig(
            family=family, vocab_size=int(raw["vocab_size"]), d_model=d_model,
            n_encoder_layers=int(raw["encoder_layers"]), n_decoder_layers=int(raw["decoder_layers"]),
            n_heads=heads, d_kv=d_model // heads, d_ff=ffn, max_len=int(raw.get("max_position_embeddings", 1024)),
            pad_id=pad, eos_id=int(settings.get("eos_token_id", 2)), decoder_start_id=int(start),
            activation=raw.get("activation_function", "gelu"), norm_eps=1e-5,
            embed_scale=math.sqrt(d_model) if raw.get("scale_embedding") else 1.0, logits_bias=True,
            forced_bos_id=None if forced is None else int(forced), never_generated=banned_ids(settings),
            forced_eos_id=None if forced_eos is None else int(forced_eos),
            tied_head=raw.get("tie_word_embeddings", True) is not False, **layout,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{folder.name}: config.json is incomplete or invalid ({error})") from None


def bart_claims(raw: dict[str, Any], folder: Path, learned: bool = True) -> Claims:
    """What a Marian, BART or mBART config.json claims: each stack's layers and heads, the shared embedding, the
    ``learned`` position tables, each layer's query (and cross-attention query), up and down projections."""
    width = ("d_model", count(raw, folder, "d_model"))
    tensors = {"embed.weight": (("vocab_size", count(raw, folder, "vocab_size")), width)}
    positions = count(raw, folder, "max_position_embeddings", 1024)  # a whole number, stored table or not
    if learned:
        rows = ("max_position_embeddings + 2", positions + 2)
        tensors.update({f"{stack}.positions.table.weight": (rows, width) for stack in ("encoder", "decoder")})
    stacks, splits = [], []
    for stack, cross in (("encoder", False), ("decoder", True)):
        heads = (f"{stack}_attention_heads", count(raw, folder, f"{stack}_attention_heads",
                                                   raw.get("encoder_attention_heads")))
        inner = (f"{stack}_ffn_dim", count(raw, folder, f"{stack}_ffn_dim", raw.get("encoder_ffn_dim")))
        layer = {"self_attn.q.weight": (width, width), "ffn.up.weight": (inner, width),
                 "ffn.down.weight": (width, inner)}
        if cross:
            layer["cross_attn.q.weight"] = (width, width)
        stacks.append(Stack(f"{stack}.layers.", (f"{stack}_layers", count(raw, folder, f"{stack}_layers")), layer))
        splits.append((heads, width))
    return Claims(tuple(stacks), tensors, splits=tuple(splits))


def bart_name(name: str) -> str | None:
    """A stored BART/Marian tensor name → ours, None for a copy of the shared embedding."""
    if name in ("model.shared.weight", "final_logits_bias", "lm_head.weight"):
        return {"model.shared.weight": "embed.weight", "final_logits_bias": "logits_bias",
                "lm_head.weight": "head.weight"}[name]
    module, _, param = name.rpartition(".")
    match = _LAYER.match(module)
    if match and match.group(3) in _LAYER_NAMES:
        return f"{match.group(1)}.layers.{match.group(2)}.{_LAYER_NAMES[match.group(3)]}.{param}"
    stack, _, part = module.removeprefix("model.").partition(".")
    if stack in ("encoder", "decoder") and part == "embed_tokens":
        return None
    if stack in ("encoder", "decoder") and part in _STACK_NAMES:
        return f"{stack}.{_STACK_NAMES[part]}.{param}"
    raise CheckpointError(f"unexpected tensor {name!r} for a BART-style encoder-decoder")


def shown_only(config: Seq2SeqConfig, target_size: int) -> Seq2SeqConfig:
    """``config`` that also never generates the ids past the target tokenizer's vocabulary (T5's 32 128 rows
    hold 28 unused ones): an id without a token string could be neither shown nor decoded."""
    extra = range(target_size, config.vocab_size)
    return replace(config, never_generated=tuple(sorted({*config.never_generated, *extra}))) if extra else config


def load_seq2seq(folder: Path, config: Seq2SeqConfig, rename) -> Seq2SeqModel:
    """Read the weights under our names and build the model (the head tied when the file has none)."""
    weights = read_weights(folder, rename)
    if "logits_bias" in weights:
        weights["logits_bias"] = weights["logits_bias"].reshape(-1)  # stored (1, V)
    if "embed.weight" not in weights:
        raise CheckpointError(f"{folder.name}: no shared token embedding in the weights")
    if config.tied_head:
        weights.pop("head.weight", None)
        weights["head.weight"] = weights["embed.weight"]
    return assign_weights(lambda: Seq2SeqModel(config), weights, folder.name)


def read_bart(folder: Path) -> FolderRead:
    """Load a BART or mBART folder: the model in eval mode, its tokenizer.json, the decoder start id.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw = folder_config(folder)
    family = str(raw.get("model_type"))
    pre = family == "mbart"
    check_folder(folder, bart_name, bart_claims(raw, folder))  # before anything is built
    config = bart_style_config(folder, raw, family, positions="learned", embedding_norm=True,
                               pre_norm=pre, final_norm=pre)
    tokenizer = read_tokenizer(folder, config.max_len, kind="bpe")
    config = shown_only(config, tokenizer.vocab_size)
    return FolderRead(load_seq2seq(folder, config, bart_name), tokenizer, family, "text",
                      decoder_start_id=config.decoder_start_id)
