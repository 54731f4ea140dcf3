"""The :class:`LlamaConfig` a GGUF header describes (``llama``, ``qwen2`` and ``gemma`` architectures), every
count checked against the tensors present before any module, list or buffer of that size exists.

Metadata keys are llama.cpp's, prefixed by ``general.architecture`` (``llama.block_count``,
``qwen2.attention.head_count`` …); a key no reader understands is refused by name (:mod:`gguf_keys`).
Qwen2 adds biases on the query, key and value projections. Gemma (1) scales the embeddings by √d, uses
tanh-GELU in its gated feed-forward and a head width of its own (``gemma.attention.key_length``);
llama.cpp's converter stores its RMSNorm gains as 1 + g, so they are read as plain gains.
Rotary scaling: ``{arch}.rope.scaling.type`` ``linear`` (with its factor), or Llama 3.1's per-frequency
factors stored as the ``rope_freqs`` tensor (:mod:`core.io.pretrained.gguf_rope`). A Mistral-style
``{arch}.attention.sliding_window`` becomes :attr:`LlamaConfig.sliding_window` (each query sees its last
``window`` keys, as Hugging Face's ``MistralForCausalLM``); Qwen2 applies its window only to some layers,
so a Qwen2 window shorter than the context is refused.
"""

from __future__ import annotations

import math
from pathlib import Path

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import FLOAT_TYPES, INTEGER_TYPES, STRING, GGUFHeader
from core.io.pretrained.gguf_keys import check_keys
from core.io.pretrained.gguf_rope import rope_fields
from core.model.families.llama import LlamaConfig

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "gemma")
#: The GGUF tokenizer models read (``tokenizer.ggml.model``): byte-level BPE and SentencePiece.
SUPPORTED_TOKENIZERS = ("gpt2", "llama")
MAX_LEN = 131_072  # the most positions a model is given; each input is bounded by core.inspect.subject's budget


def gguf_int(header: GGUFHeader, key: str, name: str, default: int | None = None, low: int = 1) -> int:
    """An integer metadata value of at least ``low`` (``default`` when absent and one is given)."""
    if key not in header.scalars:
        if default is None:
            raise CheckpointError(f"{name}: the GGUF metadata has no {key}")
        return default
    kind, value = header.scalars[key]
    if kind not in INTEGER_TYPES or value < low:
        raise CheckpointError(f"{name}: GGUF {key} must be an integer of at least {low}, got {value!r}")
    return value


def gguf_positive(header: GGUFHeader, key: str, name: str, default: float) -> float:
    """A finite positive float metadata value (``default`` when absent)."""
    kind, value = header.scalars.get(key, (6, default))
    if kind not in FLOAT_TYPES | INTEGER_TYPES or not math.isfinite(value) or value <= 0:
        raise CheckpointError(f"{name}: GGUF {key} must be a finite number above 0, got {value!r}")
    return float(value)


def gguf_string(header: GGUFHeader, key: str, name: str, default: str | None = None) -> str | None:
    """A string metadata value (``default`` when absent)."""
    kind, value = header.scalars.get(key, (STRING, default))
    if key in header.arrays or kind != STRING:
        raise CheckpointError(f"{name}: GGUF {key} must be a string, got {value!r}")
    return value


def _vocab_size(header: GGUFHeader, name: str) -> int:
    """The token count, after checking the tokenizer arrays' item types."""
    for key, types, what in (("tokenizer.ggml.tokens", {STRING}, "strings"),
                             ("tokenizer.ggml.merges", {STRING}, "strings"),
                             ("tokenizer.ggml.token_type", INTEGER_TYPES, "integers"),
                             ("tokenizer.ggml.scores", FLOAT_TYPES, "floats")):
        if key in header.scalars or (key in header.arrays and header.arrays[key][0] not in types):
            raise CheckpointError(f"{name}: GGUF {key} must be an array of {what}")
    count = header.arrays.get("tokenizer.ggml.tokens", (STRING, 0))[1]
    if count < 1:
        raise CheckpointError(f"{name} has no tokenizer vocabulary in its metadata")
    for key in ("tokenizer.ggml.token_type", "tokenizer.ggml.scores"):
        if key in header.arrays and header.arrays[key][1] != count:
            raise CheckpointError(f"{name}: GGUF {key} holds {header.arrays[key][1]:,} items for {count:,} tokens")
    model = gguf_string(header, "tokenizer.ggml.model", name)
    if model not in SUPPORTED_TOKENIZERS:
        raise CheckpointError(f"{name}: GGUF tokenizer model {model!r} is not supported; supported: "
                              "'gpt2' (byte-level BPE), 'llama' (SentencePiece)")
    return count


def _architecture(header: GGUFHeader, name: str) -> str:
    arch = header.scalars.get("general.architecture", (STRING, None))[1]
    if arch not in SUPPORTED_ARCHITECTURES:
        raise CheckpointError(f"{name}: GGUF architecture {arch!r} is not supported; "
                              f"supported: {', '.join(SUPPORTED_ARCHITECTURES)} (Llama-family decoders)")
    return arch


def _head_dim(header: GGUFHeader, arch: str, d_model: int, n_heads: int, n_kv: int, name: str) -> int:
    """The head width: ``{arch}.attention.key_length`` (equal to ``value_length``), else d_model / n_heads."""
    explicit = f"{arch}.attention.key_length" in header.scalars
    head_dim = gguf_int(header, f"{arch}.attention.key_length", name) if explicit else d_model // n_heads
    value = gguf_int(header, f"{arch}.attention.value_length", name, head_dim)
    if (not explicit and d_model % n_heads) or value != head_dim or n_heads % n_kv or head_dim % 2:
        raise CheckpointError(f"{name}: GGUF embedding_length {d_model} (key_length {head_dim}, value_length "
                              f"{value}) does not split into head_count {n_heads} heads of even width in "
                              f"head_count_kv {n_kv} groups")
    return head_dim


def _rope_base_and_fields(header: GGUFHeader, path: Path, arch: str, head_dim: int) -> dict:
    rope_dims = gguf_int(header, f"{arch}.rope.dimension_count", path.name, head_dim)
    if rope_dims != head_dim:
        raise CheckpointError(f"{path.name}: partial rotary ({rope_dims} of {head_dim} dims) is not supported")
    rope_base = gguf_positive(header, f"{arch}.rope.freq_base", path.name, 10000.0)
    return {"rope_base": rope_base, **rope_fields(header, path, arch, head_dim, rope_base)}


def _variant(arch: str) -> dict:
    """The :class:`LlamaConfig` flags of an architecture (Gemma's gains are stored as 1 + g already)."""
    if arch == "gemma":
        return {"embed_scale": True, "activation": "gelu_pytorch_tanh"}
    return {"qkv_bias": arch == "qwen2"}


def gguf_config(header: GGUFHeader, path: Path) -> LlamaConfig:
    """The Llama-family config the header of ``path`` claims, checked against its tensors.

    Raises:
        CheckpointError: one line naming the file and the missing, mistyped, inconsistent or not understood value.
    """
    name = path.name
    arch = _architecture(header, name)
    check_keys(header, arch, name)
    n_heads = gguf_int(header, f"{arch}.attention.head_count", name)
    d_model = gguf_int(header, f"{arch}.embedding_length", name)
    n_kv = gguf_int(header, f"{arch}.attention.head_count_kv", name, n_heads)
    head_dim = _head_dim(header, arch, d_model, n_heads, n_kv, name)
    sizes = dict(vocab_size=_vocab_size(header, name), d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv,
                 n_decoder_layers=gguf_int(header, f"{arch}.block_count", name),
                 d_ff=gguf_int(header, f"{arch}.feed_forward_length", name))
    if gguf_int(header, f"{arch}.vocab_size", name, sizes["vocab_size"]) != sizes["vocab_size"]:
        raise CheckpointError(f"{name}: GGUF {arch}.vocab_size differs from its {sizes['vocab_size']:,} tokens")
    _check_shapes(header, sizes, head_dim, arch == "qwen2", name)
    ids = {k: gguf_int(header, f"tokenizer.ggml.{k}_token_id", name, -1, low=0) for k in ("bos", "eos", "padding")}
    if any(v >= sizes["vocab_size"] for v in ids.values()):
        raise CheckpointError(f"{name}: GGUF token ids {ids} must be below the vocabulary size {sizes['vocab_size']}")
    eos = ids["eos"] if ids["eos"] >= 0 else None
    max_len = min(MAX_LEN, gguf_int(header, f"{arch}.context_length", name, MAX_LEN))
    try:
        return LlamaConfig(
            **sizes, **_rope_base_and_fields(header, path, arch, head_dim), **_variant(arch),
            explicit_head_dim=head_dim if head_dim * n_heads != d_model else None,
            norm_eps=gguf_positive(header, f"{arch}.attention.layer_norm_rms_epsilon", name, 1e-5),
            max_len=max_len, sliding_window=_sliding_window(header, arch, name, max_len),
            tie_embeddings="output.weight" not in header.tensors,
            pad_id=ids["padding"] if ids["padding"] >= 0 else (eos or 0),
            bos_id=ids["bos"] if ids["bos"] >= 0 else None, eos_id=eos,
        )
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{name}: incomplete or invalid {arch} metadata ({error})") from None


def _sliding_window(header: GGUFHeader, arch: str, name: str, max_len: int) -> int | None:
    """``{arch}.attention.sliding_window`` (None when absent); refused for a Qwen2 whose window would bite."""
    window = gguf_int(header, f"{arch}.attention.sliding_window", name, 0) or None
    if window is not None and arch == "qwen2" and window < max_len:
        raise CheckpointError(f"{name}: a Qwen2 sliding window ({window:,} of {max_len:,} positions) is not "
                              "supported; supported: Mistral-style windows in llama GGUFs")
    return window


def _check_shapes(header: GGUFHeader, sizes: dict[str, int], head_dim: int, qkv_bias: bool, name: str) -> None:
    """The tensors present are exactly the ones ``sizes`` claims, with its shapes (HF layout)."""
    layers = sizes["n_decoder_layers"]
    if layers > len(header.tensors):
        raise CheckpointError(f"{name}: GGUF block_count {layers:,} is more than its {len(header.tensors)} "
                              "tensors allow")
    d, ff, vocab = sizes["d_model"], sizes["d_ff"], sizes["vocab_size"]
    q, kv = sizes["n_heads"] * head_dim, sizes["n_kv_heads"] * head_dim
    block = {"attn_norm.weight": (d,), "attn_q.weight": (q, d), "attn_k.weight": (kv, d),
             "attn_v.weight": (kv, d), "attn_output.weight": (d, q), "ffn_norm.weight": (d,),
             "ffn_gate.weight": (ff, d), "ffn_up.weight": (ff, d), "ffn_down.weight": (d, ff)}
    if qkv_bias:
        block.update({"attn_q.bias": (q,), "attn_k.bias": (kv,), "attn_v.bias": (kv,)})
    expected = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,)}
    for optional, shape in (("output.weight", (vocab, d)), ("rope_freqs.weight", (head_dim // 2,))):
        if optional in header.tensors:
            expected[optional] = shape
    expected.update({f"blk.{i}.{part}": shape for i in range(layers) for part, shape in block.items()})
    found = {k: v.shape for k, v in header.tensors.items()}
    if found != expected:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        wrong = [(k, found[k], expected[k]) for k in expected if k in found and found[k] != expected[k]]
        raise CheckpointError(f"{name}: its tensors do not match its metadata: missing {missing[:3]}, "
                              f"unexpected {extra[:3]}, wrong shapes {wrong[:2]}")
