"""What a training run is built from: model presets, tokenizers, the model config and batches.

Batches are drawn deterministically from (seed, step, micro-step, rank), so a resumed
run sees exactly the batches an uninterrupted one would have.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from core.config import ModelConfig
from core.training.data import decoder_sequence, pad_batch, source_encoding
from core.tasks import Example, Task, TaskData
from core.io.tokenizer import Tokenizer

PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64},
    "small": {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256},
    "medium": {"n_layers": 3, "d_model": 128, "n_heads": 4, "d_ff": 512},
    "base": {"n_layers": 6, "d_model": 512, "n_heads": 8, "d_ff": 2048},  # the paper's base model
}


def build_tokenizers(task: Task, data: TaskData) -> dict[str, Tokenizer]:
    """Tokenizers trained on the training split: ``source`` for an encoder, ``target`` for a decoder."""
    sources = [e.source for e in data.train]
    if task.architecture == "encoder":
        return {"source": Tokenizer.train(task.tokenizer_kind, sources)}
    if task.architecture == "decoder":
        return {"target": Tokenizer.train(task.tokenizer_kind, sources)}
    return {
        "source": Tokenizer.train(task.tokenizer_kind, sources),
        "target": Tokenizer.train(task.tokenizer_kind, [e.target for e in data.train]),
    }


def longest_sequence(tokenizers: dict[str, Tokenizer], data: TaskData) -> int:
    """Tokens in the longest encoder input or decoder sequence (with ``<bos>``) of any split."""
    examples = [*data.train, *data.validation, *data.test, *(e for s in data.extra_tests.values() for e in s)]
    longest = 1
    for example in examples:
        if "source" in tokenizers:
            longest = max(longest, len(tokenizers["source"].encode(example.source)))
        if "target" in tokenizers:
            text = example.target if "source" in tokenizers else example.source
            longest = max(longest, len(tokenizers["target"].encode(text)) + 1)
    return longest


def model_config(
    task: Task, tokenizers: dict[str, Tokenizer], data: TaskData, *, n_layers: int, d_model: int, n_heads: int,
    d_ff: int, dropout: float, norm: str, positional: str, score: str, tie_embeddings: bool,
) -> ModelConfig:
    """The :class:`ModelConfig` for ``task``: vocabularies from the tokenizers, ``max_len`` with headroom."""
    return ModelConfig(
        architecture=task.architecture,
        src_vocab_size=tokenizers["source"].vocab_size if "source" in tokenizers else 0,
        tgt_vocab_size=tokenizers["target"].vocab_size if "target" in tokenizers else 0,
        n_encoder_layers=n_layers, n_decoder_layers=n_layers, d_model=d_model, n_heads=n_heads, d_ff=d_ff,
        dropout=dropout, max_len=max(32, 2 * longest_sequence(tokenizers, data)),
        n_classes=len(task.labels) if task.labels else 0, norm=norm, positional=positional, score=score,
        tie_embeddings=tie_embeddings,
    )


@dataclass(frozen=True)
class Batch:
    """Model inputs for one step; ``tokens`` counts the real (non-pad) tokens processed."""

    src: Tensor | None
    tgt: Tensor | None
    targets: Tensor
    tokens: int


class Batcher:
    """Pre-tokenizes a split once and serves deterministic random batches."""

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

    def batch(self, batch_size: int, seed: int, step: int, micro: int = 0, rank: int = 0,
              device: torch.device | str = "cpu") -> Batch:
        """The batch for this (seed, step, micro-step, rank): the same every time it is asked for."""
        rng = random.Random(f"{seed}/{step}/{micro}/{rank}")
        rows = [rng.randrange(self.size) for _ in range(batch_size)]
        pad = self.config.pad_id
        src = pad_batch([self.sources[i] for i in rows], pad, device) if self.sources is not None else None
        if self.task.architecture == "encoder":
            targets = torch.tensor([self.labels[i] for i in rows], device=device)
            return Batch(src, None, targets, int((src != pad).sum()))
        seqs = [self.sequences[i] for i in rows]
        tgt, targets = pad_batch([s[:-1] for s in seqs], pad, device), pad_batch([s[1:] for s in seqs], pad, device)
        tokens = int((targets != pad).sum()) + (int((src != pad).sum()) if src is not None else 0)
        return Batch(src, tgt, targets, tokens)
