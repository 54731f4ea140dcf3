"""Greedy and sampled decoding that records every attention map while it decodes.

With a KV cache and the causal mask, the step that feeds decoder position t computes, in every
layer and head, query t's self-attention over keys 0 … t and its cross-attention over the source:
exactly row t of the maps a full forward over the finished sequence returns (the cells past t are
0 under the look-ahead mask). Each step writes its rows straight into (L, B, H, T, T) tensors, so
when decoding ends the maps are complete and no final forward pass is needed. The encoder runs
once, with its maps, and its memory serves every step.

Only for Attnscope's own :class:`Transformer`, with the causal mask and without the pre-softmax
scores (a score map's cells past t see later keys, which no step has yet); :func:`can_record` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from core.io.tokenizer import BOS_ID
from core.model.layers import stack_maps
from core.model.transformer import AttentionControls, ModelOutput, Transformer

Picker = Callable[[Tensor], Tensor]  # (B, V) allowed logits → (B,) chosen ids


@dataclass(frozen=True)
class Recording:
    """What :func:`record` returns.

    Attributes:
        ids: (B, T + 1) the prefix then the generated tokens (``pad`` after a row's ``<eos>``).
        finished: (B,) whether each row produced ``<eos>``.
        output: logits (B, T, V) and every map over ``ids[:, :-1]``, as a forward pass over them returns.
        scores: (B,) total log-probability of each row's generated tokens.
    """

    ids: Tensor
    finished: Tensor
    output: ModelOutput
    scores: Tensor


def can_record(model: torch.nn.Module, controls: AttentionControls, return_scores: bool) -> bool:
    """Whether :func:`record` gives ``model`` 's maps exactly (see the module docstring)."""
    return isinstance(model, Transformer) and controls.causal and not return_scores


def banned_bias(model: torch.nn.Module, vocab: int, device: torch.device) -> Tensor:
    """(V,) float32: 0, and -inf at the ids decoding never produces (``<pad>`` and ``<bos>`` for
    Attnscope's own models; a pretrained model's config lists its own as ``never_generated``).
    Adding it to logits rules those ids out."""
    bias = torch.zeros(vocab, device=device)
    banned = getattr(model.config, "never_generated", (model.config.pad_id, BOS_ID))
    if banned:
        bias[list(banned)] = float("-inf")
    return bias


@torch.inference_mode()
def record(model: Transformer, src: Tensor | None, prefix: Tensor, pick: Picker, eos_id: int, room: int,
           controls: AttentionControls) -> Recording:
    """Decode up to ``room`` tokens after ``prefix`` (B, T0), ``pick`` choosing each, recording the maps.

    Raises:
        ValueError: when ``room`` is 0 (the prefix already fills ``max_len``).
    """
    if room < 1:
        raise ValueError(f"no room to generate: the prefix already fills max_len ({model.config.max_len})")
    cfg, (batch, start) = model.config, prefix.shape
    memory = memory_mask = None
    maps: dict[str, Tensor] = {}
    if cfg.has_encoder:
        memory, memory_mask, encoded = model.encode(src, controls, need_weights=True)
        maps["encoder"] = stack_maps(encoded, "weights")  # (L, B, H, S, S)
    capacity = start + room - 1  # decoder positions that may be fed: the last token never is
    seq = prefix.new_full((batch, start + room), cfg.pad_id)  # (B, T0 + room)
    seq[:, :start] = prefix
    maps["decoder"] = torch.zeros(cfg.n_decoder_layers, batch, cfg.n_heads, capacity, capacity, device=seq.device)
    if memory is not None:
        maps["cross"] = torch.zeros(cfg.n_decoder_layers, batch, cfg.n_heads, capacity, memory.size(1),
                                    device=seq.device)
    logits = torch.empty(batch, capacity, cfg.tgt_vocab_size, device=seq.device)  # (B, capacity, V)
    bias = banned_bias(model, cfg.tgt_vocab_size, seq.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=seq.device)
    cache, fed, end = model.kv_cache(), 0, start  # positions fed so far; tokens in seq so far
    for _ in range(room):
        rows = slice(fed, end)
        into = (maps["decoder"][:, :, :, rows, :end], maps["cross"][:, :, :, rows] if "cross" in maps else None)
        hidden, _, _ = model.decode(seq[:, rows], memory, memory_mask, controls, need_weights=True, cache=cache,
                                    maps_out=into)  # (B, n, D)
        logits[:, rows] = model.lm_head(hidden)  # (B, n, V)
        chosen = torch.where(finished, cfg.pad_id, pick(logits[:, end - 1] + bias))  # (B,)
        seq[:, end] = chosen
        finished |= chosen == eos_id
        fed, end = end, end + 1
        if bool(finished.all()):
            break
    seq = seq[:, :end]
    maps["decoder"] = _fed(maps["decoder"][:, :, :, :, :fed], fed)
    if "cross" in maps:
        maps["cross"] = _fed(maps["cross"], fed)
    output = ModelOutput(logits[:, :fed], attention=maps)
    return Recording(seq, finished, output, _total_log_prob(logits[:, start - 1 : fed] + bias, seq[:, start:], eos_id))


def _fed(weights: Tensor, fed: int) -> Tensor:
    """The rows (L, B, H, fed, Tk) of the ``fed`` positions, contiguous (no copy when every row was fed)."""
    return weights[:, :, :, :fed].contiguous()


def _total_log_prob(allowed: Tensor, generated: Tensor, eos_id: int) -> Tensor:
    """(B,) sum of log-probabilities of the ``generated`` (B, n) tokens under ``allowed`` (B, n, V)
    logits, leaving out the padding after each row's ``<eos>``."""
    logp = allowed.log_softmax(-1).gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (B, n)
    ends = (generated == eos_id).long()
    after_end = (ends.cumsum(1) - ends) > 0  # (B, n): a step after the row had finished
    return torch.where(after_end, 0.0, logp).sum(1)
