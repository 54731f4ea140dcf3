"""The Masks page's maths: the look-ahead (subsequent) mask, padding masks for a batch of
sentences of different lengths, their combination, and the masked softmax's exact zeros.
Every mask comes from ``core.model.masks`` and every softmax from ``core.attention_weights``:
the functions the model itself runs. True = may attend.

Axis letters: B sentences, T tokens (query rows, key columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.io.checkpoint import Checkpoint
from core.text.tokenizer import Tokenizer
from core.model.attention import attention_weights
from core.model.masks import combine_masks, padding_mask, subsequent_mask

PAD = "<pad>"


@dataclass(frozen=True)
class TokenBatch:
    """A padded batch: ids (B, T) int64 padded with 0, and the token strings padded with ``<pad>``."""

    ids: np.ndarray
    tokens: list[list[str]]


def pad_sentences(ids: list[list[int]], tokens: list[list[str]], pad_id: int = 0) -> TokenBatch:
    """Right-pad id rows with ``pad_id`` and token rows with ``<pad>`` to the longest row.

    Raises:
        ValueError: every row is empty.
    """
    width = max((len(row) for row in ids), default=0)
    if width == 0:
        raise ValueError("type at least one sentence with a word in it")
    padded = np.array([row + [pad_id] * (width - len(row)) for row in ids], dtype=np.int64)  # (B, T)
    return TokenBatch(padded, [row + [PAD] * (width - len(row)) for row in tokens])


def whitespace_batch(sentences: list[str], max_tokens: int = 24) -> TokenBatch:
    """Split on whitespace, give each new word an id (from 4, after the specials), pad with id 0."""
    vocab: dict[str, int] = {}
    rows = [s.split()[:max_tokens] for s in sentences]
    ids = [[vocab.setdefault(w, len(vocab) + 4) for w in row] for row in rows]
    return pad_sentences(ids, rows)


def tokenizer_batch(tokenizer: Tokenizer, sentences: list[str], max_tokens: int = 24) -> TokenBatch:
    """Encode each sentence with a checkpoint's tokenizer and pad with id 0."""
    encodings = [tokenizer.encode(s) for s in sentences]
    return pad_sentences([e.ids[:max_tokens] for e in encodings], [list(e.tokens[:max_tokens]) for e in encodings])


def checkpoint_batch(ckpt: Checkpoint, sentences: list[str], max_tokens: int = 24) -> TokenBatch:
    """:func:`tokenizer_batch` with the checkpoint's own tokenizer: its encoder's, else its decoder's."""
    tokenizer = ckpt.source_tokenizer if ckpt.config.has_encoder else ckpt.target_tokenizer
    return tokenizer_batch(tokenizer, sentences, max_tokens)


def look_ahead_mask(n: int) -> np.ndarray:
    """``core.subsequent_mask(n)`` as a numpy bool array (T, T): the lower triangle, diagonal included."""
    return subsequent_mask(n).numpy()


@dataclass(frozen=True)
class BatchMasks:
    """core's masks for a padded batch: padding (B, T), look-ahead (T, T), combined (B, T, T)."""

    padding: np.ndarray
    subsequent: np.ndarray
    combined: np.ndarray


def batch_masks(ids: np.ndarray, pad_id: int = 0) -> BatchMasks:
    """The padding, look-ahead and combined masks of a (B, T) id batch."""
    ids_t = torch.as_tensor(np.array(ids, dtype=np.int64))  # a copy: a cached batch is read-only
    pad = padding_mask(ids_t, pad_id)  # (B, 1, T)
    look_ahead = subsequent_mask(ids_t.size(1))  # (T, T)
    return BatchMasks(pad[:, 0].numpy(), look_ahead.numpy(), combine_masks(look_ahead, pad).numpy())


@dataclass(frozen=True)
class MaskedSoftmax:
    """Seeded scores (Tq, Tk) and their softmax without and with a mask (masked cells exactly 0)."""

    scores: np.ndarray
    unmasked: np.ndarray
    masked: np.ndarray


def masked_softmax_demo(mask: np.ndarray, seed: int) -> MaskedSoftmax:
    """Random scores (seeded, 2 decimals) in ``mask``'s shape, softmaxed without and with it."""
    scores = torch.as_tensor(np.round(np.random.default_rng(seed).normal(size=mask.shape), 2)).float()  # (Tq, Tk)
    return MaskedSoftmax(scores.numpy(), attention_weights(scores).numpy(),
                         attention_weights(scores, torch.as_tensor(mask)).numpy())
