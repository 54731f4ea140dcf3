"""Architecture, section 7: a real encoder-decoder, Whisper. Its diagram, its parameters counted on the
installed models beside the paper's base model, what Whisper changes, and a link to hear it. Its words are the
``architecture`` messages' ``whisper`` section in the session's language."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import pretrained_resources, routes
from app.ui import language, widgets
from app.charts.architecture import whisper_diagram
from app.views.parts.pretrained.common import INSTALL
from core import lessons, PretrainedEntry

DIFFERENCES = ("diff_conv", "diff_norm", "diff_gelu", "diff_positions", "diff_bias")  # each one's message key


def _words():
    """The ``whisper`` messages of the Architecture page in the session's language: ``t("intro")``."""
    t = language.words("architecture")
    return lambda key, **values: t(f"whisper.{key}", **values)


def _differences() -> str:
    """What Whisper changes from the paper's model, as a Markdown list."""
    t = _words()
    return "\n".join(f"- {t(key)}" for key in DIFFERENCES)


def parameter_frame(counted: dict[str, lessons.WhisperParameters]) -> pd.DataFrame:
    """One row per part: the paper's base model (formula) and each Whisper model (counted on it), as text
    with thousands separators; "—" where the paper's model has no such part."""
    t = _words()
    first = next(iter(counted.values()))
    frame = pd.DataFrame({t("part"): [t(f"parts.{p.part}") for p in first.parts] + [t("parts.total")],
                          t("paper"): [_count(p.paper) for p in first.parts] + [_count(first.paper_total)]})
    for name, params in counted.items():
        column = t("column", name=name, encoder=params.config.n_encoder_layers, decoder=params.config.n_decoder_layers)
        frame[column] = [_count(p.whisper) for p in params.parts] + [_count(params.total)]
    return frame


def _count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _counted(entries: list[PretrainedEntry]) -> dict[str, lessons.WhisperParameters]:
    counted = {}
    for entry in entries:
        params = widgets.attempt(f"count {entry.name}'s parameters", pretrained_resources.whisper_parameters, str(entry.path),
                                 entry.version)
        if params is not None:
            counted[entry.name] = params
    return counted


def whisper_section(font_scale: float) -> None:
    """The body of the Architecture page's section 7, "A real encoder-decoder: Whisper"."""
    t = _words()
    st.markdown(t("intro"))
    entries = pretrained_resources.speech_entries()
    if not entries:
        st.info(t("missing", install=INSTALL))
        st.markdown(_differences())
        return
    counted = _counted(entries)
    if not counted:
        return
    names, (left, right) = list(counted), st.columns([2, 3])
    with left:
        drawn = st.radio(t("draw"), names, key="arch_whisper", horizontal=True) if len(names) > 1 else names[0]
        st.markdown(t("lacks") + "\n" + _differences())
        st.page_link(routes.SPEECH, label=t("hear"), icon=":material/mic:")
    with right:
        widgets.diagram(whisper_diagram(counted[drawn].config, language.current()), key="arch_whisper_diagram",
                        font_scale=font_scale)
        st.caption(t("read"))
    st.markdown(t("parameters"))
    st.dataframe(parameter_frame(counted), hide_index=True, width="content")
    base = counted.get("Whisper base")
    st.caption(t("reported", reported=lessons.PAPER_REPORTED / 1e6,
                 formula=next(iter(counted.values())).paper_total / 1e6)
               + (t("base") if base is not None else "")
               + t("zeros", largest=max(p.largest_key_bias for p in counted.values())))
