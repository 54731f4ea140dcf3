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
    """Decode ``text`` with an encoder-decoder greedily, by beam search and by seeded sampling.

    Raises:
        ValueError: a model without an encoder and a decoder, text with no tokens, or settings the sampler or beam
            search refuses.
    """
    subject = as_subject(model)
    if not subject.spec.has_encoder or subject.target_tokenizer is None:
        raise ValueError("Greedy, beam and sampling are compared on an encoder-decoder model.")
    item = normalized(prepare(text), subject.task)
    tokenize(item, subject.source_tokenizer, subject.token_limit)
    src = torch.tensor([item.encoding.ids], device=subject.device)  # (1, S)
    prefix = torch.tensor([list(subject.decoder_start)], device=subject.device)  # (1, 1 or 2)
    limit = dict(eos_id=subject.eos_id, max_new_tokens=min(subject.spec.max_len, GENERATION_LIMIT))
    net, tok, start = subject.model, subject.target_tokenizer, prefix.size(1)
    generator = torch.Generator().manual_seed(int(seed))
    return DecodingComparison(
        greedy=_decoded(greedy(net, src, prefix, **limit), start, tok),
        beam=_decoded(beam_search(net, src, prefix, beam_size=beam_size, **limit), start, tok),
        sampled=_decoded(sample(net, src, prefix, generator=generator, temperature=temperature, top_k=top_k,
                                top_p=top_p, **limit), start, tok),
        beam_size=beam_size, seed=int(seed), temperature=float(temperature), top_k=top_k, top_p=top_p)
