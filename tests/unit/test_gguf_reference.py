"""GGUF files against ``transformers``' own GGUF loader (``from_pretrained(..., gguf_file=...)``, which
dequantizes with the ``gguf`` package too): the plain, legacy-quant and K-quant Llama files and Qwen2 (q/k/v
biases) it reads equal ours (maps ≤ 1e-6, logits ≤ 1e-5 × scale); a Llama 3.1 file's ``rope_freqs``, which
that loader leaves out, equal to its weights run by the eager reference with the file's ``llama3`` scaling
(also at Llama 3.2's real rotary settings), with frequencies exactly θ_i / f_i as llama.cpp rotates; and a
Gemma GGUF (an architecture ``transformers`` does not read from GGUF) against the eager Gemma it was
written from."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core import load_pretrained
from core.model.families.rope import frequencies
from tests.helpers.gguf_from_hf import write_gguf
from tests.helpers.hf_decoder_reference import TEXT, reference_model
from tests.unit.test_gguf_families import LLAMA3, SIZES, bpe_vocab, compare_gguf

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # transformers' GGUF loading needs it


def _transformers_gguf(path: Path):
    """The causal LM ``transformers`` reads from the GGUF at ``path`` (eager attention)."""
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager").eval()


def _against(ours, theirs, ids: torch.Tensor) -> tuple[float, float]:
    """(largest map error, logit error ÷ logit scale) of our model against theirs on ``ids`` (1, T)."""
    with torch.no_grad():
        mine = ours(None, ids, return_attention=True)
        reference = theirs(ids, output_attentions=True)
    maps = mine.attention["decoder"]  # (L, 1, H, T, T)
    map_error = max(float((maps[i] - a).abs().max()) for i, a in enumerate(reference.attentions))
    return map_error, float((mine.logits - reference.logits).abs().max() / reference.logits.abs().max())


@pytest.mark.parametrize("quant", [None, "Q8_0", "Q4_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"])
def test_a_llama_gguf_equals_transformers_reading_the_same_file(quant: str | None, tmp_path: Path) -> None:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    vocab, tokenizer = bpe_vocab()
    quantized = {"ffn_down.weight": quant} if quant else {}  # K-quant rows are 256 wide: the down projection's
    if quant in ("Q8_0", "Q4_0", "Q5_1"):
        quantized.update({k: quant for k in ("attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight")})
    path = write_gguf(reference, tmp_path / f"{quant}.gguf", vocab, quant=quantized)
    ids = torch.tensor([tokenizer.encode(TEXT).ids])  # (1, T)
    maps, logits = _against(load_pretrained(path, use_cache=False).model, _transformers_gguf(path), ids)
    assert maps <= 1e-6 and logits <= 1e-5


@pytest.mark.parametrize("tied", [True, False])
def test_a_qwen2_gguf_with_qkv_biases_equals_transformers_reading_it(tied: bool, tmp_path: Path) -> None:
    reference = reference_model(transformers.Qwen2Config(**SIZES, num_key_value_heads=2, tie_word_embeddings=tied))
    vocab, tokenizer = bpe_vocab(pre="qwen2", add_bos=False)
    path = write_gguf(reference, tmp_path / "qwen2.gguf", vocab, arch="qwen2", quant={"ffn_down.weight": "Q6_K"})
    theirs = _transformers_gguf(path)
    assert theirs.model.layers[0].self_attn.k_proj.bias.abs().sum() > 0  # the biases are there
    ids = torch.tensor([tokenizer.encode(TEXT).ids])
    maps, logits = _against(load_pretrained(path, use_cache=False).model, theirs, ids)
    assert maps <= 1e-6 and logits <= 1e-5


LLAMA_32 = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                original_max_position_embeddings=8192, rope_theta=500000.0)


@pytest.mark.parametrize("rope, width, heads", [
    (dict(LLAMA3, original_max_position_embeddings=16, rope_theta=10000.0), 64, 4),
    (LLAMA_32, 64, 1),  # Llama 3.2's rotary settings and head width 64
])
def test_llama31_rope_freqs_are_exact(rope: dict, width: int, heads: int, tmp_path: Path) -> None:
    sizes = dict(SIZES, hidden_size=width, num_attention_heads=heads, max_position_embeddings=131072)
    config = transformers.LlamaConfig(**sizes, num_key_value_heads=min(2, heads), rope_scaling=rope)
    vocab, tokenizer = bpe_vocab()
    path = write_gguf(reference_model(config), tmp_path / "llama31.gguf", vocab, quant={"ffn_down.weight": "Q4_K"})
    read = _transformers_gguf(path)  # its weights; its rotary is unscaled (that loader drops rope_freqs)
    truth = transformers.LlamaForCausalLM._from_config(config, attn_implementation="eager").eval()
    truth.load_state_dict(read.state_dict())
    ours = load_pretrained(path, use_cache=False).model
    c = ours.config
    assert c.rope_type == "llama3" and c.rope_factor == rope["factor"] and len(c.rope_freq_factors) == c.head_dim // 2
    factors = torch.tensor(c.rope_freq_factors)  # (dk/2,), what the file holds
    assert torch.equal(frequencies(c.head_dim, c.rope_base, c.rope_scaling),
                       frequencies(c.head_dim, c.rope_base) / factors)  # θ_i / f_i, as llama.cpp rotates
    ids = torch.tensor([tokenizer.encode(TEXT).ids])
    maps, logits = _against(ours, truth, ids)
    assert maps <= 1e-6 and logits <= 1e-5
    if rope["original_max_position_embeddings"] == 16:  # the scaling bites within TEXT: the test has teeth
        assert _against(ours, read, ids)[0] > 1e-3


@pytest.mark.parametrize("head_dim", [16, 32])
def test_a_gemma_gguf_matches_transformers(head_dim: int, tmp_path: Path) -> None:
    reference = reference_model(transformers.GemmaConfig(**SIZES, num_key_value_heads=1, head_dim=head_dim))
    vocab, tokenizer = bpe_vocab()
    path = write_gguf(reference, tmp_path / "gemma.gguf", vocab, arch="gemma", quant={"ffn_down.weight": "Q5_K"})
    result = compare_gguf(path, reference, tokenizer)
    assert result["ids"] and result["greedy"] and result["maps"] <= 1e-6 and result["logits"] <= 1e-5
    c = result["model"].config
    assert (c.embed_scale, c.activation, c.head_dim, c.tie_embeddings) == (True, "gelu_pytorch_tanh", head_dim, True)
    assert load_pretrained(path, use_cache=False).family == "gemma"
