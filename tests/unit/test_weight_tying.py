"""Weight tying (core.lessons.weight_tying): found from the parameters alone, for any family, and measured — a tied
model's logits are its final stream times the embedding matrix transposed — against the reference's own tying."""

from __future__ import annotations

import pytest

from core.lessons.weight_tying import weight_tying
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, TEXT, VOCAB, reference_model, save_folder
from tests.helpers.paths import SHIPPED

transformers = pytest.importorskip("transformers")
TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)


@pytest.mark.parametrize("tied", [True, False])
def test_a_folders_tying_is_the_references_and_its_logits_are_the_stream_times_the_embedding(tied, tmp_path):
    reference = reference_model(transformers.LlamaConfig(**TINY, num_key_value_heads=2, tie_word_embeddings=tied))
    assert (reference.lm_head.weight.data_ptr() == reference.model.embed_tokens.weight.data_ptr()) == tied
    got = weight_tying(save_folder(reference, tmp_path / "llama", add_bos=True), TEXT)
    assert got.tied == tied and (len(got.names) == 2) == tied
    assert (got.vocab, got.width, got.saved) == (VOCAB, 32, VOCAB * 32)
    assert got.total == sum(p.numel() for p in reference.parameters())  # a shared tensor counted once
    if tied:
        assert got.max_error is not None and got.max_error <= 1e-5 * got.largest_logit
    else:
        assert got.max_error is None


def test_the_gpt2_family_ties_and_the_shipped_models_do_not(tmp_path):
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                     bos_token_id=BOS, eos_token_id=EOS)
    got = weight_tying(save_folder(reference_model(config), tmp_path / "gpt2", add_bos=False), TEXT)
    assert got.tied and got.max_error <= 1e-5 * got.largest_logit
    shipped = weight_tying(SHIPPED / "translation.safetensors", "i have cats")
    assert not shipped.tied and shipped.saved == 2867 * 128 and shipped.tokens == 1


def test_an_encoder_has_no_output_layer_to_tie():
    with pytest.raises(ValueError, match="encoder-only"):
        weight_tying(SHIPPED / "sentiment.safetensors", "i love it")
