"""Sampling instead of greedy: one decoder step's real distribution reshaped by temperature, top-k
and top-p (nucleus), step by step, as the Lesson's decoding stage draws it.

Temperature divides the logits (log-probabilities work as well: a constant shift cancels in the
softmax); top-k keeps the k most likely tokens; top-p keeps the smallest set of most likely tokens
whose probability reaches p. The kept probabilities are renormalised to sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.generate.filters import check_sampling


@dataclass(frozen=True)
class SamplingStep:
    """One step's distribution (V,) at each stage of the sampler.

    Attributes:
        original: the model's probabilities. tempered: softmax(log p / temperature).
        kept: bool (V,) the tokens left after top-k and then top-p.
        final: the renormalised distribution the sampler draws from (0 outside ``kept``).
    """

    original: np.ndarray
    tempered: np.ndarray
    kept: np.ndarray
    final: np.ndarray
    temperature: float
    top_k: int | None
    top_p: float | None


def sampling_step(probabilities: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> SamplingStep:
    """Reshape one step's ``probabilities`` (V,) by ``temperature``, then ``top_k``, then ``top_p``.

    Raises:
        ValueError: temperature ≤ 0, top_k < 1, top_p outside (0, 1], or probabilities that are not
            a distribution.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-4):
        raise ValueError("probabilities must be one non-negative row that sums to 1")
    check_sampling(temperature, top_k, top_p)  # the sampler's own rules
    logits = np.log(np.maximum(p, 1e-30)) / temperature  # (V,)
    tempered = np.exp(logits - logits.max())
    tempered /= tempered.sum()
    order = np.argsort(-tempered, kind="stable")
    kept = np.ones(p.size, dtype=bool)
    if top_k is not None and top_k < p.size:
        kept[order[top_k:]] = False
    if top_p is not None:
        ranked = np.where(kept[order], tempered[order], 0.0)
        ranked = ranked / ranked.sum()
        before = np.concatenate([[0.0], np.cumsum(ranked)[:-1]])  # mass of the more likely tokens
        kept[order[before >= top_p - 1e-9]] = False  # keep tokens until the mass reaches p (rounding aside)
    final = np.where(kept, tempered, 0.0)
    final /= final.sum()
    return SamplingStep(p, tempered, kept, final, float(temperature), top_k, top_p)
