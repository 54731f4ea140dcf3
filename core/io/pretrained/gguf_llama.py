"""Read a Llama-family GGUF file (llama.cpp's format) into a :class:`~core.model.families.llama.LlamaModel`.

The ``gguf`` package parses the file and dequantizes every tensor to float32
(``gguf.quants.dequantize``); nothing here parses bytes by hand. llama.cpp's
converter permuted the query and key rows for its adjacent-pair rotary layout; they
are put back in the Hugging Face layout the model uses (see ``core.model.rotary``).
The tokenizer comes from the file's metadata (``core.text.pretrained_tokenizer``).

Dequantizing takes seconds, so the float32 weights are cached as a safetensors file
keyed by the GGUF's SHA-256 (``core.io.pretrained.weight_cache``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from core.io.checkpoint import CheckpointError
from core.io.pretrained import weight_cache
from core.io.pretrained.assign import assign_weights
from core.text.pretrained_tokenizer import GGUFVocab, PretrainedTokenizer
from core.model.families.llama import LlamaConfig, LlamaModel
from core.model.rotary import unpermute_gguf_rows

log = logging.getLogger(__name__)

SUPPORTED_ARCHITECTURES = ("llama",)
MAX_LEN = 2048  # longest input explained (the maps grow as T²), within the trained context
_BLOCK = re.compile(r"^blk\.(\d+)\.(\w+)\.weight$")
_BLOCK_NAMES = {
    "attn_norm": "attn_norm", "attn_q": "attn.q_proj", "attn_k": "attn.k_proj", "attn_v": "attn.v_proj",
    "attn_output": "attn.o_proj", "ffn_norm": "ffn_norm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd.weight": "embed.weight", "output_norm.weight": "norm.weight",
              "output.weight": "lm_head.weight"}


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _reader(path: Path):
    import gguf  # the GGUF parser; imported here so the rest of core does not need it

    try:
        return gguf.GGUFReader(str(path))
    except (ValueError, OSError, KeyError, IndexError) as error:
        raise CheckpointError(f"{path.name} is not a readable GGUF file ({error})") from None


def _field(reader, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _config(reader, name: str) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise CheckpointError(f"{name}: GGUF architecture {arch!r} is not supported; "
                              f"supported: {', '.join(SUPPORTED_ARCHITECTURES)} (Llama-family decoders)")
    scaling = _field(reader, f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", None) or "rope_freqs.weight" in {t.name for t in reader.tensors}:
        raise CheckpointError(f"{name}: rotary scaling ({scaling}) is not supported")
    n_heads = _field(reader, f"{arch}.attention.head_count")
    d_model = _field(reader, f"{arch}.embedding_length")
    rope_dims = _field(reader, f"{arch}.rope.dimension_count", d_model // n_heads)
    if rope_dims != d_model // n_heads:
        raise CheckpointError(f"{name}: partial rotary ({rope_dims} of {d_model // n_heads} dims) is not supported")
    tokens = _field(reader, "tokenizer.ggml.tokens") or []
    eos = _field(reader, "tokenizer.ggml.eos_token_id")
    try:
        return LlamaConfig(
            vocab_size=len(tokens), d_model=d_model, n_decoder_layers=_field(reader, f"{arch}.block_count"),
            n_heads=n_heads, n_kv_heads=_field(reader, f"{arch}.attention.head_count_kv", n_heads),
            d_ff=_field(reader, f"{arch}.feed_forward_length"),
            rope_base=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
            norm_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
            max_len=min(MAX_LEN, int(_field(reader, f"{arch}.context_length", MAX_LEN))),
            tie_embeddings="output.weight" not in {t.name for t in reader.tensors},
            pad_id=int(_field(reader, "tokenizer.ggml.padding_token_id", eos if eos is not None else 0)),
            bos_id=_field(reader, "tokenizer.ggml.bos_token_id"), eos_id=eos,
        )
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{name}: incomplete or invalid Llama metadata ({error})") from None


def _vocab(reader, name: str) -> GGUFVocab:
    try:
        return GGUFVocab(
            model=_field(reader, "tokenizer.ggml.model"), pre=_field(reader, "tokenizer.ggml.pre", "default"),
            tokens=list(_field(reader, "tokenizer.ggml.tokens")),
            merges=list(_field(reader, "tokenizer.ggml.merges", [])),
            token_types=list(_field(reader, "tokenizer.ggml.token_type", [])),
            bos_id=_field(reader, "tokenizer.ggml.bos_token_id"), eos_id=_field(reader, "tokenizer.ggml.eos_token_id"),
            add_bos=bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
        )
    except TypeError:
        raise CheckpointError(f"{name} has no tokenizer vocabulary in its metadata") from None


def _our_name(gguf_name: str) -> str:
    if gguf_name in _TOP_NAMES:
        return _TOP_NAMES[gguf_name]
    match = _BLOCK.match(gguf_name)
    if match is None or match.group(2) not in _BLOCK_NAMES:
        raise CheckpointError(f"unexpected tensor {gguf_name!r} for a Llama-family model")
    return f"layers.{match.group(1)}.{_BLOCK_NAMES[match.group(2)]}.weight"


def _weights(reader, config: LlamaConfig, name: str) -> dict[str, Tensor]:
    """Every tensor dequantized to float32, renamed, Q/K rows un-permuted."""
    from gguf.quants import dequantize

    weights = {}
    for tensor in reader.tensors:
        key = _our_name(tensor.name)
        try:
            array = dequantize(tensor.data, tensor.tensor_type)  # (rows, cols) row-major, float32
        except (NotImplementedError, ValueError) as error:
            raise CheckpointError(f"{name}: cannot dequantize {tensor.name} "
                                  f"({tensor.tensor_type.name}: {error})") from None
        weight = torch.from_numpy(np.array(array, dtype=np.float32, copy=True))  # owns its memory
        if key.endswith("attn.q_proj.weight"):
            weight = unpermute_gguf_rows(weight, config.n_heads)
        elif key.endswith("attn.k_proj.weight"):
            weight = unpermute_gguf_rows(weight, config.n_kv_heads)
        weights[key] = weight.contiguous()
    if config.tie_embeddings:
        weights["lm_head.weight"] = weights["embed.weight"]
    return weights


def read_gguf(path: str | Path) -> tuple[LlamaConfig, PretrainedTokenizer, dict[str, Tensor], dict[str, Any]]:
    """Parse and dequantize a Llama-family GGUF: (config, tokenizer, float32 weights, general metadata).

    Raises:
        CheckpointError: unreadable file, another architecture, unsupported tokenizer or quantization.
    """
    path = Path(path)
    reader = _reader(path)
    config = _config(reader, path.name)
    try:
        tokenizer = PretrainedTokenizer.from_gguf(_vocab(reader, path.name), config.max_len)
    except ValueError as error:
        raise CheckpointError(f"{path.name}: {error}") from None
    weights = _weights(reader, config, path.name)
    general = {k: _field(reader, f"general.{k}") for k in ("name", "organization", "license", "size_label",
                                                            "finetune", "basename")}
    general["file_type"] = _field(reader, "general.file_type")
    return config, tokenizer, weights, {k: v for k, v in general.items() if v is not None}


def build_llama(config: LlamaConfig, weights: dict[str, Tensor], name: str) -> LlamaModel:
    """A :class:`LlamaModel` holding ``weights`` (names, shapes and finiteness checked), in eval mode."""
    return assign_weights(lambda: LlamaModel(config), weights, name)


def load_gguf(path: str | Path, *, use_cache: bool = True) -> tuple[LlamaModel, PretrainedTokenizer, dict, str]:
    """Load a Llama-family GGUF: (model in eval mode, tokenizer, general metadata, the file's SHA-256).

    With ``use_cache`` the dequantized weights are read from the weight cache, or written to it
    in the background after a first load (the model's weights are never modified).

    Raises:
        CheckpointError: see :func:`read_gguf`.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"GGUF file not found: {path.name}")
    sha = file_sha256(path)
    cached = weight_cache.read(sha, "gguf") if use_cache else None
    if cached is not None:
        tensors, meta = cached
        try:
            config = LlamaConfig(**json.loads(meta["config"]))
            tokenizer = PretrainedTokenizer.from_json(meta["tokenizer"])
            if config.tie_embeddings:
                tensors["lm_head.weight"] = tensors["embed.weight"]
            return build_llama(config, tensors, path.name), tokenizer, json.loads(meta["general"]), sha
        except Exception as error:  # any fault in a cache entry (HF tokenizers raises bare Exceptions): rebuild
            log.warning("ignoring the weight cache entry for %s (%s)", path.name, error)
    config, tokenizer, weights, general = read_gguf(path)
    model = build_llama(config, weights, path.name)
    if use_cache:
        stored = {k: v for k, v in weights.items() if not (config.tie_embeddings and k == "lm_head.weight")}
        header = {"config": json.dumps(asdict(config)), "tokenizer": tokenizer.to_json(),
                  "general": json.dumps(general), "source": path.name}
        weight_cache.write_soon(sha, "gguf", stored, header)
    return model, tokenizer, general, sha
