"""Greedy, beam search and sampling side by side: one sentence decoded three ways by the same model.

Each decoder is core's own (:func:`core.generate.greedy`, :func:`~core.generate.beam_search`,
:func:`~core.generate.sample`), run on the input exactly as the Lesson's trace reads it, with the whole output's
log-probability under the model, so the page can show where a wider search or a random draw leaves greedy's path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.generate.decode import beam_search, Generation, greedy, sample
from core.inspect.subject import as_subject
from core.io.checkpoint import Checkpoint
from core.io.pretrained.load import PretrainedModel
from core.text.inputs import normalized, prepare, tokenize

GENERATION_LIMIT = 64  # tokens each output may run to
CONTINUATION_LIMIT = 16  # tokens a decoder-only model's continuation may run to


@dataclass(frozen=True)
class Decoded:
    """One decoder's output: its tokens (``<eos>`` included when it finished), their total log-probability under
    the model, and its text."""

    tokens: tuple[str, ...]
    log_prob: float
    text: str


@dataclass(frozen=True)
class DecodingComparison:
    """Greedy, beam search (``beam_size`` beams) and a seeded sample (``seed``, ``temperature``, ``top_k``,
    ``top_p``) of one sentence."""

    greedy: Decoded
    beam: Decoded
    sampled: Decoded
    beam_size: int
    seed: int
    temperature: float
    top_k: int | None
    top_p: float | None


def _decoded(gen: Generation, start: int, tokenizer) -> Decoded:
    """A batch of one's generated tokens (after the ``start`` prefix ids): no padding, it ends at ``<eos>`` or
    at the budget."""
    ids = gen.ids[0, start:].tolist()
    return Decoded(tuple(tokenizer.token_strings(ids)), float(gen.scores[0]), tokenizer.decode(gen.ids[0].tolist()))


def compare_decoding(model: Checkpoint | PretrainedModel, text: str, seed: int = 0, temperature: float = 1.0,
                     top_k: int | None = None, top_p: float | None = None, beam_size: int = 4) -> DecodingComparison:
    """Decode ``text`` greedily, by beam search and by seeded sampling: an encoder-decoder's translation of it,
    or a decoder-only model's continuation of it as a prompt (at most :data:`CONTINUATION_LIMIT` tokens).

    Raises:
        ValueError: an encoder-only model, text with no tokens, or settings the sampler or beam search refuses.
    """
    subject = as_subject(model)
    if not subject.spec.has_decoder or subject.target_tokenizer is None:
        raise ValueError("Greedy, beam and sampling are compared on a model with a decoder.")
    item = normalized(prepare(text), subject.task)
    if subject.spec.has_encoder:
        tokenize(item, subject.source_tokenizer, subject.token_limit)
        src = torch.tensor([item.encoding.ids], device=subject.device)  # (1, S)
        prefix = torch.tensor([list(subject.decoder_start)], device=subject.device)  # (1, 1 or 2)
        budget = GENERATION_LIMIT
    else:  # a decoder-only model continues the prompt
        budget = CONTINUATION_LIMIT
        tokenize(item, subject.target_tokenizer, max(subject.token_limit - budget, 1), subject.limit_reason)
        src = None
        prefix = torch.tensor([[*subject.input_prefix, *item.encoding.ids]], device=subject.device)  # (1, P)
    if prefix.size(1) == 0:
        raise ValueError("Type some text: the input has no tokens.")
    limit = dict(eos_id=subject.eos_id, max_new_tokens=min(subject.spec.max_len - prefix.size(1), budget))
    net, tok, start = subject.model, subject.target_tokenizer, prefix.size(1)
    generator = torch.Generator().manual_seed(int(seed))
    return DecodingComparison(
        greedy=_decoded(greedy(net, src, prefix, **limit), start, tok),
        beam=_decoded(beam_search(net, src, prefix, beam_size=beam_size, **limit), start, tok),
        sampled=_decoded(sample(net, src, prefix, generator=generator, temperature=temperature, top_k=top_k,
                                top_p=top_p, **limit), start, tok),
        beam_size=beam_size, seed=int(seed), temperature=float(temperature), top_k=top_k, top_p=top_p)
