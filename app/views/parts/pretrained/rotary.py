"""The Positional page's rotary section (when SmolLM2 is installed): the rotation speed of each of
its dimension pairs, and a check that q·k after rotation depends only on the relative offset, with
SmolLM2's real head width and base (``core.rotary_frequencies``, ``core.rotary_relative_scores``). Its words are
the ``positional`` messages' ``rope`` section in the session's language.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui import export, language, widgets
from app import pretrained_resources
from app.charts import rotary as charts
from app.views.parts.pretrained.common import SMOLLM

GRID = 64  # positions drawn in the q·k heat map
MAX_SHIFT = 1000


def _is_current(path: Path) -> bool:
    """Whether the sidebar has this model chosen (then the section opens by itself)."""
    current = widgets.current_entry()
    return current is not None and Path(current.path).resolve() == Path(path).resolve()


def rotary_available() -> bool:
    """Whether the section has a model to show (SmolLM2 installed; the page is about the paper's sinusoids)."""
    return pretrained_resources.pretrained_entry(SMOLLM) is not None


def rotary_section() -> None:
    """Draw the section's body (the Positional page shows it when :func:`rotary_available`)."""
    entry = pretrained_resources.pretrained_entry(SMOLLM)
    if entry is None:
        return
    t = language.words("positional")
    st.markdown(t("rope.intro"))
    st.latex(r"\theta_i = \text{base}^{-2i/d_k}, \qquad (R_m q)\cdot(R_n k) = q \cdot R_{n-m}\, k")
    st.session_state.setdefault("pe_rotary", _is_current(entry.path))
    if not st.toggle(t("rope.show", model=SMOLLM), key="pe_rotary", help=t("rope.show_help")):
        return
    model = widgets.attempt(f"load {SMOLLM}", pretrained_resources.pretrained, str(entry.path))
    if model is None:
        return
    head_dim, base = int(model.config.head_dim), float(model.config.rope_base)
    fs = widgets.font_scale()
    thetas = pretrained_resources.rotary_thetas(head_dim, base)
    lang = language.current()
    freq = charts.frequency_chart(thetas, font_scale=fs, lang=lang, title=t("rope.frequencies", model=SMOLLM,
                                                                             pairs=thetas.size, d_k=head_dim, base=base))
    widgets.bars(freq)  # fits the column (a line chart: only its width adapts)
    frame = charts.frequency_frame(thetas)
    st.caption(t("rope.turns", fastest=frame["wavelength"].iloc[0], slowest=frame["wavelength"].iloc[-1]))
    export.export_data({"theta": thetas}, frame, "smollm2-rotary-frequencies", "pe_rot_freq")
    _offset_check(head_dim, base, fs)


def _offset_check(head_dim: int, base: float, fs: float) -> None:
    """Sliders m, n, s; the two scores side by side; the q·k grid and the shift curves."""
    t, lang = language.words("positional"), language.current()
    st.subheader(t("rope.offset"))
    st.markdown(t("rope.random", width=head_dim))
    widgets.restore_from_url({"pe_rot_m": widgets.bounded(0, GRID // 2 - 1), "pe_rot_n": widgets.bounded(0, GRID // 2 - 1),
                              "pe_rot_s": widgets.bounded(0, MAX_SHIFT)}, {"pe_rot_m": 3, "pe_rot_n": 10, "pe_rot_s": 500})
    a, b, c = st.columns(3)
    with a:
        m = st.slider(t("rope.m"), 0, GRID // 2 - 1, key="pe_rot_m")
    with b:
        n = st.slider(t("rope.n"), 0, GRID // 2 - 1, key="pe_rot_n")
    with c:
        s = st.slider(t("rope.s"), 0, MAX_SHIFT, key="pe_rot_s")
    scores = pretrained_resources.rotary_scores(head_dim, base, max(GRID, max(m, n) + s + 1), 0)  # (T, T)
    before, after = float(scores[m, n]), float(scores[m + s, n + s])
    at = r"\ \text{" + t("rope.at") + r"}\ "
    st.latex(rf"q\cdot k{at}({m}, {n}) = {before:+.5f} \qquad q\cdot k{at}({m + s}, {n + s}) = {after:+.5f}")
    st.success(t("rope.same", offset=n - m, difference=abs(after - before)))
    grid = scores[:GRID, :GRID]
    widgets.chart(charts.scores_chart(grid, font_scale=fs, title=t("rope.grid", n=GRID), lang=lang))
    st.caption(t("rope.diagonal"))
    shifts = charts.shift_frame(scores, m, n, GRID - 1 - max(m, n), lang)
    widgets.bars(charts.shift_chart(shifts, font_scale=fs, title=t("rope.moving"), lang=lang))
    st.caption(t("rope.flat"))
    export.export_data({"scores": grid}, shifts, "smollm2-rotary-offsets", "pe_rot_scores")
    widgets.write_to_url(["pe_rot_m", "pe_rot_n", "pe_rot_s"])
