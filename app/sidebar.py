"""The shared sidebar: the checkpoint picker (shipped, runs, uploads), an upload, and projector mode."""

from __future__ import annotations

import streamlit as st

from app import catalog, resources, ui
from core import CheckpointError

PROJECTOR_CSS = ui.PROJECTOR_CSS  # the projector look lives beside the charts it must match


def _upload() -> None:
    with st.expander("Upload a checkpoint"):
        uploaded = st.file_uploader(f"Attnscope {catalog.SUFFIX} file", type=[catalog.SUFFIX.lstrip(".")], key="upload")
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


def sidebar() -> None:
    """Draw the sidebar; the choice lives in ``st.session_state["ckpt"]`` and the share link."""
    ui.restore_from_url({"ckpt": str, "projector": ui.parse_bool})
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
        _upload()
        for problem in problems:
            st.text(f"Skipped: {problem}")  # file names are user data: shown as text
        st.divider()
        st.toggle("Projector mode", key="projector", help="Large type for a classroom projector.")
        st.caption("Light or dark theme: the ⋮ menu at the top right → Light, Dark or System.")
    st.html(ui.page_css(bool(st.session_state.get("projector"))))
    ui.write_to_url(["ckpt", "projector"])
