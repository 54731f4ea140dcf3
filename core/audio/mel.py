"""Whisper's input: the 80-bin log-mel spectrogram of a 30 s window of 16 kHz audio.

A 400-sample Hann window (25 ms) every 160 samples (10 ms) gives 3,000 columns for 30 s; the
power spectrum is mapped onto mel bands by a Slaney-style filter bank (computed here), then
log10, floored at 8 below its maximum and scaled as (x + 4) / 4, as Whisper was trained.
Audio shorter than 30 s is padded with silence, longer is cut.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from core.audio.decode import SAMPLE_RATE

N_FFT = 400
HOP = 160
WINDOW_SECONDS = 30
N_SAMPLES = WINDOW_SECONDS * SAMPLE_RATE  # 480,000
N_COLUMNS = N_SAMPLES // HOP  # 3,000 spectrogram columns
FRAME_SECONDS = 2 * HOP / SAMPLE_RATE  # 0.02 s: one encoder frame (the second convolution halves the columns)


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    linear = 3.0 * hz / 200.0
    log = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (math.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = 200.0 * mel / 3.0
    log = 1000.0 * np.exp((math.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log, linear)


@lru_cache(maxsize=4)
def mel_filters(n_mels: int = 80, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """float32 (n_mels, n_fft // 2 + 1): triangular filters evenly spaced on the mel scale from
    0 Hz to Nyquist, each scaled by 2 / its width in Hz (Slaney's equal-area normalisation)."""
    bins = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)  # (K,) each FFT bin's frequency
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2))  # (n_mels + 2,)
    width = np.diff(edges)  # (n_mels + 1,)
    slopes = edges[None, :] - bins[:, None]  # (K, n_mels + 2)
    rising = -slopes[:, :-2] / width[:-1]  # (K, n_mels)
    falling = slopes[:, 2:] / width[1:]
    triangles = np.maximum(0.0, np.minimum(rising, falling))  # (K, n_mels)
    area = 2.0 / (edges[2:] - edges[:-2])  # (n_mels,)
    filters = (triangles * area).T.astype(np.float32)  # (n_mels, K)
    filters.flags.writeable = False  # cached: shared by every call
    return filters


def pad_or_trim(samples: np.ndarray, length: int = N_SAMPLES) -> np.ndarray:
    """float32 (length,): ``samples`` cut at, or padded with zeros (silence) to, ``length``."""
    samples = np.asarray(samples, dtype=np.float32)[:length]
    return np.pad(samples, (0, length - samples.size))


def log_mel(samples: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """float32 (n_mels, 3000): Whisper's normalised log-mel spectrogram of 16 kHz mono ``samples``."""
    audio = torch.from_numpy(pad_or_trim(samples))  # (N_SAMPLES,)
    spectrum = torch.stft(audio, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)  # (K, 3001)
    power = spectrum[:, :-1].abs() ** 2  # (K, 3000): the last column (past the end) dropped, as Whisper does
    mel = torch.from_numpy(mel_filters(n_mels).copy()) @ power  # (n_mels, 3000)
    log = mel.clamp(min=1e-10).log10()
    log = torch.maximum(log, log.max() - 8.0)  # an 80 dB range below the loudest
    return ((log + 4.0) / 4.0).numpy().astype(np.float32, copy=False)


def frames_filled(seconds: float, n_frames: int = N_COLUMNS // 2) -> int:
    """How many of the encoder's frames (20 ms each) the audio covers (at least 1, at most ``n_frames``)."""
    return max(1, min(n_frames, math.ceil(seconds / FRAME_SECONDS - 1e-9)))


def frame_labels(count: int) -> tuple[str, ...]:
    """Labels of the first ``count`` encoder frames: their start time (``0.00 s``, ``0.02 s``, …)."""
    return tuple(f"{i * FRAME_SECONDS:.2f} s" for i in range(count))
