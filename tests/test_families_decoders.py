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


LAYERNORM_FAMILY = {
    "gpt2": lambda: transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                            bos_token_id=EOS, eos_token_id=EOS),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**TINY, rotary_pct=0.5),
    "gpt_neox-sequential": lambda: transformers.GPTNeoXConfig(**TINY, use_parallel_residual=False,
                                                              tie_word_embeddings=True),
    "opt": lambda: transformers.OPTConfig(**_opt_sizes()),
    "opt-post-norm": lambda: transformers.OPTConfig(**_opt_sizes(), do_layer_norm_before=False),
    "phi": lambda: transformers.PhiConfig(**TINY, partial_rotary_factor=0.5),
    "phi-grouped": lambda: transformers.PhiConfig(**TINY, num_key_value_heads=2, partial_rotary_factor=0.75),
}


def _opt_sizes() -> dict:
    sizes = {k: v for k, v in TINY.items() if k != "intermediate_size"}
    return dict(sizes, ffn_dim=64, word_embed_proj_dim=32, bos_token_id=EOS)


@pytest.mark.parametrize("name", sorted(LAYERNORM_FAMILY))
def test_layernorm_family_folder_matches_transformers(name, tmp_path):
    reference = reference_model(LAYERNORM_FAMILY[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=name.startswith("opt"))
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 1e-5
    assert result.logit_error <= 1e-4 * result.logit_scale
    assert result.ours_continuation == result.reference_continuation
