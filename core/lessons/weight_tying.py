"""Weight tying (the paper's section 3.4): one matrix serves as the token embedding and as the output layer before
the softmax, so the logit of token w is the final stream's dot product with w's own embedding row.

Read off any model on the contract without knowing its family: tied weights are one parameter registered under
two names (``named_parameters(remove_duplicate=False)``), and the check is measured on one forward pass — the
logits against the final stream (``{kind}.final`` of the trace, the final norm included) times the shared
matrix transposed.

Axis letters: T positions, D model width, V vocabulary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from core.inspect.batching import source_batch
from core.inspect.subject import Subject, as_subject
from core.text.inputs import normalized, prepare, tokenize


@dataclass(frozen=True)
class WeightTying:
    """Whether and how a model ties its embedding and its output layer.

    Attributes:
        tied: the output layer is the embedding matrix itself.
        names: the parameter names that share one (V, D) matrix (empty when untied).
        vocab, width: V and D of the output layer.
        saved: parameters tying saves (V · D), whether or not this model ties.
        total: the model's parameters, each shared tensor counted once.
        max_error: max |logits − final · Eᵀ| over ``text``'s positions, measured (None when untied).
        largest_logit: max |logits| there, for scale.
        tokens: how many positions were measured.
    """

    tied: bool
    names: tuple[str, ...]
    vocab: int
    width: int
    saved: int
    total: int
    max_error: float | None
    largest_logit: float
    tokens: int


def _shared_matrices(net: torch.nn.Module) -> dict[int, list[str]]:
    """id(parameter) → every name it is registered under, for the parameters with more than one."""
    names: dict[int, list[str]] = {}
    for name, param in net.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return {key: found for key, found in names.items() if len(found) > 1}


def weight_tying(model: Subject | str | os.PathLike, text: str) -> WeightTying:
    """How ``model`` (a decoder or an encoder-decoder) ties its weights, measured on ``text``.

    Raises:
        ValueError: an encoder-only model (it has no output layer over the vocabulary).
    """
    subject = as_subject(model)
    if not subject.spec.has_decoder:
        raise ValueError("weight tying shares the output layer over the vocabulary; an encoder-only model has none")
    net, item = subject.model, normalized(prepare(text), subject.task)
    with torch.inference_mode():
        if subject.spec.has_encoder:  # the decoder's first step, reading the source
            src = source_batch(subject, [item]).ids
            out = net(src, torch.tensor([list(subject.decoder_start)]), record=["decoder.final"])
        else:
            tokenize(item, subject.target_tokenizer, subject.token_limit - len(subject.input_prefix),
                     subject.limit_reason)
            ids = [*subject.input_prefix, *item.encoding.ids]
            out = net(tgt=torch.tensor([ids]), record=["decoder.final"])
    logits, final = out.logits[0].float(), out.trace["decoder.final"][0].float()  # (T, V), (T, D)
    vocab, width = logits.size(-1), final.size(-1)
    params = dict(net.named_parameters())
    shared = [found for key, found in _shared_matrices(net).items()
              if tuple(params[found[0]].shape) == (vocab, width)]
    error = None
    if shared:
        matrix = params[shared[0][0]].detach().float()  # (V, D)
        error = float((final @ matrix.T - logits).abs().max())
    return WeightTying(tied=bool(shared) and error is not None and error <= 1e-3 * max(1.0, float(logits.abs().max())),
                       names=tuple(shared[0]) if shared else (), vocab=vocab, width=width, saved=vocab * width,
                       total=sum(p.numel() for p in net.parameters()), max_error=error,
                       largest_logit=float(logits.abs().max()), tokens=int(logits.size(0)))
