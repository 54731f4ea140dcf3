"""Autoregressive decoding: greedy, beam search and sampling (temperature, top-k).

Every function returns a :class:`Generation`: the decoder sequence it produced and
one final forward pass over it with every head's attention, so the maps cover the
whole generated sequence. Under the causal mask each row of that pass equals what
the model saw at that step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from core.model.transformer import AttentionControls, ModelOutput, Transformer
from core.io.tokenizer import BOS_ID


@dataclass(frozen=True)
class Generation:
    """The result of decoding.

    Attributes:
        ids: (B, T) the decoder input sequence: the prefix (``<bos>`` …) then the
            generated tokens, the last of which is ``<eos>`` when ``finished``;
            rows that finished early are padded with ``pad_id``.
        finished: (B,) whether each row produced ``<eos>``.
        output: the forward pass with attention (and scores when asked) over ``ids[:, :-1]``,
            the inputs that produced the generated tokens: ``output.logits[:, t]`` predicted
            ``ids[:, t + 1]``.
        scores: (B,) total log-probability of the generated tokens (beam search ranks by it).
    """

    ids: Tensor
    finished: Tensor
    output: ModelOutput
    scores: Tensor


Picker = Callable[[Tensor], Tensor]  # (B, V) logits → (B,) chosen ids


def _allowed(model: Transformer, logits: Tensor) -> Tensor:
    """Logits (B, V) with the ids decoding never produces ruled out: ``<pad>`` and ``<bos>`` for
    Attnscope's own models; a pretrained model's config lists its own (``never_generated``)."""
    logits = logits.float().clone()
    banned = getattr(model.config, "never_generated", (model.config.pad_id, BOS_ID))
    if banned:
        logits[:, list(banned)] = float("-inf")
    return logits


@torch.inference_mode()
def greedy(
    model: Transformer, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
) -> Generation:
    """Pick the most likely token at every step.

    Args:
        src: (B, S) source ids for ``encoder-decoder``; None for ``decoder``.
        prefix: (B, T0) the decoder's start (``<bos>``, or ``<bos>`` + a prompt).
        eos_id: the token that ends a sequence.
        max_new_tokens: at most this many tokens are added (and never past ``max_len``).
    """
    return _decode(model, src, prefix, lambda logits: logits.argmax(dim=-1), eos_id, max_new_tokens,
                   controls, return_scores)


@torch.inference_mode()
def sample(
    model: Transformer, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    generator: torch.Generator, temperature: float = 1.0, top_k: int | None = None,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
) -> Generation:
    """Draw each token from softmax(logits / temperature), optionally among the top k only.

    Args:
        generator: the explicit random source (seed it for reproducible samples).
        temperature: > 0; below 1 sharpens, above 1 flattens the distribution.
        top_k: keep only the k most likely tokens before sampling.
    """
    if not temperature > 0:
        raise ValueError(f"sampling temperature must be > 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")

    def pick(logits: Tensor) -> Tensor:
        logits = logits.float() / temperature  # (B, V)
        if top_k is not None and top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = logits.softmax(dim=-1)
        return torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(logits.device)

    return _decode(model, src, prefix, pick, eos_id, max_new_tokens, controls, return_scores)


def _room(model: Transformer, prefix: Tensor, max_new_tokens: int) -> int:
    if prefix.dim() != 2 or prefix.size(1) < 1:
        raise ValueError(f"prefix must be (batch, length >= 1), got shape {tuple(prefix.shape)}")
    return max(0, min(max_new_tokens, model.config.max_len - prefix.size(1)))


def _incremental(
    model: Transformer, memory: Tensor | None, memory_mask: Tensor | None, controls: AttentionControls,
) -> Callable[[Tensor], Tensor]:
    """seq (B, T) → next-token logits (B, V) for one decoding call. With a KV cache where the model
    offers one (core/model/kv_cache.py), so each step runs only the new token; the cache lives here."""
    if not hasattr(model, "kv_cache"):
        return lambda seq: model.next_token_logits(seq, memory, memory_mask, controls)
    cache = model.kv_cache()
    return lambda seq: model.next_token_logits(seq, memory, memory_mask, controls, cache=cache)


def _decode(
    model: Transformer, src: Tensor | None, prefix: Tensor, pick: Picker, eos_id: int,
    max_new_tokens: int, controls: AttentionControls, return_scores: bool,
) -> Generation:
    memory = memory_mask = None
    if model.config.has_encoder:
        memory, memory_mask, _ = model.encode(src, controls)
    seq, pad = prefix, model.config.pad_id
    finished = torch.zeros(prefix.size(0), dtype=torch.bool, device=prefix.device)
    total = torch.zeros(prefix.size(0), device=prefix.device)
    next_logits = _incremental(model, memory, memory_mask, controls)
    for _ in range(_room(model, prefix, max_new_tokens)):
        logits = _allowed(model, next_logits(seq))  # (B, V)
        chosen = pick(logits)  # (B,)
        logp = logits.log_softmax(-1).gather(1, chosen.unsqueeze(1)).squeeze(1)
        total = total + torch.where(finished, 0.0, logp)
        chosen = torch.where(finished, torch.full_like(chosen, pad), chosen)
        seq = torch.cat([seq, chosen.unsqueeze(1)], dim=1)  # (B, T+1)
        finished = finished | (chosen == eos_id)
        if bool(finished.all()):
            break
    return Generation(seq, finished, _final_pass(model, src, seq, prefix, controls, return_scores), total)


def _final_pass(
    model: Transformer, src: Tensor | None, seq: Tensor, prefix: Tensor, controls: AttentionControls,
    return_scores: bool,
) -> ModelOutput:
    """Forward over the inputs that produced each generated token (``seq`` without its last column)."""
    if seq.size(1) == prefix.size(1):
        raise ValueError(f"no room to generate: the prefix already fills max_len ({model.config.max_len})")
    return model(src, seq[:, :-1], controls=controls, return_attention=True, return_scores=return_scores)


@torch.inference_mode()
def beam_search(
    model: Transformer, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    beam_size: int = 4, length_penalty: float = 0.6,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
) -> Generation:
    """Keep the ``beam_size`` best partial sequences; return the best finished one per row.

    Hypotheses are ranked by log-probability / ((5 + length) / 6) ** length_penalty
    (Wu et al., 2016), so longer outputs are not unfairly penalised.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    best = [
        _beam_one(model, None if src is None else src[i : i + 1], prefix[i : i + 1], eos_id,
                  _room(model, prefix, max_new_tokens), beam_size, length_penalty, controls)
        for i in range(prefix.size(0))
    ]
    width = max(ids.size(0) for ids, _, _ in best)
    seq = torch.full((len(best), width), model.config.pad_id, dtype=prefix.dtype, device=prefix.device)
    for i, (ids, _, _) in enumerate(best):
        seq[i, : ids.size(0)] = ids
    output = _final_pass(model, src, seq, prefix, controls, return_scores)
    finished = torch.tensor([done for _, _, done in best], device=prefix.device)
    scores = torch.tensor([score for _, score, _ in best], device=prefix.device)
    return Generation(seq, finished, output, scores)


def _beam_one(
    model: Transformer, src: Tensor | None, prefix: Tensor, eos_id: int, room: int, beam_size: int,
    length_penalty: float, controls: AttentionControls,
) -> tuple[Tensor, float, bool]:
    """Beam search for one row: returns (ids (T,), log-probability, finished)."""
    memory = memory_mask = None
    if model.config.has_encoder:
        memory, memory_mask, _ = model.encode(src, controls)

    def rank(logp: float, length: int) -> float:
        return logp / (((5 + length) / 6) ** length_penalty)

    alive = [(prefix[0], 0.0)]
    done: list[tuple[Tensor, float]] = []
    for step in range(room):
        seqs = torch.stack([s for s, _ in alive])  # (K, T)
        beams_memory = None if memory is None else memory.expand(len(alive), -1, -1)  # (K, S, D)
        beams_mask = None if memory_mask is None else memory_mask.expand(len(alive), -1, -1)  # (K, 1, S)
        logits = model.next_token_logits(seqs, beams_memory, beams_mask, controls)
        logp = _allowed(model, logits).log_softmax(-1)
        totals = torch.tensor([s for _, s in alive], device=logp.device).unsqueeze(1) + logp  # (K, V)
        values, flat = totals.view(-1).topk(min(2 * beam_size, totals.numel()))
        candidates = []
        for value, index in zip(values.tolist(), flat.tolist()):
            beam, token = divmod(index, logp.size(1))
            extended = torch.cat([seqs[beam], seqs.new_tensor([token])])
            (done if token == eos_id else candidates).append((extended, value))
            if len(candidates) == beam_size:
                break
        alive = candidates
        new_length = step + 1
        if not alive or (len(done) >= beam_size and max(rank(s, len(t) - prefix.size(1)) for t, s in done)
                         >= max(rank(s, new_length) for _, s in alive)):
            break
    if done:
        ids, score = max(done, key=lambda d: rank(d[1], len(d[0]) - prefix.size(1)))
        return ids, score, True
    ids, score = max(alive, key=lambda d: rank(d[1], len(d[0]) - prefix.size(1)))
    return ids, score, False
