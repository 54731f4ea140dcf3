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
import math
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
from core.io.pretrained.gguf_header import FLOAT_TYPES, INTEGER_TYPES, STRING, GGUFHeader, scan_gguf
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


def _int(header: GGUFHeader, key: str, name: str, default: int | None = None, low: int = 1) -> int:
    """An integer metadata value of at least ``low`` (``default`` when absent and one is given)."""
    if key not in header.scalars:
        if default is None:
            raise CheckpointError(f"{name}: the GGUF metadata has no {key}")
        return default
    kind, value = header.scalars[key]
    if kind not in INTEGER_TYPES or value < low:
        raise CheckpointError(f"{name}: GGUF {key} must be an integer of at least {low}, got {value!r}")
    return value


def _positive(header: GGUFHeader, key: str, name: str, default: float) -> float:
    """A finite positive float metadata value (``default`` when absent)."""
    kind, value = header.scalars.get(key, (6, default))
    if kind not in FLOAT_TYPES | INTEGER_TYPES or not math.isfinite(value) or value <= 0:
        raise CheckpointError(f"{name}: GGUF {key} must be a finite number above 0, got {value!r}")
    return float(value)


def _vocab_size(header: GGUFHeader, name: str) -> int:
    """The token count, after checking the tokenizer arrays' item types."""
    for key, types in (("tokenizer.ggml.tokens", {STRING}), ("tokenizer.ggml.merges", {STRING}),
                       ("tokenizer.ggml.token_type", INTEGER_TYPES)):
        if key in header.scalars or (key in header.arrays and header.arrays[key][0] not in types):
            raise CheckpointError(f"{name}: GGUF {key} must be an array of "
                                  f"{'strings' if STRING in types else 'integers'}")
    item, count = header.arrays.get("tokenizer.ggml.tokens", (STRING, 0))
    if count < 1:
        raise CheckpointError(f"{name} has no tokenizer vocabulary in its metadata")
    return count


def _config(header: GGUFHeader, name: str) -> LlamaConfig:
    """The Llama config the header claims, every count checked against the tensors present
    before any module, list or buffer of that size exists."""
    arch = header.scalars.get("general.architecture", (STRING, None))[1]
    if arch not in SUPPORTED_ARCHITECTURES:
        raise CheckpointError(f"{name}: GGUF architecture {arch!r} is not supported; "
                              f"supported: {', '.join(SUPPORTED_ARCHITECTURES)} (Llama-family decoders)")
    scaling = header.scalars.get(f"{arch}.rope.scaling.type", (STRING, "none"))[1]
    if scaling != "none" or "rope_freqs.weight" in header.tensors:
        raise CheckpointError(f"{name}: rotary scaling ({scaling}) is not supported")
    n_heads, d_model = _int(header, f"{arch}.attention.head_count", name), _int(header, f"{arch}.embedding_length", name)
    n_kv = _int(header, f"{arch}.attention.head_count_kv", name, n_heads)
    if d_model % n_heads or n_heads % n_kv or (d_model // n_heads) % 2:
        raise CheckpointError(f"{name}: GGUF embedding_length {d_model} does not split into head_count {n_heads} "
                              f"heads of even width in head_count_kv {n_kv} groups")
    sizes = dict(vocab_size=_vocab_size(header, name), d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv,
                 n_decoder_layers=_int(header, f"{arch}.block_count", name),
                 d_ff=_int(header, f"{arch}.feed_forward_length", name))
    _check_shapes(header, sizes, name)
    rope_dims = _int(header, f"{arch}.rope.dimension_count", name, d_model // n_heads)
    if rope_dims != d_model // n_heads:
        raise CheckpointError(f"{name}: partial rotary ({rope_dims} of {d_model // n_heads} dims) is not supported")
    ids = {k: _int(header, f"tokenizer.ggml.{k}_token_id", name, -1, low=0)
           for k in ("bos", "eos", "padding")}
    if any(v >= sizes["vocab_size"] for v in ids.values()):
        raise CheckpointError(f"{name}: GGUF token ids {ids} must be below the vocabulary size {sizes['vocab_size']}")
    eos = ids["eos"] if ids["eos"] >= 0 else None
    try:
        return LlamaConfig(
            **sizes, rope_base=_positive(header, f"{arch}.rope.freq_base", name, 10000.0),
            norm_eps=_positive(header, f"{arch}.attention.layer_norm_rms_epsilon", name, 1e-5),
            max_len=min(MAX_LEN, _int(header, f"{arch}.context_length", name, MAX_LEN)),
            tie_embeddings="output.weight" not in header.tensors,
            pad_id=ids["padding"] if ids["padding"] >= 0 else (eos or 0),
            bos_id=ids["bos"] if ids["bos"] >= 0 else None, eos_id=eos,
        )
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{name}: incomplete or invalid Llama metadata ({error})") from None


def _check_shapes(header: GGUFHeader, sizes: dict[str, int], name: str) -> None:
    """The tensors present are exactly the ones ``sizes`` claims, with its shapes (HF layout)."""
    layers = sizes["n_decoder_layers"]
    if layers > len(header.tensors):
        raise CheckpointError(f"{name}: GGUF block_count {layers:,} is more than its {len(header.tensors)} tensors allow")
    d, ff, vocab = sizes["d_model"], sizes["d_ff"], sizes["vocab_size"]
    kv = sizes["n_kv_heads"] * (d // sizes["n_heads"])
    block = {"attn_norm": (d,), "attn_q": (d, d), "attn_k": (kv, d), "attn_v": (kv, d), "attn_output": (d, d),
             "ffn_norm": (d,), "ffn_gate": (ff, d), "ffn_up": (ff, d), "ffn_down": (d, ff)}
    expected = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,)}
    if "output.weight" in header.tensors:
        expected["output.weight"] = (vocab, d)
    expected.update({f"blk.{i}.{part}.weight": shape for i in range(layers) for part, shape in block.items()})
    found = {k: v.shape for k, v in header.tensors.items()}
    if found != expected:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        wrong = [(k, found[k], expected[k]) for k in expected if k in found and found[k] != expected[k]]
        raise CheckpointError(f"{name}: its tensors do not match its metadata: missing {missing[:3]}, "
                              f"unexpected {extra[:3]}, wrong shapes {wrong[:2]}")


def _vocab(reader, config: LlamaConfig, name: str) -> GGUFVocab:
    """The tokenizer metadata (item types and counts were checked by the header scan)."""
    model, pre = _field(reader, "tokenizer.ggml.model"), _field(reader, "tokenizer.ggml.pre", "default")
    merges = list(_field(reader, "tokenizer.ggml.merges", []))
    if not isinstance(model, str) or not isinstance(pre, str):
        raise CheckpointError(f"{name}: GGUF tokenizer.ggml.model and tokenizer.ggml.pre must be strings")
    bad = next((m for m in merges if m.count(" ") != 1 or m.startswith(" ") or m.endswith(" ")), None)
    if bad is not None:
        raise CheckpointError(f"{name}: GGUF merge {bad[:40]!r} is not two tokens separated by one space")
    return GGUFVocab(model=model, pre=pre, tokens=list(_field(reader, "tokenizer.ggml.tokens")), merges=merges,
                     token_types=list(_field(reader, "tokenizer.ggml.token_type", [])),
                     bos_id=config.bos_id, eos_id=config.eos_id,
                     add_bos=bool(_field(reader, "tokenizer.ggml.add_bos_token", False)))


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
    config = _config(scan_gguf(path), path.name)  # every count bounded before GGUFReader allocates
    reader = _reader(path)
    try:
        tokenizer = PretrainedTokenizer.from_gguf(_vocab(reader, config, path.name), config.max_len)
    except Exception as error:  # HF tokenizers raises bare Exceptions (a merge of unknown tokens)
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
