"""The attention canvas: ONE Streamlit component (components v2: the ``canvas*.js`` files and ``canvas.css`` shipped here,
passed as strings, no CDN, no iframe) that draws every attention map of the app in the browser.

* :func:`maps` — every head of one kind of one input (the head, model, lines and neuron views), sent once per
  input; the neuron view's queries and keys (:mod:`app.ui.canvas.neurons`) when the maps came from a trace;
* :func:`panels` — matrices side by side on shared scales (before | after | difference, weights | scores).

The payload is one ``bytes`` object (:mod:`app.ui.canvas.payload`), so it reaches the script as a Uint8Array and
Streamlit leaves the component as it is while the bytes are unchanged. Hover, zoom, layer / head / view choice
happen in the browser; the script hears only of a pinned head (:func:`pinned`), which the page turns into its
share link, its exports and the panels that follow the chosen head. Always keyed; nothing is sent from mount.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st

from app.ui.canvas import module, neurons as neuron_parts, payload
from app.ui.canvas.neurons import Neurons, of_maps as neurons_of
from app.ui.canvas.payload import Look, Panel

log = logging.getLogger(__name__)
_COMPONENT = st.components.v2.component("attnscope_canvas", js=module.source(), css=module.css())

__all__ = ["Look", "Neurons", "neurons_of", "Panel", "maps_payload", "maps", "panels", "pinned", "theme"]


def theme() -> str | None:
    """The page's theme as Streamlit knows it (``light`` / ``dark``), a hint the browser may override."""
    try:
        return st.context.theme.type
    except AttributeError:
        return None


def sent_layers(shape: tuple[int, ...], layer: int) -> list[int]:
    """The layers one payload carries: all of them within :data:`payload.LAYER_BUDGET_CELLS`, else ``layer``."""
    return list(range(shape[0])) if int(np.prod(shape)) <= payload.LAYER_BUDGET_CELLS else [layer]


def maps_payload(every: Any, rows: Sequence[str], cols: Sequence[str], *, kind: str, layer: int, head: int,
                 view: str, look: Look, neurons: neuron_parts.Neurons | None = None) -> bytes:
    """The payload of ``every`` (L, H, Tq, Tk: an array, or on-demand maps computed as indexed) for the maps views,
    opening on ``layer``, ``head`` and ``view``. Past the budget only ``layer`` is sent; the thumbnails always
    cover every layer (pooled per layer, never materialising the whole). The neuron view's queries and keys come
    from ``neurons`` (of the same maps), else from ``every`` itself when it holds them (on-demand maps)."""
    shape = tuple(int(n) for n in every.shape)
    sent = sent_layers(shape, layer)
    layers = [np.asarray(every[l]) for l in sent]  # (H, Tq, Tk) each
    thumbs = None
    if len(sent) < shape[0]:
        pooled = [np.asarray(every.pooled(l, payload.THUMB, reduce="mass")) if hasattr(every, "pooled")
                  else np.stack([payload.map_charts.block_mass(m, payload.THUMB, payload.THUMB) for m in every[l]])
                  for l in range(shape[0])]
        thumbs = payload.thumbnails(pooled, size=payload.THUMB)
    look.extra = {**look.extra, "kind": kind}
    neurons = neurons or neuron_parts.of_maps(every)
    if neurons is not None and neurons.shape != shape:
        log.warning("queries and keys of shape %s for maps of %s: no neuron view", neurons.shape, shape)
        neurons = None
    parts = ({}, {}) if neurons is None else neuron_parts.sections(neurons, neuron_parts.layers_to_send(
        neurons, sent, layer))
    return payload.encode_maps(layers, rows, cols, shape=shape, sent=sent, look=look, thumbs=thumbs,
                               pinned={"layer": layer, "head": head, "view": view}, neurons=parts)


def maps(data: bytes, *, key: str, on_pin: Callable[[], None] | None = None) -> None:
    """Draw a :func:`maps_payload`; ``on_pin`` runs when the reader pins a head (read it with :func:`pinned`)."""
    _COMPONENT(key=key, data=data, on_pinned_change=on_pin or _ignore, width="stretch", height="content")


def panels(items: Sequence[Panel], *, key: str, title: str, name: str, font_scale: float = 1.0,
           row_title: str = Look.row_title) -> bytes:
    """Draw matrices side by side on shared scales (hover one cell: its value in every panel), the rows titled
    ``row_title``; returns the payload."""
    look = Look(title=title, row_title=row_title, presentation=font_scale > 1, theme=theme(), extra={"name": name})
    data = payload.encode_panels(items, look=look)
    _COMPONENT(key=key, data=data, on_pinned_change=_ignore, width="stretch", height="content")
    return data


def pinned(key: str) -> dict[str, Any] | None:
    """The head the reader pinned on the canvas drawn under ``key`` ({kind, layer, head, view}, 0-based), or None."""
    state = st.session_state.get(key)
    found = state.get("pinned") if hasattr(state, "get") else None
    return dict(found) if isinstance(found, dict) else None


def _ignore() -> None:
    """A pin on a canvas whose page does not follow it (a comparison)."""
