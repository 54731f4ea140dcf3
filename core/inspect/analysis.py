"""Numbers computed from attention maps: mean over heads, rollout, per-head statistics, head masks.

Pure numpy, no torch and no Streamlit. Every function takes maps in the
:class:`~core.inspect.records.Explanation` orientation, float (L, H, Tq, Tk) with
row = query (the token attending) and column = key (the token attended to): an array, or a long
input's :class:`~core.inspect.maps.OnDemandMaps`, read one layer at a time.

A row that is entirely zero (a query whose every key was masked) carries no
attention; the statistics ignore such rows rather than counting them as zeros.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

_EPS = 1e-12


def _check_maps(maps, *, square: bool = False) -> tuple[int, int, int, int]:
    """The (L, H, Tq, Tk) shape of ``maps``, checked."""
    shape = tuple(np.shape(maps)) if not hasattr(maps, "shape") else tuple(maps.shape)
    if len(shape) != 4:
        raise ValueError(f"attention maps must be 4-D (L, H, Tq, Tk), got shape {shape}")
    if square and shape[2] != shape[3]:
        raise ValueError(f"this needs self-attention maps (Tq == Tk), got {shape[2]} × {shape[3]}")
    return shape  # type: ignore[return-value]


def _by_layer(maps) -> Iterable[np.ndarray]:
    """Each layer's float64 (H, Tq, Tk) maps in turn (an on-demand set computes one layer at a time)."""
    for layer in range(_check_maps(maps)[0]):
        yield np.asarray(maps[layer], dtype=np.float64)


def _live_rows(maps: np.ndarray) -> np.ndarray:
    """(L, H, Tq) bool: rows that carry some attention (not fully masked)."""
    return maps.sum(-1) > _EPS


def _mean_over_live_rows(per_row: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Mean of (L, H, Tq) values over the live rows → (L, H); 0 where no row is live."""
    count = live.sum(-1)  # (L, H)
    total = np.where(live, per_row, 0.0).sum(-1)  # (L, H)
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0)


def mean_over_heads(maps: np.ndarray) -> np.ndarray:
    """The average head of every layer: (L, H, Tq, Tk) → (L, Tq, Tk)."""
    _check_maps(maps)
    return np.stack([layer.mean(axis=0) for layer in _by_layer(maps)])


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1; all-zero rows stay zero."""
    sums = matrix.sum(-1, keepdims=True)
    return np.divide(matrix, sums, out=np.zeros_like(matrix), where=sums > _EPS)


def rollout_by_layer(maps: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout after each layer (Abnar & Zuidema, 2020): (L, H, T, T) → (L, T, T).

    Each layer's heads are averaged; with ``residual`` the identity is added (the
    residual connection carries every token's own state forward) and the rows are
    renormalised. Entry ``l`` is the product ``Â_l · … · Â_1``: row i says how much
    the output of layer ``l`` at position i draws on each *input* token.
    """
    count, _, length, _ = _check_maps(maps, square=True)
    out = np.empty((count, length, length))
    flow = np.eye(length)  # (T, T): before layer 1 each token is itself
    for index, heads in enumerate(_by_layer(maps)):
        layer = heads.mean(axis=0)  # (T, T)
        layer = _normalise_rows(layer + np.eye(length) if residual else layer)
        flow = layer @ flow  # later layers act on the already-mixed tokens
        out[index] = flow
    return out


def rollout(maps: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout through every layer: (L, H, T, T) → (T, T). See :func:`rollout_by_layer`."""
    return rollout_by_layer(maps, residual)[-1]


def head_entropy(maps: np.ndarray) -> np.ndarray:
    """Mean entropy in bits of each head's query rows, −Σ_j p_ij log2 p_ij: (L, H, Tq, Tk) → (L, H).

    0 bits: every query looks at one key; log2(Tk) bits: attention spread evenly.
    Fully masked (all-zero) rows are ignored.
    """
    def layer_entropy(heads: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(heads > 0, -heads * np.log2(np.where(heads > 0, heads, 1.0)), 0.0)
        return _mean_over_live_rows(terms.sum(-1), _live_rows(heads))  # 0 · log 0 = 0

    _check_maps(maps)
    return np.stack([layer_entropy(heads) for heads in _by_layer(maps)])


def mean_distance(maps: np.ndarray) -> np.ndarray:
    """Mean attended distance Σ_j a_ij |i − j|, averaged over query rows: (L, H, T, T) → (L, H).

    Self-attention only (query and key positions index the same sequence).
    0: every token attends to itself; large: heads that look far away.
    """
    positions = np.arange(_check_maps(maps, square=True)[-1])
    distance = np.abs(positions[:, None] - positions[None, :])  # (T, T) |i − j|
    return np.stack([_mean_over_live_rows((heads * distance).sum(-1), _live_rows(heads))
                     for heads in _by_layer(maps)])


def max_weight(maps: np.ndarray) -> np.ndarray:
    """The largest single weight of each head: (L, H, Tq, Tk) → (L, H)."""
    _check_maps(maps)
    return np.stack([heads.max(axis=(1, 2)) for heads in _by_layer(maps)])


def head_statistics(maps: np.ndarray, *, self_attention: bool = True) -> list[dict[str, Any]]:
    """One record per head: layer, head, entropy_bits, mean_distance (None unless
    ``self_attention``) and max_weight, ordered by layer then head."""
    layers, heads = _check_maps(maps)[:2]
    entropy, peak = head_entropy(maps), max_weight(maps)
    distance = mean_distance(maps) if self_attention else None
    return [
        {
            "layer": layer, "head": head,
            "entropy_bits": float(entropy[layer, head]),
            "mean_distance": None if distance is None else float(distance[layer, head]),
            "max_weight": float(peak[layer, head]),
        }
        for layer in range(layers)
        for head in range(heads)
    ]


def knockout_mask(layers: int, heads: int, knocked: Iterable[tuple[int, int]]) -> list[list[int]]:
    """An (L, H) head mask as nested lists: 1 keeps a head, 0 knocks it out.

    Raises:
        ValueError: a (layer, head) pair outside the model.
    """
    mask = [[1] * heads for _ in range(layers)]
    for layer, head in knocked:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(f"layer {layer} head {head} is outside a model with {layers} layers × {heads} heads")
        mask[layer][head] = 0
    return mask


def difference(after: np.ndarray, before: np.ndarray) -> tuple[np.ndarray, bool]:
    """``after − before`` over the block both 2-D maps share: (diff, whether the shapes matched).

    Interventions can change how many tokens a model generates; the top-left block
    still lines up query i with key j in both maps.
    """
    after, before = np.asarray(after, np.float64), np.asarray(before, np.float64)
    if after.ndim != 2 or before.ndim != 2:
        raise ValueError("difference compares two 2-D maps")
    rows, cols = min(after.shape[0], before.shape[0]), min(after.shape[1], before.shape[1])
    return after[:rows, :cols] - before[:rows, :cols], after.shape == before.shape


def head_finder(maps: np.ndarray, query: int, *, ignore: Iterable[int] = ()) -> list[dict[str, Any]]:
    """Every head ranked by how strongly token ``query`` attends to one *other* token.

    For each head the key that ``query`` attends to most is found, leaving out the query
    itself and the positions in ``ignore`` (say ``[CLS]``/``[SEP]``, where BERT heads park
    attention they do not need); heads come strongest first. Pick "it" in "The animal
    didn't cross the street because it was too tired": in all-MiniLM-L6-v2 the two heads whose
    top key is "animal" rank 4th and 5th of 72 (``core.head_links`` measures it). A ranking says
    where a head looks, not why the model answers as it does.

    Args:
        maps: (L, H, Tq, Tk) self-attention maps.
        query: the row (token index) to look from.
        ignore: key positions never reported.

    Returns:
        One record per head: layer, head, key (token index, None when every key is left
        out), weight (its attention weight) and share (weight ÷ the row's weight on the
        keys still counted), ordered by weight, then layer and head.
    """
    count, heads, _, length = _check_maps(maps, square=True)
    if not 0 <= query < length:
        raise ValueError(f"query {query} is outside a sequence of {length} tokens")
    keep = np.ones(length, dtype=bool)
    keep[[i for i in ignore if 0 <= i < length]] = False
    keep[query] = False
    row = np.asarray(maps[:, :, query, :], dtype=np.float64)  # (L, H, Tk): this query's row of every head
    rows = np.where(keep, row, -1.0)  # left-out keys never win
    best = rows.argmax(-1)  # (L, H)
    weights = np.take_along_axis(rows, best[..., None], -1)[..., 0]  # (L, H)
    counted = np.where(keep, row, 0.0).sum(-1)  # (L, H)
    records = [
        {"layer": layer, "head": head, "key": int(best[layer, head]) if keep.any() else None,
         "weight": float(max(weights[layer, head], 0.0)),
         "share": float(weights[layer, head] / counted[layer, head]) if counted[layer, head] > _EPS else 0.0}
        for layer in range(count) for head in range(heads)
    ]
    return sorted(records, key=lambda r: (-r["weight"], r["layer"], r["head"]))
