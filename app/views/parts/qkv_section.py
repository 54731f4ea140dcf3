"""The Attention playground's section 5: Q, K and V as projections, on the loaded translation model's
real W_q, W_k, W_v when it has them, else on random matrices that are called random. Its words are the
``playground`` messages' ``qkv`` section in the session's language."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, glossary, language, widgets
from app import resources
from app.charts import grids
from app.charts.base import SEQUENTIAL, label_tokens, phrases
from core import lessons

MODES = {"encoder self": "qkv.mode_encoder", "decoder self": "qkv.mode_decoder", "cross": "qkv.mode_cross"}


def _matrix(matrix: np.ndarray, rows, cols, title: str, fs: float, x_title: str, max_width: int = 640):
    small = matrix.shape[1] <= 8  # the random demo: big annotated cells; a real model: fit the width
    t = language.words("playground")
    return grids.grid_heatmap(matrix, title=title, x_title=x_title, y_title=t("qkv.token"), rows=list(rows),
                              cols=list(cols), symmetric=True, cell=46 if small else None, font_scale=fs, value=t("qkv.value"),
                              annotate=small, max_width=max_width, max_height=300)


def _weights_map(weights: np.ndarray, rows: list[str], cols: list[str], title: str, fs: float):
    """The attention map on the 0–1 scale, whole row labels."""
    t = language.words("playground")
    return grids.grid_heatmap(weights, title=title, x_title=t("qkv.key_axis"), y_title=t("qkv.query_axis"),
                              value=t("qkv.weight"), rows=rows, cols=cols, scheme=SEQUENTIAL, domain=(0, 1), cell=56,
                              font_scale=fs)


def _real(ckpt, mode: str, head: int):
    """The loaded model's projection, or None when it is not an encoder-decoder scaled-dot model."""
    cfg = ckpt.config if ckpt is not None else None
    if cfg is None or ckpt.info.task != "translation" or cfg.score != "scaled_dot":
        return None  # the English → Spanish sentences need the translation model's vocabulary
    return widgets.attempt("project the sentences with the model's weights", resources.model_lesson, lessons.model_projection,
                           ckpt, glossary.SOURCE_SENTENCE, glossary.TARGET_SENTENCE, mode, min(head, cfg.n_heads - 1))


def _random(mode: str, seed: int):
    """Random X (4 tokens), Y (3 tokens) and W's; tokens are named t1…/s1…, never words."""
    x_in = lessons.random_vectors(4, 4, seed + 11)
    y_in = lessons.random_vectors(3, 4, seed + 13)
    cross = mode == "cross"
    src = y_in if cross else x_in
    proj = lessons.qkv_projection(x_in, y_in, cross, seed, causal=mode == "decoder self")
    rows = [f"t{i + 1}" for i in range(4)]
    cols = [f"s{i + 1}" for i in range(3)] if cross else rows
    return proj, x_in, src, rows, cols


def render(seed: int, fs: float) -> None:
    """Draw the body of the Playground's section 5 (widgets keyed ``pg_qkv_mode`` and ``pg_qkv_head``)."""
    t = language.words("playground")
    st.markdown(t("qkv.intro", direction=glossary.direction()))
    st.radio(t("qkv.which"), list(MODES), key="pg_qkv_mode", format_func=lambda m: t(MODES[m]), horizontal=True)
    mode = st.session_state["pg_qkv_mode"]
    loaded = widgets.current_checkpoint()
    ckpt = loaded[1] if loaded else None
    if ckpt is not None and ckpt.info.task == "translation":
        heads = ckpt.config.n_heads
        st.session_state["pg_qkv_head"] = min(int(st.session_state.get("pg_qkv_head", 0)), heads - 1)
        st.selectbox(t("qkv.head"), range(heads), key="pg_qkv_head", format_func=lambda n: t("qkv.head_option", n=n + 1))
    real = _real(ckpt, mode, int(st.session_state.get("pg_qkv_head", 0)))
    other = r"X" if mode != "cross" else (r"\text{" + t("qkv.encoder_output" if real is not None else "qkv.second_sequence")
                                          + "}")
    if real is not None:
        st.latex(r"Q = XW_Q + b_Q,\quad K = SW_K + b_K,\quad V = SW_V + b_V,\quad S = " + other)
    else:  # the random demo has no biases
        st.latex(r"Q = XW_Q,\quad K = SW_K,\quad V = SW_V,\quad S = " + other)
    st.latex(r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V, \quad M_{ij} = "
             + (r"-\infty \text{ for } j > i" if mode == "decoder self" else r"0"))
    if real is not None:
        st.success(t("qkv.real", head=real.head + 1, source=glossary.SOURCE_SENTENCE, target=glossary.TARGET_SENTENCE))
        x, src = real.x, real.source
        rows, cols = label_tokens(phrases(real.row_labels)), label_tokens(list(real.key_tokens))
        q, k, v, weights, output = real.q, real.k, real.v, real.weights, real.output
        check = t("qkv.real_check", error=real.max_error)
    else:
        st.warning(t("qkv.random"))
        proj, x, src, rows, cols = _random(mode, seed)
        q, k, v, weights, output = proj.q, proj.k, proj.v, proj.weights, proj.output
        check = t("qkv.random_check", error=proj.max_error)
    _shapes(x.shape[0], src.shape[0], x.shape[1], q.shape[1], ckpt.config.n_heads if real is not None else 1)
    if mode == "cross":
        glossary.erratum("cross_sources")
    _draw(mode, x, src, rows, cols, (q, k, v, weights, output), fs)
    st.success(check)
    st.markdown(t("qkv.heads"))
    st.latex(r"\mathrm{head}_i = \mathrm{Attention}(XW_Q^{i}, SW_K^{i}, SW_V^{i}), \qquad "
             r"\mathrm{MultiHead} = [\mathrm{head}_1; \dots; \mathrm{head}_h]\, W_O + b_O,\quad "
             r"W_O \in \mathbb{R}^{h d_v \times d_{model}}")
    glossary.erratum("w_o_shape")
    st.caption(t("qkv.lesson"))


def _shapes(m: int, n: int, d: int, dk: int, heads: int) -> None:
    """The sizes of every array of this section, as the notes write them, with this example's numbers."""
    st.latex(rf"X \in \mathbb{{R}}^{{m \times d_{{model}}}} = \mathbb{{R}}^{{{m} \times {d}}},\ "
             rf"S \in \mathbb{{R}}^{{{n} \times {d}}},\ W_Q, W_K \in \mathbb{{R}}^{{{d} \times {dk}}}"
             + (rf",\ h = {heads}" if heads > 1 else ""))
    st.latex(rf"Q \in \mathbb{{R}}^{{m \times d_k}} = \mathbb{{R}}^{{{m} \times {dk}}},\ "
             rf"K \in \mathbb{{R}}^{{{n} \times {dk}}},\ V \in \mathbb{{R}}^{{n \times d_v}} = "
             rf"\mathbb{{R}}^{{{n} \times {dk}}},\ A \in \mathbb{{R}}^{{m \times n}} = "
             rf"\mathbb{{R}}^{{{m} \times {n}}}")


def _draw(mode: str, x, src, rows, cols, projected: tuple, fs: float) -> None:
    """The inputs, Q, K, V, the attention map and its exports (arrays from core, labels for the axes)."""
    q, k, v, weights, output = projected
    t = language.words("playground")
    dims = [f"d{j}" for j in range(x.shape[1])]
    widgets.plot(_matrix(x, rows, dims, t("qkv.x_title"), fs, t("qkv.dimension")), name="qkv-x", key="pg_qkv_x")
    if mode == "cross":
        widgets.plot(_matrix(src, cols, dims, t("qkv.s_title"), fs, t("qkv.dimension")), name="qkv-s",
                     key="pg_qkv_s")
    kd = [f"k{j}" for j in range(q.shape[1])]
    for col, (name, matrix, labels) in zip(st.columns(3), (("Q", q, rows), ("K", k, cols), ("V", v, cols))):
        with col:
            widgets.plot(_matrix(matrix, labels, kd, name, fs, t("qkv.projected"), max_width=grids.THIRD),
                         name=f"qkv-{name}", key=f"pg_qkv_{name}")
    title = t(MODES[mode]) + (t("qkv.masked_title") if mode == "decoder self" else "")
    chart = _weights_map(weights, list(rows), list(cols), title, fs)
    widgets.plot(chart, name="qkv-attention", key="pg_qkv_map")
    st.dataframe(pd.DataFrame(weights, index=pd.Index(rows, name=t("qkv.query_index")), columns=list(cols)), width="content",
                 key="pg_qkv_table")
    export.export_chart(chart, "qkv-attention", "pg_qkv_chart")
    export.export_data({"q": q, "k": k, "v": v, "weights": weights, "output": output},
                       pd.DataFrame(weights, index=list(rows), columns=list(cols)).reset_index(names="query"),
                       "qkv-attention", "pg_qkv_data")
