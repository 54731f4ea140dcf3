"""The attention canvas in a Jupyter or VS Code notebook, through ``anywidget`` (``requirements-notebook.txt``).

    from attnscope.notebook import show
    show("assets/checkpoints/translation.safetensors", "I have cats")              # a path, a loaded model,
    show(model, "The animal didn't cross the street because it was tired", kind="encoder")  # or an Explanation

The widget runs the app's own canvas module (``app/ui/canvas/canvas*.js``) (read from the checkout, nothing fetched): the head,
model and lines views with hover, ←/→ and ↑/↓, zoom and the exports, all in the notebook's page. The maps are
sent once as the app's compact payload (uint8 colour, float16 values); the head the reader pins comes back as
:attr:`AttentionWidget.pinned` ({kind, layer, head, view}, 0-based), e.g. to read that head's numbers in the next
cell. Importing this module needs ``anywidget``; ``core`` stays free of it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from attnscope.cli import checkout

ROOT = checkout()

import anywidget  # noqa: E402  (the checkout is on the path first)
import traitlets  # noqa: E402

from app.charts import attention as charts  # noqa: E402
from app.ui.canvas import Look, maps_payload  # noqa: E402
from app.ui.canvas import module as canvas_module  # noqa: E402
from core import Explanation, explain, KIND_LABELS  # noqa: E402

log = logging.getLogger(__name__)
VIEWS = ("head", "model", "lines")


def _esm() -> str:
    """The widget's module: the notebook entry with canvas.js's source inlined as a string."""
    entry = (ROOT / "attnscope" / "notebook.js").read_text(encoding="utf-8")
    return entry.replace('"__CANVAS_SOURCE__"', json.dumps(canvas_module.source()), 1)


class AttentionWidget(anywidget.AnyWidget):
    """Every head of one kind of one input on the attention canvas; ``pinned`` is what the reader pinned."""

    _esm = _esm()
    _css = canvas_module.css()
    payload = traitlets.Bytes(b"").tag(sync=True)
    pinned = traitlets.Dict({}).tag(sync=True)


def canvas_payload(exp: Explanation, kind: str | None = None, *, layer: int = 0, head: int = 0,
                   view: str = "head", theme: str = "light") -> bytes:
    """The canvas's payload for every head of ``kind`` (default: the explanation's first kind) of ``exp``.

    Raises:
        ValueError: a kind the explanation has not, a layer or head outside it, or an unknown view.
    """
    kind = kind or next(iter(exp.attention))
    if kind not in exp.attention:
        raise ValueError(f"this explanation has no {kind!r} maps; it has {', '.join(exp.attention)}")
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    layers, heads = exp.shape(kind)[:2]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(f"layer {layer} head {head} is outside {layers} layers × {heads} heads (counted from 0)")
    rows, cols, row_title = charts.axes(exp, kind)
    groups = [int(g) for g in exp.head_groups.get(kind) or []]
    look = Look(title=KIND_LABELS[kind], row_title=row_title, col_title=charts.KEY_TITLE, theme=theme,
                extra={"groups": groups})
    return maps_payload(exp.attention[kind], rows, cols, kind=kind, layer=layer, head=head, view=view, look=look)


def show(model: Any, text: str | None = None, *, kind: str | None = None, layer: int = 0, head: int = 0,
         view: str = "head", theme: str = "light", **options: Any) -> AttentionWidget:
    """The canvas for ``model`` on ``text`` (``model``: a checkpoint or folder path, a loaded model, or an
    :class:`~core.Explanation`, then without ``text``); ``options`` go to :func:`core.explain`."""
    if isinstance(model, Explanation):
        exp = model
    elif text is None:
        raise ValueError("show(model, text): give the text to explain (or pass an Explanation)")
    else:
        exp = explain(model, text, **options)
    widget = AttentionWidget()
    widget.payload = canvas_payload(exp, kind, layer=layer, head=head, view=view, theme=theme)
    log.info("canvas widget: %s, %d bytes", kind or next(iter(exp.attention)), len(widget.payload))
    return widget
