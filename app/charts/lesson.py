"""Pictures for the guided lesson: vectors as strips, matrices in blocks and the output distribution (its
attention maps are drawn by :mod:`app.charts.attention`). Pure functions: arrays in, charts out (Altair; the
block matrices, tens of thousands of cells, Plotly). Axis titles, legends and hovers are the ``charts`` messages
(``[lesson]``) in the chart's ``lang``; titles come in already written.
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app import i18n
from app.charts.base import DIVERGING, heatmap, label_tokens
from app.charts.maps import DIVERGING as DIVERGING_SCALE
from app.charts.look import lean_figure
from app.charts.margins import settle


def vectors(matrix: np.ndarray, tokens: Sequence[str], *, title: str, highlight: int | None = None,
            max_dims: int = 32, font_scale: float = 1.0, size: str | None = None, lang: str = i18n.DEFAULT) -> alt.Chart:
    """Rows of ``matrix`` (T, D) as coloured strips, one per token (first ``max_dims`` dimensions).

    A signed, diverging scale centred on 0; the highlighted token's label is marked with ▶; the title
    gives the array's size (T × D), and ``size`` (e.g. "Q ∈ ℝ^(S × d_k) = 3 × 32") is on every hover
    and under the title.
    """
    shown = np.asarray(matrix)[:, :max_dims]
    rows = [("▶ " if i == highlight else "") + label for i, label in enumerate(label_tokens(tokens))]
    limit = float(np.abs(shown).max()) or 1.0
    cols = [str(d) for d in range(shown.shape[1])]
    width = max(1, shown.shape[1])
    word = _words(lang)
    title_text = title if matrix.shape[1] <= max_dims else word("first_dims", title=title, n=max_dims,
                                                                 total=matrix.shape[1])
    chart = heatmap(shown, rows, cols, title=title_text, x_title=word("dimension"), y_title=word("token"),
                    value="value", scheme=DIVERGING, domain=(-limit, limit), size=min(14 * width, 460),
                    font_scale=font_scale, value_title=word("value")).properties(height=min(26 * len(rows) + 10, 420))
    color = chart.encoding.color.copy()
    color.legend = alt.Legend(title=word("value"), titlePadding=8 * font_scale)  # the title clear of the top tick
    chart = chart.encode(color=color).properties(
        title=alt.Title(f"{title_text} · {shape_text(matrix, lang)}", fontSize=14 * font_scale))
    return chart if size is None else with_size(chart, size, font_scale, lang)


def _words(lang: str):
    """The ``charts`` messages of the Lesson's pictures in ``lang``: ``word("value")``."""
    return lambda key, **values: i18n.text(lang, "charts", f"lesson.{key}", **values)


def with_size(chart: alt.Chart | alt.LayerChart, size: str, font_scale: float = 1.0,
              lang: str = i18n.DEFAULT) -> alt.Chart | alt.LayerChart:
    """``chart`` with the array's size ``size`` on every hover (a "size" field) and as the title's subtitle."""
    name = _words(lang)("size")
    out = _hover_size(chart, size, name)
    title = chart.title
    if isinstance(chart, alt.LayerChart):
        out.layer = [_hover_size(layer, size, name) for layer in chart.layer]
        title = chart.layer[0].title if title is alt.Undefined else title  # the layers carry it (one drawn)
    text = title.text if isinstance(title, alt.Title) else title
    font = title.fontSize if isinstance(title, alt.Title) else 14 * font_scale
    return out.properties(title=alt.Title(text, subtitle=size, fontSize=font, subtitleFontSize=12 * font_scale,
                                          subtitlePadding=6 * font_scale))


def _hover_size(chart: alt.Chart | alt.LayerChart, size: str, name: str) -> alt.Chart | alt.LayerChart:
    """A copy with a constant "size" column added to its data (if it holds any) and to its tooltip (if any)."""
    out = chart.copy()
    if isinstance(chart.data, pd.DataFrame):
        out.data = chart.data.assign(size=size)
    tips = getattr(chart, "encoding", alt.Undefined)
    tips = tips.tooltip if tips is not alt.Undefined else alt.Undefined
    return out.encode(tooltip=[*tips, alt.Tooltip("size:N", title=name)]) if isinstance(tips, list) else out


def shape_text(matrix: np.ndarray, lang: str = i18n.DEFAULT) -> str:
    """An array's size as the notes write it: ``size 3 × 64`` (the word in ``lang``)."""
    return _words(lang)("shape", shape=" × ".join(str(n) for n in np.shape(matrix)))


def _slices(n_blocks: int, per: int, slices: int, marked: int | None) -> list[dict]:
    """Dotted lines between the ``slices`` of every block, and a box around slice ``marked`` of each."""
    step = per // max(slices, 1)
    lines = [dict(type="line", x0=b * per + s * step - 0.5, x1=b * per + s * step - 0.5, y0=0, y1=1, yref="paper",
                  line=dict(color="#555555", width=1, dash="dot")) for b in range(n_blocks) for s in range(1, slices)]
    boxes = [] if marked is None else [
        dict(type="rect", x0=b * per + marked * step - 0.5, x1=b * per + (marked + 1) * step - 0.5, y0=0, y1=1,
             yref="paper", line=dict(color="black", width=2, dash="dash"), fillcolor="rgba(0,0,0,0)")
        for b in range(n_blocks)]
    return lines + boxes


def blocks(matrix: np.ndarray, rows: Sequence[str], names: Sequence[str], *, title: str, x_title: str,
           y_title: str, font_scale: float = 1.0, width: int = 560, size: str | None = None, slices: int = 1,
           marked: int | None = None, lang: str = i18n.DEFAULT) -> go.Figure:
    """A matrix whose columns fall into ``len(names)`` equal blocks (the stacked [W^Q | W^K | W^V],
    or the heads side by side): one diverging Plotly heatmap (a 128 × 384 W_qkv is one image, where a Vega-Lite
    chart drew 49,152 marks) with a line between blocks and each block's name over it.

    Columns are the categories ``name:j`` (j from 0 inside the block), so a hover names its column from the
    axis, not from a per-cell array (a 128 × 384 figure would carry 49,152 strings); the ticks give each block's
    first column and the last one by number. The size is in the subtitle, and ``size`` (the array's size in
    symbols and numbers) on every hover too. ``slices``: each block is cut again into that many equal slices (the
    heads' d_k columns), drawn as dotted lines; ``marked``: that slice of every block is outlined (one head's
    columns of W^Q, W^K and W^V).
    """
    matrix = np.asarray(matrix, dtype=float)  # (rows, columns)
    n_blocks, n_cols = len(names), matrix.shape[1]
    per = n_cols // n_blocks
    limit = float(np.abs(matrix).max()) or 1.0
    word = _words(lang)
    shown = size or shape_text(matrix, lang)
    columns = [f"{names[c // per]}:{c % per}" for c in range(n_cols)]
    ticks = sorted({*range(0, n_cols, per), n_cols - 1})  # each block's first column, and the last
    trace = dict(type="heatmap", z=matrix, x=columns, y=[str(r) for r in rows], name="value",
                 zmin=-limit, zmax=limit, colorscale=DIVERGING_SCALE,
                 colorbar=dict(title=dict(text=word("value"), side="right"), thickness=14),
                 hovertemplate=f"%{{x}} · {y_title} %{{y}}<br>{word('value')} %{{z:.3f}}<br>{shown}<extra></extra>")
    edges = [dict(type="line", x0=b * per - 0.5, x1=b * per - 0.5, y0=0, y1=1, yref="paper",
                  line=dict(color="black", width=2)) for b in range(1, n_blocks)]
    edges += _slices(n_blocks, per, slices, marked)
    labels = [dict(x=(b + 0.5) * per - 0.5, y=1, yref="paper", yanchor="bottom", text=name, showarrow=False,
                   font=dict(size=12 * font_scale)) for b, name in enumerate(names)]
    height = min(max(8, 300 // max(len(rows), 1)) * len(rows), 360) * font_scale
    subtitle = size or word("blocks", shape=shape_text(matrix, lang), n=n_blocks, per=per, names=" | ".join(names))
    layout = dict(
        title=dict(text=title if size is None else f"{title} · {shape_text(matrix, lang)}", x=0, xanchor="left",
                   font=dict(size=14 * font_scale), subtitle=dict(text=subtitle, font=dict(size=12 * font_scale))),
        xaxis=dict(title=dict(text=x_title), type="category", tickvals=[columns[c] for c in ticks],
                   ticktext=[str(c) for c in ticks], showgrid=False, range=[-0.5, n_cols - 0.5],
                   tickfont=dict(size=11 * font_scale)),
        yaxis=dict(title=dict(text=y_title), type="category", autorange="reversed", showgrid=False,
                   tickfont=dict(size=11 * font_scale), automargin=True),
        shapes=edges, annotations=labels, width=int((width + 150) * font_scale),
        height=int(height + 150 * font_scale), margin=dict(l=10, r=10, t=int(90 * font_scale), b=10),
        font=dict(size=12 * font_scale))
    settle([trace], layout)
    return lean_figure([trace], layout)


def candidates_bar(candidates: list[tuple[str, float]], *, title: str, font_scale: float = 1.0,
                   lang: str = i18n.DEFAULT) -> alt.Chart:
    """The most likely next tokens and their probabilities, the greedy choice first."""
    word = _words(lang)
    frame = pd.DataFrame({"token": [t for t, _ in candidates], "probability": [p for _, p in candidates]})
    frame["choice"] = ["greedy choice" if i == 0 else "other" for i in range(len(frame))]
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_bar()
        .encode(
            x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), title=word("probability"),
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            y=alt.Y("token:N", sort=None, title=word("token"),
                    axis=alt.Axis(labelFontSize=12 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color("choice:N", scale=alt.Scale(domain=["greedy choice", "other"],
                                                        range=["#1f77b4", "#bbbbbb"]), legend=None),
            tooltip=[alt.Tooltip("token:N", title=word("token")),
                     alt.Tooltip("probability:Q", format=".4f", title=word("probability"))],
        )
        .properties(width=420, height=34 * len(frame) + 10)
    )


DRAW_SERIES = ("model P", "sampler's P", "share of the draws")


def draws_bars(tokens: Sequence[str], original: np.ndarray, probabilities: np.ndarray, frequencies: np.ndarray, *,
               title: str, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.Chart:
    """Each token's probability under the model and under the sampler (after temperature, top-k and top-p) beside
    its share of the draws, three bars a token (the series named in ``lang``)."""
    word = _words(lang)
    series = [word(f"series_{n}") for n in range(len(DRAW_SERIES))]
    frame = pd.concat([pd.DataFrame({"token": list(tokens), "share": np.asarray(values, dtype=float), "what": name})
                       for name, values in zip(series, (original, probabilities, frequencies))])
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_bar()
        .encode(
            y=alt.Y("token:N", sort=list(tokens), title=None,
                    axis=alt.Axis(labelFontSize=12 * font_scale, labelLimit=int(200 * font_scale))),
            yOffset="what:N",
            x=alt.X("share:Q", scale=alt.Scale(domain=[0, 1]), title=word("share"),
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color("what:N", title=None, scale=alt.Scale(domain=series,
                                                                 range=["#bbbbbb", "#1f77b4", "#ff7f0e"])),
            tooltip=[alt.Tooltip("token:N", title=word("token")), alt.Tooltip("what:N", title=word("series")),
                     alt.Tooltip("share:Q", format=".3f", title=word("share"))],
        )
        .properties(width=380, height=36 * len(tokens) + 10)
    )
