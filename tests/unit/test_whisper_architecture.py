"""Whisper on the Architecture page (issue 25): its parameters part by part, counted on the model, equal
``sum(p.numel())`` of its modules (less the zero key biases CTranslate2 stores) and ``transformers``'
``WhisperForConditionalGeneration`` built from the same config, part for part; the paper's base model
column equals PyTorch's own ``nn.TransformerEncoderLayer``/``DecoderLayer`` of the base sizes; beams
share the frames' keys and values (projected once) with the same logits as copies of the memory.
The page itself: ``test_app_whisper_architecture.py``."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core import load_pretrained
from core.lessons import whisper_parameters
from core.model.families.whisper import WhisperConfig, WhisperModel
from tests.helpers.pretrained_files import installed

TINY = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=3, n_heads=2, d_ff=32,
                     eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=20, max_len=12)
HF_PARTS = {  # our part → transformers' modules (under model.model)
    "token embedding (also the output projection)": ["decoder.embed_tokens"],
    "conv front end (2 × Conv1d)": ["encoder.conv1", "encoder.conv2"],
    "encoder positions (sinusoidal table)": ["encoder.embed_positions"],
    "decoder positions (learned)": ["decoder.embed_positions"],
    "one encoder layer": ["encoder.layers.0"], "all encoder layers": ["encoder.layers"],
    "one decoder layer": ["decoder.layers.0"], "all decoder layers": ["decoder.layers"],
    "final LayerNorms (encoder, decoder)": ["encoder.layer_norm", "decoder.layer_norm"],
}


def _numel(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _reference(c: WhisperConfig):
    transformers = pytest.importorskip("transformers")
    config = transformers.WhisperConfig(
        vocab_size=c.vocab_size, num_mel_bins=c.n_mels, d_model=c.d_model, encoder_layers=c.n_encoder_layers,
        decoder_layers=c.n_decoder_layers, encoder_attention_heads=c.n_heads, decoder_attention_heads=c.n_heads,
        encoder_ffn_dim=c.d_ff, decoder_ffn_dim=c.d_ff, max_source_positions=c.n_frames,
        max_target_positions=c.max_len, pad_token_id=c.eot_id, bos_token_id=c.eot_id, eos_token_id=c.eot_id,
        decoder_start_token_id=c.sot_id)
    with torch.device("meta"):  # sizes only: nothing allocated
        return transformers.WhisperForConditionalGeneration(config)


def _check_against_reference(model: WhisperModel) -> None:
    counted = whisper_parameters(model)
    reference = _reference(model.config)
    for part in counted.parts:
        theirs = sum(_numel(reference.model.get_submodule(name)) for name in HF_PARTS[part.part])
        assert part.whisper == theirs, part.part
    assert counted.total == sum(p.numel() for p in reference.parameters())  # proj_out tied: counted once


def test_each_part_is_the_sum_of_its_tensors_less_the_stored_zero_key_biases():
    torch.manual_seed(0)
    model, d = WhisperModel(TINY), TINY.d_model
    parts = {p.part: p for p in whisper_parameters(model).parts}
    stored = {"token embedding (also the output projection)": _numel(model.embed),
              "conv front end (2 × Conv1d)": _numel(model.conv1) + _numel(model.conv2),
              "encoder positions (sinusoidal table)": model.encoder_positions.numel(),
              "decoder positions (learned)": model.decoder_positions.numel(),
              "one encoder layer": _numel(model.encoder_layers[0]), "all encoder layers": _numel(model.encoder_layers),
              "one decoder layer": _numel(model.decoder_layers[0]), "all decoder layers": _numel(model.decoder_layers),
              "final LayerNorms (encoder, decoder)": _numel(model.encoder_norm) + _numel(model.decoder_norm)}
    key_biases = {"one encoder layer": d, "all encoder layers": 2 * d, "one decoder layer": 2 * d,
                  "all decoder layers": 3 * 2 * d}
    assert set(parts) == set(stored)
    for name, part in parts.items():
        assert part.zero_key_biases == key_biases.get(name, 0), name
        assert part.whisper + part.zero_key_biases == stored[name], name
    counted = whisper_parameters(model)
    assert counted.total + (2 + 3 * 2) * d == _numel(model)  # 2 encoder, 3 × 2 decoder key biases; one embedding
    assert counted.largest_key_bias > 0  # random init: the layout's zeros are a property of the file


def test_the_counts_equal_transformers_whisper_built_from_the_same_config():
    _check_against_reference(WhisperModel(TINY))


def test_the_paper_column_is_pytorchs_own_base_layers():
    counted = {p.part: p.paper for p in whisper_parameters(WhisperModel(TINY)).parts}
    encoder = nn.TransformerEncoderLayer(512, 8, 2048)
    decoder = nn.TransformerDecoderLayer(512, 8, 2048)
    assert counted["one encoder layer"] == _numel(encoder) == 3_152_384
    assert counted["one decoder layer"] == _numel(decoder) == 4_204_032
    assert counted["all decoder layers"] == 6 * _numel(decoder) and counted["conv front end (2 × Conv1d)"] is None
    assert counted["token embedding (also the output projection)"] == 37000 * 512


@pytest.mark.parametrize("name, total", [("Whisper tiny.en", 37_760_256), ("Whisper base", 72_593_920)])
def test_the_installed_models_counts_equal_transformers(name, total):
    loaded = load_pretrained(installed(name).path).model
    counted = whisper_parameters(loaded)
    assert counted.total == total and counted.largest_key_bias == 0.0  # the file's key biases are zeros
    _check_against_reference(loaded)



def test_beams_share_the_frames_keys_and_values_with_the_same_logits():
    torch.manual_seed(1)
    model = WhisperModel(TINY).eval()
    memory = torch.randn(1, TINY.n_frames, TINY.d_model)
    rows = []
    model.decoder_layers[0].cross_attn.kv.register_forward_hook(lambda m, args, out: rows.append(args[0].size(0)))
    tgt = torch.tensor([[31, 5, 7], [31, 9, 2], [31, 4, 4]])
    with torch.inference_mode():
        shared, copied = model.kv_cache(), model.kv_cache()
        for end in range(1, tgt.size(1) + 1):
            a = model.next_token_logits(tgt[:, :end], memory.expand(3, -1, -1), cache=shared)
            b = model.next_token_logits(tgt[:, :end], memory.repeat(3, 1, 1), cache=copied)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    assert rows == [1, 3]  # the broadcast memory projected for one row, the copies for each
