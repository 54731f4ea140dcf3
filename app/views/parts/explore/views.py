"""The Explore page's attention views: the layer × head grid, one head, lines, the summary
(mean over heads, rollout, head statistics) and step-by-step generation.

Each view slices the cached :class:`~core.Explanation`; none of them runs the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app.services import catalog
from app.ui import export, presentation, widgets
from app import resources
from app.charts import attention as charts
from app.charts import comparison, look
from app.charts import maps
from core import analysis, Explanation, KIND_LABELS

SUMMARY_TOKENS = 1024  # the summary (rollout, every head's statistics) is drawn for inputs up to this long
LINES_TOKENS = 512  # lines past this many tokens are a solid block: the head view draws them
VIEWS = {"model": "Model view", "head": "Head view", "lines": "Lines", "summary": "Summary",
         "generation": "Generation"}
DRAWN_HERE = {"model": "the model view is", "lines": "the lines are", "summary": "the summary is",
              "generation": "the generation steps are"}  # "… drawn here", under the view chooser


def _exports(figure, arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str) -> None:
    export.exports(figure, arrays, table, name, f"export-{name}")


# ----------------------------------------------------------------------------- view selection
def _views(exp: Explanation) -> list[str]:
    return [v for v in VIEWS if v != "generation" or exp.architecture != "encoder"]


def attention_controls(exp: Explanation, on_change: Callable[[], None] | None = None,
                       on_kind: Callable[[], None] | None = None) -> tuple[str, int, int]:
    """Kind, layer and head (0-based; the sliders count from 1), clamped to this explanation; ``on_change``
    runs when the layer or head moves, ``on_kind`` (else ``on_change``) when the kind does."""
    kinds = list(exp.kinds)
    widgets.choose("kind", kinds)
    kind = st.segmented_control("Attention", kinds, key="kind", required=True, format_func=KIND_LABELS.get,
                                on_change=on_kind or on_change)
    layers, heads = exp.shape(kind)
    first, second = st.columns(2, gap="large")
    with first:
        layer = widgets.index_slider("Layer", layers, "layer", first=1, on_change=on_change)
    with second:
        head = widgets.index_slider("Head", heads, "head", first=1, on_change=on_change)
    return kind, layer, head


def view_control(exp: Explanation) -> None:
    """The view chooser (head, model grid, lines, summary, generation), drawn in the view's own fragment so
    that a switch reruns that fragment alone, in one round trip."""
    views = _views(exp)
    widgets.choose("view", views, "head")
    view = st.segmented_control("View", views, key="view", required=True, format_func=VIEWS.get)
    if view != "head":
        st.caption(f"The chosen head stays in the head view above; {DRAWN_HERE[view]} drawn here.")


def selection(exp: Explanation) -> tuple[str, int, int, str]:
    """The kind, layer and head (0-based) :func:`attention_controls` chose and the view :func:`view_control` did,
    clamped to ``exp`` (read from the session, no widget drawn)."""
    kinds, views = list(exp.kinds), _views(exp)
    state = st.session_state
    kind = state.get("kind") if state.get("kind") in kinds else kinds[0]
    view = state.get("view") if state.get("view") in views else "head"
    layers, heads = exp.shape(kind)

    def index(key: str, count: int) -> int:
        try:
            return min(max(int(state.get(key, 1)) - 1, 0), count - 1)
        except (TypeError, ValueError):
            return 0
    return kind, index("layer", layers), index("head", heads), view


def _pick_from_grid(then: Callable[[], None] | None) -> None:
    """A click on the model grid opens that head (the sliders count from 1), then ``then`` runs."""
    points = ((st.session_state.get("grid") or {}).get("selection") or {}).get("points") or []
    chosen = maps.picked(points)
    if chosen is not None:
        st.session_state["layer"], st.session_state["head"] = chosen[0] + 1, chosen[1] + 1
        if then is not None:
            then()


def _data(exp: Explanation, kind: str, layer: int, head: int,
          scope: str = "head") -> tuple[dict[str, np.ndarray], Callable]:
    """The maps of ``kind`` an export holds, as arrays and a tidy table (built on click), by ``scope``: "head" the
    chosen head's, "layer" every head of ``layer``, "model" every layer's every head. Past a million weights, or
    for a long input whose maps are computed on demand, the chosen head's alone."""
    rows, cols, _ = charts.axes(exp, kind)
    every = exp.attention[kind]  # (L, H, Tq, Tk)
    whole = not exp.on_demand and every.size <= 1_000_000
    if scope == "model" and whole:
        arrays = {"attention": every, "query_labels": np.array(rows), "key_labels": np.array(cols)}
        return arrays, lambda: charts.tidy_maps(every, rows, cols)
    heads = slice(0, every.shape[1]) if scope == "layer" and whole else slice(head, head + 1)
    shown = np.asarray(every[layer:layer + 1, heads])  # (1, heads, Tq, Tk)
    arrays = {"attention": shown, "layer": np.array(layer + 1), "heads": np.arange(heads.start, heads.stop) + 1,
              "query_labels": np.array(rows), "key_labels": np.array(cols)}
    return arrays, lambda: charts.tidy_maps(shown, rows, cols).assign(
        layer=layer + 1, head=lambda table: table["head"] + heads.start)


def _head_title(exp: Explanation, kind: str, layer: int, head: int) -> str:
    """"Decoder masked self-attention — layer 1, head 3", naming the key/value head it shares when heads share them."""
    groups = exp.head_groups.get(kind)
    shared = f" · kv head {groups[head] + 1} of {len(set(groups))}" if groups else ""
    return f"{KIND_LABELS[kind]} — layer {layer + 1}, head {head + 1}{shared}"


def _kv_note(exp: Explanation, kind: str) -> str:
    """Which query heads share each key/value head (grouped-query attention), or nothing when none share."""
    groups = exp.head_groups.get(kind)
    if not groups:
        return ""
    sharing = "; ".join(f"kv {g + 1}: heads {', '.join(str(h + 1) for h, x in enumerate(groups) if x == g)}"
                        for g in sorted(set(groups)))
    return (f" Grouped-query attention: {len(groups)} query heads share {len(set(groups))} key/value heads ({sharing}); "
            "heads that share one compare their queries with the same keys.")


# ----------------------------------------------------------------------------- views
def model_view(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int, head: int,
               fs: float, on_pick: Callable[[], None] | None = None) -> None:
    """Every layer × head as thumbnails (built once per input and selection); a click opens that head in
    the head view and runs ``on_pick``."""
    every = exp.attention[kind]
    layers = every.shape[0]
    first = 0
    if layers > maps.GRID_PAGE:  # pages of layers keep each thumbnail large enough to read
        pages = list(range(0, layers, maps.GRID_PAGE))
        if st.session_state.get("grid_page") not in pages:
            st.session_state["grid_page"] = layer - layer % maps.GRID_PAGE
        first = st.segmented_control("Layers", pages, key="grid_page", required=True,
                                     format_func=lambda p: f"{p + 1}–{min(p + maps.GRID_PAGE, layers)}")
    shown = every[first:first + maps.GRID_PAGE]
    grid = resources.figure(
        entry, exp.text, options, ("grid", kind, first, layer, head, fs),
        lambda: maps.model_grid(shown, first_layer=first, chosen=(layer, head), font_scale=fs,
                                title=f"{KIND_LABELS[kind]}: every layer × head (click one to open it in the head "
                                      "view)"))
    widgets.plot(grid, name=f"{kind}-all-heads", key="grid", on_select=lambda: _pick_from_grid(on_pick),
                 selection_mode="points")
    if max(every.shape[2:]) > maps.THUMB:
        st.caption(f"Thumbnails are drawn in at most {maps.THUMB} × {maps.THUMB} blocks: a block holds the weight "
                   "its keys get together, averaged over its queries. One colour scale for every thumbnail, up to "
                   f"{look.meta(grid)['top']:g} (blocks above it take the top colour); the head view draws the "
                   "chosen head in full.")
    _exports(grid, *_data(exp, kind, layer, head, "model"), f"{kind}-all-heads")


def _head_figure(exp: Explanation, kind: str, layer: int, head: int, fs: float, scores: bool):
    rows, cols, y_title = charts.axes(exp, kind)
    figure = charts.head_map(exp.attention[kind][layer, head], rows, cols, title=_head_title(exp, kind, layer, head),
                             font_scale=fs, y_title=y_title)
    if not scores:
        return figure
    return comparison.weights_and_scores(exp.attention[kind][layer, head], exp.scores[kind][layer, head], rows,
                                         cols, title=_head_title(exp, kind, layer, head), y_title=y_title, font_scale=fs)


def head_figure(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int,
                head: int, fs: float, scores: bool = False):
    """The head view's figure, built once per (input, options, kind, layer, head, scale, scores)."""
    return resources.figure(entry, exp.text, options, ("head", kind, layer, head, fs, scores),
                            lambda: _head_figure(exp, kind, layer, head, fs, scores))


def head_view(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int, head: int,
              fs: float) -> None:
    """The chosen head's map (and its scores before softmax when asked), its exports and how to read it.

    The figure is built once per (input, options, kind, layer, head, scale) and shared; the scores come
    from a cached run with ``return_scores`` (the page asks for it once the toggle is on)."""
    y_title = charts.axes(exp, kind)[2]
    scores = bool(st.session_state.get("show_scores"))
    if scores and not exp.scores:
        exp = widgets.attempt("run the model", resources.explain_entry, entry, exp.text,
                              **(options | {"return_scores": True})) or exp
        scores = bool(exp.scores)
    figure = head_figure(entry, exp, options, kind, layer, head, fs, scores)
    name = f"{kind}-L{layer + 1}H{head + 1}" + ("-weights-and-scores" if scores else "")
    if scores:
        widgets.plot(figure, name=name, stretch=True, key="head_map_scores")
    else:
        widgets.plot(figure, name=name, key="head_map")
    st.caption("Each row is one query token; its weights over the key tokens sum to 1."
               + (" A decoder row reads “after this token → predicts”: the token it takes in, then the token "
                  "it produces." if y_title == charts.PREDICTS_TITLE else "") + _kv_note(exp, kind))
    st.toggle("Show the scores before softmax", key="show_scores",  # read above: the chart comes first
              help="The scores q·k/√d_k (times β), before masking: what softmax turns into weights. They are already "
                   "scaled by 1/√d_k, not raw dot products.")
    _exports(figure, *_data(exp, kind, layer, head), name)


def lines_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    heads = exp.shape(kind)[1]
    options = [*range(heads), "mean"]
    chosen = [h for h in st.session_state.get("line_heads", [head]) if h in options]
    st.session_state["line_heads"] = chosen
    picked = st.multiselect("Heads to overlay", options, key="line_heads",
                            format_func=lambda h: "mean of heads" if h == "mean" else f"head {h + 1}")
    if not picked:
        st.info("Pick at least one head to draw its lines.")
        return
    if max(len(queries), len(keys)) > LINES_TOKENS:
        st.info(f"Lines are drawn for inputs of up to {LINES_TOKENS} tokens (this one has "
                f"{max(len(queries), len(keys)):,}); the head view shows it.", icon=":material/info:")
        return
    every = exp.attention[kind][layer]  # (H, Tq, Tk)
    rows = {("mean" if h == "mean" else f"head {h + 1}"): (every.mean(0) if h == "mean" else every[h])
            for h in picked}
    figure = charts.lines_chart(rows, queries, keys, title=f"{KIND_LABELS[kind]} — layer {layer + 1}",
                                font_scale=fs)
    widgets.chart(figure)
    _exports(figure, *_data(exp, kind, layer, head, "layer"), f"{kind}-L{layer + 1}-lines")


def summary_view(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int,
                 fs: float) -> None:
    """Mean over heads beside rollout (self-attention: one figure), per-head statistics; each figure built once per
    input, options, kind, layer and scale."""
    rows, cols, y_title = charts.axes(exp, kind)
    every = exp.attention[kind]
    if exp.on_demand and max(every.shape[2:]) > SUMMARY_TOKENS:
        st.info(f"The summary reads every head's every row and multiplies every layer's full map (rollout): for "
                f"{max(every.shape[2:]):,} tokens that is {every.size:,} numbers, so it is drawn for inputs of up to "
                f"{SUMMARY_TOKENS:,} tokens. The head and model views show this input.", icon=":material/info:")
        return
    square = kind in ("encoder", "decoder")
    mean = analysis.mean_over_heads(every)  # (L, Tq, Tk)
    mean_title = f"Layer {layer + 1}: mean over heads"
    if square:  # the two maps as one figure on one 0–1 scale: one chart to draw where there were two
        flow = analysis.rollout_by_layer(every)  # (L, T, T)
        pair = resources.figure(entry, exp.text, options, ("mean-rollout", kind, layer, fs), lambda: comparison.figure(
            [comparison.Panel(mean[layer], rows, cols, title=mean_title),
             comparison.Panel(flow[-1], rows, cols, title="Attention rollout through every layer")],
            y_title=y_title, font_scale=fs))
        widgets.plot(pair, name=f"{kind}-L{layer + 1}-mean-rollout", stretch=True)
        st.latex(r"\tilde A_\ell = \operatorname{rownorm}\Big(\tfrac{1}{H}\textstyle\sum_h A_{\ell,h} + I\Big),"
                 r"\qquad R = \tilde A_L \cdots \tilde A_2\,\tilde A_1")
        st.caption("Rollout (Abnar & Zuidema, 2020): the identity stands for the residual connection; row i of R "
                   "says how much the last layer's token i draws on each input token.")
    else:
        left, right = st.columns(2)
        with left:
            widgets.plot(resources.figure(entry, exp.text, options, ("mean", kind, layer, fs), lambda: charts.head_map(
                mean[layer], rows, cols, title=mean_title, font_scale=fs, y_title=y_title,
                side=charts.maps.heatmap_side(len(rows), len(cols), fs) * 3 // 4)), name=f"{kind}-L{layer + 1}-mean")
        with right:
            st.info("Rollout follows one sequence through its own layers, so it is defined for "
                    "self-attention only (cross-attention maps decoder rows onto encoder columns).")
    records = [{**r, "layer": r["layer"] + 1, "head": r["head"] + 1}
               for r in analysis.head_statistics(every, self_attention=square)]
    stats = resources.figure(entry, exp.text, options, ("stats", kind, fs),
                             lambda: charts.stats_figure(records, font_scale=fs))
    widgets.plot(stats, name=f"{kind}-statistics")
    st.caption("The largest weight is drawn on a fixed 0–1 scale, so a head at 0.99999 looks as strong as it is.")
    table = pd.DataFrame(records).dropna(axis=1, how="all")
    numbers = presentation.opened("Every head's statistics as numbers", "summary_numbers_open")
    if numbers:  # the chart above shows them; the table is built only when asked for (issue 23)
        with numbers:
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
    step = widgets.index_slider("Step", steps, "step", first=1, help="Walk through the output one token at a time.")
    average = st.toggle("Average over heads", key="gen_mean")
    which = "mean of heads" if average else f"head {head + 1}"

    def row(kind: str) -> np.ndarray:
        every = exp.attention[kind][layer, :, step]  # (H, Tk): this step's row of every head
        return every.mean(0) if average else every[head]

    reads, makes = (charts.visible(t) for t in (exp.target_tokens[step], exp.generated_tokens[step]))
    st.text(f"Step {step + 1}: after “{reads}” → predicts “{makes}”.")
    if exp.architecture == "encoder-decoder":
        widgets.show_user_text(" ".join(charts.visible(t) for t in exp.generated_tokens[:step + 1]), "Output so far:")
    figures = []
    if "cross" in exp.attention:
        figures.append(charts.row_bars(row("cross"), exp.source_tokens, font_scale=fs,
                                       title=f"Cross-attention over the source (layer {layer + 1}, {which})"))
    seen = slice(0, step + 1)  # the decoder's tokens up to this step: the causal mask hides the later ones
    figures.append(charts.row_bars(row("decoder")[seen], exp.target_tokens[seen], font_scale=fs,
                                   x_title="decoder input token",
                                   title=f"Decoder self-attention (layer {layer + 1}, {which})"))
    for column, figure in zip(st.columns(len(figures)), figures):
        with column:
            widgets.chart(figure)
    st.caption(f"This row: after “{reads}” → predicts “{makes}”. Under the causal mask the decoder gives the "
               "tokens after this step a weight of exactly 0: the bars end at this step's token.")
    kind = "cross" if "cross" in exp.attention else "decoder"
    name = f"{kind}-L{layer + 1}-{'mean' if average else f'H{head + 1}'}-step{step + 1}"
    _exports(figures[0], *_data(exp, kind, layer, head, "layer" if average else "head"), name)
