"""Positional encodings beyond the trained length, shown on a loaded model.

- :func:`length_accuracy`: a shipped letter model (copy, reverse, sort: trained on their task's
  ``trained_lengths``, 1–24 letters) scored on strings of every length up to its ``max_len``, so the
  lengths it never saw in training are measured, not guessed.
- :func:`pe_beyond`: the model's own positional table against positions past the longest
  training string: how alike a new position looks to the ones the model learned from.

Axis letters: T positions, D model width.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from core.inspect.embeddings import model_embeddings
from core.io.checkpoint import Checkpoint
from core.tasks import Example, get_task
from core.tasks.letters import ALPHABET
from core.training.evaluation import evaluate

LETTER_TASKS = {"copy": lambda s: s, "reverse": lambda s: s[::-1], "sort": lambda s: "".join(sorted(s))}


@dataclass(frozen=True)
class LengthAccuracy:
    """Exact-match accuracy per input length.

    Attributes:
        task: the task name. lengths: the lengths scored. exact_match: fraction fully right per length.
        token_accuracy: fraction of output tokens right per length.
        trained: (shortest, longest) training length. max_len: the model's position limit.
    """

    task: str
    lengths: tuple[int, ...]
    exact_match: tuple[float, ...]
    token_accuracy: tuple[float, ...]
    trained: tuple[int, int]
    max_len: int


def length_accuracy(ckpt: Checkpoint, per_length: int = 16, seed: int = 0) -> LengthAccuracy:
    """Score a copy/reverse/sort checkpoint on ``per_length`` random strings of every length.

    Lengths run from the shortest training length to ``max_len − 1`` (room for ``<eos>``).

    Raises:
        ValueError: the checkpoint is not one of the letter tasks.
    """
    name = ckpt.info.task
    if name not in LETTER_TASKS:
        raise ValueError(f"length accuracy needs a copy, reverse or sort model, not {name!r}")
    task, rng = get_task(name), random.Random(seed)
    shortest, longest = task.trained_lengths
    lengths = tuple(range(shortest, ckpt.config.max_len))
    exact, tokens = [], []
    for n in lengths:
        sources = ["".join(rng.choice(ALPHABET) for _ in range(n)) for _ in range(per_length)]
        metrics = evaluate(ckpt.model, ckpt.info.tokenizers, task,
                           [Example(s, LETTER_TASKS[name](s)) for s in sources])
        exact.append(metrics["exact_match"])
        tokens.append(metrics["token_accuracy"])
    return LengthAccuracy(name, lengths, tuple(exact), tuple(tokens), (shortest, longest), ckpt.config.max_len)


@dataclass(frozen=True)
class PEBeyond:
    """The loaded model's positional vectors compared with each other.

    Attributes:
        kind: "sinusoidal" | "learned" | "none". positional: (T, D) what the model adds, T = max_len.
        similarity: (T, T) cosine similarity between positions.
        trained: the longest training length (positions 0 … trained − 1 were seen; None if unknown).
        nearest_seen: (T,) for each position, the highest similarity to any seen position other than itself.
    """

    kind: str
    positional: np.ndarray
    similarity: np.ndarray
    trained: int | None
    nearest_seen: np.ndarray


def pe_beyond(ckpt: Checkpoint) -> PEBeyond:
    """Cosine similarity of the model's positional vectors, and how close unseen positions are to seen ones."""
    emb = model_embeddings(ckpt)
    pe = emb.positional.astype(np.float64)  # (T, D)
    norms = np.linalg.norm(pe, axis=1, keepdims=True)
    unit = pe / np.where(norms == 0, 1.0, norms)
    similarity = unit @ unit.T  # (T, T)
    letter_task = ckpt.info.task in LETTER_TASKS
    trained = get_task(ckpt.info.task).trained_lengths[1] + 1 if letter_task else None  # + <eos> / <bos>
    seen = similarity[:, :trained].copy() if trained else similarity.copy()
    for t in range(min(seen.shape)):
        seen[t, t] = -np.inf  # a position is trivially like itself
    nearest = seen.max(axis=1) if seen.shape[1] > 1 else np.zeros(len(pe))
    return PEBeyond(emb.positional_kind, pe, similarity, trained, nearest)
