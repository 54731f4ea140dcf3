"""Texts as one right-padded batch: ids, the real-token mask, token strings and offsets per row."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from core.inspect.subject import Subject
from core.text.inputs import AnyTokenizer, TextInput, length_note, range_note, tokenize


@dataclass(frozen=True)
class Batch:
    """Right-padded rows: ids (B, T), the real-token mask (B, T), token strings and offsets per row."""

    ids: Tensor
    real: Tensor
    tokens: list[list[str]]
    offsets: list[list[tuple[int, int]]]
    lengths: list[int]


def pad_rows(subject: Subject, rows: list[tuple[list[int], list[str], list[tuple[int, int]]]],
             tokenizer: AnyTokenizer) -> Batch:
    """(ids, tokens, offsets) per row → one :class:`Batch`, padded with the model's pad id."""
    pad, width = subject.spec.pad_id, max(len(ids) for ids, _, _ in rows)
    pad_token = tokenizer.token_strings([pad])[0]
    fill = [width - len(ids) for ids, _, _ in rows]
    ids = torch.tensor([list(i) + [pad] * n for (i, _, _), n in zip(rows, fill)], dtype=torch.long)
    real = torch.tensor([[True] * len(i) + [False] * n for (i, _, _), n in zip(rows, fill)])
    return Batch(ids.to(subject.device), real.to(subject.device),
                 [list(t) + [pad_token] * n for (_, t, _), n in zip(rows, fill)],
                 [list(o) + [(0, 0)] * n for (_, _, o), n in zip(rows, fill)], [len(i) for i, _, _ in rows])


def source_batch(subject: Subject, inputs: list[TextInput]) -> Batch:
    """Tokenize every input for the encoder (noting truncation, unknown words and trained lengths)."""
    tokenizer = subject.source_tokenizer
    for item in inputs:
        tokenize(item, tokenizer, subject.token_limit, subject.limit_reason)
        length_note(item, subject.task)
        range_note(item, subject.task)
    rows = [(item.encoding.ids, item.encoding.tokens, item.encoding.offsets) for item in inputs]
    return pad_rows(subject, rows, tokenizer)
