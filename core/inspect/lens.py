"""The logit lens: what the residual stream would predict after each layer, from one pass's trace.

For every decoder position, the stream after the embeddings and after each layer (``decoder.embed``,
``decoder.{l}.resid_out`` of :mod:`core.model.trace`) goes through the model's own final norm and output layer
(``unembed``); the last layer's row is the model's prediction itself. A language model is read over its input; an
encoder-decoder over its own greedy output, teacher-forced (the decoder's rows read the source through
cross-attention as it did while generating).

Glossary: L layers, T decoder positions, k candidates, V vocabulary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from core.generate import decode
from core.inspect.batching import source_batch
from core.inspect.explainer import GENERATION_CAP
from core.inspect.subject import Subject, as_subject
from core.text.inputs import normalized, prepare, tokenize

LENS_RECORD = ("decoder.embed", "decoder.*.resid_out")


@dataclass(frozen=True)
class LogitLens:
    """The logit lens of one input.

    Attributes:
        tokens: the decoder's input token at each position (T,).
        predicted: the token the model finally predicts at each position (T,): its last layer's top choice.
        stages: the streams read, ``embeddings`` then ``layer 1`` … ``layer L`` (L + 1,).
        top_tokens: (L + 1, T, k) the k most likely next tokens at each stage and position, best first.
        top_probs: float32 (L + 1, T, k) their probabilities.
        final_prob: float32 (L + 1, T) the probability each stage gives the model's final choice.
    """

    tokens: tuple[str, ...]
    predicted: tuple[str, ...]
    stages: tuple[str, ...]
    top_tokens: tuple[tuple[tuple[str, ...], ...], ...]
    top_probs: np.ndarray
    final_prob: np.ndarray


def logit_lens(model: Subject | str | os.PathLike, text: str, top_k: int = 5) -> LogitLens:
    """The logit lens of ``text`` through ``model`` (a decoder or an encoder-decoder).

    Raises:
        ValueError: an encoder-only model (it predicts no next token), or text with no tokens.
    """
    subject = as_subject(model)
    if not subject.spec.has_decoder:
        raise ValueError("the logit lens reads a decoder's residual stream; this model is encoder-only")
    with torch.inference_mode():
        ids, trace = _decoder_trace(subject, text)
        streams = [trace["decoder.embed"]] + [trace[f"decoder.{layer}.resid_out"]
                                              for layer in range(subject.spec.n_layers("decoder"))]
        probs = torch.stack([subject.model.unembed(s[0]).float().softmax(-1) for s in streams])  # (L + 1, T, V)
    final = probs[-1].argmax(-1)  # (T,)
    top = probs.topk(min(top_k, probs.size(-1)), dim=-1)
    tok = subject.target_tokenizer
    names = [tuple(tuple(tok.token_strings(row)) for row in stage) for stage in top.indices.tolist()]
    return LogitLens(
        tokens=tuple(tok.token_strings(ids)), predicted=tuple(tok.token_strings(final.tolist())),
        stages=("embeddings", *(f"layer {layer + 1}" for layer in range(len(streams) - 1))),
        top_tokens=tuple(names), top_probs=top.values.numpy().astype(np.float32),
        final_prob=probs.gather(-1, final.expand(len(streams), -1).unsqueeze(-1)).squeeze(-1).numpy()
        .astype(np.float32),
    )


def _decoder_trace(subject: Subject, text: str) -> tuple[list[int], dict[str, torch.Tensor]]:
    """The decoder's input ids (T,) and the pass's trace of :data:`LENS_RECORD`."""
    item = normalized(prepare(text), subject.task)
    if subject.spec.has_encoder:  # its own greedy output, the final pass recording the decoder's streams
        src = source_batch(subject, [item])
        prefix = torch.tensor([list(subject.decoder_start)], dtype=torch.long)
        gen = decode.greedy(subject.model, src.ids, prefix, eos_id=subject.eos_id, record=list(LENS_RECORD),
                            max_new_tokens=min(subject.spec.max_len, GENERATION_CAP))
        return gen.inputs[0].tolist(), gen.output.trace
    tokenize(item, subject.target_tokenizer, subject.token_limit - len(subject.input_prefix), subject.limit_reason)
    ids = [*subject.input_prefix, *item.encoding.ids]
    out = subject.model(tgt=torch.tensor([ids]), record=list(LENS_RECORD))
    return ids, out.trace
