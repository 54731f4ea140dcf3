"""Attention charts: the labels of a map's rows and columns (decoder rows say "after this token →
predicts"), one head's heatmap (Plotly, :mod:`app.charts.maps`; Altair for small teaching views), a
signed heatmap, per-head statistics, prediction bars and single attention rows (the attention canvas,
:mod:`app.ui.canvas`, draws the Explore page's maps and lines).

Pure functions (numpy in, chart out), no Streamlit calls. Orientation everywhere:
rows = query tokens (attending), columns = key tokens (attended to).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts import base, look, maps
from core import Explanation

QUERY_TITLE = "query token (attending)"
KEY_TITLE = "key token (attended to)"
PREDICTS_TITLE = "decoder row: after this token → predicts"


visible = base.visible  # re-exported: the Explore page labels tokens with it


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Unique, visible axis labels (``"3:a"``): repeated tokens keep their own row or column."""
    return base.label_tokens(tokens)


def row_labels(kind: str, targets: Sequence[str], generated: Sequence[str]) -> list[str]:
    """Query labels of a map of ``kind``: a decoder or cross-attention row says what it does,
    ``"3:coche → rojo"`` (after reading ``targets[t]`` it predicts ``generated[t]``); other rows are tokens."""
    if kind in ("decoder", "cross") and generated and len(generated) == len(targets):
        return [f"{i}:{visible(t)} → {visible(g)}" for i, (t, g) in enumerate(zip(targets, generated))]
    return token_labels(targets)


def axes(exp: Explanation, kind: str) -> tuple[list[str], list[str], str]:
    """(row labels, column labels, row-axis title) of ``exp``'s maps of ``kind``."""
    queries, keys = exp.axis_tokens(kind)
    if kind == "encoder":
        return token_labels(queries), token_labels(keys), QUERY_TITLE
    rows = row_labels(kind, queries, exp.generated_tokens)
    return rows, token_labels(keys), PREDICTS_TITLE if exp.generated_tokens else QUERY_TITLE


def head_map(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, font_scale: float = 1.0,
             y_title: str = QUERY_TITLE, side: int | None = None) -> go.Figure:
    """One attention matrix (Tq, Tk) as a Plotly heatmap on the fixed 0–1 scale; ``rows``/``cols`` are labels."""
    return maps.heatmap(matrix, rows, cols, title=title, x_title=KEY_TITLE, y_title=y_title, font_scale=font_scale,
                        side=side)


def signed_map(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, value: str = "change",
               font_scale: float = 1.0, y_title: str = QUERY_TITLE, side: int | None = None) -> go.Figure:
    """Signed values on the blue-orange scale, symmetric about 0 (white means 0)."""
    limit = float(max(np.abs(matrix).max(initial=0.0), 1e-6))
    return maps.heatmap(matrix, rows, cols, title=title, x_title=KEY_TITLE, y_title=y_title, value=value,
                        colorscale=maps.DIVERGING, zrange=(-limit, limit), font_scale=font_scale, side=side,
                        fmt="+.3f")


def heatmap_size(rows: int, cols: int, font_scale: float = 1.0) -> int:
    """A square side that keeps every token label readable (between 260 and 620 px)."""
    return int(min(620, max(260, 18 * max(rows, cols) * font_scale)))


def head_heatmap(matrix: np.ndarray, queries: Sequence[str], keys: Sequence[str], *, title: str,
                 font_scale: float = 1.0, size: int | None = None, legend: bool = True,
                 axes: tuple[str, str, str] | None = None) -> alt.Chart:
    """One attention matrix (Tq, Tk) with token labels on both axes and the weight on hover.

    ``legend=False`` drops the colour legend (for a chart placed beside another on the same 0–1 scale).
    ``axes``: the key axis's, the query axis's and the weight's titles (English unless given).
    """
    size = size or heatmap_size(len(queries), len(keys), font_scale)
    x_title, y_title, value_title = axes or (KEY_TITLE, QUERY_TITLE, None)
    figure = base.heatmap(matrix, token_labels(queries), token_labels(keys), title=title, x_title=x_title,
                          y_title=y_title, domain=(0.0, 1.0), size=size, font_scale=font_scale,
                          value_title=value_title)
    if not legend:
        figure = figure.encode(color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]),
                                               legend=None))
    return figure


def signed_heatmap(matrix: np.ndarray, queries: Sequence[str], keys: Sequence[str], *, title: str,
                   value: str = "change", font_scale: float = 1.0, size: int | None = None,
                   limit: float | None = None, axes: tuple[str, str, str] | None = None) -> alt.Chart:
    """Signed values (a difference after − before, or pre-softmax scores) on a diverging scale
    centred on 0 (a symmetric domain, so white always means 0): ±``limit``, else ± the largest |value|.
    ``axes``: the key axis's, the query axis's and the value's titles (English, the value's name, unless given)."""
    limit = float(max(np.abs(matrix).max(initial=0.0), 1e-6)) if limit is None else float(limit)
    size = size or heatmap_size(len(queries), len(keys), font_scale)
    x_title, y_title, value_title = axes or (KEY_TITLE, QUERY_TITLE, None)
    return base.heatmap(matrix, token_labels(queries), token_labels(keys), title=title, x_title=x_title,
                        y_title=y_title, value=value, scheme=base.DIVERGING, domain=(-limit, limit),
                        size=size, font_scale=font_scale, fmt="+.3f", value_title=value_title)


def tidy_maps(maps: np.ndarray, queries: Sequence[str], keys: Sequence[str]) -> pd.DataFrame:
    """Every weight of (L, H, Tq, Tk) as rows: layer, head (both from 1), query_index, query, key_index,
    key, weight."""
    l, h, q, k = (a.ravel() for a in np.meshgrid(*(np.arange(n) for n in maps.shape), indexing="ij"))
    return pd.DataFrame({
        "layer": l + 1, "head": h + 1, "query_index": q, "query": np.asarray(queries, dtype=object)[q],
        "key_index": k, "key": np.asarray(keys, dtype=object)[k], "weight": maps.ravel().astype(float),
    })


STAT_TITLES = {"entropy_bits": "entropy (bits)", "mean_distance": "mean distance |i − j|",
               "max_weight": "largest weight (0–1 scale)"}
STATS_WIDTH = 800  # (px, times the font scale) the statistics figure fits the page's main column at 1280 px


def stats_figure(records: list[dict[str, Any]], *, font_scale: float = 1.0) -> go.Figure:
    """One layer × head heatmap per statistic in ``records`` (from ``core.head_statistics``, layers and heads
    counted from 1), side by side in one Plotly figure: each on its own colour scale (a horizontal colour bar
    under it; the largest weight on a fixed 0–1 scale), layer 1 on top, every statistic on hover."""
    frame = pd.DataFrame(records)
    shown = [(column, title) for column, title in STAT_TITLES.items()
             if column in frame and not frame[column].isna().all()]
    layers, heads = sorted(frame["layer"].unique()), sorted(frame["head"].unique())
    # (px) room for the layer labels, the head labels and colour bars below, the titles above: as much as Plotly's
    # automargin would take, so it draws the figure once (meta["settled"])
    gap, left, bottom, top = 60 * font_scale, 26 + 42 * font_scale, 120 * font_scale, 80 * font_scale
    room = STATS_WIDTH * font_scale - left - 20 * font_scale - (len(shown) - 1) * gap  # (px) for the panels
    cell = max(8.0, min(40 * font_scale, (room / len(shown) - 40 * font_scale) / len(heads)))  # (px) square cells
    panel = cell * len(heads) + 40 * font_scale  # (px) one statistic's heatmap
    plot_w, plot_h = len(shown) * panel + (len(shown) - 1) * gap, cell * len(layers) + 20 * font_scale
    traces, layout = [], {}
    for i, (column, title) in enumerate(shown):
        grid = frame.pivot(index="layer", columns="head", values=column).reindex(index=layers, columns=heads)  # (L, H)
        start = i * (panel + gap) / plot_w
        domain, axis = [start, start + panel / plot_w], "" if i == 0 else str(i + 1)
        traces.append(dict(
            type="heatmap", z=grid.to_numpy(dtype=float), x=[str(h) for h in heads], y=[str(n) for n in layers],
            xaxis=f"x{axis}", yaxis=f"y{axis}", name=title, colorscale=maps.SEQUENTIAL,
            **({"zmin": 0.0, "zmax": 1.0} if column == "max_weight" else {}),
            colorbar=dict(orientation="h", x=sum(domain) / 2, xanchor="center", len=panel / plot_w, thickness=10,
                          y=-60 * font_scale / plot_h, yanchor="top", tickfont=dict(size=11 * font_scale)),
            hovertemplate=f"layer %{{y}}, head %{{x}}<br>{title}: %{{z:.3f}}<extra></extra>"))
        tick = dict(size=11 * font_scale)
        layout[f"xaxis{axis}"] = dict(domain=domain, anchor=f"y{axis}", type="category", tickfont=tick,
                                      title=dict(text="head", font=dict(size=12 * font_scale)))
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", type="category", autorange="reversed", tickfont=tick,
                                      title=dict(text="layer" if i == 0 else "", font=dict(size=12 * font_scale)))
    layout.update(
        title=dict(text="Per-head statistics", font=dict(size=14 * font_scale)),
        annotations=[dict(text=title, x=sum(layout[f"xaxis{'' if i == 0 else i + 1}"]["domain"]) / 2, y=1,
                          xref="paper", yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
                          font=dict(size=13 * font_scale)) for i, (_, title) in enumerate(shown)],
        width=int(plot_w + left + 20 * font_scale), height=int(plot_h + top + bottom),
        margin=dict(l=int(left), r=int(20 * font_scale), t=int(top), b=int(bottom)), font=dict(size=12 * font_scale),
        meta={"settled": True})
    return look.lean_figure(traces, layout)


def candidate_rows(labels: Sequence[str], probabilities: np.ndarray) -> pd.DataFrame:
    """The bars of :func:`probability_bars`: each candidate's rank (0: the most likely), its label as it reads
    on screen, and its probability."""
    return pd.DataFrame({"rank": np.arange(len(labels)), "label": [visible(str(label)) for label in labels],
                         "probability": np.asarray(probabilities, dtype=float)})


def probability_bars(rows: pd.DataFrame | str, *, count: int, title: str, x_title: str,
                     font_scale: float = 1.0) -> alt.LayerChart:
    """Horizontal bars of ``count`` probabilities in rank order (most likely first), the value on hover and as
    text, from the rows of :func:`candidate_rows` or the name of the dataset holding them (the spec then holds
    no candidate: a new text changes the rows only)."""
    bars = alt.Chart(base.rows_or_named(rows), title=alt.Title(title, fontSize=14 * font_scale)).encode(
        y=alt.Y("label:N", sort=alt.EncodingSortField("rank", op="min"), title=x_title,
                axis=alt.Axis(labelFontSize=12 * font_scale, titleFontSize=12 * font_scale)),
        x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), title="probability",
                axis=alt.Axis(format="%", labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
        tooltip=[alt.Tooltip("label:N", title=x_title), alt.Tooltip("probability:Q", format=".1%")],
    )
    text = bars.mark_text(align="left", dx=4, fontSize=11 * font_scale).encode(
        text=alt.Text("probability:Q", format=".1%"))
    return (bars.mark_bar(color="#4c78a8") + text).properties(width=int(380 * font_scale),
                                                               height=int(28 * count * font_scale) + 10)


def row_bars(weights: np.ndarray, keys: Sequence[str], *, title: str, font_scale: float = 1.0,
             x_title: str = KEY_TITLE) -> alt.Chart:
    """One attention row as vertical bars over the key tokens (weights on hover)."""
    labels = token_labels(keys)
    frame = pd.DataFrame({"key": labels, "weight": np.asarray(weights, dtype=float)})
    return alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale)).mark_bar().encode(
        x=alt.X("key:N", sort=labels, title=x_title,
                axis=alt.Axis(labelAngle=-60, labelFontSize=11 * font_scale, titleFontSize=12 * font_scale,
                              labelOverlap=False)),  # every token: 28 px a bar, slanted labels fit
        y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight",
                axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]), legend=None),
        tooltip=[alt.Tooltip("key:N", title=x_title), alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=int(max(260, 28 * len(labels)) * font_scale), height=int(200 * font_scale))
