"""A Whisper model from a CTranslate2 folder: ``model.bin`` (or its parts), ``config.json``, ``tokenizer.json``.

Every file opened resolves inside the folder (:func:`core.io.files.model_file`). ``config.json`` (written by
CTranslate2's Whisper converter) gives the alignment heads, the
suppressed ids and the language token ids; the sizes come from the weights' shapes and the
special ids from the tokenizer. Every fault is one :class:`~core.io.checkpoint.CheckpointError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from core.io.checkpoint import CheckpointError
from core.io.files import model_file
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.ctranslate2 import Header, read_header, read_tensors
from core.io.pretrained.hf_files import read_json
from core.model.families.whisper import WhisperConfig, WhisperModel
from core.text.pretrained_tokenizer import PretrainedTokenizer

_GELU = 3  # CTranslate2's ActivationType::GELU
SPECS = (("WhisperSpec", 3),)  # the model specs (name, revision) read: CTranslate2's current WhisperSpec
_STACK = {  # our module path → CTranslate2's variable scope, per layer
    "attn_norm": "self_attention/layer_norm", "attn.qkv": "self_attention/linear_0",
    "attn.out": "self_attention/linear_1", "self_norm": "self_attention/layer_norm", "self_attn.qkv": "self_attention/linear_0",
    "self_attn.out": "self_attention/linear_1", "cross_norm": "attention/layer_norm",
    "cross_attn.query": "attention/linear_0", "cross_attn.kv": "attention/linear_1",
    "cross_attn.out": "attention/linear_2",
    "ffn_norm": "ffn/layer_norm", "ffn.up": "ffn/linear_0", "ffn.down": "ffn/linear_1",
}
_TOP = {"conv1": "encoder/conv1", "conv2": "encoder/conv2", "encoder_norm": "encoder/layer_norm",
        "decoder_norm": "decoder/layer_norm", "embed": "decoder/embeddings"}


@dataclass(frozen=True)
class WhisperRead:
    """What :func:`read_whisper` returns: the model in ``eval()`` mode and its tokenizer."""

    model: WhisperModel
    tokenizer: PretrainedTokenizer


def is_ctranslate2_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding a CTranslate2 ``model.bin`` and its ``config.json``."""
    return path.is_dir() and (path / "model.bin").is_file() and (path / "config.json").is_file()


def _layers(header: Header, stack: str) -> int:
    found = {int(m.group(1)) for name in header.variables if (m := re.match(rf"{stack}/layer_(\d+)/", name))}
    if found != set(range(len(found))):
        raise CheckpointError(f"model.bin: the {stack} layers are not numbered 0…{len(found) - 1}")
    return len(found)


def _shape(header: Header, name: str) -> tuple[int, ...]:
    if name not in header.variables:
        raise CheckpointError(f"model.bin has no {name}: not a Whisper model")
    return header.variables[name].shape


def _token(tokenizer: PretrainedTokenizer, token: str) -> int:
    found = tokenizer.token_id(token)
    if found is None:
        raise CheckpointError(f"tokenizer.json has no {token}: not a Whisper tokenizer")
    return found


def _ids(config: dict[str, Any], key: str, folder: Path) -> tuple[int, ...]:
    value = config.get(key, [])
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise CheckpointError(f"{folder.name}: config.json's {key} must be a list of token ids")
    return tuple(value)


def whisper_config(header: Header, config: dict[str, Any], tokenizer: PretrainedTokenizer,
                   folder: Path) -> WhisperConfig:
    """The :class:`WhisperConfig` of a checked header, the folder's ``config.json`` and its tokenizer."""
    if header.spec != "WhisperSpec":
        raise CheckpointError(f"{folder.name}: model.bin holds a {header.spec}, not a WhisperSpec")
    vocab, width = _shape(header, "decoder/embeddings/weight")
    conv = _shape(header, "encoder/conv1/weight")  # (D, M, 3)
    languages: tuple[tuple[str, int], ...] = ()
    multilingual = vocab >= 51865  # Whisper's rule: English-only models have one token fewer
    if multilingual:
        names = tokenizer.token_strings([i for i in _ids(config, "lang_ids", folder) if i < tokenizer.vocab_size])
        languages = tuple((n.strip("<|>"), tokenizer.token_id(n)) for n in names)
    pairs = config.get("alignment_heads", [])
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise CheckpointError(f"{folder.name}: config.json's alignment_heads must be [layer, head] pairs")
    try:
        return WhisperConfig(
            vocab_size=vocab, d_model=width, n_encoder_layers=_layers(header, "encoder"),
            n_decoder_layers=_layers(header, "decoder"), n_heads=_scalar(header, folder, "encoder/num_heads"),
            d_ff=_shape(header, "encoder/layer_0/ffn/linear_0/weight")[0],
            eot_id=_token(tokenizer, "<|endoftext|>"), sot_id=_token(tokenizer, "<|startoftranscript|>"),
            no_timestamps_id=_token(tokenizer, "<|notimestamps|>"), n_mels=conv[1],
            n_frames=_shape(header, "encoder/position_encodings/encodings")[0],
            max_len=_shape(header, "decoder/position_encodings/encodings")[0],
            transcribe_id=_token(tokenizer, "<|transcribe|>") if multilingual else None,
            translate_id=_token(tokenizer, "<|translate|>") if multilingual else None,
            languages=languages, suppress_ids=_ids(config, "suppress_ids", folder),
            alignment_heads=tuple((int(a), int(b)) for a, b in pairs),
        )
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{folder.name}: not a Whisper model Attnscope can open ({error})") from None


def _scalar(header: Header, folder: Path, name: str) -> int:
    """An integer scalar of the header (CTranslate2 stores flags and sizes as rank-0 variables)."""
    var = header.variables.get(name)
    if var is None or var.value is None or var.dtype not in ("int8", "int16", "int32"):
        raise CheckpointError(f"{folder.name}: model.bin has no integer {name}")
    return int(var.value)


def _state_dict(weights: dict[str, torch.Tensor], config: WhisperConfig) -> dict[str, torch.Tensor]:
    """Our parameter names → the CTranslate2 tensors they take."""
    state = {"encoder_positions": weights["encoder/position_encodings/encodings"],
             "decoder_positions": weights["decoder/position_encodings/encodings"]}
    scopes = dict(_TOP)
    for stack, count in (("encoder", config.n_encoder_layers), ("decoder", config.n_decoder_layers)):
        ours = ("attn_norm", "attn.qkv", "attn.out") if stack == "encoder" else (
            "self_norm", "self_attn.qkv", "self_attn.out", "cross_norm", "cross_attn.query", "cross_attn.kv",
            "cross_attn.out")
        for i in range(count):
            for module in (*ours, "ffn_norm", "ffn.up", "ffn.down"):
                scopes[f"{stack}_layers.{i}.{module}"] = f"{stack}/layer_{i}/{_STACK[module]}"
    for module, scope in scopes.items():
        norm = module.endswith("norm")
        for ours, theirs in (("weight", "gamma" if norm else "weight"), ("bias", "beta" if norm else "bias")):
            if module == "embed" and ours == "bias":
                continue
            name = f"{scope}/{theirs}"
            if name not in weights:
                raise CheckpointError(f"model.bin has no {name}")
            state[f"{module}.{ours}"] = weights[name]
    return state


def _check_layout(header: Header, folder: Path) -> None:
    """Refuse the variants our :class:`WhisperModel` does not build: another spec or spec revision, CTranslate2
    flags (scalars) of another layout, an untied output, quantized weights."""
    if (header.spec, header.revision) not in SPECS:
        raise CheckpointError(f"{folder.name}: model.bin holds {header.spec[:40]} revision {header.revision}; Attnscope "
                              f"reads {', '.join(f'{s} revision {r}' for s, r in SPECS)}")
    expected = {"decoder/pre_norm": 1, "decoder/activation": _GELU, "decoder/scale_embeddings": 0,
                "decoder/alibi": 0, "decoder/start_from_zero_embedding": 0}
    for name, value in expected.items():
        var = header.variables.get(name)
        if var is not None and var.value != value:
            raise CheckpointError(f"{folder.name}: {name} = {var.value:g} is not the Whisper layout Attnscope builds")
    if header.aliases.get("decoder/projection/weight") != "decoder/embeddings/weight":
        raise CheckpointError(f"{folder.name}: the output projection is not tied to the token embedding")
    for var in header.variables.values():
        if var.shape and var.dtype not in ("float32", "float16", "bfloat16"):
            raise CheckpointError(f"{folder.name}: {var.name} is {var.dtype} (quantized weights are not supported)")


def read_whisper(folder: Path, parts: Sequence[Path] | None = None) -> WhisperRead:
    """Open a CTranslate2 Whisper folder: the model (float32, ``eval()``) and its tokenizer.

    Args:
        folder: holds ``config.json`` and ``tokenizer.json`` (and ``model.bin`` unless ``parts`` is given).
        parts: the pieces of ``model.bin`` in order, when it is split (joined as they are read).

    Raises:
        CheckpointError: a missing or malformed file, another model, a layout or dtype not supported.
    """
    folder = Path(folder)
    parts = [model_file(folder / "model.bin", folder)] if parts is None else list(parts)  # installed parts: given
    header = read_header(parts, label=f"{folder.name}/model.bin")
    _check_layout(header, folder)
    config_json = read_json(folder / "config.json", folder)
    tokenizer_file = model_file(folder / "tokenizer.json", folder)
    try:
        tokenizer = PretrainedTokenizer.from_file(tokenizer_file, max_len=header_max_len(header), kind="bpe")
    except Exception as error:  # tokenizers raises its own Exception type for a bad file
        raise CheckpointError(f"{folder.name}: cannot read tokenizer.json ({error})") from None
    config = whisper_config(header, config_json, tokenizer, folder)
    weights = read_tensors(parts, header, label=f"{folder.name}/model.bin")
    model = assign_weights(lambda: WhisperModel(config), _state_dict(weights, config), folder.name)
    return WhisperRead(model, tokenizer)


def header_max_len(header: Header) -> int:
    """Decoder positions of a Whisper header (the tokenizer truncates there)."""
    return _shape(header, "decoder/position_encodings/encodings")[0]
