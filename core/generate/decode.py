"""Autoregressive decoding: greedy, beam search and sampling (temperature, top-k, top-p).

Every function returns a :class:`Generation`: the decoder sequence it produced and the
logits and every head's attention over it from one final pass of the decoder over the whole
generated sequence. Under the causal mask each row of that pass equals what the model saw at
that step. The encoder runs once: its memory serves the steps and the final pass, its maps are
the ones returned. The step loop of greedy and sampling lives in :mod:`core.generate.stepwise`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from core.generate import filters, stepwise
from core.model.layers import stack_maps
from core.model.contract import AttentionControls, AttentionModel, ModelOutput
from core.model.trace import Recorder, recorder_of


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
            ``ids[:, t + 1]``; with ``record``, no maps but the trace (encoder and final pass) instead.
        scores: (B,) total log-probability of the generated tokens (beam search ranks by it).

    Row labels: decoder and cross-attention row ``t`` is the step that *reads* ``inputs[:, t]``
    and *predicts* ``predicted[:, t]``; :func:`row_labels` writes "after ‹input› → predicts ‹output›".
    """

    ids: Tensor
    finished: Tensor
    output: ModelOutput
    scores: Tensor
    pad_id: int
    never_generated: tuple[int, ...] = ()

    @property
    def inputs(self) -> Tensor:
        """(B, T-1) the decoder input of each attention row (``ids`` without its last column)."""
        return self.ids[:, :-1]

    @property
    def predicted(self) -> Tensor:
        """(B, T-1) the token each attention row predicted (``ids`` shifted by one; ``pad`` after ``<eos>``)."""
        return self.ids[:, 1:]

    def step_log_probs(self) -> Tensor:
        """(B, T-1) log-probability the model gave each predicted token at its step (0 where it is ``pad``
        after the end), from the final forward pass; the ids decoding never produces excluded as in decoding."""
        logits = self.output.logits.float().clone()  # (B, T-1, V)
        logits[..., list(self.never_generated)] = float("-inf")
        predicted = self.predicted.clamp(min=0)
        logp = logits.log_softmax(-1).gather(-1, predicted.unsqueeze(-1)).squeeze(-1)
        return torch.where(self.predicted == self.pad_id, torch.zeros_like(logp), logp)



Picker = stepwise.Picker  # (B, V) logits → (B,) chosen ids


def _allowed(model: AttentionModel, logits: Tensor) -> Tensor:
    """Logits (B, V) with the ids decoding never produces ruled out (:func:`stepwise.banned_bias`)."""
    return logits.float() + stepwise.banned_bias(model, logits.size(-1), logits.device)


@torch.inference_mode()
def greedy(
    model: AttentionModel, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
    record: list[str] | None = None,
) -> Generation:
    """Pick the most likely token at every step.

    Args:
        src: the encoder input of an ``encoder-decoder``: (B, S) source ids, or (B, M, F) audio features
            for a speech model (Whisper); None for ``decoder``.
        prefix: (B, T0) the decoder's start (``<bos>``, or ``<bos>`` + a prompt).
        eos_id: the token that ends a sequence.
        max_new_tokens: at most this many tokens are added (and never past ``max_len``).
        record: the trace's parts (:mod:`core.model.trace`) the encoder and the final pass keep, in place of
            the maps (which :mod:`core.inspect.maps` then computes from it on demand).
    """
    return _decode(model, src, prefix, lambda logits: logits.argmax(dim=-1), eos_id, max_new_tokens,
                   controls, return_scores, record)


@torch.inference_mode()
def sample(
    model: AttentionModel, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    generator: torch.Generator, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
    record: list[str] | None = None,
) -> Generation:
    """Draw each token from softmax(logits / temperature), optionally among the top k only, then among
    the nucleus of mass ``top_p`` only (:func:`core.generate.filters.restrict`).

    Args:
        generator: the explicit random source (seed it for reproducible samples).
        temperature: > 0; below 1 sharpens, above 1 flattens the distribution.
        top_k: keep only the k most likely tokens before sampling.
        top_p: in (0, 1]; keep only the most likely tokens whose probability reaches it.
        record: as :func:`greedy`'s.
    """
    filters.check_sampling(temperature, top_k, top_p)

    def pick(logits: Tensor) -> Tensor:
        probs = filters.restrict(logits, temperature, top_k, top_p).softmax(dim=-1)  # (B, V)
        return torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(logits.device)

    return _decode(model, src, prefix, pick, eos_id, max_new_tokens, controls, return_scores, record)


def _room(model: AttentionModel, prefix: Tensor, max_new_tokens: int) -> int:
    if prefix.dim() != 2 or prefix.size(1) < 1:
        raise ValueError(f"prefix must be (batch, length >= 1), got shape {tuple(prefix.shape)}")
    return max(0, min(max_new_tokens, model.config.max_len - prefix.size(1)))


def _encoded(model: AttentionModel, src: Tensor | None, controls: AttentionControls, return_scores: bool,
             recorder: Recorder | None = None):
    """The encoder's (memory, source mask, per-layer results with maps, or with the trace in ``recorder``),
    or None without an encoder."""
    if not model.config.has_encoder:
        return None
    if recorder is None:
        return model.encode(src, controls, need_weights=True, need_scores=return_scores)
    return model.encode(src, controls, need_weights=False, recorder=recorder)


def _decode(
    model: AttentionModel, src: Tensor | None, prefix: Tensor, pick: Picker, eos_id: int,
    max_new_tokens: int, controls: AttentionControls, return_scores: bool, record: list[str] | None = None,
) -> Generation:
    room = _room(model, prefix, max_new_tokens)
    recorder = recorder_of(record)
    encoded = _encoded(model, src, controls, return_scores, recorder)
    memory, memory_mask = (None, None) if encoded is None else encoded[:2]
    seq, finished = stepwise.run_steps(model, memory, memory_mask, prefix, pick, eos_id, room, controls)
    output = _final_pass(model, encoded, seq, prefix, controls, return_scores, recorder)
    start = prefix.size(1)
    total = stepwise.total_log_prob(model, output.logits[:, start - 1 :], seq[:, start:], eos_id)
    return Generation(seq, finished, output, total, model.config.pad_id, model.config.never_generated)


def _final_pass(
    model: AttentionModel, encoded: tuple | None, seq: Tensor, prefix: Tensor, controls: AttentionControls,
    return_scores: bool, recorder: Recorder | None = None,
) -> ModelOutput:
    """Forward over the inputs that produced each generated token (``seq`` without its last column);
    an encoder-decoder reuses the ``encoded`` source (:func:`_encoded`): only its decoder runs. With a
    ``recorder`` (which holds the encoder's trace) the pass keeps its trace instead of the maps."""
    if seq.size(1) == prefix.size(1):
        raise ValueError(f"no room to generate: the prefix already fills max_len ({model.config.max_len})")
    if encoded is None:
        if recorder is not None:
            return model(None, seq[:, :-1], controls=controls, record=recorder.patterns)
        return model(None, seq[:, :-1], controls=controls, return_attention=True, return_scores=return_scores)
    memory, memory_mask, encoder = encoded
    if recorder is not None:
        hidden, _, _ = model.decode(seq[:, :-1], memory, memory_mask, controls, recorder=recorder)
        return ModelOutput(model.lm_head(hidden), trace=recorder.trace)
    hidden, decoder, cross = model.decode(seq[:, :-1], memory, memory_mask, controls, need_weights=True,
                                          need_scores=return_scores)
    per_kind = {"encoder": encoder, "decoder": decoder, "cross": cross}
    return ModelOutput(model.lm_head(hidden), attention={k: stack_maps(v, "weights") for k, v in per_kind.items()},
                       scores={k: stack_maps(v, "scores") for k, v in per_kind.items()} if return_scores else None)


@torch.inference_mode()
def beam_search(
    model: AttentionModel, src: Tensor | None, prefix: Tensor, *, eos_id: int, max_new_tokens: int,
    beam_size: int = 4, length_penalty: float = 0.6, min_new_tokens: int = 1,
    controls: AttentionControls = AttentionControls(), return_scores: bool = False,
    record: list[str] | None = None,
) -> Generation:
    """Keep the ``beam_size`` best partial sequences of every row (all rows decoded together).

    Hypotheses are ranked by log-probability / ((5 + length) / 6) ** length_penalty (Wu et al.,
    2016; length counts the generated tokens, ``<eos>`` included), so longer outputs are not
    unfairly penalised. ``<eos>`` cannot end a hypothesis before ``min_new_tokens`` tokens (default 1:
    the output is never empty). With a config's ``forced_eos_id`` the budget's last step can only produce
    it, scored 0 (as Hugging Face's ``ForcedEOSTokenLogitsProcessor``). Each row returns its best
    finished hypothesis that is not empty; when the token budget runs out before one finishes, the best
    unfinished hypothesis (``finished`` False, like greedy's); an empty finished one only when nothing
    else exists. A row stops once no unfinished hypothesis can still outrank its best finished one, even
    when its length penalty grows to the end of the budget. ``scores``: the returned tokens' log-probability.
    ``record``: as :func:`greedy`'s.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    if min_new_tokens < 0:
        raise ValueError(f"min_new_tokens must be >= 0, got {min_new_tokens}")
    room = _room(model, prefix, max_new_tokens)
    batch, start, k = prefix.size(0), prefix.size(1), beam_size
    recorder = recorder_of(record)
    encoded = _encoded(model, src, controls, return_scores, recorder)
    memory = memory_mask = None
    if encoded is not None:
        memory, memory_mask, _ = encoded
        # (B*K, S, D); one source's beams share one memory (a view: a model may project it once)
        memory = memory.expand(k, -1, -1) if batch == 1 else memory.repeat_interleave(k, dim=0)
        memory_mask = None if memory_mask is None else memory_mask.repeat_interleave(k, dim=0)  # (B*K, 1, S)

    def rank(logp: float, length: int) -> float:
        return logp / (((5 + length) / 6) ** length_penalty)

    seqs = prefix.repeat_interleave(k, dim=0)  # (B*K, T)
    next_logits, cache = stepwise.incremental(model, memory, memory_mask, controls)  # the cache follows the beams
    scores = torch.full((batch, k), float("-inf"), device=prefix.device)
    scores[:, 0] = 0.0  # every row starts from one hypothesis: its prefix
    done: list[list[tuple[Tensor, float]]] = [[] for _ in range(batch)]  # per row: (ids, log-probability)
    stopped, forced = [False] * batch, stepwise.forced_eos(model)
    for step in range(room):
        logp = _allowed(model, next_logits(seqs)).log_softmax(-1)  # (B*K, V)
        if step < min_new_tokens:
            logp[:, eos_id] = float("-inf")
        if forced is not None and step == room - 1:  # the budget's last token is the forced end (HF's rule)
            logp = torch.full_like(logp, float("-inf"))  # (B*K, V)
            logp[:, forced] = 0.0
        seqs, scores, parents = _expand(seqs, scores, logp, done, stopped, eos_id, model.config.pad_id)
        if cache is not None:
            cache.reorder(parents)
        for b in range(batch):
            finished = [rank(v, len(ids) - start) for ids, v in done[b] if len(ids) - start > 1]
            best_alive = float(scores[b].max())
            # an unfinished hypothesis' rank can only rise up to log-probability / penalty(room)
            stopped[b] = stopped[b] or best_alive == float("-inf") or (
                len(finished) >= k and max(finished) >= rank(best_alive, room))
        if all(stopped):
            break
    best = [_pick(done[b], seqs[b * k : (b + 1) * k], scores[b], start, rank) for b in range(batch)]
    return _beam_generation(model, encoded, best, prefix, controls, return_scores, recorder)


def _beam_generation(
    model: AttentionModel, encoded: tuple | None, best: list[tuple[Tensor, float, bool]], prefix: Tensor,
    controls: AttentionControls, return_scores: bool, recorder: Recorder | None,
) -> Generation:
    """Each row's picked hypothesis (ids, log-probability, finished), padded into one batch, with its maps."""
    width = max(ids.size(0) for ids, _, _ in best)
    seq = torch.full((len(best), width), model.config.pad_id, dtype=prefix.dtype, device=prefix.device)  # (B, T)
    for i, (ids, _, _) in enumerate(best):
        seq[i, : ids.size(0)] = ids
    output = _final_pass(model, encoded, seq, prefix, controls, return_scores, recorder)
    finished = torch.tensor([done for _, _, done in best], device=prefix.device)
    totals = torch.tensor([score for _, score, _ in best], device=prefix.device)
    return Generation(seq, finished, output, totals, model.config.pad_id, model.config.never_generated)


def _expand(seqs: Tensor, scores: Tensor, logp: Tensor, done: list[list[tuple[Tensor, float]]],
            stopped: list[bool], eos_id: int, pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """One beam step: each live row keeps its ``K`` best continuations; those ending in ``<eos>``
    move to ``done``. seqs (B*K, T), scores (B, K), logp (B*K, V) -> seqs (B*K, T+1), scores (B, K)
    and the hypothesis each new one continues (B*K,)."""
    batch, k = scores.shape
    vocab = logp.size(-1)
    totals = scores.unsqueeze(-1) + logp.view(batch, k, vocab)  # (B, K, V)
    values, flat = totals.view(batch, -1).topk(min(2 * k, k * vocab), dim=-1)  # (B, 2K)
    new_scores = torch.full_like(scores, float("-inf"))
    parents = torch.arange(batch, device=seqs.device).repeat_interleave(k) * k  # (B*K,) fill: beam 0
    tokens = torch.full((batch * k,), pad_id, dtype=seqs.dtype, device=seqs.device)
    for b in range(batch):
        if stopped[b]:
            continue
        kept = 0
        for value, index in zip(values[b].tolist(), flat[b].tolist()):
            if value == float("-inf") or kept == k:
                break
            beam, token = divmod(index, vocab)
            if token == eos_id:
                done[b].append((torch.cat([seqs[b * k + beam], seqs.new_tensor([token])]), value))
            else:
                new_scores[b, kept], parents[b * k + kept], tokens[b * k + kept] = value, b * k + beam, token
                kept += 1
    return torch.cat([seqs[parents], tokens.unsqueeze(1)], dim=1), new_scores, parents


def _pick(
    done: list[tuple[Tensor, float]], alive: Tensor, alive_scores: Tensor, start: int,
    rank: Callable[[float, int], float],
) -> tuple[Tensor, float, bool]:
    """One row's answer: best non-empty finished, else best unfinished, else best empty finished."""
    non_empty = [(ids, v) for ids, v in done if len(ids) - start > 1]
    if non_empty:
        ids, v = max(non_empty, key=lambda d: rank(d[1], len(d[0]) - start))
        return ids, v, True
    candidates = [(alive[i], float(v)) for i, v in enumerate(alive_scores.tolist()) if v != float("-inf")]
    if candidates and alive.size(1) > start:
        ids, v = max(candidates, key=lambda d: rank(d[1], len(d[0]) - start))
        return ids, v, False
    if done:
        ids, v = max(done, key=lambda d: d[1])
        return ids, v, True
    return alive[0], 0.0, False
