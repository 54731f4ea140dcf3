"""The step loop of greedy and sampled decoding, kept lean: a decoding step is ~100 small ATen calls,
so every call saved per step counts.

Each step feeds the decoder only the newest token (a KV cache, where the model offers one), rules
out the ids decoding never produces by adding a precomputed bias, and writes the chosen token into a
preallocated sequence. The log-probability of the output is computed once at the end from the final
pass's logits (:func:`total_log_prob`), not step by step.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from core.model.kv_cache import KVCache
from core.model.contract import AttentionControls, AttentionModel

Picker = Callable[[Tensor], Tensor]  # (B, V) allowed logits → (B,) chosen ids


def banned_bias(model: torch.nn.Module, vocab: int, device: torch.device) -> Tensor:
    """(V,) float32: 0, and -inf at the ids decoding never produces (``<pad>`` and ``<bos>`` for
    Attnscope's own models; a pretrained model's config lists its own as ``never_generated``).
    Adding it to logits rules those ids out."""
    bias = torch.zeros(vocab, device=device)
    banned = model.config.never_generated
    if banned:
        bias[list(banned)] = float("-inf")
    return bias


def forced_eos(model: torch.nn.Module) -> int | None:
    """The id the last step of the token budget must produce (a config's ``forced_eos_id``), or None."""
    return getattr(model.config, "forced_eos_id", None)


def incremental(
    model: AttentionModel, memory: Tensor | None, memory_mask: Tensor | None, controls: AttentionControls,
) -> tuple[Callable[[Tensor], Tensor], KVCache | None]:
    """(seq (B, T) → next-token logits (B, V) for one decoding call, its KV cache or None). The cache
    (core/model/kv_cache.py), where the model offers one and the causal mask is on, makes each step
    run only the new token; it lives here, never on the model."""
    if not (hasattr(model, "kv_cache") and controls.causal):
        return (lambda seq: model.next_token_logits(seq, memory, memory_mask, controls)), None
    cache = model.kv_cache()
    return (lambda seq: model.next_token_logits(seq, memory, memory_mask, controls, cache=cache)), cache


def run_steps(
    model: AttentionModel, memory: Tensor | None, memory_mask: Tensor | None, prefix: Tensor, pick: Picker,
    eos_id: int, room: int, controls: AttentionControls,
) -> tuple[Tensor, Tensor]:
    """Decode up to ``room`` tokens after ``prefix`` (B, T0), ``pick`` choosing each from the allowed logits;
    the last of the ``room`` steps gives every unfinished row the config's forced end (:func:`forced_eos`).

    Returns:
        the sequence (B, T0 + n), ``pad`` after a row's ``<eos>``, and whether each row finished (B,).
    """
    (batch, start), pad = prefix.shape, model.config.pad_id
    seq = prefix.new_full((batch, start + room), pad)  # (B, T0 + room), filled as the steps go
    seq[:, :start] = prefix
    finished = torch.zeros(batch, dtype=torch.bool, device=prefix.device)
    (next_logits, _), bias, end = incremental(model, memory, memory_mask, controls), None, start
    last = forced_eos(model)
    for step in range(room):
        logits = next_logits(seq[:, :end]).float()  # (B, V)
        if bias is None:
            bias = banned_bias(model, logits.size(-1), logits.device)
        if last is not None and step == room - 1:  # the budget's last token: the forced end
            chosen = torch.where(finished, pad, last)  # (B,)
        else:
            chosen = torch.where(finished, pad, pick(logits + bias))  # (B,)
        seq[:, end] = chosen
        finished |= chosen == eos_id
        end += 1
        if bool(finished.all()):
            break
    return seq[:, :end], finished


def total_log_prob(model: AttentionModel, logits: Tensor, generated: Tensor, eos_id: int) -> Tensor:
    """(B,) the summed log-probability of the ``generated`` (B, n) tokens under the ``logits`` (B, n, V)
    that predicted them (the banned ids ruled out, as when decoding), leaving out the padding after
    each row's ``<eos>``."""
    allowed = logits.float() + banned_bias(model, logits.size(-1), logits.device)  # (B, n, V)
    logp = allowed.log_softmax(-1).gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (B, n)
    ends = (generated == eos_id).long()
    after_end = (ends.cumsum(1) - ends) > 0  # (B, n): a step after the row had finished
    return torch.where(after_end, 0.0, logp).sum(1)
