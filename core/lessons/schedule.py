"""The Train page's two teaching figures: the paper's warm-up learning-rate schedule and the
label-smoothed target distribution, both computed by the trainer's own ``core.training.objectives``.

lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.training.objectives import noam_lr, smoothed_targets

# The label-smoothing example: a six-token vocabulary and five target tokens (the last is padding).
EXAMPLE_VOCAB = ("<pad>", "a", "b", "c", "d", "e")
EXAMPLE_TARGETS = (2, 1, 4, 5, 0)


def _thin(n: int, max_points: int) -> np.ndarray:
    """Indices of at most ``max_points`` evenly spread items of ``n``, always keeping the last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(int))


@dataclass(frozen=True)
class NoamCurve:
    """The schedule over a run: steps (S,) and their learning rates (S,), plus the peak (step, rate)."""

    steps: np.ndarray
    lrs: np.ndarray
    peak_step: int
    peak_lr: float


def noam_curve(total_steps: int, d_model: int, warmup: int, factor: float = 1.0, max_points: int = 400) -> NoamCurve:
    """The warm-up schedule over ``total_steps``, thinned to ``max_points`` plus the peak.

    The peak is the end of warm-up, or the last step when the warm-up outlasts the run.
    """
    steps = np.arange(1, total_steps + 1)[_thin(total_steps, max_points)]
    peak = min(warmup, total_steps)
    steps = np.unique(np.append(steps, peak))
    lrs = np.array([noam_lr(int(s), d_model, warmup, factor) for s in steps])
    return NoamCurve(steps, lrs, peak, noam_lr(peak, d_model, warmup, factor))


@dataclass(frozen=True)
class SmoothingExample:
    """Label-smoothed targets: matrix (N, V), one row per target, and the vocabulary and targets used."""

    matrix: np.ndarray
    vocab: tuple[str, ...]
    targets: tuple[int, ...]


def smoothing_example(smoothing: float, vocab: tuple[str, ...] = EXAMPLE_VOCAB,
                      targets: tuple[int, ...] = EXAMPLE_TARGETS) -> SmoothingExample:
    """``core.smoothed_targets`` for ``targets`` over ``vocab`` (padding id 0): 1 − ε on the target,
    ε / (V − 2) on every other non-pad token, and all zero for a padding target."""
    matrix = smoothed_targets(torch.tensor(list(targets)), len(vocab), smoothing, pad_id=0).numpy()  # (N, V)
    return SmoothingExample(matrix, tuple(vocab), tuple(targets))
