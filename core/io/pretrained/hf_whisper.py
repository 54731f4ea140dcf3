"""Read a Hugging Face Whisper folder (``model_type`` ``whisper``: ``WhisperForConditionalGeneration`` as
``transformers`` saves it, any size, English-only ``.en`` or multilingual) into a
:class:`~core.model.families.whisper.WhisperModel`.

The folder holds ``config.json``, safetensors weights, ``tokenizer.json`` and usually
``generation_config.json``. The sizes come from config.json (checked against the headers before
anything is built); the special ids from the tokenizer; from generation_config.json the alignment
heads, the suppressed ids, whether the model is multilingual and its language tokens. Without it,
Whisper's own rules hold: multilingual when the vocabulary has at least 51,865 tokens, the language
tokens those between ``<|startoftranscript|>`` and ``<|translate|>``, the alignment heads every head
of the decoder's second half.

The separate query, key and value projections (the key without a bias) are stacked into
:class:`~core.model.families.whisper.WhisperAttention`'s fused ones (a zero key bias), so the maps
come from the same attention as the CTranslate2 Whisper's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_claims import Claims, Stack, check_folder, count
from core.io.pretrained.hf_decoder import build_config, model_type, refuse_if
from core.io.pretrained.hf_files import FolderRead, read_json, read_tokenizer, read_weights
from core.model.families.whisper import WhisperConfig, WhisperModel
from core.text.pretrained_tokenizer import PretrainedTokenizer

#: Encoder positions of every Whisper: 30 s of audio in 20 ms frames (the spectrogram has twice as many columns).
FRAMES = 1500
_MULTILINGUAL_VOCAB = 51865  # Whisper's rule: English-only models have one token fewer
_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.+)$")
_ATTENTION = ("q_proj.weight", "q_proj.bias", "k_proj.weight", "v_proj.weight", "v_proj.bias", "out_proj.weight",
              "out_proj.bias")
_LAYER_TENSORS = {f"self_attn.{p}" for p in _ATTENTION} | {
    f"{m}.{p}" for m in ("self_attn_layer_norm", "fc1", "fc2", "final_layer_norm") for p in ("weight", "bias")}
_DECODER_TENSORS = _LAYER_TENSORS | {f"encoder_attn.{p}" for p in _ATTENTION} | {
    f"encoder_attn_layer_norm.{p}" for p in ("weight", "bias")}
_TOP = {f"encoder.conv{i}.{p}" for i in (1, 2) for p in ("weight", "bias")} | {
    "encoder.embed_positions.weight", "decoder.embed_positions.weight", "decoder.embed_tokens.weight",
    "encoder.layer_norm.weight", "encoder.layer_norm.bias", "decoder.layer_norm.weight", "decoder.layer_norm.bias"}


def _stored(name: str) -> str:
    """A stored tensor's name without the ``model.`` prefix (``proj_out.weight``, the tied output, is checked by
    :func:`_untie`).

    Raises:
        CheckpointError: a tensor a Whisper model does not have (a key bias, a classifier).
    """
    if name == "proj_out.weight":
        return name
    bare = name.removeprefix("model.")
    match = _LAYER.match(bare)
    known = (match.group(3) in (_LAYER_TENSORS if match.group(1) == "encoder" else _DECODER_TENSORS)) if match \
        else bare in _TOP
    if not known:
        raise CheckpointError(f"unexpected tensor {name!r} for a Whisper model")
    return bare


def _settings(raw: dict[str, Any], folder: Path) -> dict[str, int]:
    """The sizes of a Whisper config.json, refusing what :class:`WhisperModel` does not build."""
    refuse_if(raw.get("activation_function", "gelu") != "gelu", folder,
              f"activation_function {raw.get('activation_function')!r} (Whisper's is gelu)")
    refuse_if(bool(raw.get("scale_embedding", False)), folder, "scale_embedding")
    refuse_if(raw.get("tie_word_embeddings", True) is not True, folder, "an output projection not tied to the "
              "token embedding (tie_word_embeddings false)")
    architectures = raw.get("architectures") or ["WhisperForConditionalGeneration"]
    refuse_if(not isinstance(architectures, list) or architectures[0] not in (
        "WhisperForConditionalGeneration", "WhisperModel"), folder, f"architecture {str(architectures)[:60]}")
    sizes = {key: count(raw, folder, key) for key in (
        "vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
        "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "num_mel_bins", "max_source_positions",
        "max_target_positions")}
    for encoder, decoder in (("encoder_attention_heads", "decoder_attention_heads"),
                             ("encoder_ffn_dim", "decoder_ffn_dim")):
        refuse_if(sizes[encoder] != sizes[decoder], folder, f"{encoder} {sizes[encoder]} ≠ {decoder} "
                                                           f"{sizes[decoder]}")
    refuse_if(sizes["max_source_positions"] != FRAMES, folder,
              f"max_source_positions {sizes['max_source_positions']} (Whisper reads 30 s: {FRAMES} frames)")
    return sizes


def _claims(sizes: dict[str, int]) -> Claims:
    """What the sizes claim: both stacks, the heads splitting d_model, the embeddings, convolutions and projections."""
    def dim(key: str) -> tuple[str, int]:
        return key, sizes[key]

    width = dim("d_model")
    layer = {"self_attn.q_proj.weight": (width, width), "fc1.weight": (dim("encoder_ffn_dim"), width),
             "fc2.weight": (width, dim("encoder_ffn_dim"))}
    return Claims(
        (Stack("encoder.layers.", dim("encoder_layers"), layer),
         Stack("decoder.layers.", dim("decoder_layers"), {**layer, "encoder_attn.k_proj.weight": (width, width)})),
        {"decoder.embed_tokens.weight": (dim("vocab_size"), width),
         "encoder.embed_positions.weight": (dim("max_source_positions"), width),
         "decoder.embed_positions.weight": (dim("max_target_positions"), width),
         "encoder.conv1.weight": (width, dim("num_mel_bins"), ("the kernel width", 3)),
         "encoder.conv2.weight": (width, width, ("the kernel width", 3))},
        splits=((dim("encoder_attention_heads"), width),))


def _ids(value: Any, folder: Path, key: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise CheckpointError(f"{folder.name}: {key} must be a list of token ids")
    return tuple(value)


def _token(tokenizer: PretrainedTokenizer, folder: Path, token: str) -> int:
    found = tokenizer.token_id(token)
    if found is None:
        raise CheckpointError(f"{folder.name}: tokenizer.json has no {token}: not a Whisper tokenizer")
    return found


def _languages(generation: dict[str, Any], tokenizer: PretrainedTokenizer, folder: Path, sot: int,
               translate: int) -> tuple[tuple[str, int], ...]:
    """(code, id) of every language token: generation_config.json's ``lang_to_id``, else the tokens between
    ``<|startoftranscript|>`` and ``<|translate|>`` (Whisper's layout)."""
    table = generation.get("lang_to_id")
    if table is not None:
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, int) for k, v in table.items()):
            raise CheckpointError(f"{folder.name}: generation_config.json's lang_to_id must map tokens to ids")
        pairs = sorted(table.items(), key=lambda item: item[1])
    else:
        ids = list(range(sot + 1, translate))
        pairs = list(zip(tokenizer.token_strings(ids), ids))
    for token, index in pairs:
        if not (token.startswith("<|") and token.endswith("|>")) or tokenizer.token_id(token) != index:
            raise CheckpointError(f"{folder.name}: language token {token[:20]!r} is not id {index} of the tokenizer")
    return tuple((token[2:-2], index) for token, index in pairs)


def _alignment_heads(generation: dict[str, Any], folder: Path, layers: int, heads: int) -> tuple[tuple[int, int], ...]:
    """generation_config.json's ``alignment_heads`` [layer, head] pairs, else every head of the second half."""
    pairs = generation.get("alignment_heads")
    if pairs is None:
        return tuple((layer, head) for layer in range(layers // 2, layers) for head in range(heads))
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(i, int) and not isinstance(i, bool) for i in p) for p in pairs):
        raise CheckpointError(f"{folder.name}: generation_config.json's alignment_heads must be [layer, head] pairs")
    return tuple((a, b) for a, b in pairs)


def whisper_folder_config(raw: dict[str, Any], generation: dict[str, Any], tokenizer: PretrainedTokenizer,
                          folder: Path) -> WhisperConfig:
    """The :class:`WhisperConfig` of a checked config.json, its generation_config.json ({} without) and tokenizer."""
    sizes = _settings(raw, folder)
    sot, eot = _token(tokenizer, folder, "<|startoftranscript|>"), _token(tokenizer, folder, "<|endoftext|>")
    multilingual = generation.get("is_multilingual", sizes["vocab_size"] >= _MULTILINGUAL_VOCAB)
    refuse_if(not isinstance(multilingual, bool), folder, f"generation_config.json's is_multilingual {multilingual!r}")
    translate = _token(tokenizer, folder, "<|translate|>") if multilingual else None
    suppress = generation.get("suppress_tokens", raw.get("suppress_tokens"))
    return build_config(
        folder, "whisper", WhisperConfig, vocab_size=sizes["vocab_size"], d_model=sizes["d_model"],
        n_encoder_layers=sizes["encoder_layers"], n_decoder_layers=sizes["decoder_layers"],
        n_heads=sizes["encoder_attention_heads"], d_ff=sizes["encoder_ffn_dim"], eot_id=eot, sot_id=sot,
        no_timestamps_id=_token(tokenizer, folder, "<|notimestamps|>"), n_mels=sizes["num_mel_bins"],
        n_frames=sizes["max_source_positions"], max_len=sizes["max_target_positions"],
        transcribe_id=_token(tokenizer, folder, "<|transcribe|>") if multilingual else None, translate_id=translate,
        languages=_languages(generation, tokenizer, folder, sot, translate) if multilingual else (),
        suppress_ids=_ids(suppress, folder, "suppress_tokens"),
        alignment_heads=_alignment_heads(generation, folder, sizes["decoder_layers"], sizes["decoder_attention_heads"]))


def _fused(weights: dict[str, Tensor], scope: str, names: tuple[str, ...]) -> tuple[Tensor, Tensor]:
    """The projections ``names`` of ``scope`` stacked row-wise (weight, bias); the key's bias is zero."""
    weight = torch.cat([weights[f"{scope}.{n}.weight"] for n in names])  # (len(names)·D, D)
    zero = torch.zeros_like(weights[f"{scope}.k_proj.weight"][:, 0])  # (D,): the key has no bias
    biases = [zero if n == "k_proj" else weights[f"{scope}.{n}.bias"] for n in names]
    return weight, torch.cat(biases)


def state_dict(weights: dict[str, Tensor], config: WhisperConfig) -> dict[str, Tensor]:
    """Our parameter names → tensors, from ``weights`` under transformers' names (without ``model.``)."""
    state = {"encoder_positions": weights["encoder.embed_positions.weight"],
             "decoder_positions": weights["decoder.embed_positions.weight"],
             "embed.weight": weights["decoder.embed_tokens.weight"]}
    for ours, theirs in (("conv1", "encoder.conv1"), ("conv2", "encoder.conv2"), ("encoder_norm", "encoder.layer_norm"),
                         ("decoder_norm", "decoder.layer_norm")):
        state.update({f"{ours}.{p}": weights[f"{theirs}.{p}"] for p in ("weight", "bias")})
    for stack, count_ in (("encoder", config.n_encoder_layers), ("decoder", config.n_decoder_layers)):
        attn, norm = ("attn", "attn_norm") if stack == "encoder" else ("self_attn", "self_norm")
        for i in range(count_):
            ours, theirs = f"{stack}_layers.{i}", f"{stack}.layers.{i}"
            parts = {f"{attn}.qkv": _fused(weights, f"{theirs}.self_attn", ("q_proj", "k_proj", "v_proj"))}
            pairs = {f"{attn}.out": "self_attn.out_proj", norm: "self_attn_layer_norm", "ffn.up": "fc1",
                     "ffn.down": "fc2", "ffn_norm": "final_layer_norm"}
            if stack == "decoder":
                parts["cross_attn.kv"] = _fused(weights, f"{theirs}.encoder_attn", ("k_proj", "v_proj"))
                pairs.update({"cross_attn.query": "encoder_attn.q_proj", "cross_attn.out": "encoder_attn.out_proj",
                              "cross_norm": "encoder_attn_layer_norm"})
            for module, (weight, bias) in parts.items():
                state.update({f"{ours}.{module}.weight": weight, f"{ours}.{module}.bias": bias})
            for mine, hf in pairs.items():
                state.update({f"{ours}.{mine}.{p}": weights[f"{theirs}.{hf}.{p}"] for p in ("weight", "bias")})
    return state


def _untie(folder: Path, weights: dict[str, Tensor]) -> None:
    """Drop a stored ``proj_out.weight``, which must equal the token embedding (the model's output is tied to it)."""
    output = weights.pop("proj_out.weight", None)
    if output is not None and not torch.equal(output, weights["decoder.embed_tokens.weight"]):
        raise CheckpointError(f"{folder.name}: proj_out.weight differs from the token embedding; an untied "
                              f"Whisper output is not supported")


def read_hf_whisper(folder: Path) -> FolderRead:
    """Open a Hugging Face Whisper folder: the model (float32, ``eval()``) and its tokenizer (head ``speech``).

    Raises:
        CheckpointError: missing files, settings the model does not build, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, _ = model_type(folder, ("whisper",), "a Whisper folder")
    sizes = _settings(raw, folder)
    check_folder(folder, _stored, _claims(sizes))
    generation_path = folder / "generation_config.json"
    generation = read_json(generation_path, folder) if generation_path.is_file() else {}
    tokenizer = read_tokenizer(folder, sizes["max_target_positions"], kind="bpe")
    if tokenizer.vocab_size > sizes["vocab_size"]:
        raise CheckpointError(f"{folder.name}: the tokenizer has {tokenizer.vocab_size} tokens but the model "
                              f"{sizes['vocab_size']}")
    config = whisper_folder_config(raw, generation, tokenizer, folder)
    weights = read_weights(folder, _stored)
    _untie(folder, weights)
    model = assign_weights(lambda: WhisperModel(config), state_dict(weights, config), folder.name)
    return FolderRead(model, tokenizer, "whisper", "speech")
