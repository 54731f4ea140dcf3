"""Attention charts: one head's heatmap, a signed (difference or score) heatmap, the before | after |
difference triptych, the layer × head grid, BertViz-style lines, per-head statistics, prediction bars
and single attention rows. Every page that draws attention draws it with these.

Pure functions (numpy in, Altair chart out), no Streamlit calls. Orientation everywhere:
rows = query tokens (attending), columns = key tokens (attended to).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from app.charts import base
from core import difference

QUERY_TITLE = "query token (attending)"
KEY_TITLE = "key token (attended to)"
PICK = "pick"  # the model view's selection parameter: {layer, head} of the clicked panel


visible = base.visible  # re-exported: the Explore page labels tokens with it


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Unique, visible axis labels (``"3:a"``): repeated tokens keep their own row or column."""
    return base.label_tokens(tokens)


def heatmap_size(rows: int, cols: int, font_scale: float = 1.0) -> int:
    """A square side that keeps every token label readable (between 260 and 620 px)."""
    return int(min(620, max(260, 18 * max(rows, cols) * font_scale)))


def head_heatmap(matrix: np.ndarray, queries: Sequence[str], keys: Sequence[str], *, title: str,
                 font_scale: float = 1.0, size: int | None = None, legend: bool = True) -> alt.Chart:
    """One attention matrix (Tq, Tk) with token labels on both axes and the weight on hover.

    ``legend=False`` drops the colour legend (for a chart placed beside another on the same 0–1 scale).
    """
    size = size or heatmap_size(len(queries), len(keys), font_scale)
    figure = base.heatmap(matrix, token_labels(queries), token_labels(keys), title=title, x_title=KEY_TITLE,
                          y_title=QUERY_TITLE, domain=(0.0, 1.0), size=size, font_scale=font_scale)
    if not legend:
        figure = figure.encode(color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]),
                                               legend=None))
    return figure


def signed_heatmap(matrix: np.ndarray, queries: Sequence[str], keys: Sequence[str], *, title: str,
                   value: str = "change", font_scale: float = 1.0, size: int | None = None) -> alt.Chart:
    """Signed values (a difference after − before, or pre-softmax scores) on a diverging scale
    centred on 0 (a symmetric domain, so white always means 0)."""
    limit = float(max(np.abs(matrix).max(initial=0.0), 1e-6))
    size = size or heatmap_size(len(queries), len(keys), font_scale)
    return base.heatmap(matrix, token_labels(queries), token_labels(keys), title=title, x_title=KEY_TITLE,
                        y_title=QUERY_TITLE, value=value, scheme=base.DIVERGING, domain=(-limit, limit),
                        size=size, font_scale=font_scale, fmt="+.3f")


def side_by_side(*figures: alt.Chart) -> alt.HConcatChart:
    """Charts in a row, each with its own colour scale (a view inside a row may not set ``autosize``)."""
    bare = []
    for figure in figures:
        figure = figure.copy(deep=False)
        figure.autosize = alt.Undefined
        bare.append(figure)
    return alt.hconcat(*bare).resolve_scale(color="independent")


def triptych(first: np.ndarray, second: np.ndarray, first_axes: tuple[Sequence[str], Sequence[str]],
             second_axes: tuple[Sequence[str], Sequence[str]], *, titles: tuple[str, str], difference_title: str,
             font_scale: float = 1.0) -> tuple[alt.HConcatChart, np.ndarray, bool]:
    """First | second | second − first in one row; the difference covers the block both maps share.

    Returns (chart, difference, whether the two maps have the same shape).
    """
    diff, same = difference(second, first)
    size = max(180, heatmap_size(*diff.shape, font_scale=font_scale) * 2 // 3)  # three fit side by side
    rows, cols = diff.shape
    queries, keys = second_axes
    figure = side_by_side(
        head_heatmap(first, *first_axes, title=titles[0], font_scale=font_scale, size=size, legend=False),
        head_heatmap(second, *second_axes, title=titles[1], font_scale=font_scale, size=size),
        signed_heatmap(diff, list(queries)[:rows], list(keys)[:cols], title=difference_title,
                       font_scale=font_scale, size=size),
    )
    return figure, diff, same


def tidy_maps(maps: np.ndarray, queries: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    """Every weight of (L, H, Tq, Tk) as rows: layer, head, query_index, query, key_index, key, weight."""
    l, h, q, k = (a.ravel() for a in np.meshgrid(*(np.arange(n) for n in maps.shape), indexing="ij"))
    return pd.DataFrame({
        "layer": l, "head": h, "query_index": q, "query": np.asarray(queries, dtype=object)[q],
        "key_index": k, "key": np.asarray(keys, dtype=object)[k], "weight": maps.ravel().astype(float),
    })


def model_grid(maps: np.ndarray, queries: Sequence[str], keys: Sequence[str], *, title: str,
               chosen: tuple[int, int] | None = None, font_scale: float = 1.0) -> alt.FacetChart:
    """Every layer × head as a small heatmap (rows = layers, columns = heads).

    Clicking a panel selects it through the ``pick`` point selection on (layer, head); the
    ``chosen`` (layer, head) panel is drawn at full strength, the others slightly faded.
    """
    _, heads, tq, tk = maps.shape
    frame = tidy_maps(maps, token_labels(queries), token_labels(keys))
    frame["open"] = True if chosen is None else (frame["layer"] == chosen[0]) & (frame["head"] == chosen[1])
    cell = int(max(70, min(150, 560 / max(heads, 1))))
    pick = alt.selection_point(name=PICK, fields=["layer", "head"], on="click", clear=False)
    small = 9 * font_scale
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("key_index:O", title=None, axis=None),
            y=alt.Y("query_index:O", title=None, axis=None),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]),
                            legend=alt.Legend(title="weight")),
            opacity=alt.condition("datum.open", alt.value(1.0), alt.value(0.6)),
            tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("head:O"), alt.Tooltip("query:N", title=QUERY_TITLE),
                     alt.Tooltip("key:N", title=KEY_TITLE), alt.Tooltip("weight:Q", format=".3f")],
        )
        .add_params(pick)
        .properties(width=cell, height=int(cell * max(tq, 1) / max(tk, 1)))
        .facet(
            row=alt.Row("layer:O", title="layer", header=alt.Header(labelFontSize=12 * font_scale,
                                                                   titleFontSize=12 * font_scale)),
            column=alt.Column("head:O", title="head", header=alt.Header(labelFontSize=12 * font_scale,
                                                                       titleFontSize=12 * font_scale)),
            spacing=6,
        )
        .properties(title=alt.Title(title, fontSize=14 * font_scale, subtitle="Click a head to open it below.",
                                    subtitleFontSize=small + 2))
    )


def lines_chart(rows: dict[str, np.ndarray], queries: Sequence[str], keys: Sequence[str], *, title: str,
                font_scale: float = 1.0, threshold: float = 0.01) -> alt.LayerChart:
    """BertViz-style lines: queries on the left, keys on the right, one line per (query, key) whose
    opacity is the weight; one colour per head in ``rows`` (name → (Tq, Tk) matrix).

    Hovering a token keeps only its lines. Weights below ``threshold`` are not drawn.
    """
    q_labels, k_labels = token_labels(queries), token_labels(keys)
    parts = []
    for name, matrix in rows.items():
        q, k = np.nonzero(np.asarray(matrix) >= threshold)
        parts.append(pd.DataFrame({"head": name, "query_index": q, "key_index": k,
                                   "query": np.asarray(q_labels, dtype=object)[q],
                                   "key": np.asarray(k_labels, dtype=object)[k],
                                   "weight": np.asarray(matrix)[q, k].astype(float)}))
    lines = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["head", "query_index", "key_index", "query", "key", "weight"])
    lines["x"], lines["x2"] = 0.0, 1.0
    n = max(len(queries), len(keys), 1)
    height = int(max(240, 22 * n * font_scale))
    y_scale = alt.Scale(domain=[-0.5, n - 0.5], reverse=True)
    x_scale = alt.Scale(domain=[-0.45, 1.45])
    over_q = alt.selection_point(name="over_query", on="pointerover", clear="pointerout", fields=["query_index"])
    over_k = alt.selection_point(name="over_key", on="pointerover", clear="pointerout", fields=["key_index"])
    colour = alt.Color("head:N", scale=alt.Scale(scheme=base.CATEGORY), legend=alt.Legend(title="head"))

    drawn = alt.Chart(lines).mark_rule(strokeCap="round").encode(
        x=alt.X("x:Q", scale=x_scale, axis=None), x2="x2:Q",
        y=alt.Y("query_index:Q", scale=y_scale, axis=None), y2="key_index:Q",
        color=colour,
        size=alt.Size("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0.5, 6]), legend=None),
        opacity=alt.condition(over_q & over_k, alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0, 1]),
                                                           legend=None), alt.value(0.0)),
        tooltip=[alt.Tooltip("head:N"), alt.Tooltip("query:N", title=QUERY_TITLE),
                 alt.Tooltip("key:N", title=KEY_TITLE), alt.Tooltip("weight:Q", format=".3f")],
    )

    def side(labels: list[str], field: str, x: float, align: str, selection: Any, what: str) -> alt.LayerChart:
        frame = pd.DataFrame({field: np.arange(len(labels)), "token": labels, "x": x})
        anchor = alt.Chart(frame).encode(x=alt.X("x:Q", scale=x_scale, axis=None),
                                         y=alt.Y(f"{field}:Q", scale=y_scale, axis=None),
                                         tooltip=[alt.Tooltip("token:N", title=what)])
        dots = anchor.mark_point(filled=True, size=140 * font_scale, color="#888").add_params(selection)
        text = anchor.mark_text(align=align, dx=-10 if align == "right" else 10, fontSize=12 * font_scale).encode(
            text="token:N")
        return dots + text

    left = side(q_labels, "query_index", 0.0, "right", over_q, QUERY_TITLE)
    right = side(k_labels, "key_index", 1.0, "left", over_k, KEY_TITLE)
    return alt.layer(drawn, left, right).properties(
        width=int(460 * font_scale), height=height,
        title=alt.Title(title, fontSize=14 * font_scale,
                        subtitle="Queries on the left, keys on the right. Hover a token to keep only its lines.",
                        subtitleFontSize=11 * font_scale),
    )


STAT_TITLES = {"entropy_bits": "entropy (bits)", "mean_distance": "mean distance |i − j|",
               "max_weight": "largest weight"}


def stats_heatmaps(records: list[dict[str, Any]], *, font_scale: float = 1.0) -> alt.HConcatChart:
    """One layer × head heatmap per statistic in ``records`` (from ``core.head_statistics``)."""
    frame = pd.DataFrame(records)
    charts = []
    for column, label in STAT_TITLES.items():
        if column not in frame or frame[column].isna().all():
            continue
        charts.append(
            alt.Chart(frame, title=alt.Title(label, fontSize=13 * font_scale)).mark_rect().encode(
                x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0, labelFontSize=11 * font_scale,
                                                             titleFontSize=12 * font_scale)),
                y=alt.Y("layer:O", title="layer", axis=alt.Axis(labelFontSize=11 * font_scale,
                                                               titleFontSize=12 * font_scale)),
                color=alt.Color(f"{column}:Q", scale=alt.Scale(scheme=base.SEQUENTIAL),
                                legend=alt.Legend(title=label, orient="bottom", direction="horizontal",
                                                  gradientLength=int(40 * frame["head"].nunique() * font_scale))),
                tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("head:O"),
                         *(alt.Tooltip(f"{c}:Q", title=t, format=".3f") for c, t in STAT_TITLES.items()
                           if c in frame and not frame[c].isna().all())],
            ).properties(width=int(40 * frame["head"].nunique() * font_scale) + 40,
                         height=int(40 * frame["layer"].nunique() * font_scale) + 20)
        )
    return alt.hconcat(*charts).resolve_scale(color="independent").properties(
        title=alt.Title("Per-head statistics", fontSize=14 * font_scale))


def probability_bars(labels: Sequence[str], probabilities: np.ndarray, *, title: str, x_title: str,
                     font_scale: float = 1.0) -> alt.Chart:
    """Horizontal bars of probabilities, most likely first, the value on hover and as text."""
    frame = pd.DataFrame({"label": [visible(str(label)) for label in labels],
                          "probability": np.asarray(probabilities, dtype=float)})
    order = list(frame["label"])
    bars = alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale)).encode(
        y=alt.Y("label:N", sort=order, title=x_title, axis=alt.Axis(labelFontSize=12 * font_scale,
                                                                    titleFontSize=12 * font_scale)),
        x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), title="probability",
                axis=alt.Axis(format="%", labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
        tooltip=[alt.Tooltip("label:N", title=x_title), alt.Tooltip("probability:Q", format=".1%")],
    )
    text = bars.mark_text(align="left", dx=4, fontSize=11 * font_scale).encode(
        text=alt.Text("probability:Q", format=".1%"))
    return (bars.mark_bar(color="#4c78a8") + text).properties(width=int(380 * font_scale),
                                                               height=int(28 * len(frame) * font_scale) + 10)


def row_bars(weights: np.ndarray, keys: Sequence[str], *, title: str, font_scale: float = 1.0,
             x_title: str = KEY_TITLE) -> alt.Chart:
    """One attention row as vertical bars over the key tokens (weights on hover)."""
    labels = token_labels(keys)
    frame = pd.DataFrame({"key": labels, "weight": np.asarray(weights, dtype=float)})
    return alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale)).mark_bar().encode(
        x=alt.X("key:N", sort=labels, title=x_title,
                axis=alt.Axis(labelAngle=-60, labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
        y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight",
                axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]), legend=None),
        tooltip=[alt.Tooltip("key:N", title=x_title), alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=int(max(260, 28 * len(labels)) * font_scale), height=int(200 * font_scale))
