"""Sampling instead of greedy: one decoder step's real distribution reshaped by temperature, top-k
and top-p (nucleus), step by step, as the Lesson's decoding stage draws it.

Temperature divides the logits (log-probabilities work as well: a constant shift cancels in the
softmax); top-k keeps the k most likely tokens; top-p keeps the smallest set of most likely tokens
whose probability reaches p. The kept probabilities are renormalised to sum to 1. :func:`draw_tokens` then
draws from it as the sampler does, with a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.generate.filters import check_sampling, restrict


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


@dataclass(frozen=True)
class Draws:
    """Tokens drawn from one step's reshaped distribution.

    Attributes:
        ids: int (n,) the drawn token ids, in order (``ids[0]`` is "the" drawn token).
        counts: int (V,) how often each token was drawn. seed: the random source's seed.
    """

    ids: np.ndarray
    counts: np.ndarray
    seed: int

    @property
    def frequencies(self) -> np.ndarray:
        """(V,) each token's share of the draws."""
        return self.counts / self.counts.sum()


def draw_tokens(probabilities: np.ndarray, n: int, seed: int, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None) -> Draws:
    """``n`` tokens drawn (with replacement) from ``probabilities`` (V,) as :func:`core.generate.sample` draws each
    step: the logits (here log p, the same softmax) reshaped by :func:`core.generate.filters.restrict`, then
    ``torch.multinomial`` from a generator seeded with ``seed`` (the same seed draws the same tokens).

    Raises:
        ValueError: n < 1, or the sampler's own rules (:func:`core.generate.filters.check_sampling`).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    check_sampling(temperature, top_k, top_p)
    logits = torch.log(torch.tensor(np.asarray(probabilities), dtype=torch.float32).clamp_min(1e-30))[None]  # (1, V)
    probs = restrict(logits, temperature, top_k, top_p).softmax(dim=-1)  # (1, V)
    generator = torch.Generator().manual_seed(int(seed))
    ids = torch.multinomial(probs, n, replacement=True, generator=generator)[0].numpy()  # (n,)
    return Draws(ids, np.bincount(ids, minlength=probs.size(-1)), int(seed))
