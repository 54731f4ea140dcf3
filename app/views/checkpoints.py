"""Checkpoints: what a model is (config, parameters, metrics, how it was trained), how its
attention formed during training, how it compares with another, and its file.
"""

from __future__ import annotations

import streamlit as st

from app.services import catalog
from app import resources
from app.ui import presentation, widgets
from app.views.parts.checkpoints import about
from app.views.parts.checkpoints.timeline import side_by_side, timeline
from core import TASKS, Checkpoint

INLINE_DOWNLOAD_BYTES = 16 * 1024 * 1024  # larger files are read only when the button is clicked
URL_KEYS = {"tl_step": int, "tl_kind": str, "tl_layer": int, "tl_head": int}


# ----------------------------------------------------------------------------- file
def _ask_delete(key: str) -> None:
    st.session_state["_ckpt_confirm"] = key


def _cancel_delete() -> None:
    st.session_state.pop("_ckpt_confirm", None)


def _delete(key: str) -> None:
    st.session_state.pop("_ckpt_confirm", None)
    entry = resources.entry(key)
    if entry is None:
        return
    try:
        catalog.delete(entry)
    except (OSError, ValueError) as error:
        st.session_state["_ckpt_flash"] = ("error", f"Could not delete {widgets.code(entry.name)}: {error}")
        return
    resources.entries.clear()
    st.session_state["_ckpt_flash"] = ("success", f"Deleted {widgets.code(entry.name)}.")
    st.session_state.pop("ckpt", None)  # the sidebar falls back to the default checkpoint


def _file(entry: catalog.Entry, ckpt: Checkpoint) -> None:
    size = entry.path.stat().st_size
    st.markdown(f"**File:** {widgets.code(entry.path.name)} · {size / 1024 / 1024:.2f} MB")
    st.caption(f"SHA-256 (verified when loaded): {ckpt.info.sha256}")
    data = entry.path.read_bytes() if size <= INLINE_DOWNLOAD_BYTES else entry.path.read_bytes
    st.download_button("Download checkpoint", data, file_name=entry.path.name,
                       mime="application/octet-stream", key="ckpt_download", icon=":material/download:",
                       on_click="ignore")
    if not entry.deletable:
        st.caption("Shipped checkpoints are part of Attnscope and cannot be deleted.")
        return
    if resources.registry().is_training(entry.path):
        st.caption("This run is still training; stop it on the Train page before deleting it.")
        return
    if st.session_state.get("_ckpt_confirm") == entry.key:
        st.warning(f"Delete {widgets.code(entry.name)} for good? This cannot be undone.", icon=":material/warning:")
        a, b = st.columns(2)
        a.button("Yes, delete it", key="ckpt_delete_confirm", type="primary", on_click=_delete, args=(entry.key,))
        b.button("Cancel", key="ckpt_delete_cancel", on_click=_cancel_delete)
    else:
        st.button("Delete…", key="ckpt_delete", icon=":material/delete:", on_click=_ask_delete, args=(entry.key,))


# ----------------------------------------------------------------------------- page
widgets.restore_from_url(URL_KEYS)
heading = presentation.heading("Checkpoints")
flash = st.session_state.pop("_ckpt_flash", None)
if flash:
    getattr(st, flash[0])(flash[1])
loaded = widgets.current_checkpoint()
if loaded is None:
    st.info("Choose a checkpoint in the sidebar, train one on the Train page, or upload one.")
    st.stop()
entry, ckpt = loaded
source = {"shipped": "Shipped with Attnscope", "run": "Your training run", "upload": "Uploaded",
          "models": "From your models folder"}[entry.source]
# presentation mode: the name and the description in a popover beside the title, the tabs on the first screen
described = heading.popover("About this checkpoint", icon=":material/info:") if presentation.enabled() else st.container()
described.markdown(f"### {widgets.code(entry.name)}")
known = TASKS.get(entry.task) if isinstance(entry.task, str) else None
described.caption(f"{source} · {ckpt.config.architecture}" + (f" · {known.description}" if known else ""))

tl = resources.timeline(entry)
overview, training, timeline_tab, side, file_tab = st.tabs(
    ["Overview", "Training", "Attention timeline", "Side by side", "File"])
# Each tab stands alone: a malformed record in an uploaded file spoils one tab, not the page.
with overview:
    widgets.attempt("describe this checkpoint", about.overview, entry, ckpt)
with training:
    widgets.attempt("show how this checkpoint was trained", about.training_section, entry, ckpt)
with timeline_tab:
    if tl.steps:
        widgets.attempt("replay the attention snapshots", timeline, tl)
    else:
        st.info("This checkpoint has no attention snapshots (it was not trained by Attnscope), "
                "so there is no timeline to replay. Train a model on the Train page to get one.")
with side:
    widgets.attempt("compare attention maps", side_by_side, entry, tl)
with file_tab:
    widgets.attempt("offer the file", _file, entry, ckpt)

widgets.write_to_url([k for k in URL_KEYS if tl.steps])
