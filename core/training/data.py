"""Training batches (the encodings are :mod:`core.text.sequences`'s).

A :class:`Batcher` tokenizes a split once and serves :class:`Batch` es: deterministic random
ones for training (drawn from (seed, step, micro-step, rank), so a resumed run sees exactly
the batches an uninterrupted one would have) and consecutive ones for evaluation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch
from torch import Tensor

from core.config import ModelConfig
from core.text.sequences import decoder_sequence, pad_batch, source_encoding
from core.text.tokenizer import Tokenizer
from core.tasks import Example, Task


@dataclass(frozen=True)
class Batch:
    """Model inputs for one step; ``tokens`` counts the real (non-pad) tokens processed.

    Attributes:
        src: (B, S) encoder input, or None without an encoder.
        tgt: (B, T) decoder input, or None without a decoder.
        targets: (B, T) next tokens, or (B,) class ids for a classifier.
    """

    src: Tensor | None
    tgt: Tensor | None
    targets: Tensor
    tokens: int


class Batcher:
    """Tokenizes ``examples`` of ``task`` once and serves batches of them."""

    def __init__(self, task: Task, tokenizers: dict[str, Tokenizer], examples: Sequence[Example], config: ModelConfig):
        self.task, self.config = task, config
        limit = config.max_len
        self.sources = (
            [source_encoding(tokenizers["source"], e.source, limit)[0].ids for e in examples]
            if "source" in tokenizers else None
        )
        if task.architecture == "encoder":
            self.labels = [task.labels.index(e.target) for e in examples]
        else:
            text = (lambda e: e.source) if task.architecture == "decoder" else (lambda e: e.target)
            self.sequences = [decoder_sequence(tokenizers["target"], text(e), limit) for e in examples]
        self.size = len(examples)

    def rows(self, rows: Sequence[int], device: torch.device | str = "cpu") -> Batch:
        """The batch of the examples at ``rows``, padded to the longest."""
        pad = self.config.pad_id
        src = pad_batch([self.sources[i] for i in rows], pad, device) if self.sources is not None else None
        if self.task.architecture == "encoder":
            targets = torch.tensor([self.labels[i] for i in rows], device=device)  # (B,)
            return Batch(src, None, targets, int((src != pad).sum()))
        seqs = [self.sequences[i] for i in rows]
        tgt = pad_batch([s[:-1] for s in seqs], pad, device)  # (B, T): <bos> + tokens
        targets = pad_batch([s[1:] for s in seqs], pad, device)  # (B, T): tokens + <eos>
        tokens = int((targets != pad).sum()) + (int((src != pad).sum()) if src is not None else 0)
        return Batch(src, tgt, targets, tokens)

    def batch(self, batch_size: int, seed: int, step: int, micro: int = 0, rank: int = 0,
              device: torch.device | str = "cpu") -> Batch:
        """The random batch for this (seed, step, micro-step, rank): the same every time it is asked for."""
        rng = random.Random(f"{seed}/{step}/{micro}/{rank}")
        return self.rows([rng.randrange(self.size) for _ in range(batch_size)], device)

    def in_order(self, batch_size: int, device: torch.device | str = "cpu") -> Iterator[tuple[range, Batch]]:
        """Every example once, in order: (the rows, their batch) for each consecutive chunk."""
        for start in range(0, self.size, batch_size):
            rows = range(start, min(start + batch_size, self.size))
            yield rows, self.rows(rows, device)
