"""The Explore page's attention views: the attention canvas (:mod:`app.ui.canvas`: one head, the layer × head
grid and the lines, chosen and explored in the browser), the summary (mean over heads, rollout, head statistics)
and step-by-step generation.

Each view slices the cached :class:`~core.Explanation`; none of them runs the model. The canvas tells the page
one thing, the head the reader pins: it becomes the session's ``layer`` / ``head`` (counted from 1, as the share
link has them) and ``map`` (the canvas's view), which the panels below and the exports follow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app.services import catalog
from app.ui import canvas, export, presentation, widgets
from app import resources
from app.charts import attention as charts
from core import analysis, Explanation, KIND_LABELS

SUMMARY_TOKENS = 1024  # the summary (rollout, every head's statistics) is drawn for inputs up to this long
VIEWS = {"head": "Maps", "summary": "Summary", "generation": "Generation"}  # the maps' own views are the canvas's
MAP_VIEWS = ("head", "model", "lines", "neuron")  # the canvas's views (the share link's ``map``; an old link's ``view``)
CANVAS = "attention_canvas"
log = logging.getLogger(__name__)


def _exports(figure, arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str) -> None:
    export.exports(figure, arrays, table, name, f"export-{name}")


# ----------------------------------------------------------------------------- view selection
def _views(exp: Explanation) -> list[str]:
    return [v for v in VIEWS if v != "generation" or exp.architecture != "encoder"]


def attention_controls(exp: Explanation, on_kind: Callable[[], None] | None = None) -> tuple[str, int, int]:
    """The kind control (the layer and head are chosen on the canvas) and the pinned kind, layer and head
    (0-based), clamped to this explanation; ``on_kind`` runs when the kind changes."""
    kinds = list(exp.kinds)
    widgets.choose("kind", kinds)
    st.segmented_control("Attention", kinds, key="kind", required=True, format_func=KIND_LABELS.get,
                         on_change=on_kind)
    kind, layer, head, _ = selection(exp)
    return kind, layer, head


def view_control(exp: Explanation) -> None:
    """The chooser of what follows the canvas (the summary, generation), drawn in the view's own fragment so
    that a switch reruns that fragment alone, in one round trip."""
    views = _views(exp)
    widgets.choose("view", views, "head")
    st.segmented_control("Below the maps", views, key="view", required=True, format_func=VIEWS.get)


def selection(exp: Explanation) -> tuple[str, int, int, str]:
    """The kind, layer and head (0-based) :func:`attention_controls` chose and the view :func:`view_control` did,
    clamped to ``exp`` (read from the session, no widget drawn)."""
    kinds, views = list(exp.kinds), _views(exp)
    state = st.session_state
    if state.get("view") in MAP_VIEWS[1:]:  # an older link named the canvas's view
        state["map"], state["view"] = state["view"], "head"
    kind = state.get("kind") if state.get("kind") in kinds else kinds[0]
    view = state.get("view") if state.get("view") in views else "head"
    layers, heads = exp.shape(kind)
    for key, count in (("layer", layers), ("head", heads)):
        widgets.clamped(key, 1, count)  # a link's value out of range is said once

    def index(key: str, count: int) -> int:
        try:
            return min(max(int(state.get(key, 1)) - 1, 0), count - 1)
        except (TypeError, ValueError):
            return 0
    return kind, index("layer", layers), index("head", heads), view


def _data(exp: Explanation, kind: str, layer: int, head: int,
          scope: str = "head") -> tuple[dict[str, np.ndarray], Callable]:
    """The maps of ``kind`` an export holds, as arrays and a tidy table (built on click), by ``scope``: "head" the
    chosen head's, "layer" every head of ``layer``. Past a million weights, or for a long input whose maps are
    computed on demand, the chosen head's alone."""
    rows, cols, _ = charts.axes(exp, kind)
    every = exp.attention[kind]  # (L, H, Tq, Tk)
    whole = not exp.on_demand and every.size <= 1_000_000
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


# ----------------------------------------------------------------------------- the canvas
def map_view() -> str:
    """The canvas's view the session last pinned (head, model or lines)."""
    chosen = st.session_state.get("map")
    return chosen if chosen in MAP_VIEWS else "head"


def pin_from_canvas() -> bool:
    """Take the head the reader pinned on the canvas into the session (``layer`` / ``head`` from 1, ``map``);
    True when it moved."""
    chosen = canvas.pinned(CANVAS)
    if not chosen:
        return False
    state, before = st.session_state, (st.session_state.get("layer"), st.session_state.get("head"))
    state["layer"], state["head"] = int(chosen.get("layer", 0)) + 1, int(chosen.get("head", 0)) + 1
    if chosen.get("view") in MAP_VIEWS:
        state["map"] = chosen["view"]
    return (state["layer"], state["head"]) != before


def canvas_payload(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int,
                   head: int, fs: float, view: str = "head", theme: str | None = None) -> bytes:
    """Every map of ``kind`` as the canvas's payload, opening on ``view``, built once per (input, options, kind,
    pinned head, view, scale, theme hint). The neuron view's queries and keys travel once the reader asks for that
    view (the canvas pins it: one rerun), so a page that never opens it runs the model once."""
    rows, cols, y_title = charts.axes(exp, kind)
    groups = [int(g) for g in exp.head_groups.get(kind) or []]  # the key/value head each query head reads
    look = canvas.Look(title=KIND_LABELS[kind], row_title=y_title, col_title=charts.KEY_TITLE, presentation=fs > 1,
                       theme=theme, extra={"groups": groups, "neuron_request": True})
    return resources.figure(entry, exp.text, options, ("canvas", kind, layer, head, view, fs, theme),
                            lambda: canvas.maps_payload(exp.attention[kind], rows, cols, kind=kind, layer=layer,
                                                        head=head, view=view, look=look,
                                                        neurons=_neurons(entry, exp, options, kind)
                                                        if view == "neuron" else None))


def _neurons(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str) -> canvas.Neurons | None:
    """The queries and keys behind ``exp``'s maps of ``kind`` (the neuron view): its own maps' when they were
    computed on demand, else those of a cached pass that records them; None for a model whose scores are not
    scaled dot products of queries and keys."""
    found = canvas.neurons_of(exp.attention[kind])
    if found is not None:
        return found
    try:
        traced = resources.explain_entry(entry, exp.text, **(options | {"maps": "on_demand"}))
    except ValueError as error:
        log.info("no neuron view for %s: %s", kind, error)
        return None
    return canvas.neurons_of(traced.attention.get(kind))


def head_view(entry: catalog.Entry, exp: Explanation, options: dict[str, Any], kind: str, layer: int, head: int,
              fs: float, on_pin: Callable[[], None] | None = None) -> None:
    """The attention canvas of every head of ``kind`` (opened on the pinned ``layer`` / ``head``), how to read it,
    the pinned head's weights beside its scores before softmax when asked, and its numbers to export.

    The scores come from a cached run with ``return_scores`` (the page asks for it once the toggle is on)."""
    y_title = charts.axes(exp, kind)[2]
    canvas.maps(canvas_payload(entry, exp, options, kind, layer, head, fs, map_view(), canvas.theme()), key=CANVAS,
                on_pin=on_pin)
    st.caption("Each row is one query token; its weights over the key tokens sum to 1. Hover a cell for its weight; "
               "←/→ change the head and ↑/↓ the layer; **Pin head** puts it in the link, the exports and the panels "
               "below." + (" A decoder row reads “after this token → predicts”: the token it takes in, then the "
                           "token it produces." if y_title == charts.PREDICTS_TITLE else "") + _kv_note(exp, kind))
    scores = bool(st.session_state.get("show_scores"))
    if scores and not exp.scores:
        exp = widgets.attempt("run the model", resources.explain_entry, entry, exp.text,
                              **(options | {"return_scores": True})) or exp
        scores = bool(exp.scores)
    st.toggle("Show the pinned head's scores before softmax", key="show_scores",
              help="The scores q·k/√d_k (times β), before masking: what softmax turns into weights. They are already "
                   "scaled by 1/√d_k, not raw dot products.")
    if scores:
        rows, cols, _ = charts.axes(exp, kind)
        canvas.panels([canvas.Panel(exp.attention[kind][layer, head], rows, cols, _head_title(exp, kind, layer, head)),
                       canvas.Panel(exp.scores[kind][layer, head], rows, cols, "Scores before softmax", scale="score")],
                      key="attention_scores", title="The pinned head: weights and scores", name=f"{kind}-scores",
                      font_scale=fs, row_title=y_title)
    export.export_data(*_data(exp, kind, layer, head), file_name(kind, layer, head), f"export-{kind}-head")


def file_name(kind: str, layer: int, head: int) -> str:
    """An export's name: the kind, layer and head (counted from 1)."""
    return f"{kind}-layer{layer + 1}-head{head + 1}"


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
    if square:  # the two maps on one canvas and one 0–1 scale: hover a cell for its value in both
        flow = analysis.rollout_by_layer(every)  # (L, T, T)
        canvas.panels([canvas.Panel(mean[layer], rows, cols, mean_title),
                       canvas.Panel(flow[-1], rows, cols, "Attention rollout through every layer")],
                      key=f"canvas-summary-{kind}", title=f"{KIND_LABELS.get(kind, kind)}: the mean over heads and "
                      "the rollout", name=f"{kind}-L{layer + 1}-mean-rollout", font_scale=fs, row_title=y_title)
        st.latex(r"\tilde A_\ell = \operatorname{rownorm}\Big(\tfrac{1}{H}\textstyle\sum_h A_{\ell,h} + I\Big),"
                 r"\qquad R = \tilde A_L \cdots \tilde A_2\,\tilde A_1")
        st.caption("Rollout (Abnar & Zuidema, 2020): the identity stands for the residual connection; row i of R "
                   "says how much the last layer's token i draws on each input token.")
    else:
        left, right = st.columns(2)
        with left:
            canvas.panels([canvas.Panel(mean[layer], rows, cols, mean_title)], key=f"canvas-summary-{kind}",
                          title=f"{KIND_LABELS.get(kind, kind)}: the mean over heads", name=f"{kind}-L{layer + 1}-mean",
                          font_scale=fs, row_title=y_title)
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
    if numbers:  # the chart above shows them; the table is built only when asked for
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
