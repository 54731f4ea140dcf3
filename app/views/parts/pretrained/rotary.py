"""The Positional page's rotary section (when SmolLM2 is installed): the rotation speed of each of
its dimension pairs, and a check that q·k after rotation depends only on the relative offset, with
SmolLM2's real head width and base (``core.rotary_frequencies``, ``core.rotary_relative_scores``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui import export, widgets
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
    st.markdown(
        "Llama-family models such as SmolLM2 add nothing to the embeddings. Instead, inside every head, each "
        "pair of query and key dimensions is **rotated** by an angle proportional to the token's position, "
        "pair i turning θ_i radians per position. The score q·k of a query at position m and a key at n then "
        "depends only on the offset n − m: moving both tokens by the same amount changes nothing.")
    st.latex(r"\theta_i = \text{base}^{-2i/d_k}, \qquad (R_m q)\cdot(R_n k) = q \cdot R_{n-m}\, k")
    st.session_state.setdefault("pe_rotary", _is_current(entry.path))
    if not st.toggle(f"Show {SMOLLM}'s rotary positions", key="pe_rotary",
                     help="Loads the model once (a few seconds) to read its head width and rotary base."):
        return
    model = widgets.attempt(f"load {SMOLLM}", pretrained_resources.pretrained, str(entry.path))
    if model is None:
        return
    head_dim, base = int(model.config.head_dim), float(model.config.rope_base)
    fs = widgets.font_scale()
    thetas = pretrained_resources.rotary_thetas(head_dim, base)
    freq = charts.frequency_chart(thetas, font_scale=fs,
                                  title=f"{SMOLLM}: θ_i for its {thetas.size} pairs (d_k = {head_dim}, base {base:g})")
    widgets.bars(freq)  # fits the column (a line chart: only its width adapts)
    frame = charts.frequency_frame(thetas)
    st.caption(f"The fastest pair turns 1 radian per position (a full turn every {frame['wavelength'].iloc[0]:.1f} "
               f"positions); the slowest needs {frame['wavelength'].iloc[-1]:,.0f} positions for one turn, "
               "so distant tokens still get distinct angles.")
    export.export_data({"theta": thetas}, frame, "smollm2-rotary-frequencies", "pe_rot_freq")
    _offset_check(head_dim, base, fs)


def _offset_check(head_dim: int, base: float, fs: float) -> None:
    """Sliders m, n, s; the two scores side by side; the q·k grid and the shift curves."""
    st.subheader("q·k depends only on the offset")
    st.markdown(f"One random query q and key k of width {head_dim}, rotated as SmolLM2 rotates them, placed at "
                "positions (m, n) and then moved together by s.")
    widgets.restore_from_url({"pe_rot_m": widgets.bounded(0, GRID // 2 - 1), "pe_rot_n": widgets.bounded(0, GRID // 2 - 1),
                              "pe_rot_s": widgets.bounded(0, MAX_SHIFT)}, {"pe_rot_m": 3, "pe_rot_n": 10, "pe_rot_s": 500})
    a, b, c = st.columns(3)
    with a:
        m = st.slider("Query position m", 0, GRID // 2 - 1, key="pe_rot_m")
    with b:
        n = st.slider("Key position n", 0, GRID // 2 - 1, key="pe_rot_n")
    with c:
        s = st.slider("Shift s (both move)", 0, MAX_SHIFT, key="pe_rot_s")
    scores = pretrained_resources.rotary_scores(head_dim, base, max(GRID, max(m, n) + s + 1), 0)  # (T, T)
    before, after = float(scores[m, n]), float(scores[m + s, n + s])
    st.latex(rf"q\cdot k\ \text{{at}}\ ({m}, {n}) = {before:+.5f} \qquad q\cdot k\ \text{{at}}\ ({m + s}, {n + s}) "
             rf"= {after:+.5f}")
    st.success(f"Same offset n − m = {n - m}: the scores differ by {abs(after - before):.1e} "
               "(float32 rounding of the angles).")
    grid = scores[:GRID, :GRID]
    widgets.chart(charts.scores_chart(grid, font_scale=fs, title=f"q·k for a query at m and a key at n (first {GRID})"))
    st.caption("Every diagonal (same n − m) has one colour: the score never depends on where the pair sits.")
    shifts = charts.shift_frame(scores, m, n, GRID - 1 - max(m, n))
    widgets.bars(charts.shift_chart(shifts, font_scale=fs, title="Moving both tokens vs moving only the key"))
    st.caption("Moving both tokens keeps the score (flat line); moving only the key changes the offset, "
               "and with it the score.")
    export.export_data({"scores": grid}, shifts, "smollm2-rotary-offsets", "pe_rot_scores")
    widgets.write_to_url(["pe_rot_m", "pe_rot_n", "pe_rot_s"])
