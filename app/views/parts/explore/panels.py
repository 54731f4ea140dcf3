"""The Explore page's fragments: each part a control touches reruns alone.

* :func:`head_panel` — the kind control (in the input column) and the attention canvas (written into the chart
  column): the layer, head and view are chosen in the browser; a pinned head reruns this, not the page;
* :func:`view_panel` — the chooser and the chosen view below the canvas (summary, generation),
  whose own controls (the chooser, grid page, overlaid heads, step) rerun it alone, in one round trip;
* the interventions and compare panels (``experiments``), each a fragment of its own.

A pinned head reruns the canvas's own fragment; the chosen view and the panels that
draw the chosen head (:func:`followers`) are rerun with it by name (``st.rerun([...])`` from the callback)
only when there are any. A kind change reruns every panel; the text and
decoding options rerun the page's body (``explore_body``, a fragment: not the sidebar), as everything depends on
them. Each fragment keeps the arguments of the
last full run: the cached :class:`~core.Explanation`, so no fragment runs the model for a selection change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from app.services import catalog
from app.ui import widgets
from app.views.parts.explore import experiments, views
from app.views.parts.explore import inputs as w
from core import Explanation

HEAD, VIEW = "explore_head", "explore_view"
FOLLOWERS = [HEAD, VIEW, experiments.INTERVENTIONS, experiments.COMPARE]


def follow_selection() -> None:
    """The layer or head moved: the head view reruns (the slider's own fragment); so do the chosen view
    below, when one is shown, and the experiment panels that draw the chosen head now (one at its
    defaults, showing no map, stays as it is). With nothing else to follow, no rerun is asked for:
    a fragment rerun asked from a callback costs a second round trip (measured: 1.6–2× a plain one)."""
    others = followers(st.session_state)
    if others:
        st.rerun([HEAD, *others])


def followers(state: Mapping[str, Any]) -> list[str]:
    """The fragments besides the head view that draw the chosen layer and head, given the session ``state``."""
    return ([VIEW] if state.get("view", "head") != "head" else []) + experiments.drawing(state)


def follow_pin() -> None:
    """The reader pinned a head on the canvas: the session takes it (the share link, the exports) and the panels
    that draw the chosen head follow it."""
    if views.pin_from_canvas():
        follow_selection()


def follow_kind() -> None:
    """The kind changed: every fragment that draws the chosen head reruns (the knock-out list names its heads)."""
    st.rerun(FOLLOWERS)


@st.fragment(key=HEAD)
def head_panel(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], chart_side: Any) -> None:
    """The selection controls here, the chosen head's map in ``chart_side``, and the share link."""
    fs = widgets.font_scale()
    kind, layer, head = views.attention_controls(exp, on_kind=follow_kind)
    with chart_side:
        views.head_view(entry, exp, options, kind, layer, head, fs, on_pin=follow_pin)
    w.share(exp.text)


@st.fragment(key=VIEW)
def view_panel(entry: catalog.Entry, exp: Explanation, options: dict[str, Any]) -> None:
    """The view chooser and the chosen view, when it is not the head view (nothing is built for a view that is
    not shown)."""
    fs = widgets.font_scale()
    views.view_control(exp)
    kind, layer, head, view = views.selection(exp)
    if view == "summary":
        views.summary_view(entry, exp, options, kind, layer, fs)
    elif view == "generation":
        views.generation_view(exp, layer, head, fs)
