"""Positional encoding: the sinusoid table, its similarity structure, its waves, the rotation
property, the notes' worked example and what the loaded model adds to its embeddings.

Each section is built only while it is open (``presentation.section``: the first is, the others wait to be
opened), and sections are fragments: the table's length, width and base rerun sections 1–4 (they
all draw that table), the plotted dimensions section 3 alone, the offset and pair section 4 alone, the text
section 6 alone; the worked example never reruns on a control. Every chart is drawn from its cached spec. Every
word shown comes from the ``positional`` messages in the session's language (:mod:`app.ui.language`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, glossary, language, presentation, tables, vega, widgets
from app import resources
from app.charts import grids
from app.charts import teaching as charts
from app.charts.base import SEQUENTIAL, label_tokens
from app.views.parts.pretrained.rotary import rotary_available, rotary_section
from core import get_task, lessons, sinusoidal_encoding

BASES = [2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]


def _base(text: str) -> int:
    value = int(float(text))
    if value not in BASES:
        raise ValueError(text)
    return value


def _int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


widgets.restore_from_url({"pe_len": widgets.bounded(2, 100), "pe_dim": widgets.bounded(4, 512),
                          "pe_base": _base, "pe_dims": _int_list, "pe_k": widgets.bounded(1, 50),
                          "pe_pair": widgets.bounded(0, 255), "pe_text": widgets.clipped_text(200)},
                         {"pe_len": 20, "pe_dim": 128, "pe_base": 10000, "pe_dims": [0, 1, 10, 11, 40, 41], "pe_k": 3,
                          "pe_pair": 1})
fs = widgets.font_scale()
lang = language.current()
t = language.words("positional")

with presentation.opening(t("opening.title"), t("opening.intro")):
    st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{\text{base}^{2i/d_{model}}}\right) \qquad "
             r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{\text{base}^{2i/d_{model}}}\right) \qquad "
             r"(\text{base} = 10000 \text{ " + t("opening.in_paper") + "})")
    glossary.erratum("pe_index")
    glossary.erratum("pe_odd_exponent")
    glossary.show_code(sinusoidal_encoding, t("opening.code"))

# ----------------------------------------------------------------------------- the table
@st.fragment(key="pe_table")
def table_sections() -> None:
    """Sections 1 to 4: the table's length, width and base change every one of them (sections 3 and 4 are
    fragments of their own for their own controls); each is built only while it is open."""
    length, d_model, base = st.session_state["pe_len"], st.session_state["pe_dim"], float(st.session_state["pe_base"])
    pe = lessons.pe_table(length, d_model, base)  # (length, d_model)
    presentation.section(t("sections.table"), "pe-table", table_section, pe, base, first=True)
    presentation.section(t("sections.similarity"), "pe-similarity", similarity_section, pe)
    presentation.section(t("sections.curves"), "pe-curves", curves_section, length, d_model, base)
    presentation.section(t("sections.rotation"), "pe-rotation", rotation_section, length, d_model, base)
    widgets.write_to_url(["pe_len", "pe_dim", "pe_base"])


def table_section(pe: np.ndarray, base: float) -> None:
    """Section 1: the table ``pe`` (positions × dimensions), with the length, width and base every section of
    the fragment draws."""
    controls, chart = presentation.beside((5, 2))  # presentation mode: the sliders beside the table
    with controls:
        left, middle, right = st.columns(3) if not presentation.enabled() else (st.container(),) * 3
        with left:
            st.slider(t("table.length"), 2, 100, key="pe_len")
        with middle:
            st.slider(t("table.d_model"), 4, 512, step=2, key="pe_dim")
        with right:
            st.select_slider(t("table.base"), options=BASES, key="pe_base", help=t("table.base_help"))
    length, d_model = pe.shape
    shortest, longest = lessons.wavelength_range(d_model, base)
    pe_chart = grids.grid_heatmap(
        pe, title=t("table.chart_title", length=length, d_model=d_model, base=base),
        x_title=t("table.dimension"), y_title=t("table.position"), value="PE", domain=(-1, 1), font_scale=fs,
        # presentation: the whole table on the first screen, in its column beside the sliders
        max_width=520 if presentation.enabled() else 800, max_height=270 if presentation.enabled() else 420,
        subtitle=t("table.subtitle"))
    with chart:
        widgets.plot(pe_chart, name="positional-encoding", key="pe_table_map")
    st.caption(t("table.caption", shortest=shortest, longest=longest, last=d_model // 2 - 1,
                 exponent=(d_model - 2) / d_model, full=2 * math.pi * base, factor=base ** (2 / d_model)))
    glossary.erratum("pe_all_components")
    ex1, ex2 = st.columns(2)
    with ex1:
        export.export_chart(pe_chart, "positional-encoding", "pe_table_chart", cells=pe.size)
    with ex2:
        export.export_data({"pe": pe}, tables.pe_frame(pe).reset_index(), "positional-encoding",
                           "pe_table_data")


# ----------------------------------------------------------------------------- similarity
def similarity_section(pe: np.ndarray) -> None:
    """Section 2: PE·PEᵀ, constant along its diagonals."""
    st.markdown(t("similarity.intro"))
    st.latex(r"PE(p)\cdot PE(q) = \sum_{i} \cos\big(\omega_i\,(p-q)\big), \qquad "
             r"\omega_i = \frac{1}{\text{base}^{2i/d_{model}}}, \qquad PE(p)\cdot PE(p) = \frac{d_{model}}{2}")
    similarity = pe @ pe.T  # (length, length)
    sim_chart = grids.grid_heatmap(similarity, title=t("similarity.chart_title"),
                                   x_title=t("similarity.position"), y_title=t("similarity.position"),
                                   value=t("similarity.value"), scheme=SEQUENTIAL, font_scale=fs,
                                   max_width=520, max_height=520, annotate=False)
    widgets.plot(sim_chart, name="pe-similarity", key="pe_similarity_map")
    export.export_chart(sim_chart, "pe-similarity", "pe_sim_chart", cells=similarity.size)


# ----------------------------------------------------------------------------- curves
@st.fragment(key="pe_curves")
def curves_section(length: int, d_model: int, base: float) -> None:
    """Section 3: the chosen dimensions as waves over the positions."""
    st.session_state["pe_dims"] = [j for j in st.session_state["pe_dims"] if 0 <= j < d_model]
    widgets.link_checked("pe_dims", st.session_state["pe_dims"])
    st.multiselect(t("curves.dims"), list(range(d_model)), key="pe_dims",
                   format_func=lambda j: t("curves.dim_option", j=j, fn="sin" if j % 2 == 0 else "cos", pair=j // 2))
    dims = st.session_state["pe_dims"]
    st.latex(r"\text{" + t("curves.wavelength") + r"} i = \frac{2\pi}{\omega_i} = 2\pi \cdot \text{base}^{2i/d_{model}}")
    if dims:
        curves = tables.curves_frame(lessons.pe_curves(d_model, base, dims, length), d_model)
        curve_chart = vega.draw(charts.pe_curve_chart, curves, font_scale=fs, lang=lang)
        export.export_chart(curve_chart, "pe-curves", "pe_curves_chart", cells=len(curves))
    else:
        st.info(t("curves.none"))
    widgets.write_to_url(["pe_dims"])


# ----------------------------------------------------------------------------- rotation
@st.fragment(key="pe_rotation")
def rotation_section(length: int, d_model: int, base: float) -> None:
    """Section 4: moving k positions on is the rotation R_k, checked at every position."""
    st.markdown(t("rotation.intro"))
    st.session_state["pe_pair"] = min(st.session_state["pe_pair"], d_model // 2 - 1)
    c1, c2 = st.columns(2)
    with c1:
        st.slider(t("rotation.offset"), 1, 50, key="pe_k")
    with c2:
        st.slider(t("rotation.pair"), 0, d_model // 2 - 1, key="pe_pair")
    k, i = st.session_state["pe_k"], st.session_state["pe_pair"]
    rotation = lessons.rotation_matrix(k, i, d_model, base)
    omega = lessons.pe_frequency(i, d_model, base)
    st.latex(
        r"\begin{pmatrix} PE_{(pos+k,\,2i)} \\ PE_{(pos+k,\,2i+1)} \end{pmatrix} = "
        r"\underbrace{\begin{pmatrix} \cos\omega_i k & \sin\omega_i k \\ -\sin\omega_i k & \cos\omega_i k "
        r"\end{pmatrix}}_{R_k} \begin{pmatrix} PE_{(pos,\,2i)} \\ PE_{(pos,\,2i+1)} \end{pmatrix}")
    st.latex(
        rf"\omega_{{{i}}} = {omega:.6g},\quad k = {k}:\qquad R_{{{k}}} = \begin{{pmatrix}} {rotation[0, 0]:.4f} & "
        rf"{rotation[0, 1]:.4f} \\ {rotation[1, 0]:.4f} & {rotation[1, 1]:.4f} \end{{pmatrix}}")
    check = tables.rotation_frame(lessons.rotation_check(length, d_model, base, k, i), k, i)
    worst = float(check["max |difference|"].max())
    st.dataframe(pd.DataFrame(rotation, index=[t("rotation.row", n=n) for n in (1, 2)],
                              columns=[t("rotation.col", n=n) for n in (1, 2)]), width="content")
    vega.draw(charts.rotation_chart, check, k, i, font_scale=fs, lang=lang)
    st.success(t("rotation.result", k=k, length=length, worst=worst))
    numbers = presentation.opened(t("rotation.numbers"), "pe_rotation_numbers_open")
    if numbers:
        with numbers:
            st.dataframe(check.rename(columns={"max |difference|": t("rotation.largest")}), hide_index=True)
    export.export_data({"rotation": rotation, "check": check.to_numpy()}, check, "pe-rotation", "pe_rotation_data")
    widgets.write_to_url(["pe_k", "pe_pair"])


# ----------------------------------------------------------------------------- worked example
def worked_section() -> None:
    """Section 5: the notes' 4-token example, and where their printed numbers mix two bases."""
    example = lessons.worked_example()
    st.markdown(t("worked.intro", sentence=" ".join(example.words)))
    st.latex(r"PE = \begin{pmatrix} \sin\frac{pos}{100^{0}} & \cos\frac{pos}{100^{0}} & \sin\frac{pos}{100^{2/4}} & "
             r"\cos\frac{pos}{100^{2/4}} \end{pmatrix}_{pos = 0,1,2,3}")
    worked = {name: frame.rename_axis(t("worked.token"))
              for name, frame in tables.worked_frames(example).items()}
    st.subheader("PE (4 × 4)")
    st.dataframe(worked["pe"], width="content")
    w1, w2 = st.columns(2)
    with w1:
        st.subheader(t("worked.embeddings"))
        st.dataframe(worked["x"], width="content")
    with w2:
        st.subheader(t("worked.sum"))
        st.dataframe(worked["x_plus_pe"], width="content")

    st.subheader(t("worked.lecture"))
    lecture = lessons.lecture_comparison()
    st.markdown(t("worked.mixed"))
    used = lecture.matches.ravel()  # "100", "10000", "both" or "neither"
    compare = pd.DataFrame({
        t("worked.cell"): [t("worked.cell_name", r=r, c=c) for r in range(4) for c in range(4)],
        t("worked.printed"): lecture.printed.ravel(), t("worked.base100"): lecture.base100.ravel(),
        t("worked.base10000"): lecture.base10000.ravel(),
        t("worked.used"): [t(f"worked.{u}") if u in ("both", "neither") else u for u in used]})
    st.dataframe(compare[used != "both"], hide_index=True, width="content", key="pe_lecture_table")
    st.caption(t("worked.listed"))


# ----------------------------------------------------------------------------- the loaded model
@st.fragment(key="pe_model")
def model_section() -> None:
    """Section 6: the sidebar's model's embeddings, positional part and their sum for a short text."""
    loaded = widgets.current_checkpoint()
    if loaded is None:
        st.info(t("model.choose"))
        return
    entry, ckpt = loaded
    if "pe_text" not in st.session_state:
        examples = ()
        if ckpt.info.task:
            examples = widgets.attempt("read the task", lambda: get_task(ckpt.info.task).examples) or ()
        st.session_state["pe_text"] = examples[0] if examples else "hello world"
    cfg = ckpt.config
    st.markdown(t("model.intro", d_model=cfg.d_model, positional=t(f"kind.{cfg.positional}")))
    st.latex(r"\text{input}_{pos} = \sqrt{d_{model}}\; E[\text{token}_{pos}] + PE(pos)")
    st.text_input(t("model.text"), key="pe_text", max_chars=200)
    encoding = widgets.attempt("read the model's embeddings", resources.model_lesson, lessons.model_encoding, ckpt, st.session_state["pe_text"])
    if encoding is None:
        return
    for note in encoding.notes:
        st.info(note)
    labels = label_tokens(encoding.tokens)
    bound = float(max(np.abs(encoding.embeddings).max(), np.abs(encoding.positional).max(),
                      np.abs(encoding.total).max(), 1e-9))
    pe_title = t(f"model.{encoding.kind}", base=cfg.pe_base)
    panels = [(t("model.embeddings", d_model=cfg.d_model), encoding.embeddings), (pe_title, encoding.positional),
              (t("model.sum"), encoding.total)]
    for n, (title, matrix) in enumerate(panels):
        widgets.plot(grids.grid_heatmap(matrix, title=title, x_title=t("model.dimension"), y_title=t("model.token"),
                                        value=t("model.value"),
                                        rows=labels, domain=(-bound, bound), annotate=False, max_width=700,
                                        max_height=360, font_scale=fs),
                     name=f"model-embeddings-{n + 1}", key=f"pe_model_map_{n}")
    norms = pd.DataFrame({t("model.token"): labels, "‖√d·E‖": np.linalg.norm(encoding.embeddings, axis=1),
                          "‖PE‖": np.linalg.norm(encoding.positional, axis=1),
                          t("model.norm_sum"): np.linalg.norm(encoding.total, axis=1)})
    st.caption(t("model.lengths"))
    st.dataframe(norms, hide_index=True, width="content")
    export.export_data({"embeddings": encoding.embeddings, "positional": encoding.positional, "sum": encoding.total},
                       norms, "model-embeddings", "pe_model_data")
    widgets.write_to_url(["pe_text"])


table_sections()
presentation.section(t("sections.worked"), "pe-worked", worked_section)
presentation.section(t("sections.model"), "pe-model", model_section)
if widgets.current_entry() is not None and rotary_available():  # no checkpoint or no SmolLM2: no section 7
    presentation.section(t("sections.rotary"), "pe-rotary",
                         st.fragment(rotary_section, key="pe_rotary_section"))
