"""Attention playground: scores → softmax with β from soft to hard, why scale by √d, the four score
functions, the key-value store analogy, Q/K/V as learned projections (self vs cross), and the same layer as PyTorch's
nn.MultiheadAttention.

Each section is built only while it is open (``presentation.section``: the first is), and sections are
fragments: β, hard and the cell editors rerun sections 1, 3 and 4 (written into their slots of the
page), the range of d section 2, the projection's mode and head sections 5 and 6; a new seed reruns the page.
Every chart is drawn from its cached spec. Every word shown comes from the ``playground`` messages in the session's
language (:mod:`app.ui.language`); the formulas and the numbers are the code's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, glossary, language, presentation, tables, vega, widgets
from app.charts import teaching as charts
from app.views.parts import qkv_section, torch_mha_section
from core import attention, lessons

DIMS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
N_VECTORS = 5
# each score function: its formula, its chart title's formula and its name's message
SCORE_FORMULAS = {
    "additive": (r"s = v^\top \tanh(W_q q + W_k k)", "vᵀ tanh(W_q q + W_k k)", "scores.additive"),
    "general": (r"s = q^\top W k", "qᵀ W k", "scores.general"),
    "dot": (r"s = q^\top k", "qᵀ k", "scores.dot"),
    "scaled dot": (r"s = \dfrac{q^\top k}{\sqrt{d}}", "qᵀ k / √d", "scores.scaled_dot"),
}


def _dims(text: str) -> tuple[int, int]:
    low, high = (int(v) for v in text.split(","))
    if low not in DIMS or high not in DIMS or low > high:
        raise ValueError(text)
    return low, high


widgets.restore_from_url({"pg_seed": widgets.bounded(0, 9999), "pg_beta": widgets.bounded(0.0, 20.0, float),
                          "pg_hard": widgets.parse_bool, "pg_dims": _dims,
                          "pg_qkv_mode": widgets.one_of(qkv_section.MODES)},
                         {"pg_seed": 0, "pg_beta": 1.0, "pg_hard": False, "pg_qkv_mode": "encoder self", "pg_qkv_head": 0})
if st.session_state.get("_pg_seed_used") != st.session_state["pg_seed"]:
    # A new seed draws new vectors: forget the edits made to the old ones.
    for key in ("pg_vectors", "pg_query"):
        st.session_state.pop(key, None)
    st.session_state["_pg_seed_used"] = st.session_state["pg_seed"]
fs = widgets.font_scale()
lang = language.current()
t = language.words("playground")

presentation.opening(t("opening.title"), t("opening.intro"))


# ----------------------------------------------------------------------------- soft vs hard
@st.fragment(key="pg_weights")
def weights_sections(slots) -> None:
    """Sections 1, 3 and 4, each in its slot of the page: they all read the vectors, the query and β, so
    β, hard, the seed and the cell editors rerun them alone (section 3's charts come from their cached
    specs; a new seed reruns the whole page)."""
    with slots[0]:
        drawn = presentation.section(t("weights.title"), "pg-weights", soft_hard_section, first=True)
    seed, beta, hard, vectors, query = drawn or _drawn_inputs()  # section 1 closed: its edits are gone too
    with slots[2]:
        presentation.section(t("scores.title"), "pg-scores", score_functions_section, vectors, query, seed)
    with slots[3]:
        presentation.section(t("store.title"), "pg-store", key_value_section, vectors, query, seed, beta)
    widgets.write_to_url(["pg_seed", "pg_beta", "pg_hard"])


def _drawn_inputs() -> tuple[int, float, bool, np.ndarray, np.ndarray]:
    """(seed, β, hard, vectors, query) as the seed draws them, without section 1's editors."""
    seed, beta, hard = int(st.session_state["pg_seed"]), float(st.session_state["pg_beta"]), st.session_state["pg_hard"]
    drawn = lessons.random_vectors(N_VECTORS + 1, 2, seed)  # (N + 1, 2): the vectors, then the query
    return seed, beta, hard, drawn[:N_VECTORS], drawn[N_VECTORS]


def soft_hard_section():
    """Section 1's text, controls and cell editors; draws the weights and returns (seed, β, hard, vectors,
    query)."""
    with presentation.folded(t("weights.folded")):
        st.markdown(t("weights.intro"))
        glossary.beta_note(t("weights.beta_where"))
        st.latex(r"s_i = \frac{q^\top x_i}{\sqrt{d}}, \qquad "
                 r"a_i = \frac{e^{\beta s_i}}{\sum_j e^{\beta s_j}} \;(\text{" + t("weights.soft") + "})")
        st.latex(r"a = \mathrm{onehot}(\arg\max_i s_i) \;(\text{" + t("weights.hard") + r"}), \qquad h = \sum_i a_i x_i")
    controls, editors = st.columns([1, 2])
    with controls:
        st.number_input(t("weights.seed"), 0, 9999, step=1, key="pg_seed", help=t("weights.seed_help"))
        st.toggle(t("weights.hard_toggle"), key="pg_hard", help=t("weights.hard_help"))
        st.slider(t("weights.beta"), 0.0, 20.0, step=0.1, key="pg_beta", disabled=st.session_state["pg_hard"],
                  help=t("weights.beta_help"))
    if int(st.session_state["pg_seed"]) != st.session_state.get("_pg_seed_used"):
        st.rerun()  # a new seed draws new numbers for every section: the whole page
    seed, beta, hard = int(st.session_state["pg_seed"]), float(st.session_state["pg_beta"]), st.session_state["pg_hard"]
    drawn = lessons.random_vectors(N_VECTORS + 1, 2, seed)
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    number = st.column_config.NumberColumn(min_value=-10.0, max_value=10.0, step=0.01, format="%.2f")
    dims = [t("columns.dim", n=1), t("columns.dim", n=2)]
    with editors, presentation.folded(t("weights.editors"), ":material/edit:"):
        st.caption(t("weights.vectors"))
        vectors_in = st.data_editor(pd.DataFrame(drawn[:N_VECTORS], index=names, columns=dims),
                                    key="pg_vectors", column_config=dict.fromkeys(dims, number))
        st.caption(t("weights.query"))
        query_in = st.data_editor(pd.DataFrame(drawn[N_VECTORS:], index=["q"], columns=dims),
                                  key="pg_query", column_config=dict.fromkeys(dims, number))
    vectors = vectors_in.to_numpy(dtype=float)
    query = query_in.to_numpy(dtype=float)[0]
    if not (np.isfinite(vectors).all() and np.isfinite(query).all()):
        st.warning(t("weights.empty_cells"))
        vectors, query = np.nan_to_num(vectors), np.nan_to_num(query)
    _weights(vectors, query, beta, hard, editors)
    return seed, beta, hard, vectors, query


def _weights(vectors: np.ndarray, query: np.ndarray, beta: float, hard: bool, editors) -> None:
    """Section 1's scores, weights and output h, as bars, a table and the 2-D picture, with their exports
    (in presentation mode the bars go under the ``editors`` popover)."""
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    dots = vectors @ query  # q·x
    scores = dots / np.sqrt(vectors.shape[1])  # q·x/√d: what β multiplies
    # core scales the scores by β before the argmax; at β = 0 every score would tie, so hard uses β = 1 there.
    weights = lessons.attention_row(scores, beta if (beta > 0 or not hard) else 1.0, hard)
    output = weights @ vectors
    mode = t("weights.mode_hard") if hard else t("weights.mode_soft")  # the chart's spec stays, its rows move
    table = pd.DataFrame({t("columns.vector"): names, t("columns.dim", n=1): vectors[:, 0],
                          t("columns.dim", n=2): vectors[:, 1], "q·x": dots, "q·x/√d": scores,
                          t("columns.weight"): weights})
    # presentation mode: the editors are a popover, so the weights chart fills the rest of the controls' row
    left, right = (editors, st.container()) if presentation.enabled() else st.columns(2)
    with left:
        weight_chart = vega.draw_rows(charts.weights_bar, charts.weight_rows(names, weights, scores), names,
                                      scores=True, title=t("weights.chart_title", mode=mode), font_scale=fs,
                                      subtitle=t("weights.chart_subtitle"), lang=lang)
        st.dataframe(table, hide_index=True, width="content")
        st.latex(rf"h = \sum_i a_i x_i = ({output[0]:.3f},\; {output[1]:.3f})")
    with right:
        points = charts.vectors_rows(vectors, names, query, weights, output)
        vega.draw_rows(charts.vectors_plot, points, bound=charts.vectors_bound(points), font_scale=fs, lang=lang)
    e1, e2 = st.columns(2)
    with e1:
        export.export_chart(weight_chart, "attention-weights", "pg_weights_chart")
    with e2:
        export.export_data({"vectors": vectors, "query": query, "dot": dots, "scaled": scores, "beta": np.asarray(beta),
                            "hard": np.asarray(hard), "weights": weights, "output": output},
                           table, "attention-weights", "pg_weights_data")


# ----------------------------------------------------------------------------- scaling
@st.fragment(key="pg_scaling")
def scaling_section(seed: int) -> None:
    """Section 2: why the scores are divided by √d (its range of d reruns it alone)."""
    st.markdown(t("scaling.intro"))
    st.latex(r"\operatorname{Var}(q^\top k) = \sum_{j=1}^{d} \operatorname{Var}(q_j k_j) = d "
             r"\quad\Rightarrow\quad \operatorname{std}\!\left(\frac{q^\top k}{\sqrt{d}}\right) = 1")
    st.latex(r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    glossary.show_code(attention, t("scaling.code"))
    # A range slider is a range only when given a pair as its value; the key's state still wins.
    st.select_slider(t("scaling.dims"), options=DIMS, value=(DIMS[0], DIMS[-1]), key="pg_dims")
    low, high = st.session_state["pg_dims"]
    chosen = [d for d in DIMS if low <= d <= high]
    sat = tables.saturation_frame(lessons.saturation(chosen, seed), charts.saturation_columns(lang))
    sat_chart = vega.draw(charts.saturation_chart, sat, font_scale=fs, lang=lang)
    st.caption(t("scaling.caption", seed=seed))
    st.dataframe(sat, hide_index=True, width="content")
    export.export_chart(sat_chart, "softmax-saturation", "pg_sat_chart")
    widgets.write_to_url(["pg_dims"])


# ----------------------------------------------------------------------------- score functions
def score_functions_section(vectors, query, seed: int) -> None:
    """Section 3: additive, general, dot and scaled-dot scores of section 1's query and vectors."""
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    st.markdown(t("scores.intro"))
    functions = lessons.score_functions(query, vectors, seed)
    grid = st.columns(2)
    rows = {t("columns.vector"): names}
    for n, (name, result) in enumerate(functions.items()):
        latex, formula, title = SCORE_FORMULAS[name]
        with grid[n % 2]:
            st.subheader(t(title)[:1].upper() + t(title)[1:])
            st.latex(latex)
            vega.draw(charts.weights_bar, charts.weight_rows(names, result.weights, result.scores), names,
                      scores=True, title=f"{t(title)}: {formula}", font_scale=fs, width=300, lang=lang)
        rows[t("scores.score_column", name=t(title))] = result.scores
        rows[t("scores.weight_column", name=t(title))] = result.weights
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="content")
    parameters = presentation.opened(t("scores.parameters"), "pg_parameters_open")
    if parameters:
        with parameters:
            for name, result in functions.items():
                for pname, value in result.params.items():
                    st.caption(f"{t(SCORE_FORMULAS[name][2])}: {pname}")
                    st.dataframe(pd.DataFrame(np.atleast_2d(value)), width="content")


# ----------------------------------------------------------------------------- key-value store
def key_value_section(vectors, query, seed: int, beta: float) -> None:
    """Section 4: attention as a soft dictionary look-up, against the hard one."""
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    st.markdown(t("store.intro"))
    st.latex(r"a = \mathrm{softmax}\!\left(\beta\,\frac{K q}{\sqrt{d}}\right), \qquad h_{\text{soft}} = \sum_i a_i v_i \qquad\text{vs}\qquad "
             r"h_{\text{hard}} = v_{\arg\max_i\, k_i^\top q}")
    values = lessons.random_vectors(N_VECTORS, 3, seed + 7)
    lookup = lessons.kv_lookup(query, vectors, values, beta)
    best = lookup.best
    kv_table = pd.DataFrame({
        t("store.key"): names, t("store.key_vector"): [f"({k[0]:.2f}, {k[1]:.2f})" for k in vectors],
        t("store.value"): [f"v{i + 1}" for i in range(N_VECTORS)],
        t("store.value_vector"): [f"({v[0]:.2f}, {v[1]:.2f}, {v[2]:.2f})" for v in values],
        "q·k": lookup.scores * np.sqrt(len(query)), "q·k/√d": lookup.scores, t("columns.weight"): lookup.weights,
        t("store.hard_lookup"): [t("store.best") if i == best else "" for i in range(N_VECTORS)],
    })
    st.dataframe(kv_table, hide_index=True, width="content")
    series = [t("store.soft_series"), t("store.hard_series", n=best + 1)]  # a move of β sends new rows only
    kv_frame = pd.concat([pd.DataFrame({"component": ["1", "2", "3"], "series": name, "value": value})
                          for name, value in zip(series, (lookup.retrieved, lookup.hard))], ignore_index=True)
    vega.draw_rows(charts.grouped_bars, kv_frame, series, title=t("store.chart_title"), font_scale=fs, lang=lang)
    st.caption(t("store.caption"))


# ----------------------------------------------------------------------------- projections
@st.fragment(key="pg_projections")
def projection_sections(seed: int) -> None:
    """Sections 5 and 6: Q, K, V as projections and the same layer in PyTorch (the mode and head rerun them)."""
    presentation.section(t("qkv.title"), "pg-projections", qkv_section.render, seed, fs)
    presentation.section(t("torch.title"), "pg-torch", torch_mha_section.render, fs)
    widgets.write_to_url(["pg_qkv_mode"])


slots = [st.container() for _ in range(4)]  # sections 1 to 4, in the page's order
weights_sections(slots)
with slots[1]:
    presentation.section(t("scaling.title"), "pg-scaling", scaling_section, int(st.session_state["pg_seed"]))
projection_sections(int(st.session_state["pg_seed"]))
