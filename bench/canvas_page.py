"""A bare page with the attention canvas alone, drawing synthetic maps (``python -m bench browser`` and
tests/browser/test_browser_canvas.py): ``?tokens=N&layers=L&heads=H&view=…&pair=1`` in the URL.

Each head is a softmax of seeded random scores plus a sharp diagonal (head h looks h tokens back), so every
head's pixels differ and a peak is there for the max-pooled overview to keep. ``pair=1`` adds a comparison.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.ui import canvas

MAX_TOKENS = 4096


def synthetic(layers: int, heads: int, tokens: int, seed: int = 0) -> np.ndarray:
    """float32 (L, H, T, T) rows summing to 1: random scores with a peak ``h + l`` tokens back."""
    rng = np.random.default_rng(seed)
    out = np.empty((layers, heads, tokens, tokens), np.float32)
    index = np.arange(tokens)
    for l in range(layers):
        for h in range(heads):
            scores = rng.standard_normal((tokens, tokens), dtype=np.float32)
            scores[index, np.maximum(index - h - l, 0)] += 8.0
            scores -= scores.max(-1, keepdims=True)
            weights = np.exp(scores)
            out[l, h] = weights / weights.sum(-1, keepdims=True)
    return out


@st.cache_data(max_entries=4)
def payload_for(layers: int, heads: int, tokens: int, layer: int, head: int, view: str, presentation: bool) -> bytes:
    every = synthetic(layers, heads, tokens)
    labels = [f"{i}:t{i}" for i in range(tokens)]
    look = canvas.Look(title="Synthetic self-attention", presentation=presentation, theme=canvas.theme())
    return canvas.maps_payload(every, labels, labels, kind="encoder", layer=layer, head=head, view=view, look=look)


def _pin() -> None:
    chosen = canvas.pinned("bench_canvas") or {}
    for name in ("layer", "head"):
        if name in chosen:
            st.query_params[name] = str(int(chosen[name]) + 1)
    st.query_params["view"] = str(chosen.get("view", "head"))


def main() -> None:
    params = st.query_params
    number = lambda name, default, top: min(max(int(params.get(name, default)), 1), top)  # noqa: E731
    tokens, layers, heads = number("tokens", 12, MAX_TOKENS), number("layers", 2, 24), number("heads", 4, 16)
    layer, head = number("layer", 1, layers) - 1, number("head", 1, heads) - 1
    presentation = params.get("projector") == "1"
    st.title("Attention canvas")
    data = payload_for(layers, heads, tokens, layer, head, params.get("view", "head"), presentation)
    canvas.maps(data, key="bench_canvas", on_pin=_pin)
    if params.get("pair") == "1":
        first, second = synthetic(1, 2, min(tokens, 64))[0]
        labels = [f"{i}:t{i}" for i in range(len(first))]
        canvas.panels([canvas.Panel(first, labels, labels, "Before"), canvas.Panel(second, labels, labels, "After"),
                       canvas.Panel(second - first, labels, labels, "Difference (after − before)", scale="change")],
                      key="bench_pair", title="Before, after and their difference", name="pair")
    st.caption(f"{len(data):,} bytes for {layers * heads * tokens * tokens:,} cells")


main()
