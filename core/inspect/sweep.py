"""The head-importance sweep: knock each head out in turn and measure what the model loses.

Every head of every kind (encoder, decoder, cross) is knocked out alone — its output multiplied by 0 — and the
model re-run on the same input; the measure is the log-probability of what the intact model predicts (a language
model's next token, an encoder-decoder's whole greedy output teacher-forced, a classifier's class, a masked
model's fill-ins), or of a target the caller gives, or for a sentence encoder the cosine of its sentence vector
with the intact one. One batch holds ``batch`` copies of the input, each row with a different head knocked out
(a per-row head mask), so the sweep costs about L·H / batch forward passes. TransformerLens's first tutorial
writes this as code; here it is one call.

Glossary: L layers, H heads, B rows of one batch, T positions, V vocabulary.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.generate import decode
from core.inspect.batching import source_batch
from core.inspect.explainer import GENERATION_CAP
from core.inspect.heads import pool
from core.inspect.subject import Subject, as_subject
from core.model.contract import AttentionControls
from core.text.inputs import normalized, prepare, tokenize


@dataclass(frozen=True)
class Sweep:
    """What knocking out each head did.

    Attributes:
        measure: what was measured (e.g. "log-probability of the next token ‹cat›").
        baseline: the measure with every head intact.
        change: kind → float32 (L, H): the measure with that head knocked out, minus ``baseline``
            (negative: the head mattered to the prediction).
        complete: False when ``should_stop`` ended the sweep early (unswept cells are NaN).
    """

    measure: str
    baseline: float
    change: dict[str, np.ndarray]
    complete: bool = True


@dataclass(frozen=True)
class _Run:
    """One prepared input: the forward keyword arguments of one row, its batch size and what it measures."""

    inputs: dict[str, Tensor]
    score: Callable[[Tensor], Tensor]  # the model's output logits (B, …) → (B,) measure per row
    measure: str


def head_sweep(model: Subject | str | os.PathLike, text: str, *, target: str | None = None, batch: int = 16,
               on_progress: Callable[[int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Sweep:
    """Knock out every head of ``model`` in turn on ``text`` (see the module).

    Args:
        target: text whose log-probability is measured instead of the model's own prediction (a decoder's
            continuation of ``text``, an encoder-decoder's output).
        batch: rows run together, each knocking out one head.
        on_progress: called with (heads done, heads in all) after each batch.
        should_stop: asked after each batch; True ends the sweep (the result says it is incomplete).

    Raises:
        ValueError: empty text, a target for a model that generates none, or ``batch`` < 1.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    subject = as_subject(model)
    spec = subject.spec
    with torch.inference_mode():
        run = _prepare(subject, text, target)
        baseline = float(run.score(subject.model(**run.inputs).logits)[0])
        cells = [(kind, layer, head) for kind in spec.attention_kinds for layer in range(spec.n_layers(kind))
                 for head in range(spec.n_heads)]
        change = {kind: np.full((spec.n_layers(kind), spec.n_heads), np.nan, np.float32) for kind in spec.attention_kinds}
        done = 0
        for start in range(0, len(cells), batch):
            chunk = cells[start:start + batch]
            scores = _knocked(subject, run, chunk)
            for (kind, layer, head), value in zip(chunk, scores.tolist()):
                change[kind][layer, head] = value - baseline
            done += len(chunk)
            if on_progress is not None:
                on_progress(done, len(cells))
            if should_stop is not None and should_stop() and done < len(cells):
                return Sweep(run.measure, baseline, change, complete=False)
    return Sweep(run.measure, baseline, change)


def _knocked(subject: Subject, run: _Run, chunk: list[tuple[str, int, int]]) -> Tensor:
    """(len(chunk),) the measure of one batch whose row r has head ``chunk[r]`` knocked out."""
    spec, rows = subject.spec, len(chunk)
    masks = {kind: torch.ones(spec.n_layers(kind), rows, spec.n_heads) for kind in {k for k, _, _ in chunk}}
    for row, (kind, layer, head) in enumerate(chunk):
        masks[kind][layer, row, head] = 0.0  # (L, B, H): one head out per row
    inputs = {name: value.repeat(rows, *([1] * (value.dim() - 1))) for name, value in run.inputs.items()}
    return run.score(subject.model(**inputs, controls=AttentionControls(head_mask=masks)).logits)


def _prepare(subject: Subject, text: str, target: str | None) -> _Run:
    """The one-row input and the measure for the model's architecture and head."""
    item = normalized(prepare(text), subject.task)
    architecture = subject.spec.architecture
    if architecture == "encoder":
        if target is not None:
            raise ValueError("an encoder-only model generates no target text to measure")
        return _encoder_run(subject, source_batch(subject, [item]))
    if architecture == "decoder":
        return _decoder_run(subject, item, target)
    return _seq2seq_run(subject, item, target)


def _decoder_run(subject: Subject, item, target: str | None) -> _Run:
    tok = subject.target_tokenizer
    tokenize(item, tok, subject.token_limit - len(subject.input_prefix), subject.limit_reason)
    prompt = [*subject.input_prefix, *item.encoding.ids]
    if target is None:
        logits = subject.model(tgt=torch.tensor([prompt])).logits[0, -1]  # (V,)
        chosen = int(logits.argmax())
        return _Run({"tgt": torch.tensor([prompt])}, lambda out: out[:, -1].float().log_softmax(-1)[:, chosen],
                    f"log-probability of the next token ‹{tok.token_strings([chosen])[0]}›")
    wanted = tok.encode(target).ids
    if not wanted:
        raise ValueError("the target has no tokens")
    ids = (prompt + wanted)[: subject.token_limit]
    start = len(prompt)
    goal = torch.tensor(ids[start:])

    def score(out: Tensor) -> Tensor:
        logp = out[:, start - 1:len(ids) - 1].float().log_softmax(-1)  # (B, n, V): each target token's row
        return logp.gather(-1, goal.expand(out.size(0), -1).unsqueeze(-1)).squeeze(-1).sum(-1)
    return _Run({"tgt": torch.tensor([ids])}, score, f"log-probability of the target ‹{target}›")


def _seq2seq_run(subject: Subject, item, target: str | None) -> _Run:
    src = source_batch(subject, [item])
    start = list(subject.decoder_start)
    if target is None:
        gen = decode.greedy(subject.model, src.ids, torch.tensor([start]), eos_id=subject.eos_id,
                            max_new_tokens=min(subject.spec.max_len, GENERATION_CAP))
        output = gen.ids[0].tolist()[len(start):]
        what = f"log-probability of its own output ‹{subject.target_tokenizer.decode(output)}›"
    else:
        output = subject.target_tokenizer.encode(target).ids + ([subject.eos_id] if subject.eos_id >= 0 else [])
        what = f"log-probability of the target ‹{target}›"
    tgt = torch.tensor([start + output[:-1]]) if len(output) > 1 else torch.tensor([start])
    goal = torch.tensor(output[: tgt.size(1)])

    def score(out: Tensor) -> Tensor:
        logp = out.float().log_softmax(-1)  # (B, T, V)
        return logp.gather(-1, goal.expand(out.size(0), -1).unsqueeze(-1)).squeeze(-1).sum(-1)
    return _Run({"src": src.ids, "tgt": tgt}, score, what)


def _encoder_run(subject: Subject, src) -> _Run:
    inputs = {"src": src.ids}
    intact = subject.model(**inputs).logits
    if subject.head == "classes":
        chosen = int(intact[0].argmax())
        return _Run(inputs, lambda out: out.float().log_softmax(-1)[:, chosen],
                    f"log-probability of the class ‹{subject.labels[chosen]}›")
    if subject.head == "hidden":
        real = src.real
        vector = pool(subject, intact, real)  # (1, D)
        return _Run(inputs, lambda out: F.cosine_similarity(pool(subject, out, real.expand(out.size(0), -1)),
                                                            vector, dim=-1),
                    "cosine of the sentence vector with the intact model's")
    if subject.head == "masked_lm":
        chosen = intact[0].argmax(-1)  # (T,)
        return _Run(inputs, lambda out: out.float().log_softmax(-1).gather(
            -1, chosen.expand(out.size(0), -1).unsqueeze(-1)).squeeze(-1).sum(-1),
            "log-probability of its own top token at every position")
    chosen = intact[0].argmax(-1)  # token classes (T,)
    return _Run(inputs, lambda out: out.float().log_softmax(-1).gather(
        -1, chosen.expand(out.size(0), -1).unsqueeze(-1)).squeeze(-1).sum(-1),
        "log-probability of its own label at every token")
