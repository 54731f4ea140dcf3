"""Audio checked before the model (A3): a float WAV holding NaN, infinite or absurd (1e30) samples is refused
right after decoding with a message about the audio, never run for seconds and then blamed on the model; one a
little past full scale is clipped to [-1, 1] with a notice that reaches the explanation."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
import soundfile

from core.audio.decode import MAX_AMPLITUDE, checked_samples, load_audio
from core.inspect import speech


def _wav(samples: np.ndarray, rate: int = 16_000) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples.astype(np.float32), rate, format="WAV", subtype="FLOAT")
    return buffer.getvalue()


def _tone(seconds: float = 1.0, rate: int = 16_000) -> np.ndarray:
    return (0.5 * np.sin(np.arange(int(seconds * rate)) / 8)).astype(np.float32)


@pytest.mark.parametrize("value, match", [(np.nan, "not numbers"), (np.inf, "not numbers"), (-np.inf, "not numbers"),
                                          (1e30, "far past full scale")])
def test_a_wav_of_broken_samples_is_refused_right_after_decoding(value, match):
    samples = _tone()
    samples[100:110] = value
    data = _wav(samples)
    started = time.perf_counter()
    with pytest.raises(ValueError, match=match) as caught:
        load_audio(data, name="clip.wav")
    assert time.perf_counter() - started < 1.0
    assert str(caught.value).startswith("clip.wav ") and "\n" not in str(caught.value)


def test_a_wav_a_little_past_full_scale_is_clipped_with_a_notice():
    samples = _tone()
    samples[200] = 1.5
    audio = load_audio(_wav(samples), name="loud.wav")
    assert np.abs(audio.samples).max() <= 1.0 + 1e-3  # resampling keeps it (near) full scale
    assert audio.notes and "reached 1.50" in audio.notes[0] and "clipped" in audio.notes[0]
    quiet = load_audio(_wav(_tone()), name="quiet.wav")
    assert quiet.notes == ()


def test_the_limits_of_the_check_itself():
    ok, notes = checked_samples(np.array([0.0, 1.0, -1.0], dtype=np.float32))
    assert notes == () and ok.tolist() == [0.0, 1.0, -1.0]
    clipped, notes = checked_samples(np.array([MAX_AMPLITUDE, -2.0], dtype=np.float32))
    assert clipped.tolist() == [1.0, -1.0] and len(notes) == 1
    with pytest.raises(ValueError, match="far past full scale"):
        checked_samples(np.array([MAX_AMPLITUDE * 1.01], dtype=np.float32))


def test_decoded_audio_handed_to_the_speech_pipeline_is_checked_too():
    """An :class:`Audio` built elsewhere goes through the same check before any model hears it."""
    audio = load_audio(_wav(_tone()))
    broken = type(audio)(np.full(16_000, np.nan, dtype=np.float32), 16_000, 1, "WAV")
    with pytest.raises(ValueError, match="not numbers"):
        speech._audio(broken, 30.0)
    loud = type(audio)(np.full(16_000, 2.0, dtype=np.float32), 16_000, 1, "WAV")
    clip, _ = speech._audio(loud, 30.0)
    assert clip.samples.max() == 1.0 and "clipped" in clip.notes[0]
