"""Issue 21, GGUF: the files people download opened equal to Hugging Face ``transformers`` — Llama 3.1 rope
scaling (``rope_freqs``), Qwen2 (QKV biases, ``qwen2.*`` keys, no Q/K permutation) and the legacy and
K-quant types — each a tiny random reference model written as GGUF (:mod:`tests.gguf_from_hf`): token ids
exactly, every layer's maps ≤ 1e-5, logits ≤ 1e-4 × scale, greedy continuations equal."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from core import load_pretrained
from core.generate.decode import greedy
from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import GGUFLimits, scan_gguf
from core.io.pretrained.gguf_data import raw_tensor
from core.io.pretrained.gguf_llama import load_gguf
from core.io.pretrained.gguf_quants import QUANT_NAMES, dequantized
from core.io.pretrained.gguf_header import WEIGHT_TYPES
from tests.helpers.gguf_from_hf import Vocab, write_gguf
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, TEXT, VOCAB, byte_bpe, reference_model

transformers = pytest.importorskip("transformers")

SIZES = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}


def bpe_vocab(pre: str = "gpt2", add_bos: bool = True) -> tuple[Vocab, object]:
    """The reference tests' trained byte-level BPE as GGUF metadata, and the tokenizer itself."""
    tokenizer = byte_bpe(add_bos)
    spec = json.loads(tokenizer.to_str())
    tokens = sorted(spec["model"]["vocab"], key=spec["model"]["vocab"].get)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    types = [3 if t in ("<pad>", "<s>", "</s>") else 1 for t in tokens]
    return Vocab("gpt2", tokens, types, merges=merges, pre=pre, add_bos=add_bos), tokenizer


def compare_gguf(path: Path, reference, tokenizer, text: str = TEXT, steps: int = 8, use_cache: bool = False) -> dict:
    """Our load of ``path`` against ``reference`` on ``text``: ids equal, map and logit errors, continuations."""
    loaded = load_pretrained(path, use_cache=use_cache)
    ids = loaded.tokenizer.encode(text).ids
    reference_ids = tokenizer.encode(text).ids
    tgt = torch.tensor([reference_ids])  # (1, T)
    with torch.no_grad():
        ours = loaded.model(None, tgt, return_attention=True)
        theirs = reference(tgt, output_attentions=True)
    maps = ours.attention["decoder"]  # (L, 1, H, T, T)
    ours_gen = greedy(loaded.model, None, tgt, eos_id=EOS, max_new_tokens=steps).ids[0].tolist()
    with torch.no_grad():
        theirs_gen = reference.generate(tgt, attention_mask=torch.ones_like(tgt), do_sample=False,
                                        max_new_tokens=steps, eos_token_id=EOS, pad_token_id=PAD)[0].tolist()
    assert maps.shape[0] == len(theirs.attentions) == reference.config.num_hidden_layers
    map_error = max(float((maps[i] - a).abs().max()) for i, a in enumerate(theirs.attentions))
    return {"ids": ids == reference_ids, "maps": map_error,
            "logits": float((ours.logits - theirs.logits).abs().max()) / float(theirs.logits.abs().max()),
            "greedy": ours_gen == theirs_gen, "model": loaded.model}


def assert_equal_to_reference(result: dict) -> None:
    assert result["ids"] and result["greedy"]
    assert result["maps"] <= 1e-5 and result["logits"] <= 1e-4


@pytest.mark.parametrize("rope", [dict(LLAMA3, original_max_position_embeddings=64, rope_theta=10000.0),
                                  dict(LLAMA3, original_max_position_embeddings=8, rope_theta=500.0),
                                  dict(LLAMA3, factor=32.0, original_max_position_embeddings=16, rope_theta=50000.0)])
def test_llama31_rope_freqs_gguf_matches_transformers(rope: dict, tmp_path: Path) -> None:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, rope_scaling=rope))
    vocab, tokenizer = bpe_vocab()
    path = write_gguf(reference, tmp_path / "llama31.gguf", vocab)
    result = compare_gguf(path, reference, tokenizer)
    assert_equal_to_reference(result)
    assert result["model"].config.rope_type == "llama3"
    unscaled = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, rope_theta=rope["rope_theta"]))
    unscaled.load_state_dict(reference.state_dict())
    assert compare_gguf(path, unscaled, tokenizer)["maps"] > 1e-3  # the scaling is visible in the maps


def test_linear_rope_scaling_metadata_matches_transformers(tmp_path: Path) -> None:
    rope = {"rope_type": "linear", "factor": 3.0, "rope_theta": 10000.0}
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, rope_scaling=rope))
    vocab, tokenizer = bpe_vocab()
    path = write_gguf(reference, tmp_path / "linear.gguf", vocab, scaling={"type": "linear", "factor": 3.0})
    assert_equal_to_reference(compare_gguf(path, reference, tokenizer))


@pytest.mark.parametrize("tied", [True, False])
def test_qwen2_gguf_matches_transformers(tied: bool, tmp_path: Path) -> None:
    reference = reference_model(transformers.Qwen2Config(**SIZES, num_key_value_heads=2, tie_word_embeddings=tied))
    vocab, tokenizer = bpe_vocab(pre="qwen2", add_bos=False)
    path = write_gguf(reference, tmp_path / "qwen2.gguf", vocab, arch="qwen2")
    result = compare_gguf(path, reference, tokenizer)
    assert_equal_to_reference(result)
    assert result["model"].config.qkv_bias and result["model"].config.tie_embeddings == tied


def test_qwen2_pre_tokenizer_splits_every_digit(tmp_path: Path) -> None:
    reference = reference_model(transformers.Qwen2Config(**SIZES, num_key_value_heads=2))
    vocab, _ = bpe_vocab(pre="qwen2", add_bos=False)
    path = write_gguf(reference, tmp_path / "q.gguf", vocab, arch="qwen2")
    tokenizer = load_pretrained(path, use_cache=False).tokenizer
    assert tokenizer.encode("in 2017").tokens[-4:] == ["2", "0", "1", "7"]


LEGACY, K_QUANTS = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"], ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]


@pytest.mark.parametrize("qtype", LEGACY + K_QUANTS)
def test_quantized_gguf_matches_transformers_on_its_dequantized_weights(qtype: str, tmp_path: Path) -> None:
    """Legacy types quantized by the gguf package (every projection), K-quants as crafted blocks (the
    feed-forward down projection, whose rows are 256 wide); the reference holds the dequantized values."""
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    vocab, tokenizer = bpe_vocab()
    quant = {"ffn_down.weight": qtype} if qtype in K_QUANTS else {
        k: qtype for k in ("attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight", "ffn_down.weight")}
    path = write_gguf(reference, tmp_path / f"{qtype}.gguf", vocab, quant=quant)
    assert_equal_to_reference(compare_gguf(path, reference, tokenizer))


@pytest.mark.parametrize("qtype", K_QUANTS + LEGACY)
def test_dequantized_values_equal_the_gguf_package(qtype: str, tmp_path: Path) -> None:
    import gguf

    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    path = write_gguf(reference, tmp_path / "q.gguf", bpe_vocab()[0], quant={"ffn_down.weight": qtype})
    tensor = next(t for t in gguf.GGUFReader(str(path)).tensors if t.name == "blk.1.ffn_down.weight")
    assert tensor.tensor_type.name == qtype
    header = scan_gguf(path)
    info = header.tensors[tensor.name]
    assert np.array_equal(raw_tensor(path, header, info), tensor.data)  # the bytes the package reads
    expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)  # (64, 256)
    assert np.array_equal(dequantized(raw_tensor(path, header, info), info, path.name), expected)
    assert np.isfinite(expected).all()
    assert expected.shape == (64, 256) and np.unique(expected).size > 16  # real values, not a constant
    model = load_gguf(path, use_cache=False)[0]
    assert torch.equal(model.layers[1].mlp.down_proj.weight, torch.from_numpy(expected))


def test_every_weight_type_has_a_name() -> None:
    assert set(QUANT_NAMES) == set(WEIGHT_TYPES)


def test_the_float32_budget_is_checked_from_the_header_in_one_line(tmp_path: Path) -> None:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    path = write_gguf(reference, tmp_path / "budget.gguf", bpe_vocab()[0], quant={"ffn_down.weight": "Q4_K"})
    with pytest.raises(CheckpointError) as caught:
        scan_gguf(path, GGUFLimits(max_parameters=100_000))
    message = str(caught.value)
    assert "\n" not in message and "budget.gguf" in message and "more than 100,000 parameters" in message
    assert "MiB dequantized to float32" in message


@pytest.mark.parametrize("factors, match", [
    (np.array([1.0, 3.0, 1.0, 8.0, 8.0, 8.0, 8.0, 8.0], np.float32), "not Llama 3.1's rotary scaling"),
    (np.array([1.0, 1.0, 1.0, 8.0, 8.0, math.nan, 8.0, 8.0], np.float32), "not finite"),
    (np.array([1.0, 1.0, 1.0, 8.0, 8.0, 0.0, 8.0, 8.0], np.float32), "not finite and above 0"),
])
def test_rope_freqs_that_are_not_llama31_scaling_are_refused(factors, match: str, tmp_path: Path) -> None:
    import gguf

    rope = dict(LLAMA3, original_max_position_embeddings=64)
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, rope_scaling=rope))
    path = write_gguf(reference, tmp_path / "freqs.gguf", bpe_vocab()[0])
    reader = gguf.GGUFReader(str(path), "r+")
    reader.get_tensor(next(i for i, t in enumerate(reader.tensors) if t.name == "rope_freqs.weight")).data[:] = factors
    reader.data.flush()
    with pytest.raises(CheckpointError, match=match) as caught:
        load_gguf(path, use_cache=False)
    assert "\n" not in str(caught.value) and "freqs.gguf" in str(caught.value)


def test_an_unsupported_rope_scaling_type_is_refused_by_name(tmp_path: Path) -> None:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    path = write_gguf(reference, tmp_path / "yarn.gguf", bpe_vocab()[0], scaling={"type": "yarn", "factor": 4.0})
    with pytest.raises(CheckpointError, match=r"yarn.gguf: rotary scaling 'yarn' is not supported; supported: none"):
        load_gguf(path, use_cache=False)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_the_weight_cache_keeps_biases_and_rope_scaling(arch: str, tmp_path: Path, monkeypatch) -> None:
    import core
    from core.io.pretrained import gguf_llama, weight_cache

    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    rope = dict(LLAMA3, original_max_position_embeddings=64, rope_theta=10000.0)
    config = (transformers.Qwen2Config(**SIZES, num_key_value_heads=2) if arch == "qwen2" else
              transformers.LlamaConfig(**SIZES, num_key_value_heads=2, rope_scaling=rope))
    reference = reference_model(config)
    vocab, tokenizer = bpe_vocab(pre="qwen2" if arch == "qwen2" else "gpt2", add_bos=arch == "llama")
    path = write_gguf(reference, tmp_path / f"{arch}.gguf", vocab, arch=arch, quant={"ffn_down.weight": "Q4_K"})
    load_pretrained(path)
    weight_cache.flush()
    monkeypatch.setattr(gguf_llama, "read_gguf", lambda p: pytest.fail("parsed again despite the cache"))
    assert_equal_to_reference(compare_gguf(path, reference, tokenizer, use_cache=True))
    explanation = core.explain(path, TEXT, max_new_tokens=3)
    assert explanation.attention["decoder"].shape[:2] == (2, 4)
