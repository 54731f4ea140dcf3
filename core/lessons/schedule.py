"""The Train page's two teaching figures: the paper's warm-up learning-rate schedule and the
label-smoothed target distribution, both computed by the trainer's own ``core.training.objectives``.

lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.tasks.sentiment import LABELS as SENTIMENT_LABELS
from core.training.objectives import noam_lr, smoothed_loss, smoothed_targets

# The label-smoothing example: a six-token vocabulary and five target tokens (the last is padding).
EXAMPLE_VOCAB = ("<pad>", "a", "b", "c", "d", "e")
EXAMPLE_TARGETS = (2, 1, 4, 5, 0)
# The classifier case: the shipped classifier's own classes (sentiment: two), no padding class.
CLASSIFIER_VOCAB = tuple(SENTIMENT_LABELS)
CLASSIFIER_TARGETS = (1, 0, 1)


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
                      targets: tuple[int, ...] = EXAMPLE_TARGETS, classifier: bool = False) -> SmoothingExample:
    """``core.smoothed_targets`` for ``targets`` over ``vocab``.

    Sequence targets (``classifier=False``, padding id 0): 1 − ε on the target, ε / (V − 2) on
    every other token except padding, and all zero for a padding target. Class targets
    (``classifier=True``): no padding class, so ε / (V − 1) on every other class.
    """
    if classifier:
        vocab, targets = CLASSIFIER_VOCAB, CLASSIFIER_TARGETS
    matrix = smoothed_targets(torch.tensor(list(targets)), len(vocab), smoothing,
                              pad_id=None if classifier else 0).numpy()  # (N, V)
    return SmoothingExample(matrix, tuple(vocab), tuple(targets))


def other_share(smoothing: float, n_classes: int, classifier: bool) -> float:
    """What each non-target (non-pad) entry receives: ε/(V − 1) for classes, ε/(V − 2) with padding."""
    return smoothing / max(n_classes - (1 if classifier else 2), 1)


@dataclass(frozen=True)
class KLCheck:
    """The notes' KL-divergence form of the smoothed loss, checked on one row.

    Attributes:
        target: smoothed target q (V,). predicted: model distribution p = softmax(logits) (V,).
        kl: KL(q‖p) = Σ q log(q/p) (terms with q = 0 count 0). cross_entropy: CE(q, p) = −Σ q log p
            (what ``core.training.smoothed_loss`` computes). entropy: H(q) = −Σ q log q, a constant of the data.
        trainer_loss: ``core.training.smoothed_loss`` on the same row (equals cross_entropy).
    """

    target: np.ndarray
    predicted: np.ndarray
    kl: float
    cross_entropy: float
    entropy: float
    trainer_loss: float


def kl_check(smoothing: float, seed: int = 0, classifier: bool = False) -> KLCheck:
    """KL(q‖p) = CE(q, p) − H(q) on the first row of :func:`smoothing_example` with seeded logits.

    ``classifier`` checks the classifier example that page shows (no padding class, ε/(V − 1))
    instead of the sequence one. KL and CE differ by H(q), which does not depend on the model, so
    both losses have the same gradients: minimising the notes' KLDivLoss is minimising the
    trainer's cross-entropy.
    """
    vocab, targets, pad_id = ((CLASSIFIER_VOCAB, CLASSIFIER_TARGETS, None) if classifier
                              else (EXAMPLE_VOCAB, EXAMPLE_TARGETS, 0))
    target_id = targets[0]
    logits = torch.randn(1, len(vocab), generator=torch.Generator().manual_seed(seed),
                         dtype=torch.float64)  # (1, V)
    q = smoothed_targets(torch.tensor([target_id]), len(vocab), smoothing, pad_id=pad_id).double()[0]  # (V,)
    logp = logits.log_softmax(-1)[0]  # (V,)
    support = q > 0
    kl = float((q[support] * (q[support].log() - logp[support])).sum())
    ce = float(-(q * logp).sum())
    entropy = float(-(q[support] * q[support].log()).sum())
    loss = float(smoothed_loss(logits, torch.tensor([target_id]), smoothing, pad_id=pad_id))
    return KLCheck(q.numpy(), logp.exp().numpy(), kl, ce, entropy, loss)
