"""The Explore page's attention views: the layer × head grid, one head, lines, the summary
(mean over heads, rollout, head statistics) and step-by-step generation.

Each view slices the cached :class:`~core.Explanation`; none of them runs the model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import export, ui
from app.charts import attention as charts
from core import KIND_LABELS, Explanation, head_statistics, mean_over_heads, rollout_by_layer

VIEWS = {"model": "Model view", "head": "Head view", "lines": "Lines", "summary": "Summary",
         "generation": "Generation"}


def _exports(figure, arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str) -> None:
    export.exports(figure, arrays, table, name, f"export-{name}")


# ----------------------------------------------------------------------------- view selection
def attention_controls(exp: Explanation) -> tuple[str, int, int, str]:
    """Kind, layer, head and view pickers, each clamped to this explanation's ranges."""
    kinds = list(exp.kinds)
    ui.choose("kind", kinds)
    views = [v for v in VIEWS if v != "generation" or exp.architecture != "encoder"]
    ui.choose("view", views, "head")
    kind = st.segmented_control("Attention", kinds, key="kind", required=True, format_func=KIND_LABELS.get)
    view = st.segmented_control("View", views, key="view", required=True, format_func=VIEWS.get)
    layers, heads = exp.shape(kind)
    first, second = st.columns(2, gap="large")
    with first:
        layer = ui.index_slider("Layer", layers, "layer")
    with second:
        head = ui.index_slider("Head", heads, "head")
    return kind, layer, head, view


def _pick_from_grid() -> None:
    picked = (st.session_state.get("grid") or {}).get("selection", {}).get(charts.PICK) or []
    if picked:
        st.session_state["layer"] = int(picked[0]["layer"])
        st.session_state["head"] = int(picked[0]["head"])


def _data(exp: Explanation, kind: str) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    queries, keys = exp.axis_tokens(kind)
    maps = exp.attention[kind]  # (L, H, Tq, Tk)
    return ({"attention": maps, "query_tokens": np.array(queries), "key_tokens": np.array(keys)},
            charts.tidy_maps(maps, queries, keys))


# ----------------------------------------------------------------------------- views
def model_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    grid = charts.model_grid(exp.attention[kind], queries, keys, title=f"{KIND_LABELS[kind]}: every layer × head",
                             chosen=(layer, head), font_scale=fs)
    ui.chart(grid, key="grid", on_select=_pick_from_grid, selection_mode=charts.PICK)
    _exports(grid, *_data(exp, kind), f"{kind}-all-heads")
    ui.chart(charts.head_heatmap(exp.attention[kind][layer, head], queries, keys,
                              title=f"Layer {layer}, head {head}", font_scale=fs))


def head_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    st.toggle("Show the scores before softmax", key="show_scores",
              help="The raw query·key scores (β-scaled, before masking) that softmax turns into weights.")
    figure = charts.head_heatmap(exp.attention[kind][layer, head], queries, keys,
                                 title=f"{KIND_LABELS[kind]} — layer {layer}, head {head}", font_scale=fs)
    if st.session_state.get("show_scores") and exp.scores:
        scores = charts.signed_heatmap(exp.scores[kind][layer, head], queries, keys, value="score",
                                       title="Scores before softmax", font_scale=fs)
        figure = charts.side_by_side(figure, scores)
    ui.chart(figure)
    _exports(figure, *_data(exp, kind), f"{kind}-L{layer}H{head}")
    st.caption("Each row is one query token; its weights over the key tokens sum to 1.")


def lines_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    heads = exp.shape(kind)[1]
    options = [*range(heads), "mean"]
    chosen = [h for h in st.session_state.get("line_heads", [head]) if h in options]
    st.session_state["line_heads"] = chosen
    picked = st.multiselect("Heads to overlay", options, key="line_heads",
                            format_func=lambda h: "mean of heads" if h == "mean" else f"head {h}")
    if not picked:
        st.info("Pick at least one head to draw its lines.")
        return
    maps = exp.attention[kind][layer]  # (H, Tq, Tk)
    rows = {("mean" if h == "mean" else f"head {h}"): (maps.mean(0) if h == "mean" else maps[h]) for h in picked}
    figure = charts.lines_chart(rows, queries, keys, title=f"{KIND_LABELS[kind]} — layer {layer}", font_scale=fs)
    ui.chart(figure)
    _exports(figure, *_data(exp, kind), f"{kind}-L{layer}-lines")


def summary_view(exp: Explanation, kind: str, layer: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    maps = exp.attention[kind]
    square = kind in ("encoder", "decoder")
    left, right = st.columns(2)
    with left:
        mean = mean_over_heads(maps)  # (L, Tq, Tk)
        ui.chart(charts.head_heatmap(mean[layer], queries, keys, title=f"Layer {layer}: mean over heads",
                                  font_scale=fs))
    with right:
        if square:
            flow = rollout_by_layer(maps)  # (L, T, T)
            ui.chart(charts.head_heatmap(flow[-1], queries, keys, title="Attention rollout through every layer",
                                      font_scale=fs))
        else:
            st.info("Rollout follows one sequence through its own layers, so it is defined for "
                    "self-attention only (cross-attention maps decoder rows onto encoder columns).")
    if square:
        st.latex(r"\tilde A_\ell = \operatorname{rownorm}\Big(\tfrac{1}{H}\textstyle\sum_h A_{\ell,h} + I\Big),"
                 r"\qquad R = \tilde A_L \cdots \tilde A_2\,\tilde A_1")
        st.caption("Rollout (Abnar & Zuidema, 2020): the identity stands for the residual connection; row i of R "
                   "says how much the last layer's token i draws on each input token.")
    records = head_statistics(maps, self_attention=square)
    stats = charts.stats_heatmaps(records, font_scale=fs)
    ui.chart(stats)
    table = pd.DataFrame(records).dropna(axis=1, how="all")
    st.dataframe(table.rename(columns=charts.STAT_TITLES).round(3), hide_index=True, width="content")
    formula = r"H_{\ell,h} = \operatorname{mean}_i\Big(-\sum_j a_{ij}\log_2 a_{ij}\Big)\ \text{bits}"
    if square:
        formula += r",\qquad d_{\ell,h} = \operatorname{mean}_i \sum_j a_{ij}\,|i-j|"
    st.latex(formula)
    st.caption("Entropy: 0 bits when each query looks at a single key, log₂(number of keys) when it spreads "
               "evenly. Mean distance: how far, in positions, a head looks on average.")
    arrays = {"mean_over_heads": mean, **({"rollout": flow} if square else {})}
    _exports(stats, arrays, table, f"{kind}-summary")


def generation_view(exp: Explanation, layer: int, head: int, fs: float) -> None:
    steps = len(exp.generated_tokens)
    if not steps:
        st.info("This model does not generate text.")
        return
    layers, heads = exp.shape("decoder")
    layer, head = min(layer, layers - 1), min(head, heads - 1)
    step = ui.index_slider("Step", steps, "step", help="Walk through the output one token at a time.")
    average = st.toggle("Average over heads", key="gen_mean")
    which = "mean of heads" if average else f"head {head}"

    def row(kind: str) -> np.ndarray:
        maps = exp.attention[kind][layer]  # (H, Tq, Tk)
        return (maps.mean(0) if average else maps[head])[step]

    reads, makes = (charts.visible(t) for t in (exp.target_tokens[step], exp.generated_tokens[step]))
    if exp.architecture == "encoder-decoder":
        st.text(f"Step {step}: the decoder reads “{reads}” and produces “{makes}”.")
        ui.show_user_text(" ".join(charts.visible(t) for t in exp.generated_tokens[:step + 1]), "Output so far:")
    else:
        st.text(f"Position {step}: after reading “{reads}” the most likely next token is “{makes}”.")
    figures = []
    if "cross" in exp.attention:
        figures.append(charts.row_bars(row("cross"), exp.source_tokens, font_scale=fs,
                                       title=f"Cross-attention over the source (layer {layer}, {which})"))
    figures.append(charts.row_bars(row("decoder"), exp.target_tokens, font_scale=fs, x_title="decoder input token",
                                   title=f"Decoder self-attention (layer {layer}, {which})"))
    for column, figure in zip(st.columns(len(figures)), figures):
        with column:
            ui.chart(figure)
    st.caption("Under the causal mask the decoder gives the tokens after this step a weight of exactly 0.")
    _exports(figures[0], *_data(exp, "cross" if "cross" in exp.attention else "decoder"), f"step-{step}")


