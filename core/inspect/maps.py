"""Maps on demand: one kind's (L, H, Tq, Tk) attention, computed from a pass's trace when it is indexed.

The fast forward pass keeps no map: it records each layer's queries and keys and how its scores are formed
(:mod:`core.model.trace`: scale, mask, additive bias, softcap). :class:`OnDemandMaps` holds those as plain
arrays and computes exactly what is asked, with the same softmax as the model (:func:`core.attention_weights`):
``maps[l, h]`` one head (Tq, Tk), ``maps[l]`` a layer, ``maps[:, :, q]`` one query row of every head,
:meth:`OnDemandMaps.pooled` an overview of a layer (max-pooled, so its peaks survive, or as block mass). ``np.asarray(maps)``
materialises everything, refused past :data:`MATERIALISE_LIMIT_BYTES` with a message saying what to index.

Glossary: L layers, H query heads, Hkv key/value heads, Tq/Tk query/key length, dk head width.
Rows are queries, columns keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.model.attention import attention_weights

#: The most bytes ``np.asarray`` of an :class:`OnDemandMaps` (or one index of it) may materialise.
MATERIALISE_LIMIT_BYTES = 1 << 30
#: Query rows computed at once when a whole head or a pooled overview is asked for (bounded temporaries).
ROW_BLOCK_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class OnDemandMaps:
    """float32 (L, H, Tq, Tk) attention weights of one kind (or its pre-softmax scores), computed when indexed.

    Attributes:
        q: float32 (L, H, Tq, dk) queries as the scores see them. k: float32 (L, Hkv, Tk, dk) keys.
        scale: (L,) what q·k is multiplied by. kv_head_of: (H,) the key/value head each query head reads.
        masks: the distinct bool masks, each broadcastable to (H, Tq, Tk) (True = may attend);
            mask_of: (L,) each layer's mask index, -1 for none.
        biases: the distinct float32 biases added after scaling, each broadcastable to (H, Tq, Tk);
            bias_of: (L,) each layer's bias index, -1 for none.
        softcap: (L,) the cap of cap · tanh(s / cap), 0 for none.
        temperature / hard: the controls of the pass (β multiplies the scores; hard is one-hot argmax).
        scores: True for the β-scaled, unmasked scores rather than the weights.
    """

    q: np.ndarray
    k: np.ndarray
    scale: np.ndarray
    kv_head_of: tuple[int, ...]
    masks: tuple[np.ndarray, ...] = ()
    mask_of: tuple[int, ...] = ()
    biases: tuple[np.ndarray, ...] = ()
    bias_of: tuple[int, ...] = ()
    softcap: tuple[float, ...] = ()
    temperature: float = 1.0
    hard: bool = False
    scores: bool = False

    def __post_init__(self) -> None:
        layers, heads, _, dk = self.q.shape if self.q.ndim == 4 else (0, 0, 0, 0)
        if self.q.dtype != np.float32 or self.k.dtype != np.float32 or self.q.ndim != 4 or self.k.ndim != 4 \
                or self.k.shape[0] != layers or self.k.shape[3] != dk:
            raise ValueError("on-demand maps need float32 q (L, H, Tq, dk) and k (L, Hkv, Tk, dk)")
        if len(self.kv_head_of) != heads or any(not 0 <= g < self.k.shape[1] for g in self.kv_head_of):
            raise ValueError("kv_head_of must name one key/value head per query head")
        for name, table, count in (("mask_of", self.mask_of, len(self.masks)),
                                   ("bias_of", self.bias_of, len(self.biases))):
            if len(table) != layers or any(not -1 <= i < count for i in table):
                raise ValueError(f"{name} must give one index (or -1) per layer")
        if np.asarray(self.scale).shape != (layers,) or len(self.softcap) != layers:
            raise ValueError("scale and softcap must give one value per layer")
        if not (np.isfinite(self.q).all() and np.isfinite(self.k).all()):
            raise ValueError("the trace's queries or keys contain non-finite values")

    # -- the array's face ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(L, H, Tq, Tk)."""
        return (self.q.shape[0], self.q.shape[1], self.q.shape[2], self.k.shape[2])

    ndim = 4
    dtype = np.dtype(np.float32)

    @property
    def size(self) -> int:
        """L · H · Tq · Tk, the cells the maps would take materialised."""
        return math.prod(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[:, :, :, :]
        return whole if dtype is None else whole.astype(dtype)

    def __getitem__(self, key: Any) -> np.ndarray:
        """The maps at ``key`` (ints, slices or index arrays on L, H and Tq; anything numpy takes on Tk),
        computed for those layers, heads and rows alone."""
        layer_key, head_key, row_key, key_key = _four(key)
        layers, heads, rows = (_positions(k, n) for k, n in zip((layer_key, head_key, row_key), self.shape[:3]))
        cells = len(layers[0]) * len(heads[0]) * len(rows[0]) * self.shape[3]
        if 4 * cells > MATERIALISE_LIMIT_BYTES:
            raise ValueError(f"these maps are {4 * cells / 2**30:.1f} GiB materialised; index one layer or head "
                             f"(maps[layer, head]) or use pooled()")
        out = np.empty((len(layers[0]), len(heads[0]), len(rows[0]), self.shape[3]), np.float32)
        for i, layer in enumerate(layers[0]):
            out[i] = self._rows(int(layer), heads[0], rows[0])
        out = out[..., key_key]
        return out[tuple(0 if single else slice(None) for _, single in (layers, heads, rows))]

    # -- the computation -----------------------------------------------------------------
    def _rows(self, layer: int, heads: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """float32 (h, r, Tk): the maps of ``heads`` at query ``rows`` of ``layer``, in bounded row blocks."""
        block = max(1, ROW_BLOCK_CELLS // max(1, len(heads) * self.shape[3]))
        keys = self._keys(layer, heads)
        parts = [self._block(layer, heads, rows[start:start + block], keys) for start in range(0, len(rows), block)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def _keys(self, layer: int, heads: np.ndarray) -> torch.Tensor:
        """(h, Tk, dk) the keys each of ``heads`` reads, as a tensor."""
        return torch.from_numpy(self.k[layer][np.asarray(self.kv_head_of)[heads]])

    def _block(self, layer: int, heads: np.ndarray, rows: np.ndarray, keys: torch.Tensor) -> np.ndarray:
        """float32 (h, r, Tk) for ``heads`` at query ``rows`` of ``layer``, given their ``keys`` (h, Tk, dk)."""
        q = torch.from_numpy(self.q[layer][np.ix_(heads, rows)])  # (h, r, dk)
        raw = (q @ keys.transpose(-2, -1)).float() * float(self.scale[layer])  # (h, r, Tk)
        if self.bias_of[layer] >= 0:
            raw = raw + torch.from_numpy(_select(self.biases[self.bias_of[layer]], heads, rows))
        cap = self.softcap[layer]
        if cap:
            raw = torch.tanh(raw / cap) * cap
        if self.scores:
            return (raw if self.temperature == 1.0 else raw * self.temperature).numpy()
        mask = None if self.mask_of[layer] < 0 else torch.from_numpy(_select(self.masks[self.mask_of[layer]],
                                                                             heads, rows))
        return attention_weights(raw, mask, temperature=self.temperature, hard=self.hard).numpy()

    def pooled(self, layer: int, size: int = 512, reduce: str = "max") -> np.ndarray:
        """float32 (H, P, P') overview of ``layer`` in blocks of about Tq/size × Tk/size cells (the maps
        themselves when they fit ``size``): ``max``, each block's largest weight (a sharp peak survives), or
        ``mass``, the weight a block's keys hold together averaged over its queries (rows still sum to 1)."""
        if reduce not in ("max", "mass"):
            raise ValueError(f"reduce must be 'max' or 'mass', got {reduce!r}")
        _, heads, queries, keys = self.shape
        row_step, col_step = math.ceil(queries / size), math.ceil(keys / size)
        every = np.arange(heads)
        keys_of = self._keys(layer, every)
        out = np.empty((heads, math.ceil(queries / row_step), math.ceil(keys / col_step)), np.float32)
        block = max(row_step, (ROW_BLOCK_CELLS // max(1, heads * keys)) // row_step * row_step)
        for start in range(0, queries, block):
            rows = np.arange(start, min(start + block, queries))
            part = self._block(layer, every, rows, keys_of)  # (H, r, Tk)
            out[:, start // row_step: start // row_step + math.ceil(len(rows) / row_step)] = _pool(
                part, row_step, col_step, reduce)
        return out


def _pool(maps: np.ndarray, rows: int, cols: int, reduce: str) -> np.ndarray:
    """(H, R, C) → (H, ⌈R/rows⌉, ⌈C/cols⌉): block maxima, or the mean over a block's rows of its column sums
    (the last blocks may be smaller)."""
    heads, r, c = maps.shape
    fill = -np.inf if reduce == "max" else 0.0
    padded = np.full((heads, math.ceil(r / rows) * rows, math.ceil(c / cols) * cols), fill, np.float32)
    padded[:, :r, :c] = maps
    blocks = padded.reshape(heads, padded.shape[1] // rows, rows, padded.shape[2] // cols, cols)
    if reduce == "max":
        return blocks.max(axis=(2, 4))
    counts = np.minimum(rows, r - np.arange(0, r, rows)).astype(np.float32)  # real rows per block
    return blocks.sum(axis=(2, 4)) / counts[None, :, None]


def _select(array: np.ndarray, heads: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The ``heads`` and query ``rows`` of a (H|1, Tq|1, Tk|1) array, keeping broadcast axes of size 1."""
    if array.shape[0] > 1:
        array = array[heads]
    if array.shape[1] > 1:
        array = array[:, rows]
    return np.ascontiguousarray(array)


def _four(key: Any) -> tuple[Any, Any, Any, Any]:
    """``key`` as (layer, head, row, key) indices, an ``Ellipsis`` expanded and missing ones taken whole."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (5 - len(key)) + key[at + 1:]
    if len(key) > 4:
        raise IndexError(f"maps have 4 axes (L, H, Tq, Tk), got {len(key)} indices")
    return tuple(key) + (slice(None),) * (4 - len(key))  # type: ignore[return-value]


def _positions(key: Any, count: int) -> tuple[np.ndarray, bool]:
    """The positions ``key`` picks out of ``count`` and whether it was a single index (its axis dropped)."""
    if isinstance(key, (int, np.integer)):
        if not -count <= key < count:
            raise IndexError(f"index {key} is out of range for an axis of {count}")
        return np.array([key % count]), True
    return np.arange(count)[key].reshape(-1), False


def from_trace(trace: dict[str, torch.Tensor], kind: str, layers: int, row: int, kv_head_of: tuple[int, ...],
               temperature: float, hard: bool, scores: bool = False) -> OnDemandMaps:
    """The on-demand maps of ``kind`` for batch row ``row`` from a pass's ``trace`` (:mod:`core.model.trace`).

    Raises:
        ValueError: a layer whose trace lacks its queries, keys or scale (its scores are not a scaled dot
            product, so they cannot be computed again from q and k).
    """
    missing = [f"{kind}.{i}.{part}" for i in range(layers) for part in ("q", "k", "scale")
               if f"{kind}.{i}.{part}" not in trace]
    if missing:
        raise ValueError(f"the trace has no {missing[0]}: these maps cannot be computed on demand")
    masks, mask_of = _distinct(trace, kind, layers, "mask", row)
    biases, bias_of = _distinct(trace, kind, layers, "bias", row)
    return OnDemandMaps(
        q=np.stack([_float32(trace[f"{kind}.{i}.q"][row]) for i in range(layers)]),  # (L, H, Tq, dk)
        k=np.stack([_float32(trace[f"{kind}.{i}.k"][row]) for i in range(layers)]),  # (L, Hkv, Tk, dk)
        scale=np.array([float(trace[f"{kind}.{i}.scale"]) for i in range(layers)]),
        kv_head_of=tuple(kv_head_of), masks=masks, mask_of=mask_of, biases=biases, bias_of=bias_of,
        softcap=tuple(float(trace.get(f"{kind}.{i}.softcap", 0.0)) for i in range(layers)),
        temperature=temperature, hard=hard, scores=scores,
    )


def _float32(tensor: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(tensor.detach().float().cpu().numpy())


def _distinct(trace: dict[str, torch.Tensor], kind: str, layers: int, part: str,
              row: int) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """The distinct tensors layers record as ``part`` (a mask or bias shared by every layer is kept once),
    each as batch row ``row`` broadcastable to (H, Tq, Tk), and each layer's index into them (-1: none)."""
    seen: dict[int, int] = {}
    values: list[np.ndarray] = []
    index: list[int] = []
    for i in range(layers):
        tensor = trace.get(f"{kind}.{i}.{part}")
        if tensor is None:
            index.append(-1)
            continue
        if id(tensor) not in seen:
            seen[id(tensor)] = len(values)
            values.append(_head_rows(tensor, row))
        index.append(seen[id(tensor)])
    return tuple(values), tuple(index)


def _head_rows(tensor: torch.Tensor, row: int) -> np.ndarray:
    """A mask or bias (Tq, Tk), (B, Tq, Tk) or (B|1, H|1, Tq|1, Tk) as batch row ``row``: (H|1, Tq|1, Tk)."""
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    elif tensor.dim() == 3:
        tensor = tensor[row if tensor.size(0) > 1 else 0].unsqueeze(0)
    else:
        tensor = tensor[row if tensor.size(0) > 1 else 0]
    array = tensor.detach().cpu().numpy()
    return np.ascontiguousarray(array if array.dtype == np.bool_ else array.astype(np.float32))
