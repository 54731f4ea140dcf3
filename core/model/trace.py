"""The trace: named intermediates of one forward pass, returned as a plain value.

``model(..., record=["decoder.*.q", "decoder.*.k"])`` fills ``ModelOutput.trace`` with the tensors whose
names match one of the patterns (:mod:`fnmatch` syntax; ``record=["*"]`` keeps everything). It is
TransformerLens's activation cache without hooks: the names are written by the shared layer classes while
the pass runs, into a :class:`Recorder` made for that one call, so nothing is stored on a module and one
model can serve every session at once.

Every name the models write is one of :data:`TRACE_NAMES` (``{stack}`` is ``encoder`` or ``decoder``;
``{kind}`` is an attention kind: ``encoder``, ``decoder`` or ``cross``; layers count from 0). A decoder
layer's cross-attention sublayer writes under ``cross.{layer}``, its self-attention under
``decoder.{layer}``.

Glossary: B batch, T length, H query heads, Hkv key/value heads, dk head width, D model width.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable

import torch
from torch import Tensor

TRACE_NAMES = {
    "{stack}.embed": "(B, T, D) the stack's input: token embeddings after scaling, positions and any embedding norm",
    "{kind}.{layer}.q": "(B, H, Tq, dk) queries as the scores see them (after any q norm and rotary positions)",
    "{kind}.{layer}.k": "(B, Hkv, Tk, dk) keys, grouped key/value heads as stored (after any k norm and rotary)",
    "{kind}.{layer}.v": "(B, Hkv, Tk, dk) values",
    "{kind}.{layer}.mask": "bool broadcastable to (B, H, Tq, Tk), True = may attend (absent: every key)",
    "{kind}.{layer}.bias": "float broadcastable to (B, H, Tq, Tk) added to the scaled scores (T5's relative bias)",
    "{kind}.{layer}.scale": "0-d float: what q·k is multiplied by before the bias (1/√dk in the paper)",
    "{kind}.{layer}.softcap": "0-d float: scores pass through cap · tanh(s / cap) (Gemma 2), when the model caps them",
    "{kind}.{layer}.attn_out": "(B, Tq, D) the attention sublayer's output (after W_O), before the residual add",
    "{kind}.{layer}.resid_mid": "(B, Tq, D) the residual stream after that attention sublayer (its Add & Norm done)",
    "{stack}.{layer}.ffn_out": "(B, T, D) the feed-forward sublayer's output, before the residual add",
    "{stack}.{layer}.resid_out": "(B, T, D) the residual stream after the whole layer",
    "{stack}.final": "(B, T, D) the stack's output, final norm included",
}
#: The names a map is computed from (:func:`core.inspect.maps`): queries, keys and how the scores are formed.
MAP_PARTS = ("q", "k", "mask", "bias", "scale", "softcap")


class Recorder:
    """Collects one forward pass's trace: the tensors whose names match ``patterns``."""

    def __init__(self, patterns: Iterable[str]) -> None:
        if isinstance(patterns, str):
            patterns = (patterns,)
        self.patterns = tuple(patterns)
        if not self.patterns or not all(isinstance(p, str) and p for p in self.patterns):
            raise ValueError("record must name one or more trace patterns, e.g. ['decoder.*.q']")
        self.trace: dict[str, Tensor] = {}
        self._wanted: dict[str, bool] = {}
        self._causal: dict[tuple[int, int, str], Tensor] = {}

    def wants(self, name: str) -> bool:
        """Whether ``name`` matches a pattern (remembered per name: a pass asks the same names per layer)."""
        hit = self._wanted.get(name)
        if hit is None:
            hit = self._wanted[name] = any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
        return hit

    def put(self, name: str, value: Tensor) -> None:
        """Keep ``value`` under ``name`` when a pattern asks for it."""
        if self.wants(name):
            self.trace[name] = value

    def causal_mask(self, queries: int, keys: int, device: torch.device) -> Tensor:
        """The (Tq, Tk) look-ahead mask of the last ``queries`` positions, made once per pass."""
        key = (queries, keys, str(device))
        if key not in self._causal:
            self._causal[key] = torch.ones(queries, keys, dtype=torch.bool, device=device).tril(keys - queries)
        return self._causal[key]


@dataclasses.dataclass(frozen=True)
class Site:
    """Where in the model a sublayer writes its part of the trace: a kind (or stack) and a layer."""

    recorder: Recorder
    kind: str
    layer: int | None = None

    def at(self, layer: int) -> Site:
        """This stack's layer ``layer``."""
        return Site(self.recorder, self.kind, layer)

    def of(self, kind: str) -> Site:
        """The same layer under another kind (a decoder layer's cross-attention)."""
        return Site(self.recorder, kind, self.layer)

    def name(self, part: str) -> str:
        return f"{self.kind}.{part}" if self.layer is None else f"{self.kind}.{self.layer}.{part}"

    def put(self, part: str, value: Tensor) -> None:
        """Keep ``value`` as this site's ``part`` (``q``, ``resid_out``, …) when asked for."""
        self.recorder.put(self.name(part), value)

    def attention(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float | None,
                  bias: Tensor | None = None, softcap: float | None = None) -> None:
        """Record one attention call's queries, keys and values and how its scores are formed (``scale``
        None: the scores are not a scaled dot product of q and k, so no map can be computed from them)."""
        self.put("q", q)
        self.put("k", k)
        self.put("v", v)
        if mask is not None:
            self.put("mask", mask)
        if bias is not None:
            self.put("bias", bias)
        if scale is not None and self.recorder.wants(self.name("scale")):
            self.put("scale", torch.tensor(float(scale)))
        if softcap is not None and self.recorder.wants(self.name("softcap")):
            self.put("softcap", torch.tensor(float(softcap)))


def recorder_of(record: Iterable[str] | None) -> Recorder | None:
    """A fresh :class:`Recorder` for ``record`` patterns, or None when nothing is asked."""
    return None if record is None else Recorder(record)


def stack_site(recorder: Recorder | None, stack: str) -> Site | None:
    """The site of stack ``stack`` (``encoder`` or ``decoder``), or None when not recording."""
    return None if recorder is None else Site(recorder, stack)


def at_layer(call, layer: int):
    """``call`` (a frozen per-call settings record with a ``site`` field) for layer ``layer``."""
    return call if call.site is None else dataclasses.replace(call, site=call.site.at(layer))


def of_kind(call, kind: str):
    """``call`` writing under ``kind`` at the same layer (a decoder layer's cross-attention)."""
    return call if call.site is None else dataclasses.replace(call, site=call.site.of(kind))


def put(call, part: str, value: Tensor) -> Tensor:
    """Record ``value`` as ``part`` of ``call``'s site (when recording) and return it."""
    if call.site is not None:
        call.site.put(part, value)
    return value
