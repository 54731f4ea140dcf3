"""Speech from a WAV, FLAC or OGG file: decoded with ``soundfile`` (libsndfile), mixed to mono and
resampled to 16 kHz with ``soxr``.

Uploads are untrusted: the byte size is checked before anything is read, then the header
(format, channels, sample rate, length) before the samples are decoded, so a long or odd
file is refused in one line (``ValueError``) without decoding it.
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


@dataclass(frozen=True)
class Audio:
    """Decoded speech.

    Attributes:
        samples: float32 (N,) mono at :data:`SAMPLE_RATE`, in [-1, 1].
        source_rate / channels / format: what the file held.
    """

    samples: np.ndarray
    source_rate: int
    channels: int
    format: str

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
    return Audio(resample(samples.mean(axis=1), rate), info.samplerate, info.channels, info.format)


def resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """float32 (N,) mono at ``rate`` Hz → float32 at :data:`SAMPLE_RATE` (soxr, high quality)."""
    import soxr

    samples = np.ascontiguousarray(samples, dtype=np.float32)
    if rate == SAMPLE_RATE:
        return samples
    return soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)
