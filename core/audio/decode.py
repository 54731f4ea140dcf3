"""Speech from a WAV, FLAC or OGG file: decoded with ``soundfile`` (libsndfile), mixed to mono and
resampled to 16 kHz with ``soxr``.

Uploads are untrusted: the byte size is checked before anything is read, then the header
(format, channels, sample rate, length) before the samples are decoded, so a long or odd
file is refused in one line (``ValueError``) without decoding it. Right after decoding, before any model
hears them, the samples themselves are checked (:func:`checked_samples`): a float file holding NaN or
infinite samples, or samples far past full scale (1e30), is refused with a message about the audio; a file a
little past full scale is clipped to [-1, 1], and :attr:`Audio.notes` says so.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16_000  # Hz: what Whisper hears
FORMATS = ("WAV", "FLAC", "OGG")
MAX_BYTES = 20 << 20
MAX_SECONDS = 30.0  # Whisper's window
MAX_CHANNELS = 8
RATES = (8_000, 192_000)  # accepted source sample rates, Hz
MAX_AMPLITUDE = 8.0  # past this (18 dB over full scale) samples are not sound but a broken or crafted file


@dataclass(frozen=True)
class Audio:
    """Decoded speech.

    Attributes:
        samples: float32 (N,) mono at :data:`SAMPLE_RATE`, in [-1, 1].
        source_rate / channels / format: what the file held.
        notes: what was done to the samples (clipped to full scale), for the page to say.
    """

    samples: np.ndarray
    source_rate: int
    channels: int
    format: str
    notes: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        """Duration in seconds."""
        return self.samples.size / SAMPLE_RATE


def load_audio(data: bytes, *, name: str = "audio", max_bytes: int = MAX_BYTES,
               max_seconds: float = MAX_SECONDS) -> Audio:
    """Decode ``data`` (the bytes of a WAV, FLAC or OGG file) to 16 kHz mono float32.

    Raises:
        ValueError: one line: too large, not a supported format, too long, empty or unreadable.
    """
    import soundfile  # libsndfile; imported here so the rest of core does not need it

    if len(data) > max_bytes:
        raise ValueError(f"{name} is {len(data) / 2**20:.1f} MiB; at most {max_bytes / 2**20:.0f} MiB")
    try:
        info = soundfile.info(io.BytesIO(data))
    except (RuntimeError, TypeError, soundfile.LibsndfileError):
        raise ValueError(f"{name} is not a readable audio file (WAV, FLAC or OGG)") from None
    if info.format not in FORMATS:
        raise ValueError(f"{name} is {info.format}; supported: {', '.join(FORMATS)}")
    if not 1 <= info.channels <= MAX_CHANNELS or not RATES[0] <= info.samplerate <= RATES[1]:
        raise ValueError(f"{name} has {info.channels} channels at {info.samplerate} Hz; expected 1–{MAX_CHANNELS} "
                         f"channels at {RATES[0]:,}–{RATES[1]:,} Hz")
    if info.frames <= 0:
        raise ValueError(f"{name} holds no sound")
    seconds = info.frames / info.samplerate
    if seconds > max_seconds:
        raise ValueError(f"{name} is {seconds:.1f} s long; at most {max_seconds:g} s (Whisper's window)")
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True, frames=info.frames)
    except (RuntimeError, soundfile.LibsndfileError):
        raise ValueError(f"{name} could not be decoded (a damaged {info.format} file)") from None
    samples, notes = checked_samples(samples, name)
    return Audio(resample(samples.mean(axis=1), rate), info.samplerate, info.channels, info.format, notes)


def checked_samples(samples: np.ndarray, name: str = "audio") -> tuple[np.ndarray, tuple[str, ...]]:
    """Decoded float32 samples (any shape) checked before a model hears them: (samples, notes).

    Samples past full scale but within :data:`MAX_AMPLITUDE` are clipped to [-1, 1] (one note says so).

    Raises:
        ValueError: NaN or infinite samples, or samples past :data:`MAX_AMPLITUDE` (one line about the audio).
    """
    if not np.isfinite(samples).all():
        bad = int(samples.size - np.isfinite(samples).sum())
        raise ValueError(f"{name} holds {bad:,} samples that are not numbers (NaN or infinite): a damaged or "
                         "crafted file; export the recording again")
    peak = float(np.abs(samples).max()) if samples.size else 0.0
    if peak > MAX_AMPLITUDE:
        raise ValueError(f"{name} has samples of {peak:.3g}, far past full scale (1.0): a damaged or crafted "
                         "file; export the recording again")
    if peak > 1.0:
        return np.clip(samples, -1.0, 1.0), (f"The audio's samples reached {peak:.2f}, past full scale; they were "
                                             "clipped to [-1, 1] before the model heard them.",)
    return samples, ()


def resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """float32 (N,) mono at ``rate`` Hz → float32 at :data:`SAMPLE_RATE` (soxr, high quality)."""
    import soxr

    samples = np.ascontiguousarray(samples, dtype=np.float32)
    if rate == SAMPLE_RATE:
        return samples
    return soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)
