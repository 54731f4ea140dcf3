"""The Lesson's Whisper track (``core.lessons.trace_speech``) against ``transformers`` eager on a tiny random
English-only Whisper folder: the spectrogram, the encoder's input after the stem and positions, encoder layer 0's
weights over the frames, the decoder's masked layer-0 head, every cross-attention map and the output candidates;
and its refusals, one line each."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

from core import lessons, load_pretrained
from core.audio.mel import log_mel
from tests.helpers.hf_whisper_folder import reference_whisper, save_whisper, whisper_tokenizer

pytest.importorskip("transformers")
soundfile = pytest.importorskip("soundfile")

HEAD = 1
SECONDS = 0.7


def tone_wav(seconds: float = SECONDS) -> tuple[bytes, np.ndarray]:
    """A 440 Hz tone with a rising partial, as WAV bytes, and its samples as the file holds them."""
    t = np.arange(int(16_000 * seconds), dtype=np.float32) / 16_000
    samples = (0.4 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 880 * t * (1 + t))).astype(np.float32)
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, 16_000, format="WAV", subtype="FLOAT")
    return buffer.getvalue(), samples


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    reference = reference_whisper(whisper_tokenizer().get_vocab_size(), seed=1, decoder_layers=3)
    folder = save_whisper(reference, tmp_path_factory.mktemp("whisper") / "whisper-tiny.en", multilingual=False)
    wav, samples = tone_wav()
    loaded = load_pretrained(folder)
    return loaded, reference, samples, lessons.trace_speech(loaded, wav, head=HEAD)


@torch.no_grad()
def test_every_stage_equals_transformers_eager(english):
    loaded, reference, samples, trace = english
    features = torch.from_numpy(log_mel(samples))[None]  # (1, 80, 3000)
    ids = torch.tensor([trace.target_ids])  # (1, T)
    theirs = reference(input_features=features, decoder_input_ids=ids, output_attentions=True,
                       output_hidden_states=True)
    F = trace.frames
    assert F == math.ceil(SECONDS / 0.02) and trace.features.shape == (80, 2 * F)
    np.testing.assert_allclose(trace.features, features[0, :, :2 * F].numpy(), atol=1e-6)
    np.testing.assert_allclose(trace.embedded, theirs.encoder_hidden_states[0][0, :F].numpy(), atol=1e-5)
    encoder = theirs.encoder_attentions[0][0, HEAD].numpy()  # (1500, 1500)
    np.testing.assert_allclose(trace.encoder_head.weights, encoder[:F, :F], atol=1e-6)
    np.testing.assert_allclose(trace.encoder_mass, encoder[:F, :F].sum(-1), atol=1e-5)
    assert trace.encoder_mass.max() < 1.0  # the silence after the clip takes some weight
    decoder = theirs.decoder_attentions[0][0, HEAD].numpy()  # (T, T)
    np.testing.assert_allclose(trace.decoder_head.weights, decoder, atol=1e-6)
    assert np.allclose(np.triu(trace.decoder_head.weights, 1), 0.0)
    cross = torch.stack(theirs.cross_attentions)[:, 0, :, :, :F].numpy()  # (L, H, T, F)
    np.testing.assert_allclose(trace.cross, cross, atol=1e-5)
    heads = trace.alignment_heads
    np.testing.assert_allclose(trace.alignment, np.stack([cross[l, h] for l, h in heads]).mean(0), atol=1e-5)


@torch.no_grad()
def test_the_output_candidates_are_the_greedy_choices(english):
    loaded, reference, samples, trace = english
    features = torch.from_numpy(log_mel(samples))[None]
    logits = reference(input_features=features, decoder_input_ids=torch.tensor([trace.target_ids])).logits[0]
    logits[:, list(loaded.config.never_generated)] = float("-inf")
    probabilities = logits.softmax(-1)  # (T, V)
    for row, candidates in enumerate(trace.candidates):
        best, p = candidates[0]
        assert (best == trace.generated_tokens[row]) or row < trace.prompt_tokens - 1  # a prompt row's is forced
        assert p == pytest.approx(float(probabilities[row].max()), abs=1e-5)
        assert [c[1] for c in candidates] == sorted((c[1] for c in candidates), reverse=True)
    assert trace.prompt_tokens == 2 and trace.target_tokens[:2] == ("<|startoftranscript|>", "<|notimestamps|>")


def test_refusals_are_one_line(english):
    loaded = english[0]
    wav, _ = tone_wav()
    with pytest.raises(ValueError, match="head must be in 0..1, got 4"):
        lessons.trace_speech(loaded, wav, head=4)
    with pytest.raises(ValueError) as raised:
        lessons.trace_speech(loaded, b"not a sound file", head=0)
    assert "\n" not in str(raised.value)
    with pytest.raises(ValueError, match="at most 8 s"):
        lessons.trace_speech(loaded, tone_wav(9.0)[0], head=0)
