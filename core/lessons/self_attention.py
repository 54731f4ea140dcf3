"""Strengths and limits of self-attention, measured on real models.

- :func:`permutation_demo`: without positional encodings, self-attention is permutation-
  equivariant — shuffle the input and every map is shuffled the same way, A(Px) = P A(x) Pᵀ.
  With the encoding added, the maps change instead.
- :func:`path_comparison`: recurrence vs self-attention — sequential steps, the longest path
  between two tokens, and the work per layer, as the paper's Table 1 counts them.
- :func:`attention_cost`: the quadratic cost of the (T × T) map, timed live as T grows.

Axis letters: L layers, H heads, T tokens, D model width.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from core.io.checkpoint import Checkpoint
from core.text.inputs import normalized, prepare
from core.model.attention import attention
from core.model.layers import LayerCall


@dataclass(frozen=True)
class PermutationDemo:
    """Encoder self-attention of a sentence and of a shuffled copy of it.

    Attributes:
        tokens: the sentence's tokens. permutation: shuffled position i holds original
            token ``permutation[i]``. shuffled_tokens: the tokens in that order.
        original / shuffled: float32 (L, H, T, T) maps of each order.
        unshuffled: ``shuffled`` with rows and columns put back in the original order
            (equal to ``original`` exactly when positions are off).
        positions: whether the positional encoding was added.
        largest_difference: max |unshuffled − original|.
        notes: what was done to the text before tokenizing (e.g. lower-cased, as Explore does).
    """

    tokens: tuple[str, ...]
    permutation: tuple[int, ...]
    shuffled_tokens: tuple[str, ...]
    original: np.ndarray
    shuffled: np.ndarray
    unshuffled: np.ndarray
    positions: bool
    largest_difference: float
    notes: tuple[str, ...] = ()


def _encoder_maps(ckpt: Checkpoint, ids: list[int], positions: bool) -> np.ndarray:
    """(L, H, T, T) encoder self-attention of ``ids``, with or without the positional encoding."""
    model, cfg = ckpt.model, ckpt.config
    src = torch.tensor([ids], device=next(model.parameters()).device)  # (1, T)
    x = model.src_embed(src) * math.sqrt(cfg.d_model)  # (1, T, D)
    if positions:
        x = model.positional(x)
    maps = []
    for layer in model.encoder_layers:
        x, result = layer(x, None, LayerCall(need_weights=True))
        maps.append(result.weights[0])  # (H, T, T)
    return torch.stack(maps).float().cpu().numpy()  # (L, H, T, T)


def permutation_demo(ckpt: Checkpoint, text: str, permutation: list[int] | None = None,
                     positions: bool = False, seed: int = 0) -> PermutationDemo:
    """Run the encoder on ``text`` and on a shuffled copy, with or without positions.

    Args:
        ckpt: a checkpoint with an encoder (``encoder-decoder`` or ``encoder``).
        permutation: new order as original indices (default: a seeded shuffle that moves tokens).
        positions: add the model's positional encoding (the model as trained) or not.

    Raises:
        ValueError: no encoder, no tokens, or ``permutation`` is not a permutation of the tokens.
    """
    if not ckpt.config.has_encoder:
        raise ValueError("Permutation needs a model with an encoder (encoder-decoder or encoder).")
    item = normalized(prepare(text), ckpt.info.task)  # the task's convention (lower case), as Explore applies it
    encoding = ckpt.source_tokenizer.encode(item.work)
    ids, tokens = encoding.ids[:ckpt.config.max_len], tuple(encoding.tokens[:ckpt.config.max_len])
    if len(ids) < 2:
        raise ValueError("Type at least two tokens to shuffle.")
    if permutation is None:
        permutation = list(np.random.default_rng(seed).permutation(len(ids)))
        if permutation == sorted(permutation):
            permutation = permutation[1:] + permutation[:1]
    if sorted(permutation) != list(range(len(ids))):
        raise ValueError(f"permutation must order the {len(ids)} tokens, got {permutation}")
    order = np.asarray(permutation)
    with torch.inference_mode():
        original = _encoder_maps(ckpt, ids, positions)
        shuffled = _encoder_maps(ckpt, [ids[i] for i in order], positions)
    inverse = np.argsort(order)
    unshuffled = shuffled[:, :, inverse][:, :, :, inverse]  # (L, H, T, T) rows and columns back in order
    return PermutationDemo(tokens, tuple(int(i) for i in order), tuple(tokens[i] for i in order), original,
                           shuffled, unshuffled, positions, float(np.abs(unshuffled - original).max()),
                           tuple(item.notes))


@dataclass(frozen=True)
class PathComparison:
    """Per-layer costs of a recurrent layer and a self-attention layer (the paper's Table 1).

    Attributes:
        lengths: the sequence lengths T compared.
        sequential_rnn / sequential_attention: steps that must run one after another.
        path_rnn / path_attention: the longest path a signal travels between two tokens.
        work_rnn / work_attention: multiply-adds per layer, T·D² and T²·D.
    """

    lengths: tuple[int, ...]
    sequential_rnn: tuple[int, ...]
    sequential_attention: tuple[int, ...]
    path_rnn: tuple[int, ...]
    path_attention: tuple[int, ...]
    work_rnn: tuple[int, ...]
    work_attention: tuple[int, ...]


def path_comparison(lengths: list[int], d_model: int) -> PathComparison:
    """Table 1 of the paper, counted for each T in ``lengths`` at width ``d_model``."""
    if not lengths or min(lengths) < 1 or d_model < 1:
        raise ValueError("lengths and d_model must be positive")
    ts = tuple(int(t) for t in lengths)
    return PathComparison(
        lengths=ts, sequential_rnn=ts, sequential_attention=tuple(1 for _ in ts),
        path_rnn=tuple(max(t - 1, 1) for t in ts), path_attention=tuple(1 for _ in ts),
        work_rnn=tuple(t * d_model * d_model for t in ts), work_attention=tuple(t * t * d_model for t in ts),
    )


@dataclass(frozen=True)
class AttentionCost:
    """Measured cost of one attention call per length.

    Attributes:
        lengths: T. milliseconds: median wall time of softmax(QKᵀ/√d)V with its map.
        map_bytes: bytes of one float32 (H, T, T) map.
    """

    lengths: tuple[int, ...]
    milliseconds: tuple[float, ...]
    map_bytes: tuple[int, ...]


def attention_cost(lengths: list[int], d_model: int = 64, n_heads: int = 4, repeats: int = 5,
                   seed: int = 0) -> AttentionCost:
    """Time one multi-head attention call (random Q, K, V) at each length, median of ``repeats``."""
    if not lengths or min(lengths) < 1 or max(lengths) > 4096:
        raise ValueError("lengths must be between 1 and 4096")
    generator = torch.Generator().manual_seed(seed)
    times, sizes = [], []
    for t in lengths:
        q, k, v = torch.randn(3, n_heads, t, d_model // n_heads, generator=generator)  # (H, T, dk) each
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            attention(q, k, v)
            samples.append((time.perf_counter() - start) * 1000)
        times.append(float(np.median(samples)))
        sizes.append(4 * n_heads * t * t)
    return AttentionCost(tuple(int(t) for t in lengths), tuple(times), tuple(sizes))
