"""The Attention-playground page's maths: one query against a few keys, β and hard attention,
why the paper scales by 1/√d, the four score functions, the key-value store analogy and Q, K, V
as learned projections. Every softmax goes through ``core.attention_weights`` / ``core.attention``,
the functions the model itself runs.

Axis letters: Tq queries, Tk keys, d vector width.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from core.model.attention import attention, attention_weights

SCORE_FUNCTIONS = ("additive", "general", "dot", "scaled dot")


def random_vectors(n: int, d: int, seed: int) -> np.ndarray:
    """(n, d) standard-normal vectors, rounded to 2 decimals so they are easy to read and edit."""
    return np.round(np.random.default_rng(seed).normal(size=(n, d)), 2)


def attention_row(scores: np.ndarray, beta: float, hard: bool) -> np.ndarray:
    """(Tk,) weights of one query's scores (Tk,): softmax(β·scores), or one-hot argmax when ``hard``."""
    scores_t = torch.from_numpy(np.array(scores, dtype=np.float32))[None, :]  # (1, Tk), copied: may be read-only
    return attention_weights(scores_t, temperature=beta, hard=hard)[0].double().numpy()


@dataclass(frozen=True)
class Saturation:
    """How q·k and the softmax behave as d grows, for standard-normal q and k (one entry per d).

    Attributes:
        dims: the widths d. score_std: std of q·k (≈ √d). sqrt_d: √d.
        scaled_std: std of q·k/√d (≈ 1). max_unscaled / max_scaled: the mean largest softmax
            weight over the keys, without and with the 1/√d scale.
    """

    dims: np.ndarray
    score_std: np.ndarray
    sqrt_d: np.ndarray
    scaled_std: np.ndarray
    max_unscaled: np.ndarray
    max_scaled: np.ndarray


def saturation(dims: list[int], seed: int, n_keys: int = 8, trials: int = 256) -> Saturation:
    """Measure :class:`Saturation` on ``trials`` random queries against ``n_keys`` keys each."""
    return _saturation(tuple(int(d) for d in dims), int(seed), n_keys, trials)


@functools.lru_cache(maxsize=32)  # the same few ranges come back on every rerun of the page
def _saturation(dims: tuple[int, ...], seed: int, n_keys: int, trials: int) -> Saturation:
    rng = np.random.default_rng(seed)
    rows = []
    for d in dims:
        q = rng.normal(size=(trials, 1, d))
        k = rng.normal(size=(trials, n_keys, d))
        scores = torch.as_tensor((q * k).sum(-1)).float()  # (trials, n_keys)
        unscaled = attention_weights(scores).max(dim=-1).values.mean().item()
        scaled = attention_weights(scores, temperature=1.0 / math.sqrt(d)).max(dim=-1).values.mean().item()
        std = float(scores.std())
        rows.append((d, std, math.sqrt(d), std / math.sqrt(d), unscaled, scaled))
    columns = np.array(rows, dtype=np.float64).reshape(len(dims), 6).T  # (6, len(dims))
    return Saturation(columns[0].astype(int), *columns[1:])


@dataclass(frozen=True)
class ScoreFunction:
    """One score function on a query and its keys: scores (n,), softmax weights (n,), its parameters."""

    scores: np.ndarray
    weights: np.ndarray
    params: dict[str, np.ndarray]


def score_functions(query: np.ndarray, keys: np.ndarray, seed: int) -> dict[str, ScoreFunction]:
    """The four score functions on the same query (d,) and keys (n, d), with seeded small W's.

    additive vᵀ tanh(W_q q + W_k k), general qᵀ W k, dot qᵀ k, scaled dot qᵀ k / √d.
    """
    d = query.shape[0]
    rng = np.random.default_rng(seed + 1)
    w_q, w_k = rng.normal(size=(d, d)) / math.sqrt(d), rng.normal(size=(d, d)) / math.sqrt(d)
    v = rng.normal(size=d) / math.sqrt(d)
    w = rng.normal(size=(d, d)) / math.sqrt(d)
    scores = {
        "additive": np.tanh(query @ w_q.T + keys @ w_k.T) @ v,  # (n,)
        "general": keys @ (w.T @ query),  # (n,): qᵀ W k for each key
        "dot": keys @ query,  # (n,)
        "scaled dot": keys @ query / math.sqrt(d),  # (n,)
    }
    params = {"additive": {"W_q": w_q, "W_k": w_k, "v": v}, "general": {"W": w}, "dot": {}, "scaled dot": {}}
    return {name: ScoreFunction(s, attention_row(s, 1.0, False), params[name]) for name, s in scores.items()}


@dataclass(frozen=True)
class KVLookup:
    """A soft key-value store read by one query.

    Attributes:
        scores: (n,) q·k/√d. weights: (n,) softmax(β·scores). retrieved: (dv,) the weighted mix of values.
        best: index of the best-matching key. hard: (dv,) its value (the ordinary dictionary lookup).
    """

    scores: np.ndarray
    weights: np.ndarray
    retrieved: np.ndarray
    best: int
    hard: np.ndarray


def kv_lookup(query: np.ndarray, keys: np.ndarray, values: np.ndarray, beta: float) -> KVLookup:
    """Query (d,) against keys (n, d) holding values (n, dv): soft retrieval and the hard lookup.

    The scores are the model's scaled dot products q·k/√d, and β multiplies them (as in the model).
    """
    scores = keys @ query / math.sqrt(query.shape[0])  # (n,)
    weights = attention_row(scores, beta, False)
    best = int(np.argmax(scores))
    return KVLookup(scores, weights, weights @ values, best, values[best])


@dataclass(frozen=True)
class QKVProjection:
    """Q, K, V as learned projections, and what ``core.attention`` makes of them.

    Attributes:
        x: (Tq, D) the input the queries come from. source: (Tk, D) the input keys and values
            come from (x itself, or y). w_q, w_k, w_v: (D, d_k). q: (Tq, d_k). k: (Tk, d_k). v: (Tk, d_k).
        weights: (Tq, Tk) and output: (Tq, d_k) from core.attention.
        max_error: |core − softmax(QKᵀ/√d_k)V computed by hand|.
    """

    x: np.ndarray
    source: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    max_error: float


def qkv_projection(x: np.ndarray, y: np.ndarray, cross: bool, seed: int, d_k: int = 3,
                   causal: bool = False) -> QKVProjection:
    """Q = X W_q, and K = S W_k, V = S W_v with S = X (self-attention) or S = Y (cross-attention).

    The W's are random (seeded), not learned. ``causal`` applies the decoder's look-ahead mask
    (self-attention only): query i may attend to keys 0..i.
    """
    if causal and cross:
        raise ValueError("the look-ahead mask belongs to decoder self-attention, not cross-attention")
    d_model = x.shape[1]
    rng = np.random.default_rng(seed + 2)
    w_q, w_k, w_v = (rng.normal(size=(d_model, d_k)) for _ in range(3))  # unit scale: visibly peaked maps
    source = y if cross else x
    q, k, v = x @ w_q, source @ w_k, source @ w_v  # (Tq, d_k), (Tk, d_k), (Tk, d_k)
    allowed = np.tril(np.ones((len(q), len(k)), dtype=bool)) if causal else np.ones((len(q), len(k)), dtype=bool)
    out_t, weights_t = attention(*(torch.as_tensor(m, dtype=torch.float64) for m in (q, k, v)),
                                 mask=torch.from_numpy(allowed))
    out, weights = out_t.numpy(), weights_t.double().numpy()  # (Tq, d_k), (Tq, Tk)
    logits = np.where(allowed, q @ k.T / math.sqrt(d_k), -np.inf)  # (Tq, Tk)
    by_hand = np.exp(logits - logits.max(axis=1, keepdims=True))
    by_hand /= by_hand.sum(axis=1, keepdims=True)
    error = max(np.abs(by_hand - weights).max(), np.abs(by_hand @ v - out).max())
    return QKVProjection(x, source, w_q, w_k, w_v, q, k, v, weights, out, float(error))
