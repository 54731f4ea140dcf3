"""Read Hugging Face T5 folders (t5-small's ReLU, v1.1's gated GELU) into a :class:`Seq2SeqModel`.

Each stack's first block holds the relative-position bias table all its blocks share. With a tied
head (``tie_word_embeddings`` not false, or ``scale_decoder_outputs``) the decoder's last states are
scaled by D^-0.5; a stored ``lm_head.weight`` is used as the head. The decoder starts from the pad id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_bart import banned_ids, generation_settings, load_seq2seq, shown_only
from core.io.pretrained.hf_claims import Claims, Stack, check_folder, count
from core.io.pretrained.hf_files import FolderRead, folder_config, read_tokenizer
from core.model.families.seq2seq_layers import ACTIVATIONS, Seq2SeqConfig

_BLOCK = re.compile(r"^(encoder|decoder)\.block\.(\d+)\.layer\.(\d)\.(.+)$")
_ATTENTION = {"SelfAttention": "self_attn", "EncDecAttention": "cross_attn"}
_FFN = {"wi": "up", "wi_0": "gate", "wi_1": "up", "wo": "down"}
MAX_RELATIVE_DISTANCE = 1 << 20  # T5 uses 128; the largest real configs a few thousand


def t5_config(folder: Path, raw: dict[str, Any], stored_head: bool) -> Seq2SeqConfig:
    """The :class:`Seq2SeqConfig` of a T5 ``config.json``.

    Raises:
        CheckpointError: an unsupported feed-forward, or a broken config.
    """
    settings = generation_settings(folder, raw)
    proj = str(raw.get("feed_forward_proj", "relu"))
    gated, act = proj.startswith("gated-"), proj.removeprefix("gated-")
    act = "gelu_new" if proj == "gated-gelu" else act
    if act not in ACTIVATIONS:
        raise CheckpointError(f"{folder.name}: feed_forward_proj {proj!r} is not supported")
    scaled = raw.get("scale_decoder_outputs")
    scaled = raw.get("tie_word_embeddings", True) is not False if scaled is None else bool(scaled)
    try:
        d_model, pad = int(raw["d_model"]), int(raw.get("pad_token_id", 0))
        start = settings.get("decoder_start_token_id")
        layers = int(raw["num_layers"])
        return Seq2SeqConfig(
            family="t5", vocab_size=int(raw["vocab_size"]), d_model=d_model, n_encoder_layers=layers,
            n_decoder_layers=int(raw.get("num_decoder_layers") or layers), n_heads=int(raw["num_heads"]),
            d_kv=int(raw["d_kv"]), d_ff=int(raw["d_ff"]), max_len=int(raw.get("n_positions", 512)), pad_id=pad,
            eos_id=int(settings.get("eos_token_id", 1)), decoder_start_id=pad if start is None else int(start),
            activation=act, positions="relative", pre_norm=True, rms_norm=True,
            norm_eps=float(raw.get("layer_norm_epsilon", 1e-6)), final_norm=True, bias=False, scaled=False,
            gated=gated, logits_scale=d_model ** -0.5 if scaled else 1.0, tied_head=not stored_head,
            relative_buckets=int(raw.get("relative_attention_num_buckets", 32)),
            relative_max_distance=int(raw.get("relative_attention_max_distance", 128)),
            never_generated=banned_ids(settings),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{folder.name}: config.json is incomplete or invalid ({error})") from None


def _check_relative(raw: dict[str, Any], folder: Path, buckets: int) -> None:
    """T5's relative-position buckets: at least 4 (half for each direction, half of those exact), and a largest
    distance past the exact ones and at most :data:`MAX_RELATIVE_DISTANCE` (else the log-spaced buckets divide by 0
    or take the log of a negative number on every run).

    Raises:
        CheckpointError: naming the config.json key and the value.
    """
    if buckets < 4:
        raise CheckpointError(f"{folder.name}: config.json's 'relative_attention_num_buckets' must be at least 4, "
                              f"got {buckets}")
    distance = count(raw, folder, "relative_attention_max_distance", 128)
    if not buckets // 2 < distance <= MAX_RELATIVE_DISTANCE:
        raise CheckpointError(f"{folder.name}: config.json's 'relative_attention_max_distance' must lie in "
                              f"{buckets // 2 + 1}…{MAX_RELATIVE_DISTANCE:,} for {buckets} buckets, got {distance:,}")


def t5_claims(raw: dict[str, Any], folder: Path) -> Claims:
    """What a T5 config.json claims: each stack's layers, the shared embedding, the relative-position tables
    (buckets × heads), each layer's query (heads × d_kv rows), cross-attention query and down projection."""
    width, inner = ("d_model", count(raw, folder, "d_model")), ("d_ff", count(raw, folder, "d_ff"))
    heads, buckets = count(raw, folder, "num_heads"), count(raw, folder, "relative_attention_num_buckets", 32)
    _check_relative(raw, folder, buckets)
    query = (("num_heads × d_kv", heads * count(raw, folder, "d_kv")), width)
    layers = count(raw, folder, "num_layers")
    tensors = {"embed.weight": (("vocab_size", count(raw, folder, "vocab_size")), width)}
    stacks = []
    for stack, key in (("encoder", "num_layers"), ("decoder", "num_decoder_layers")):
        tensors[f"{stack}.relative.table.weight"] = (("relative_attention_num_buckets", buckets), ("num_heads", heads))
        layer = {"self_attn.q.weight": query, "ffn.down.weight": (width, inner)}
        if stack == "decoder":
            layer["cross_attn.q.weight"] = query
        stacks.append(Stack(f"{stack}.layers.", (key, count(raw, folder, key, layers)), layer))
    return Claims(tuple(stacks), tensors)


def t5_name(name: str) -> str | None:
    """A stored T5 tensor name → ours, None for a copy of the shared embedding."""
    fixed = {"shared.weight": "embed.weight", "lm_head.weight": "head.weight",
             "encoder.final_layer_norm.weight": "encoder.final_norm.weight",
             "decoder.final_layer_norm.weight": "decoder.final_norm.weight"}
    if name in fixed:
        return fixed[name]
    if name in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        return None
    match = _BLOCK.match(name)
    if match:
        stack, block, sub, rest = match.groups()
        module, _, param = rest.rpartition(".")
        ffn_sub = "1" if stack == "encoder" else "2"
        norms = {"0": "self_norm", "1": "cross_norm" if stack == "decoder" else "ffn_norm", "2": "ffn_norm"}
        part, _, leaf = module.partition(".")
        if module == "layer_norm":
            return f"{stack}.layers.{block}.{norms[sub]}.{param}"
        if part in _ATTENTION and leaf == "relative_attention_bias" and block == "0":
            return f"{stack}.relative.table.{param}"
        if part in _ATTENTION and leaf in ("q", "k", "v", "o"):
            return f"{stack}.layers.{block}.{_ATTENTION[part]}.{leaf}.{param}"
        if part == "DenseReluDense" and sub == ffn_sub and leaf in _FFN:
            return f"{stack}.layers.{block}.ffn.{_FFN[leaf]}.{param}"
    raise CheckpointError(f"unexpected tensor {name!r} for a T5 encoder-decoder")


def read_t5(folder: Path) -> FolderRead:
    """Load a T5 folder: the model in eval mode, its tokenizer.json and the decoder start id.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw = folder_config(folder)
    headers = check_folder(folder, t5_name, t5_claims(raw, folder))  # before anything is built
    config = t5_config(folder, raw, "lm_head.weight" in headers)
    tokenizer = read_tokenizer(folder, config.max_len, kind="sentencepiece")
    config = shown_only(config, tokenizer.vocab_size)
    return FolderRead(load_seq2seq(folder, config, t5_name), tokenizer, "t5", "text",
                      decoder_start_id=config.decoder_start_id)
