"""Read a Llama-family GGUF file (llama.cpp's format) into a :class:`~core.model.families.llama.LlamaModel`.

The header is scanned with every size bounded (``gguf_header``), the config read from it
(``gguf_config``, ``gguf_rope``), then the arrays and tensors are read where the scan found them
(``gguf_data``) and every tensor dequantized to float32 by the ``gguf`` package
(``gguf.quants.dequantize``). llama.cpp's converter permuted a Llama's query and key rows for its
adjacent-pair rotary layout; they are put back in the Hugging Face layout the model uses (see
``core.model.rotary``). The tokenizer comes from the file's metadata (``gguf_vocab``).

Dequantizing takes seconds, so the float32 weights are cached as a safetensors file keyed by the GGUF's
fingerprint (``core.io.files.file_fingerprint``: its header, size, modification time, inode and sampled
blocks), taken only after the header passed its scan and the budget: nothing reads the whole file first.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from core.io.checkpoint import CheckpointError
from core.io.files import file_fingerprint
from core.io.pretrained import progress, weight_cache
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.finite import ensure_finite
from core.io.pretrained.gguf_quants import dequantized
from core.io.pretrained.gguf_config import SUPPORTED_ARCHITECTURES, gguf_config
from core.io.pretrained.gguf_data import GGUFMetadata, raw_tensor
from core.io.pretrained.gguf_header import GGUFHeader, scan_gguf
from core.io.pretrained.gguf_rope import ROPE_FREQS
from core.io.pretrained.gguf_vocab import gguf_tokenizer
from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.model.families.llama import LlamaConfig, LlamaModel
from core.model.rotary import unpermute_gguf_rows

log = logging.getLogger(__name__)

__all__ = ["SUPPORTED_ARCHITECTURES", "build_llama", "load_gguf", "read_gguf"]
_BLOCK = re.compile(r"^blk\.(\d+)\.(\w+)\.(weight|bias)$")
_BLOCK_NAMES = {
    "attn_norm": "attn_norm", "attn_q": "attn.q_proj", "attn_k": "attn.k_proj", "attn_v": "attn.v_proj",
    "attn_output": "attn.o_proj", "ffn_norm": "ffn_norm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd.weight": "embed.weight", "output_norm.weight": "norm.weight",
              "output.weight": "lm_head.weight"}


def _our_name(gguf_name: str, file_name: str) -> str:
    if gguf_name in _TOP_NAMES:
        return _TOP_NAMES[gguf_name]
    match = _BLOCK.match(gguf_name)
    if match is None or match.group(2) not in _BLOCK_NAMES:
        raise CheckpointError(f"{file_name}: unexpected tensor {gguf_name!r} for a Llama-family model")
    return f"layers.{match.group(1)}.{_BLOCK_NAMES[match.group(2)]}.{match.group(3)}"


def _weights(path: Path, header: GGUFHeader, config: LlamaConfig, permuted: bool) -> dict[str, Tensor]:
    """Every tensor dequantized to float32 and renamed; Q/K rows (and biases) un-permuted when llama.cpp's
    converter ``permuted`` them (Llama; Qwen2 keeps the Hugging Face layout)."""
    weights = {}
    total = 4 * sum(math.prod(info.dims) for info in header.tensors.values() if info.name != ROPE_FREQS)
    done = 0
    for info in header.tensors.values():
        if info.name == ROPE_FREQS:  # read into the config's rotary scaling
            continue
        key = _our_name(info.name, path.name)
        weight = torch.from_numpy(dequantized(raw_tensor(path, header, info), info, path.name))
        if permuted and ".attn.q_proj." in key:
            weight = unpermute_gguf_rows(weight, config.n_heads)
        elif permuted and ".attn.k_proj." in key:
            weight = unpermute_gguf_rows(weight, config.n_kv_heads)
        weights[key] = weight.contiguous()
        done += 4 * weight.numel()
        progress.report(done, total)
    if config.tie_embeddings:
        weights["lm_head.weight"] = weights["embed.weight"]
    return weights


def read_gguf(path: str | Path, header: GGUFHeader | None = None
              ) -> tuple[LlamaConfig, PretrainedTokenizer, dict[str, Tensor], dict[str, Any]]:
    """Parse and dequantize a Llama-family GGUF: (config, tokenizer, float32 weights, general metadata).

    The general metadata's ``architecture`` (``llama``, ``qwen2`` or ``gemma``) is the model's family.
    ``header``: the file's :func:`~core.io.pretrained.gguf_header.scan_gguf`, when the caller scanned it already.

    Raises:
        CheckpointError: unreadable file, another architecture, unsupported tokenizer or quantization.
    """
    path = Path(path)
    header = scan_gguf(path) if header is None else header  # every count bounded before anything is allocated
    config = gguf_config(header, path)
    meta = GGUFMetadata(path, header)
    tokenizer = gguf_tokenizer(meta, config, path.name)
    weights = _weights(path, header, config, permuted=meta.get("general.architecture") == "llama")  # not Qwen2, Gemma
    keys = ("architecture", "name", "organization", "license", "size_label", "finetune", "basename", "file_type")
    general = {k: meta.get(f"general.{k}") for k in keys}
    return config, tokenizer, weights, {k: v for k, v in general.items() if v is not None}


def build_llama(config: LlamaConfig, weights: dict[str, Tensor], name: str) -> LlamaModel:
    """A :class:`LlamaModel` holding ``weights`` (names and shapes checked; their values at its first use), in
    eval mode."""
    return assign_weights(lambda: LlamaModel(config), weights, name)


def load_gguf(path: str | Path, *, use_cache: bool = True) -> tuple[LlamaModel, PretrainedTokenizer, dict, str]:
    """Load a Llama-family GGUF: (model in eval mode, tokenizer, general metadata, the file's fingerprint).

    The header is scanned and its config checked against the budget first (milliseconds, whatever the file's
    size); only a file that passes is fingerprinted (a bounded read) and read. With ``use_cache`` the
    dequantized weights are read from the weight cache, or written to it in the background after a first
    load (the model's weights are never modified; checked finite first, where without the cache they are checked
    at the model's first use).

    Raises:
        CheckpointError: see :func:`read_gguf`.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"GGUF file not found: {path.name}")
    header = scan_gguf(path)  # every count and the parameter budget, from the header alone
    config = gguf_config(header, path)
    try:
        key = file_fingerprint(path, header.data_start)
    except OSError as error:
        raise CheckpointError(f"{path.name} cannot be read ({error.strerror})") from None
    cached = _cached(path, key, config) if use_cache else None
    if cached is not None:
        return (*cached, key)
    config, tokenizer, weights, general = read_gguf(path, header)
    model = build_llama(config, weights, path.name)
    if use_cache:
        ensure_finite(model)  # before its weights are cached: a non-finite file is refused now, never cached
        stored = {k: v for k, v in weights.items() if not (config.tie_embeddings and k == "lm_head.weight")}
        entry = {"config": json.dumps(asdict(config)), "tokenizer": tokenizer.to_json(),
                 "general": json.dumps(general), "source": path.name}
        weight_cache.write_soon(key, "gguf", stored, entry)
    return model, tokenizer, general, key


def _cached(path: Path, key: str, config: LlamaConfig) -> tuple[LlamaModel, PretrainedTokenizer, dict] | None:
    """(model, tokenizer, general metadata) from the weight cache entry ``key``, when it holds one for ``config``."""
    found = weight_cache.read(key, "gguf")
    if found is None:
        return None
    tensors, meta = found
    try:
        if LlamaConfig(**json.loads(meta["config"])) != config:
            raise ValueError("the entry was written for another config")
        tokenizer = PretrainedTokenizer.from_json(meta["tokenizer"])
        general = json.loads(meta["general"])
        if general.get("architecture") not in SUPPORTED_ARCHITECTURES:  # an entry from before it was kept
            raise ValueError("the entry does not say the GGUF's architecture")
        if config.tie_embeddings:
            tensors["lm_head.weight"] = tensors["embed.weight"]
        return build_llama(config, tensors, path.name), tokenizer, general
    except Exception as error:  # any fault in a cache entry (HF tokenizers raises bare Exceptions): rebuild
        log.warning("ignoring the weight cache entry for %s (%s)", path.name, error)
        return None
