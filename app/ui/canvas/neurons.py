"""The neuron view's part of the canvas payload: the queries and keys behind each map, so that the browser shows,
for the (query, key) pair under the pointer, q, k and q⊙k per dimension, their sum q·k, the score
``scale · q·k`` (scale = 1/√d_k in the paper) and the weight softmax gives it, with no message to the server.

They come from a pass's trace (:class:`core.OnDemandMaps` holds ``{kind}.{layer}.q|k`` of every layer as float32
(L, H, Tq, dk) and (L, Hkv, Tk, dk)) and travel as float16, for every sent layer within
:data:`NEURON_VALUES` values, else for the opening layer alone (another layer comes when the reader pins it).
Pure numpy: no Streamlit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: float16 query and key values one payload carries at most (16 MB); past it, one layer's.
NEURON_VALUES = 1 << 23


@dataclass(frozen=True)
class Neurons:
    """One kind's queries and keys as the scores see them, and how a score is formed from them.

    Attributes:
        q: float32 (L, H, Tq, dk). k: float32 (L, Hkv, Tk, dk). scale: (L,) what q·k is multiplied by.
        kv_head_of: (H,) the key/value head each query head reads. temperature: β, multiplying the scores.
        plain: True when a score is exactly ``scale · q·k`` (no additive bias, no softcap in any layer).
    """

    q: np.ndarray
    k: np.ndarray
    scale: np.ndarray
    kv_head_of: tuple[int, ...]
    temperature: float = 1.0
    plain: bool = True

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(L, H, Tq, Tk) of the maps these form."""
        return (self.q.shape[0], self.q.shape[1], self.q.shape[2], self.k.shape[2])


def of_maps(maps: Any) -> Neurons | None:
    """The neurons of on-demand maps (:class:`core.OnDemandMaps`: the weights, not the scores), else None."""
    if not all(hasattr(maps, name) for name in ("q", "k", "scale", "kv_head_of")) or getattr(maps, "scores", False):
        return None
    plain = all(i < 0 for i in maps.bias_of) and not any(maps.softcap)
    return Neurons(q=maps.q, k=maps.k, scale=np.asarray(maps.scale, np.float64), kv_head_of=tuple(maps.kv_head_of),
                   temperature=float(maps.temperature), plain=plain)


def layers_to_send(neurons: Neurons, sent: Sequence[int], layer: int) -> list[int]:
    """The layers whose queries and keys travel: every ``sent`` one within :data:`NEURON_VALUES`, else ``layer``."""
    per_layer = neurons.q[0].size + neurons.k[0].size
    return list(sent) if per_layer * len(sent) <= NEURON_VALUES else [layer]


def sections(neurons: Neurons, layers: Sequence[int]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header entry and the float16 sections ``q`` (l, H, Tq, dk) and ``k`` (l, Hkv, Tk, dk) of ``layers``."""
    q = np.stack([neurons.q[l] for l in layers]).astype(np.float16)  # (l, H, Tq, dk)
    k = np.stack([neurons.k[l] for l in layers]).astype(np.float16)  # (l, Hkv, Tk, dk)
    if not (np.isfinite(q).all() and np.isfinite(k).all()):
        log.info("queries or keys beyond float16's range: the neuron view is left out")
        return {}, {}
    header = {"layers": list(map(int, layers)), "dk": int(q.shape[-1]), "kv_heads": int(k.shape[1]),
              "scale": [float(neurons.scale[l]) for l in layers], "kv_head_of": list(map(int, neurons.kv_head_of)),
              "temperature": neurons.temperature, "plain": neurons.plain}
    return header, {"q": q, "k": k}
