"""How the paper trains its model, as the trainer does it: Adam's settings (read from the optimizer the
trainer builds), several warm-up schedules side by side, and the Annotated Transformer's
"label smoothing penalises confidence" curve, all computed by ``core.training`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.config import ModelConfig
from core.lessons.schedule import NoamCurve, noam_curve
from core.training.config import TrainConfig
from core.training.objectives import smoothed_loss
from core.training.step import make_optimizer

# The paper's Adam (section 5.3): β₁, β₂, ε.
PAPER_ADAM = (0.9, 0.98, 1e-9)
# The Annotated Transformer's side-by-side schedules: (d_model, warm-up).
SCHEDULES = ((512, 4000), (512, 8000), (256, 4000))


@dataclass(frozen=True)
class PaperRecipe:
    """The trainer's optimiser and regularisation defaults.

    Attributes:
        beta1, beta2, eps: Adam's settings, read from :func:`core.training.step.make_optimizer`.
        dropout: ``ModelConfig``'s default dropout. label_smoothing / warmup: ``TrainConfig``'s defaults.
    """

    beta1: float
    beta2: float
    eps: float
    dropout: float
    label_smoothing: float
    warmup: int

    def adam_rows(self) -> list[tuple[str, float, float]]:
        """(setting, the paper's value, the trainer's value) for β₁, β₂ and ε."""
        return list(zip(("β₁", "β₂", "ε"), PAPER_ADAM, (self.beta1, self.beta2, self.eps)))


def paper_recipe() -> PaperRecipe:
    """The settings the trainer really uses (an optimiser is built on one dummy parameter and read back)."""
    optimizer = make_optimizer(torch.nn.Linear(1, 1))
    group = optimizer.param_groups[0]
    (beta1, beta2), eps = group["betas"], group["eps"]
    return PaperRecipe(float(beta1), float(beta2), float(eps), ModelConfig.dropout, TrainConfig.label_smoothing,
                       TrainConfig.warmup)


def warmup_schedules(total_steps: int = 20000,
                     configs: tuple[tuple[int, int], ...] = SCHEDULES) -> list[tuple[str, NoamCurve]]:
    """(label, curve) of the Noam schedule for each (d_model, warm-up) in ``configs``."""
    if total_steps < 1:
        raise ValueError(f"total_steps must be at least 1, got {total_steps}")
    return [(f"d_model {d}, warm-up {w}", noam_curve(total_steps, d, w)) for d, w in configs]


@dataclass(frozen=True)
class ConfidencePenalty:
    """The loss of one prediction as its confidence in the right token grows.

    Attributes:
        confidence: (N,) probability given to the correct token (the rest spread evenly over the
            other real tokens). smoothed / plain: (N,) loss with label smoothing ε and without.
        best: the confidence where the smoothed loss is lowest (1 − ε: more is penalised).
    """

    confidence: np.ndarray
    smoothed: np.ndarray
    plain: np.ndarray
    best: float
    smoothing: float


def confidence_penalty(smoothing: float = 0.1, vocab: int = 5, points: int = 199) -> ConfidencePenalty:
    """The trainer's :func:`smoothed_loss` for a vocabulary of ``vocab`` tokens (token 0 is padding, as
    in the Annotated Transformer's example) and a prediction that puts ``confidence`` on the target.

    Raises:
        ValueError: smoothing outside [0, 1) or fewer than 3 tokens.
    """
    if not 0.0 <= smoothing < 1.0 or vocab < 3:
        raise ValueError(f"need 0 ≤ smoothing < 1 and vocab ≥ 3, got {smoothing}, {vocab}")
    confidence = np.linspace(0.005, 0.995, points)
    probs = np.zeros((points, vocab))
    probs[:, 1] = confidence
    probs[:, 2:] = ((1 - confidence) / (vocab - 2))[:, None]
    logits = torch.from_numpy(np.log(np.maximum(probs, 1e-12)))  # (N, V); pad never counts
    targets = torch.ones(1, dtype=torch.long)
    smoothed = np.array([float(smoothed_loss(row[None], targets, smoothing, pad_id=0)) for row in logits])
    plain = np.array([float(smoothed_loss(row[None], targets, 0.0, pad_id=0)) for row in logits])
    return ConfidencePenalty(confidence, smoothed, plain, float(confidence[np.argmin(smoothed)]), smoothing)
