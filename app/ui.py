"""Widgets and conventions every page shares: the checkpoint picker, projector mode,
shareable links, clear error messages, user text shown as text, and export buttons.
"""

from __future__ import annotations

import functools
import io
import json
import logging
from typing import Any, Callable, TypeVar

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
import vl_convert

from app import catalog, resources
from core import Checkpoint, CheckpointError

log = logging.getLogger(__name__)
T = TypeVar("T")
alt.data_transformers.disable_max_rows()  # exports of large heatmaps (e.g. 128 × 128) must not fail

# Enlarging the root scales everything sized in rem (headings, spacing); body text, widgets and
# tables get an explicit size, and headings are left to the root so they stay larger than the text.
PROJECTOR_CSS = """<style>
html { font-size: 135% !important; }
:is([data-testid="stMain"], [data-testid="stSidebar"]) :is(p, li, label, input, textarea, code, td, th, button) {
  font-size: 1.25rem !important;
}
</style>"""


# ----------------------------------------------------------------------------- share links
def restore_from_url(keys: dict[str, Callable[[str], Any]], defaults: dict[str, Any] | None = None) -> None:
    """Seed ``st.session_state`` from the URL's query parameters, once per page visit, then
    give every key of ``defaults`` still unset its default value.

    ``keys`` maps a widget key to a parser (``int``, ``str``, ``float``, ``parse_bool``).
    Unparseable values are ignored, so a hand-edited link never breaks the page.
    """
    marker = "_restored_" + ",".join(sorted(keys))
    if not st.session_state.get(marker):
        st.session_state[marker] = True
        for key, parse in keys.items():
            if key in st.query_params:
                try:
                    st.session_state[key] = parse(st.query_params[key])
                except (TypeError, ValueError):
                    log.info("ignoring query parameter %s=%r", key, st.query_params[key])
    for key, default in (defaults or {}).items():
        st.session_state.setdefault(key, default)


def write_to_url(keys: list[str]) -> None:
    """Mirror these session values into the URL so the address bar is a shareable link."""
    values = {k: _url_value(st.session_state[k]) for k in keys if k in st.session_state}
    for key, value in values.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value


def _url_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_bool(text: str) -> bool:
    if text not in ("0", "1", "true", "false"):
        raise ValueError(text)
    return text in ("1", "true")


# ----------------------------------------------------------------------------- sidebar
def sidebar() -> None:
    """The shared sidebar: checkpoint picker (shipped, runs, upload) and projector mode."""
    restore_from_url({"ckpt": str, "projector": parse_bool})
    all_entries, problems = resources.entries()
    keys = [e.key for e in all_entries]
    if st.session_state.get("ckpt") not in keys:
        st.session_state["ckpt"] = catalog.DEFAULT_KEY if catalog.DEFAULT_KEY in keys else (keys or [None])[0]
    with st.sidebar:
        st.subheader("Checkpoint")
        if keys:
            labels = {e.key: e.label for e in all_entries}
            st.selectbox("Model", keys, key="ckpt", format_func=labels.get,
                         help="Shipped checkpoints, your own training runs, and uploads.")
            current = resources.entry(st.session_state["ckpt"])
            if current is not None:
                st.text(current.description)  # may quote a task name read from an uploaded file
        else:
            st.warning("No checkpoints found. Train one on the Train page or upload one below.")
        with st.expander("Upload a checkpoint"):
            uploaded = st.file_uploader("Attnscope .safetensors file", type=["safetensors"], key="upload")
            if uploaded is not None and st.session_state.get("_uploaded_id") != uploaded.file_id:
                st.session_state["_uploaded_id"] = uploaded.file_id
                try:
                    key = catalog.save_upload(uploaded.getvalue())
                except CheckpointError as error:
                    st.error(f"This file cannot be opened: {error}")
                else:
                    resources.entries.clear()
                    st.session_state["ckpt"] = key
                    st.rerun()
        for problem in problems:
            st.text(f"Skipped: {problem}")  # file names are user data: shown as text
        st.divider()
        st.toggle("Projector mode", key="projector", help="Large type for a classroom projector.")
        st.caption("Light or dark theme: ⋮ menu → Settings.")
    if st.session_state.get("projector"):
        st.html(PROJECTOR_CSS)
    write_to_url(["ckpt", "projector"])


def current_entry() -> catalog.Entry | None:
    """The checkpoint chosen in the sidebar."""
    key = st.session_state.get("ckpt")
    return resources.entry(key) if key else None


def current_checkpoint() -> tuple[catalog.Entry, Checkpoint] | None:
    """The sidebar's checkpoint, loaded; None when none is chosen or it cannot be opened
    (then a clear message has been shown)."""
    entry = current_entry()
    if entry is None:
        return None
    ckpt = attempt(f"open {entry.name}", resources.checkpoint, entry)
    return None if ckpt is None else (entry, ckpt)


def font_scale() -> float:
    """Chart text scale: larger in projector mode."""
    return 1.5 if st.session_state.get("projector") else 1.0


# ----------------------------------------------------------------------------- safety
def attempt(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run ``fn``; on failure show a clear message (never a traceback) and return None."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, CheckpointError) as error:
        st.error(f"Could not {what}: {error}")
    except Exception:  # last line of defence: log for the operator, explain to the user
        log.exception("failed to %s", what)
        st.error(f"Something went wrong while trying to {what}. The details are in the server log.")
    return None


def show_user_text(text: str, label: str | None = None) -> None:
    """User text is shown as text, never interpreted as Markdown or HTML."""
    if label:
        st.caption(label)
    st.text(text)


# ----------------------------------------------------------------------------- export
@functools.lru_cache(maxsize=64)
def _render(spec_json: str, fmt: str, scale: float) -> bytes:
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec_json).encode()
    return vl_convert.vegalite_to_png(spec_json, scale=scale)


def export_chart(chart: alt.TopLevelMixin, name: str, key: str) -> None:
    """PNG, SVG and standalone interactive HTML (no CDN) downloads of one chart, rendered on click."""
    spec = chart.to_json()
    with st.popover("Export chart", icon=":material/download:"):
        st.download_button("PNG", functools.partial(_render, spec, "png", 2.0), f"{name}.png", "image/png",
                           key=f"{key}-png", on_click="ignore")
        st.download_button("SVG", functools.partial(_render, spec, "svg", 1.0), f"{name}.svg", "image/svg+xml",
                           key=f"{key}-svg", on_click="ignore")
        st.download_button("HTML", functools.partial(chart.to_html, inline=True), f"{name}.html", "text/html",
                           key=f"{key}-html", on_click="ignore")


def export_data(arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str, key: str) -> None:
    """CSV (tidy table), JSON and NPZ downloads of the numbers behind a view."""

    def npz() -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        return buffer.getvalue()

    def as_json() -> str:
        return json.dumps({k: v.tolist() for k, v in arrays.items()})

    with st.popover("Export data", icon=":material/table:"):
        st.download_button("CSV", lambda: table.to_csv(index=False), f"{name}.csv", "text/csv",
                           key=f"{key}-csv", on_click="ignore")
        st.download_button("JSON", as_json, f"{name}.json", "application/json", key=f"{key}-json",
                           on_click="ignore")
        st.download_button("NPZ", npz, f"{name}.npz", "application/octet-stream", key=f"{key}-npz",
                           on_click="ignore")
