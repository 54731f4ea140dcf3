"""Write a Hugging Face ``transformers`` Llama/Qwen2/Gemma causal LM as a GGUF file, as llama.cpp's converter does:
llama.cpp's tensor names, Q/K rows permuted for a Llama (not for Qwen2 or Gemma), Gemma's RMSNorm gains stored
as 1 + g with its head width as ``key_length``, Llama 3.1 rope scaling as the
``rope_freqs`` factors, a vocabulary as byte-level BPE (``gpt2``) or SentencePiece (``llama``) metadata,
and chosen tensors quantized (``gguf.quants.quantize``, or crafted block bytes for the K-quants the package
cannot quantize). The reference model's weights are then set to what the file holds after dequantizing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from tests.helpers.pretrained_files import gguf_writer, llama_cpp_permute, write_tensors

#: Byte offsets of the float16 scales in one block of each type (the rest of a crafted block is random).
F16_SCALES = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "Q2_K": (80, 82),
              "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}
_BLOCK = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
          "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


@dataclass
class Vocab:
    """GGUF tokenizer metadata: ``model`` "gpt2" (with merges) or "llama" (with scores)."""

    model: str
    tokens: list[str]
    types: list[int]
    merges: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    pre: str = "gpt2"
    bos: int = 1
    eos: int = 2
    add_bos: bool = True


def crafted_blocks(qtype_name: str, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """Random bytes of ``rows`` × ``cols`` values in ``qtype_name``, with small finite float16 scales."""
    import gguf

    qtype = gguf.GGMLQuantizationType[qtype_name]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (rows, cols // block, size), dtype=np.uint8)
    for at in F16_SCALES[qtype_name]:
        scales = (rng.uniform(0.002, 0.02, (rows, cols // block)) * rng.choice([-1, 1], (rows, cols // block)))
        data[:, :, at:at + 2] = scales.astype(np.float16).view(np.uint8).reshape(rows, cols // block, 2)
    return data.reshape(rows, cols // block * size)


def _store(array: np.ndarray, qtype_name: str | None, seed: int):
    """(what the file holds, its raw type or None, the float32 values it dequantizes to)."""
    import gguf

    if qtype_name is None:
        return array, None, array
    qtype = gguf.GGMLQuantizationType[qtype_name]
    try:
        raw = gguf.quants.quantize(array, qtype)
    except NotImplementedError:
        raw = crafted_blocks(qtype_name, *array.shape, seed=seed)
    return raw, qtype, gguf.quants.dequantize(raw, qtype).astype(np.float32)


def _llama3_factors(config, head_dim: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf rope_factors for Llama 3.1 scaling."""
    rope = config.rope_parameters
    base, factor = rope["rope_theta"], rope["factor"]
    low, high, old = rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def _tensors(reference, arch: str, quant: dict[str, str]) -> dict[str, tuple]:
    """GGUF name → (stored array, raw type), the reference's weights replaced by the dequantized values."""
    c = reference.config
    state = reference.state_dict()
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    if not c.tie_word_embeddings:
        names["output.weight"] = "lm_head.weight"
    for i in range(c.num_hidden_layers):
        for ours, theirs in _BLOCK.items():
            names[f"blk.{i}.{ours}.weight"] = f"model.layers.{i}.{theirs}.weight"
        if arch == "qwen2":
            for part in ("q", "k", "v"):
                names[f"blk.{i}.attn_{part}.bias"] = f"model.layers.{i}.self_attn.{part}_proj.bias"
    out = {}
    for seed, (gguf_name, hf_name) in enumerate(names.items()):
        array = state[hf_name].float().numpy()
        part = gguf_name.split(".")[2] if gguf_name.startswith("blk.") else None
        heads = {"attn_q": c.num_attention_heads, "attn_k": c.num_key_value_heads}.get(part)
        if arch == "llama" and heads is not None:
            array = llama_cpp_permute(array, heads)
        suffix = next((s for s in quant if gguf_name.endswith(s)), None)
        plus_one = arch == "gemma" and gguf_name.endswith("norm.weight")
        if plus_one:  # llama.cpp's Gemma converter adds the 1 of Gemma's (1 + g) gains
            array = array + np.float32(1.0)
        raw, qtype, values = _store(np.ascontiguousarray(array), quant.get(suffix), seed)
        if plus_one:
            values = values - np.float32(1.0)
        if arch == "llama" and heads is not None:  # back to the HF layout for the reference
            values = values.reshape(heads, values.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(values.shape)
        state[hf_name].copy_(torch.from_numpy(np.ascontiguousarray(values)).reshape(state[hf_name].shape))
        out[gguf_name] = (raw, qtype)
    return out


def write_gguf(reference, path: Path, vocab: Vocab, *, arch: str = "llama", quant: dict[str, str] | None = None,
               scaling: dict | None = None, sliding_window: int | None = None, extra: dict | None = None) -> Path:
    """``reference`` (a transformers Llama/Mistral/Qwen2 causal LM) as a GGUF at ``path``; ``quant`` maps tensor
    name endings (``"ffn_down.weight"``) to GGML type names; ``scaling`` adds rope scaling metadata keys;
    ``{arch}.attention.sliding_window`` is ``sliding_window``, else a Mistral's own window; ``extra`` adds
    metadata keys: key → (value, ``gguf.GGUFValueType``; a list is an array of strings)."""
    import gguf

    c = reference.config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    tensors = _tensors(reference, arch, quant or {})
    if arch == "llama" and (c.rope_parameters or {}).get("rope_type") == "llama3":
        tensors["rope_freqs.weight"] = (_llama3_factors(c, head_dim), None)
    writer = gguf_writer(path, arch, f"tiny-{arch}", context=c.max_position_embeddings, width=c.hidden_size,
                         layers=c.num_hidden_layers, ffn=c.intermediate_size, heads=c.num_attention_heads,
                         kv_heads=c.num_key_value_heads, rope_base=float(c.rope_parameters["rope_theta"]),
                         head_dim=head_dim, eps=c.rms_norm_eps)
    window = sliding_window if sliding_window is not None else (
        c.sliding_window if c.model_type == "mistral" else None)
    if window is not None:
        writer.add_sliding_window(window)
    if arch == "gemma":
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    for key, (value, kind) in (extra or {}).items():
        writer.add_key_value(key, value, kind, sub_type=gguf.GGUFValueType.STRING if isinstance(value, list) else None)
    for key, value in (scaling or {}).items():
        writer.add_key_value(f"{arch}.rope.scaling.{key}", value,
                             gguf.GGUFValueType.STRING if isinstance(value, str) else gguf.GGUFValueType.FLOAT32)
    writer.add_tokenizer_model(vocab.model)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    if vocab.model == "gpt2":
        writer.add_tokenizer_pre(vocab.pre)
        writer.add_token_merges(vocab.merges)
    else:
        writer.add_token_scores(vocab.scores)
    writer.add_bos_token_id(vocab.bos)
    writer.add_eos_token_id(vocab.eos)
    writer.add_add_bos_token(vocab.add_bos)
    write_tensors(writer, tensors)
    return path
