"""Fidelity of Whisper tiny.en (issue 25) against Hugging Face ``transformers`` (test-only).

The same CTranslate2 weights (fp16 read as float32) are mapped by name into
``transformers.WhisperForConditionalGeneration`` (eager attention, fp32); the log-mel features
are compared with ``WhisperFeatureExtractor``, every layer's encoder, decoder and cross maps, and
the greedy transcript of a shipped clip token for token. Skipped when the package is absent
(failed where ``ATTNSCOPE_REQUIRE_PRETRAINED=1``, as in CI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from core import greedy, load_pretrained
from core.audio.decode import load_audio
from core.audio.mel import log_mel, mel_filters
from tests.helpers.hf_whisper_reference import hf_whisper_state
from tests.helpers.pretrained_files import installed

transformers = pytest.importorskip("transformers")

CLIPS = Path(__file__).resolve().parents[2] / "assets" / "audio"
CLIP, TRANSCRIPT = "the_black_cat_sleeps.flac", " The Black Cat Sleeps."


@pytest.fixture(scope="module")
def tiny():
    return load_pretrained(installed("Whisper tiny.en").path)


@pytest.fixture(scope="module")
def audio():
    return load_audio((CLIPS / CLIP).read_bytes(), name=CLIP)


@pytest.fixture(scope="module")
def features(audio):
    return torch.from_numpy(log_mel(audio.samples))[None]  # (1, 80, 3000)


@pytest.fixture(scope="module")
def reference(tiny):
    c = tiny.config
    config = transformers.WhisperConfig(
        vocab_size=c.vocab_size, num_mel_bins=c.n_mels, d_model=c.d_model, encoder_layers=c.n_encoder_layers,
        decoder_layers=c.n_decoder_layers, encoder_attention_heads=c.n_heads, decoder_attention_heads=c.n_heads,
        encoder_ffn_dim=c.d_ff, decoder_ffn_dim=c.d_ff, max_source_positions=c.n_frames,
        max_target_positions=c.max_len, pad_token_id=c.eot_id, bos_token_id=c.eot_id, eos_token_id=c.eot_id,
        decoder_start_token_id=c.sot_id, activation_function="gelu", scale_embedding=False,
        attn_implementation="eager")
    model = transformers.WhisperForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict(hf_whisper_state(tiny.model), strict=False)
    assert not unexpected and all(name.endswith("k_proj.bias") for name in missing)
    for name, param in model.named_parameters():
        if name.endswith("k_proj.bias"):
            param.data.zero_()
    return model.float().eval()


def test_mel_filters_and_features_match_the_feature_extractor(audio, features):
    extractor = transformers.WhisperFeatureExtractor(feature_size=80)
    assert np.abs(mel_filters(80) - extractor.mel_filters.T).max() < 1e-6
    theirs = extractor(audio.samples, sampling_rate=16_000, return_tensors="np").input_features  # (1, 80, 3000)
    assert features.shape == theirs.shape == (1, 80, 3000)
    assert np.abs(features.numpy() - theirs).max() <= 1e-4


def _prefix(tiny) -> list[int]:
    c = tiny.config
    assert not c.multilingual  # tiny.en: no language or task token
    return [c.sot_id, c.no_timestamps_id]


def test_every_layers_maps_and_logits_match_transformers(tiny, reference, features):
    ids = torch.tensor([_prefix(tiny) + tiny.tokenizer._hf.encode(TRANSCRIPT, add_special_tokens=False).ids])
    ours = tiny.model(features, ids, return_attention=True)
    with torch.no_grad():
        theirs = reference(input_features=features, decoder_input_ids=ids, output_attentions=True)
    pairs = {"encoder": theirs.encoder_attentions, "decoder": theirs.decoder_attentions,
             "cross": theirs.cross_attentions}
    for kind, maps in pairs.items():
        expected = torch.stack(maps)  # (L, B, H, Tq, Tk)
        assert ours.attention[kind].shape == expected.shape
        assert (ours.attention[kind] - expected).abs().max() <= 1e-4, kind
    assert torch.allclose(ours.logits, theirs.logits, atol=1e-3)
    assert torch.allclose(ours.attention["cross"].sum(-1), torch.ones(1))
    assert bool((ours.attention["decoder"].triu(1) == 0).all())


def test_the_greedy_transcript_matches_transformers_token_for_token(tiny, reference, features):
    c = tiny.config
    prefix = torch.tensor([_prefix(tiny)])
    ours = greedy(tiny.model, features, prefix, eos_id=c.eot_id, max_new_tokens=30)
    banned = torch.tensor(c.never_generated)
    seq = prefix
    with torch.no_grad():
        encoded = reference.model.encoder(features).last_hidden_state
        for _ in range(30):
            logits = reference(encoder_outputs=(encoded,), decoder_input_ids=seq).logits[:, -1]  # (1, V)
            logits[:, banned] = float("-inf")
            seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
            if int(seq[0, -1]) == c.eot_id:
                break
    assert ours.ids.tolist() == seq.tolist()
    assert bool(ours.finished[0])
    assert tiny.tokenizer.decode(ours.ids[0].tolist()) == TRANSCRIPT


def test_explain_speech_gives_the_transcript_and_every_map_over_the_frames_the_audio_fills(tiny, audio):
    from core import explain_speech

    exp = explain_speech(tiny, CLIPS / CLIP)
    frames = int(np.ceil(audio.seconds / 0.02))
    assert exp.prediction.text == TRANSCRIPT.strip() and exp.prediction.finished
    assert exp.source_tokens[:2] == ("0.00 s", "0.02 s") and len(exp.source_tokens) == frames
    assert exp.target_tokens[:2] == ("<|startoftranscript|>", "<|notimestamps|>")
    assert exp.generated_tokens[-1] == "<|endoftext|>" and exp.generated_tokens[1] == " The"
    assert exp.attention["encoder"].shape == (4, 6, frames, frames)
    assert exp.attention["cross"].shape == (4, 6, len(exp.target_tokens), frames)
    assert exp.features.shape == (80, 2 * frames) and exp.alignment_heads == tiny.config.alignment_heads
    assert (exp.attention["cross"].sum(-1) <= 1 + 1e-5).all() and any("silence padding" in n for n in exp.notes)
    with pytest.raises(ValueError, match="English-only"):
        explain_speech(tiny, audio, task="translate")


def test_text_explain_refuses_a_speech_model_in_one_line(tiny):
    from core import explain

    with pytest.raises(ValueError, match="reads speech"):
        explain(tiny, "hello")


def test_beam_search_drives_whisper_too(tiny, audio):
    from core import explain_speech

    exp = explain_speech(tiny, audio, decoding="beam", beam_size=2, max_new_tokens=20)
    # the same words (beam search finds the likelier lower-case spelling: "The black cat sleeps.")
    assert exp.prediction.text.lower() == TRANSCRIPT.strip().lower() and exp.options["decoding"] == "beam"
    assert exp.attention["cross"].shape[2] == len(exp.target_tokens)


def test_explain_speech_keeps_the_apps_generation_cap(tiny, audio, monkeypatch):
    """A caller's max_new_tokens past 256 is held to the cap ``core.explain`` and the app keep, with a note."""
    from core import explain_speech
    from core.inspect import speech

    asked = []
    real = speech._generate
    monkeypatch.setattr(speech, "_generate", lambda *a: asked.append(a[-1]["max_new_tokens"]) or real(*a))
    capped = explain_speech(tiny, audio, max_new_tokens=2_000)
    plain = explain_speech(tiny, audio, max_new_tokens=30)
    assert asked == [256, 30] and capped.prediction.text == plain.prediction.text
    assert any("limited to 256 new tokens" in n for n in capped.notes)
    assert not any("limited to" in n for n in plain.notes)
