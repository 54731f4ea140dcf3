"""What a sampler may draw from: the logits of one step reshaped by temperature, then top-k, then
top-p (nucleus), in that order, as Hugging Face's samplers and ``core.lessons.sampling_step`` do.

Top-k keeps the k most likely tokens; top-p then keeps the smallest set of the most likely tokens
left whose probability reaches p. Everything else gets a logit of -inf, so a softmax gives it 0.
"""

from __future__ import annotations

import torch
from torch import Tensor


def check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    """Raise a ``ValueError`` naming the first setting a sampler cannot use."""
    if not temperature > 0:
        raise ValueError(f"sampling temperature must be > 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def restrict(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None) -> Tensor:
    """float32 (B, V) logits divided by ``temperature``, -inf outside the top ``top_k`` and then outside the
    nucleus of mass ``top_p`` (the most likely token always stays)."""
    logits = logits.float() / temperature  # (B, V)
    if top_k is not None and top_k < logits.size(-1):
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)  # (B, V) most likely first
        before = probs.cumsum(dim=-1) - probs  # (B, V): the mass of the more likely tokens
        beyond = before >= top_p - 1e-6  # (B, V) in rank order (float32 rounding aside)
        beyond[:, 0] = False  # the most likely token always stays
        dropped = torch.zeros_like(beyond).scatter(-1, order, beyond)
        logits = logits.masked_fill(dropped, float("-inf"))
    return logits
