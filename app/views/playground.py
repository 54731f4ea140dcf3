"""Attention playground: scores → softmax with β from soft to hard, why scale by √d, the four score
functions, the key-value store analogy, and Q/K/V as learned projections (self vs cross)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import export, tables, ui
from app.charts import teaching as charts
from app.charts.base import SEQUENTIAL
from core import attention_row, kv_lookup, qkv_projection, random_vectors, saturation, score_functions

DIMS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
N_VECTORS = 5
X_TOKENS = ["<bos>", "I", "have", "cats"]  # the decoder side of the notes' translation example
Y_TOKENS = ["Yo", "tengo", "gatos"]  # the encoder side
SCORE_FORMULAS = {
    "additive": (r"\mathrm{score}(q, k) = v^\top \tanh(W_q q + W_k k)", "additive: vᵀ tanh(W_q q + W_k k)"),
    "general": (r"\mathrm{score}(q, k) = q^\top W k", "general: qᵀ W k"),
    "dot": (r"\mathrm{score}(q, k) = q^\top k", "dot: qᵀ k"),
    "scaled dot": (r"\mathrm{score}(q, k) = \dfrac{q^\top k}{\sqrt{d}}", "scaled dot: qᵀ k / √d"),
}


def _dims(text: str) -> tuple[int, int]:
    low, high = (int(v) for v in text.split(","))
    if low not in DIMS or high not in DIMS or low > high:
        raise ValueError(text)
    return low, high


ui.restore_from_url({"pg_seed": ui.bounded(0, 9999), "pg_beta": ui.bounded(0.0, 20.0, float),
                     "pg_hard": ui.parse_bool, "pg_dims": _dims, "pg_cross": ui.parse_bool},
                    {"pg_seed": 0, "pg_beta": 1.0, "pg_hard": False, "pg_cross": False})
if st.session_state.get("_pg_seed_used") != st.session_state["pg_seed"]:
    # A new seed draws new vectors: forget the edits made to the old ones.
    for key in ("pg_vectors", "pg_query"):
        st.session_state.pop(key, None)
    st.session_state["_pg_seed_used"] = st.session_state["pg_seed"]
fs = ui.font_scale()

st.title("Attention playground")
st.markdown(
    "Attention is a **weighted average**: a query is compared with a set of vectors, the comparison scores "
    "become weights that sum to 1, and the output is the weighted mix. Everything below is small enough to "
    "follow by hand; change the numbers and watch the weights move.")

# ----------------------------------------------------------------------------- soft vs hard
st.header("1 · Scores → softmax, from soft to hard")
st.markdown(
    "Each vector xᵢ gets a score: its dot product with the query q (large when they point the same way). "
    "The softmax turns scores into weights; the **inverse temperature β** multiplies the scores first. "
    "β = 0 gives every vector the same weight, larger β sharpens the weights, and in the limit only the best "
    "match survives: **hard** attention (argmax, a one-hot vector). Soft attention keeps ‖a‖₁ = 1 with "
    "every weight positive; hard attention has ‖a‖₀ = 1.")
st.latex(r"s_i = q^\top x_i, \qquad a_i = \frac{e^{\beta s_i}}{\sum_j e^{\beta s_j}} \;(\text{soft}) "
         r"\quad\text{or}\quad a = \mathrm{onehot}(\arg\max_i s_i) \;(\text{hard}), \qquad h = \sum_i a_i x_i")
controls, editors = st.columns([1, 2])
with controls:
    st.number_input("Random seed", 0, 9999, step=1, key="pg_seed",
                    help="Draws new vectors, query and weight matrices for the whole page.")
    st.toggle("Hard attention (argmax)", key="pg_hard",
              help="The limit β → ∞: all the weight on the best-scoring vector.")
    st.slider("Inverse temperature β", 0.0, 20.0, step=0.1, key="pg_beta", disabled=st.session_state["pg_hard"],
              help="Multiplies the scores before the softmax. It cannot move the argmax, so hard attention "
                   "ignores it.")
seed, beta, hard = int(st.session_state["pg_seed"]), float(st.session_state["pg_beta"]), st.session_state["pg_hard"]
drawn = random_vectors(N_VECTORS + 1, 2, seed)
names = [f"x{i + 1}" for i in range(N_VECTORS)]
number = st.column_config.NumberColumn(min_value=-10.0, max_value=10.0, step=0.01, format="%.2f")
with editors:
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
scores = vectors @ query
# core scales the scores by β before the argmax; at β = 0 every score would tie, so hard uses β = 1 there.
weights = attention_row(scores, beta if (beta > 0 or not hard) else 1.0, hard)
output = weights @ vectors
mode = "hard (argmax)" if hard else f"soft, β = {beta:g}"
table = pd.DataFrame({"vector": names, "dim 1": vectors[:, 0], "dim 2": vectors[:, 1], "score q·x": scores,
                      "weight": weights})
left, right = st.columns(2)
with left:
    weight_chart = charts.weights_bar(names, weights, scores=scores, title=f"Attention weights ({mode})",
                                      font_scale=fs, subtitle="they always sum to 1")
    st.altair_chart(weight_chart, width="content")
    st.dataframe(table, hide_index=True, width="content")
    st.latex(rf"h = \sum_i a_i x_i = ({output[0]:.3f},\; {output[1]:.3f})")
with right:
    plot = charts.vectors_plot(vectors, names, query, weights, output, font_scale=fs)
    st.altair_chart(plot, width="content")
e1, e2 = st.columns(2)
with e1:
    export.export_chart(weight_chart, "attention-weights", "pg_weights_chart")
with e2:
    export.export_data({"vectors": vectors, "query": query, "scores": scores, "weights": weights, "output": output},
                   table, "attention-weights", "pg_weights_data")

# ----------------------------------------------------------------------------- scaling
st.header("2 · Why divide by √d")
st.markdown(
    "If the entries of q and k are independent with mean 0 and variance 1, their dot product is a sum of d "
    "such products: its variance is d, its spread √d. In high dimensions the scores are therefore huge, the "
    "softmax puts almost all the weight on one key and its gradients vanish. Dividing by √d — an inverse "
    "temperature β = 1/√d — keeps the spread near 1 whatever the width.")
st.latex(r"\operatorname{Var}(q^\top k) = \sum_{j=1}^{d} \operatorname{Var}(q_j k_j) = d "
         r"\quad\Rightarrow\quad \operatorname{std}\!\left(\frac{q^\top k}{\sqrt{d}}\right) = 1, \qquad "
         r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
# A range slider is a range only when given a pair as its value; the key's state still wins.
st.select_slider("Dimensions d", options=DIMS, value=(DIMS[0], DIMS[-1]), key="pg_dims")
low, high = st.session_state["pg_dims"]
chosen = [d for d in DIMS if low <= d <= high]
sat = tables.saturation_frame(saturation(chosen, seed))
sat_chart = charts.saturation_chart(sat, font_scale=fs)
st.altair_chart(sat_chart, width="content")
st.caption(f"Random q and 8 keys with standard-normal entries, 256 queries per d (seed {seed}). Without the "
           "scale the largest weight heads for 1 (one-hot); with it, it stays put.")
st.dataframe(sat, hide_index=True, width="content")
export.export_chart(sat_chart, "softmax-saturation", "pg_sat_chart")

# ----------------------------------------------------------------------------- score functions
st.header("3 · Four ways to score a query against a key")
st.markdown(
    "Before the Transformer, attention came in several flavours. **Additive** (Bahdanau) runs query and key "
    "through a small one-hidden-layer network; **general** (Luong) puts a learned matrix between them; **dot** "
    "needs no parameters at all; **scaled dot** is the Transformer's dot product divided by √d. Below: the same "
    "query and vectors as in section 1, small random W's (seeded), softmax with β = 1.")
functions = score_functions(query, vectors, seed)
grid = st.columns(2)
rows = {"vector": names}
for n, (name, result) in enumerate(functions.items()):
    latex, text = SCORE_FORMULAS[name]
    with grid[n % 2]:
        st.subheader(name.capitalize())
        st.latex(latex)
        st.altair_chart(charts.weights_bar(names, result.weights, scores=result.scores, title=text,
                                           font_scale=fs, width=300), width="content")
    rows[f"{name} score"] = result.scores
    rows[f"{name} weight"] = result.weights
st.dataframe(pd.DataFrame(rows), hide_index=True, width="content")
with st.expander("The random parameters"):
    for name, result in functions.items():
        for pname, value in result.params.items():
            st.caption(f"{name}: {pname}")
            st.dataframe(pd.DataFrame(np.atleast_2d(value)), width="content")

# ----------------------------------------------------------------------------- key-value store
st.header("4 · Attention as a soft key-value store")
st.markdown(
    "A dictionary answers a query by finding the **key** that matches exactly and returning its **value**. "
    "Think of looking up a recipe: the query is what you want to cook, the keys are the recipe titles, the "
    "values are the recipes. Attention does a soft version: it scores the query against every key and returns "
    "a mix of **all** the values, weighted by how well each key matched. Keys must have the query's size; "
    "values can have any size (here 3). With a large β it becomes an ordinary, hard lookup.")
st.latex(r"a = \mathrm{softmax}_\beta(K q), \qquad h_{\text{soft}} = \sum_i a_i v_i \qquad\text{vs}\qquad "
         r"h_{\text{hard}} = v_{\arg\max_i\, k_i^\top q}")
values = random_vectors(N_VECTORS, 3, seed + 7)
lookup = kv_lookup(query, vectors, values, beta)
best = lookup.best
kv_table = pd.DataFrame({
    "key": names, "key vector": [f"({k[0]:.2f}, {k[1]:.2f})" for k in vectors],
    "value": [f"v{i + 1}" for i in range(N_VECTORS)],
    "value vector": [f"({v[0]:.2f}, {v[1]:.2f}, {v[2]:.2f})" for v in values],
    "score q·k": lookup.scores, "weight": lookup.weights,
    "hard lookup": ["← best match" if i == best else "" for i in range(N_VECTORS)],
})
st.dataframe(kv_table, hide_index=True, width="content")
kv_frame = pd.concat([
    pd.DataFrame({"component": ["1", "2", "3"], "series": f"soft retrieval (β = {beta:g})",
                  "value": lookup.retrieved}),
    pd.DataFrame({"component": ["1", "2", "3"], "series": f"hard lookup (v{best + 1})", "value": lookup.hard}),
], ignore_index=True)
kv_chart = charts.grouped_bars(kv_frame, title="What the query retrieves", font_scale=fs)
st.altair_chart(kv_chart, width="content")
st.caption("Move β in section 1: at 0 the store returns the plain average of all values; as β grows the "
           "soft retrieval converges to the hard lookup.")

# ----------------------------------------------------------------------------- projections
st.header("5 · Q, K and V are learned projections")
st.markdown(
    "In a Transformer the queries, keys and values are not the raw vectors: each is the input multiplied by "
    "its own learned matrix — a learned rotation (and stretch) that decides what a token asks for (Q), what it "
    "offers to be found by (K) and what it hands over (V). In **self-attention** all three come from the same "
    "sequence X. In **cross-attention** the decoder's sequence X asks the queries while keys and values come "
    "from the encoder's sequence Y — here the notes' example: the decoder writing *I have cats* reads the "
    "Spanish *Yo tengo gatos*.")
st.toggle("Cross-attention: K and V from a second sequence Y", key="pg_cross")
cross = st.session_state["pg_cross"]
st.latex(r"Q = XW_Q,\quad K = SW_K,\quad V = SW_V,\quad S = " + (r"Y\;(\text{cross})" if cross else
                                                                  r"X\;(\text{self})")
         + r",\qquad \mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
x_in = random_vectors(len(X_TOKENS), 4, seed + 11)
y_in = random_vectors(len(Y_TOKENS), 4, seed + 13)
proj = qkv_projection(x_in, y_in, cross, seed)
k_tokens = Y_TOKENS if cross else X_TOKENS
dims4, dims3 = [f"d{j}" for j in range(4)], [f"k{j}" for j in range(3)]


def _matrix(matrix: np.ndarray, rows: list[str], cols: list[str], title: str, x_title: str = "dimension"):
    return charts.grid_heatmap(matrix, title=title, x_title=x_title, y_title="token", rows=rows, cols=cols,
                               symmetric=True, cell=46, font_scale=fs)


inputs = st.columns(2 if cross else 1)
with inputs[0]:
    st.altair_chart(_matrix(x_in, X_TOKENS, dims4, "X: the decoder's tokens" if cross else "X: the tokens"),
                    width="content")
if cross:
    with inputs[1]:
        st.altair_chart(_matrix(y_in, Y_TOKENS, dims4, "Y: the encoder's tokens"), width="content")
qkv = st.columns(3)
for col, (name, matrix, tokens) in zip(qkv, (("Q = XW_Q", proj.q, X_TOKENS),
                                             (f"K = {'Y' if cross else 'X'}W_K", proj.k, k_tokens),
                                             (f"V = {'Y' if cross else 'X'}W_V", proj.v, k_tokens))):
    with col:
        st.altair_chart(_matrix(matrix, tokens, dims3, name, "projected dimension"), width="content")
att_left, att_right = st.columns(2)
with att_left:
    attention_chart = charts.grid_heatmap(
        proj.weights, title=("Cross" if cross else "Self") + "-attention weights", x_title="key (attended to)",
        y_title="query (attending)", value="weight", rows=X_TOKENS, cols=k_tokens, scheme=SEQUENTIAL,
        domain=(0, 1), cell=56, font_scale=fs)
    st.altair_chart(attention_chart, width="content")
with att_right:
    st.altair_chart(_matrix(proj.output, X_TOKENS, dims3, "Output: softmax(QKᵀ/√d_k) V", "value dimension"),
                    width="content")
st.dataframe(pd.DataFrame(proj.weights, index=pd.Index(X_TOKENS, name="query"), columns=k_tokens),
             width="content")
st.success(f"core.attention(Q, K, V) matches softmax(QKᵀ/√d_k)V computed by hand: the largest difference is "
           f"{proj.max_error:.1e}.")
export.export_chart(attention_chart, "qkv-attention", "pg_qkv_chart")
st.markdown(
    "**Heads.** A layer runs h such attentions side by side, each with its own W_Q, W_K, W_V of width "
    "d_k = d_model / h, concatenates the h outputs and mixes them with one more matrix W_O. In practice the "
    "three matrices of every head are stacked into one big matrix, so one multiplication computes them all.")
st.latex(r"\mathrm{head}_i = \mathrm{Attention}(XW_Q^{i}, SW_K^{i}, SW_V^{i}), \qquad "
         r"\mathrm{MultiHead} = [\mathrm{head}_1; \dots; \mathrm{head}_h]\, W_O")

ui.write_to_url(["pg_seed", "pg_beta", "pg_hard", "pg_dims", "pg_cross"])
