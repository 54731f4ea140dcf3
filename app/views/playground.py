"""Attention playground: scores → softmax with β from soft to hard, why scale by √d, the four score
functions, the key-value store analogy, Q/K/V as learned projections (self vs cross), and the same layer as PyTorch's
nn.MultiheadAttention.

Each section is built only while it is open (``presentation.section``: the first is), and sections are
fragments: β, hard and the cell editors rerun sections 1, 3 and 4 (written into their slots of the
page), the range of d section 2, the projection's mode and head sections 5 and 6; a new seed reruns the page.
Every chart is drawn from its cached spec."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, glossary, presentation, tables, vega, widgets
from app.charts import teaching as charts
from app.views.parts import qkv_section, torch_mha_section
from core import attention, lessons

DIMS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
N_VECTORS = 5
SCORE_FORMULAS = {
    "additive": (r"s = v^\top \tanh(W_q q + W_k k)", "additive: vᵀ tanh(W_q q + W_k k)"),
    "general": (r"s = q^\top W k", "general: qᵀ W k"),
    "dot": (r"s = q^\top k", "dot: qᵀ k"),
    "scaled dot": (r"s = \dfrac{q^\top k}{\sqrt{d}}", "scaled dot: qᵀ k / √d"),
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

presentation.opening("Attention playground", (
    "Attention is a **weighted average**: a query is compared with a set of vectors, the comparison scores "
    "become weights that sum to 1, and the output is the weighted mix. Everything below is small enough to "
    "follow by hand; change the numbers and watch the weights move."))


# ----------------------------------------------------------------------------- soft vs hard
@st.fragment(key="pg_weights")
def weights_sections(slots) -> None:
    """Sections 1, 3 and 4, each in its slot of the page: they all read the vectors, the query and β, so
    β, hard, the seed and the cell editors rerun them alone (section 3's charts come from their cached
    specs; a new seed reruns the whole page)."""
    with slots[0]:
        drawn = presentation.section("1 · Scores → softmax, from soft to hard", "pg-weights", soft_hard_section,
                                     first=True)
    seed, beta, hard, vectors, query = drawn or _drawn_inputs()  # section 1 closed: its edits are gone too
    with slots[2]:
        presentation.section("3 · Four ways to score a query against a key", "pg-scores", score_functions_section,
                             vectors, query, seed)
    with slots[3]:
        presentation.section("4 · Attention as a soft key-value store", "pg-store", key_value_section, vectors,
                             query, seed, beta)
    widgets.write_to_url(["pg_seed", "pg_beta", "pg_hard"])


def _drawn_inputs() -> tuple[int, float, bool, np.ndarray, np.ndarray]:
    """(seed, β, hard, vectors, query) as the seed draws them, without section 1's editors."""
    seed, beta, hard = int(st.session_state["pg_seed"]), float(st.session_state["pg_beta"]), st.session_state["pg_hard"]
    drawn = lessons.random_vectors(N_VECTORS + 1, 2, seed)  # (N + 1, 2): the vectors, then the query
    return seed, beta, hard, drawn[:N_VECTORS], drawn[N_VECTORS]


def soft_hard_section():
    """Section 1's text, controls and cell editors; draws the weights and returns (seed, β, hard, vectors,
    query)."""
    with presentation.folded("Scores, softmax and β"):
        st.markdown(
            "Each vector xᵢ gets a score: its dot product with the query q (large when they point the same way), "
            "divided by √d as the Transformer does (d = 2 here). The softmax turns the scores into weights that sum "
            "to 1. Larger β sharpens the weights, and in the limit only the best match survives: **hard** attention "
            "(argmax, a one-hot vector). Soft attention keeps ‖a‖₁ = 1 with every weight positive; hard attention has "
            "‖a‖₀ = 1.")
        glossary.beta_note("β multiplies the scaled scores s_i = q·x_i/√d in sections 1 and 4; sections 2, 3 and 5 "
                           "use β = 1.")
        st.latex(r"s_i = \frac{q^\top x_i}{\sqrt{d}}, \qquad "
                 r"a_i = \frac{e^{\beta s_i}}{\sum_j e^{\beta s_j}} \;(\text{soft})")
        st.latex(r"a = \mathrm{onehot}(\arg\max_i s_i) \;(\text{hard}), \qquad h = \sum_i a_i x_i")
    controls, editors = st.columns([1, 2])
    with controls:
        st.number_input("Random seed", 0, 9999, step=1, key="pg_seed",
                        help="Draws new vectors, query and weight matrices for the whole page.")
        st.toggle("Hard attention (argmax)", key="pg_hard",
                  help="The limit β → ∞: all the weight on the best-scoring vector.")
        st.slider("Inverse temperature β", 0.0, 20.0, step=0.1, key="pg_beta", disabled=st.session_state["pg_hard"],
                  help="Multiplies the scores before the softmax. It cannot move the argmax, so hard attention "
                       "ignores it.")
    if int(st.session_state["pg_seed"]) != st.session_state.get("_pg_seed_used"):
        st.rerun()  # a new seed draws new numbers for every section: the whole page
    seed, beta, hard = int(st.session_state["pg_seed"]), float(st.session_state["pg_beta"]), st.session_state["pg_hard"]
    drawn = lessons.random_vectors(N_VECTORS + 1, 2, seed)
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    number = st.column_config.NumberColumn(min_value=-10.0, max_value=10.0, step=0.01, format="%.2f")
    with editors, presentation.folded("The vectors and the query (edit any cell)", ":material/edit:"):
        st.caption("The vectors (edit any cell):")
        vectors_in = st.data_editor(pd.DataFrame(drawn[:N_VECTORS], index=names, columns=["dim 1", "dim 2"]),
                                    key="pg_vectors", column_config={"dim 1": number, "dim 2": number})
        st.caption("The query:")
        query_in = st.data_editor(pd.DataFrame(drawn[N_VECTORS:], index=["q"], columns=["dim 1", "dim 2"]),
                                  key="pg_query", column_config={"dim 1": number, "dim 2": number})
    vectors = vectors_in.to_numpy(dtype=float)
    query = query_in.to_numpy(dtype=float)[0]
    if not (np.isfinite(vectors).all() and np.isfinite(query).all()):
        st.warning("Empty cells count as 0.")
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
    mode = "hard, argmax" if hard else "soft"  # β is the slider's: the chart's spec stays, its rows move
    table = pd.DataFrame({"vector": names, "dim 1": vectors[:, 0], "dim 2": vectors[:, 1], "q·x": dots,
                          "q·x/√d": scores, "weight": weights})
    # presentation mode: the editors are a popover, so the weights chart fills the rest of the controls' row
    left, right = (editors, st.container()) if presentation.enabled() else st.columns(2)
    with left:
        weight_chart = vega.draw_rows(charts.weights_bar, charts.weight_rows(names, weights, scores), names,
                                      scores=True, title=f"Attention weights ({mode})", font_scale=fs,
                                      subtitle="they always sum to 1")
        st.dataframe(table, hide_index=True, width="content")
        st.latex(rf"h = \sum_i a_i x_i = ({output[0]:.3f},\; {output[1]:.3f})")
    with right:
        points = charts.vectors_rows(vectors, names, query, weights, output)
        vega.draw_rows(charts.vectors_plot, points, bound=charts.vectors_bound(points), font_scale=fs)
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
    st.markdown(
        "If the entries of q and k are independent with mean 0 and variance 1, their dot product is a sum of d "
        "such products: its variance is d, its spread √d. In high dimensions the scores are therefore huge, the "
        "softmax puts almost all the weight on one key and its gradients vanish. Dividing by √d — the notes' inverse "
        "temperature 1/√d, built into the model (the β slider multiplies on top of it) — keeps the spread near 1 "
        "whatever the width.")
    st.latex(r"\operatorname{Var}(q^\top k) = \sum_{j=1}^{d} \operatorname{Var}(q_j k_j) = d "
             r"\quad\Rightarrow\quad \operatorname{std}\!\left(\frac{q^\top k}{\sqrt{d}}\right) = 1")
    st.latex(r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    glossary.show_code(attention, "The code: core.attention (scores, √d_k, β, masks, softmax)")
    # A range slider is a range only when given a pair as its value; the key's state still wins.
    st.select_slider("Dimensions d", options=DIMS, value=(DIMS[0], DIMS[-1]), key="pg_dims")
    low, high = st.session_state["pg_dims"]
    chosen = [d for d in DIMS if low <= d <= high]
    sat = tables.saturation_frame(lessons.saturation(chosen, seed))
    sat_chart = vega.draw(charts.saturation_chart, sat, font_scale=fs)
    st.caption(f"Random q and 8 keys with standard-normal entries, 256 queries per d (seed {seed}). Without the "
               "scale the largest weight heads for 1 (one-hot); with it, it stays put.")
    st.dataframe(sat, hide_index=True, width="content")
    export.export_chart(sat_chart, "softmax-saturation", "pg_sat_chart")
    widgets.write_to_url(["pg_dims"])


# ----------------------------------------------------------------------------- score functions
def score_functions_section(vectors, query, seed: int) -> None:
    """Section 3: additive, general, dot and scaled-dot scores of section 1's query and vectors."""
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    st.markdown(
        "Before the Transformer, attention came in several flavours. **Additive** (Bahdanau) runs query and key "
        "through a small one-hidden-layer network; **general** (Luong) puts a learned matrix between them; **dot** "
        "needs no parameters at all; **scaled dot** is the Transformer's dot product divided by √d. Below: the same "
        "query and vectors as in section 1, small random W's (seeded), softmax with β = 1. **Trade-offs**: additive "
        "and general have parameters to learn (additive the most) and additive is reported to do better than the "
        "*unscaled* dot product when d is large; the dot products need no parameters and run as one fast matrix "
        "product, and the √d scale removes the large-d problem — which is why the Transformer uses scaled dot.")
    functions = lessons.score_functions(query, vectors, seed)
    grid = st.columns(2)
    rows = {"vector": names}
    for n, (name, result) in enumerate(functions.items()):
        latex, text = SCORE_FORMULAS[name]
        with grid[n % 2]:
            st.subheader(name.capitalize())
            st.latex(latex)
            vega.draw(charts.weights_bar, charts.weight_rows(names, result.weights, result.scores), names,
                      scores=True, title=text, font_scale=fs, width=300)
        rows[f"{name} score"] = result.scores
        rows[f"{name} weight"] = result.weights
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="content")
    parameters = presentation.opened("The random parameters", "pg_parameters_open")
    if parameters:
        with parameters:
            for name, result in functions.items():
                for pname, value in result.params.items():
                    st.caption(f"{name}: {pname}")
                    st.dataframe(pd.DataFrame(np.atleast_2d(value)), width="content")


# ----------------------------------------------------------------------------- key-value store
def key_value_section(vectors, query, seed: int, beta: float) -> None:
    """Section 4: attention as a soft dictionary look-up, against the hard one."""
    names = [f"x{i + 1}" for i in range(N_VECTORS)]
    st.markdown(
        "A dictionary answers a query by finding the **key** that matches exactly and returning its **value**. "
        "Think of looking up a recipe: the query is what you want to cook, the keys are the recipe titles, the "
        "values are the recipes. Attention does a soft version: it scores the query against every key and returns "
        "a mix of **all** the values, weighted by how well each key matched. Keys must have the query's size; "
        "values can have any size (here 3). With a large β it becomes an ordinary, hard lookup.")
    st.latex(r"a = \mathrm{softmax}\!\left(\beta\,\frac{K q}{\sqrt{d}}\right), \qquad h_{\text{soft}} = \sum_i a_i v_i \qquad\text{vs}\qquad "
             r"h_{\text{hard}} = v_{\arg\max_i\, k_i^\top q}")
    values = lessons.random_vectors(N_VECTORS, 3, seed + 7)
    lookup = lessons.kv_lookup(query, vectors, values, beta)
    best = lookup.best
    kv_table = pd.DataFrame({
        "key": names, "key vector": [f"({k[0]:.2f}, {k[1]:.2f})" for k in vectors],
        "value": [f"v{i + 1}" for i in range(N_VECTORS)],
        "value vector": [f"({v[0]:.2f}, {v[1]:.2f}, {v[2]:.2f})" for v in values],
        "q·k": lookup.scores * np.sqrt(len(query)), "q·k/√d": lookup.scores, "weight": lookup.weights,
        "hard lookup": ["← best match" if i == best else "" for i in range(N_VECTORS)],
    })
    st.dataframe(kv_table, hide_index=True, width="content")
    series = ["soft retrieval", f"hard lookup (v{best + 1})"]  # β is the slider's: a move sends new rows only
    kv_frame = pd.concat([pd.DataFrame({"component": ["1", "2", "3"], "series": name, "value": value})
                          for name, value in zip(series, (lookup.retrieved, lookup.hard))], ignore_index=True)
    vega.draw_rows(charts.grouped_bars, kv_frame, series, title="What the query retrieves", font_scale=fs)
    st.caption("Move β in section 1: at 0 the store returns the plain average of all values; as β grows the "
               "soft retrieval converges to the hard lookup.")


# ----------------------------------------------------------------------------- projections
@st.fragment(key="pg_projections")
def projection_sections(seed: int) -> None:
    """Sections 5 and 6: Q, K, V as projections and the same layer in PyTorch (the mode and head rerun them)."""
    presentation.section("5 · Q, K and V are projections", "pg-projections", qkv_section.render, seed, fs)
    presentation.section("6 · The same layer in PyTorch: nn.MultiheadAttention", "pg-torch", torch_mha_section.render,
                         fs)
    widgets.write_to_url(["pg_qkv_mode"])


slots = [st.container() for _ in range(4)]  # sections 1 to 4, in the page's order
weights_sections(slots)
with slots[1]:
    presentation.section("2 · Why divide by √d", "pg-scaling", scaling_section, int(st.session_state["pg_seed"]))
projection_sections(int(st.session_state["pg_seed"]))
