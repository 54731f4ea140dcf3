"""The attention canvas's ES module: its JS files joined in their order into the one module that Streamlit loads
and the notebook widget (attnscope/notebook.py) inlines. Each file is one part of the canvas: the helpers, the class
with its head view, its WebGL2 path for big maps, the other views and exports, the neuron view, the input (hover, zoom, keys); see each file's first lines."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
PARTS = ("canvas_base.js", "canvas.js", "canvas_gl.js", "canvas_views.js", "canvas_neurons.js", "canvas_input.js")


def source() -> str:
    """The canvas's module source (its default export is the Streamlit entry)."""
    return "\n".join((HERE / part).read_text(encoding="utf-8") for part in PARTS)


def css() -> str:
    """The canvas's style sheet."""
    return (HERE / "canvas.css").read_text(encoding="utf-8")
