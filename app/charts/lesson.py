"""Pictures for the guided lesson: vectors as strips and the output distribution (its attention
maps are drawn by :mod:`app.charts.attention`). Pure functions: arrays in, Altair charts out.
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app.charts.base import DIVERGING, heatmap, label_tokens, matrix_frame


def vectors(matrix: np.ndarray, tokens: Sequence[str], *, title: str, highlight: int | None = None,
            max_dims: int = 32, font_scale: float = 1.0, size: str | None = None) -> alt.Chart:
    """Rows of ``matrix`` (T, D) as coloured strips, one per token (first ``max_dims`` dimensions).

    A signed, diverging scale centred on 0; the highlighted token's label is marked with ▶; the title
    gives the array's size (T × D), and ``size`` (e.g. "Q ∈ ℝ^{S×d_k} = 3 × 32") is on every hover
    and under the title.
    """
    shown = np.asarray(matrix)[:, :max_dims]
    rows = [("▶ " if i == highlight else "") + label for i, label in enumerate(label_tokens(tokens))]
    limit = float(np.abs(shown).max()) or 1.0
    cols = [str(d) for d in range(shown.shape[1])]
    width = max(1, shown.shape[1])
    title_text = title if matrix.shape[1] <= max_dims else f"{title} (first {max_dims} of {matrix.shape[1]} dims)"
    chart = heatmap(shown, rows, cols, title=title_text, x_title="dimension", y_title="token", value="value",
                    scheme=DIVERGING, domain=(-limit, limit), size=min(14 * width, 460),
                    font_scale=font_scale).properties(height=min(26 * len(rows) + 10, 420))
    color = chart.encoding.color.copy()
    color.legend = alt.Legend(title="value", titlePadding=8 * font_scale)  # the title clear of the top tick
    chart = chart.encode(color=color).properties(
        title=alt.Title(f"{title_text} · {shape_text(matrix)}", fontSize=14 * font_scale))
    return chart if size is None else with_size(chart, size, font_scale)


def with_size(chart: alt.Chart | alt.LayerChart, size: str, font_scale: float = 1.0) -> alt.Chart | alt.LayerChart:
    """``chart`` with the array's size ``size`` on every hover (a "size" field) and as the title's subtitle."""
    out = _hover_size(chart, size)
    title = chart.title
    if isinstance(chart, alt.LayerChart):
        out.layer = [_hover_size(layer, size) for layer in chart.layer]
        title = chart.layer[0].title if title is alt.Undefined else title  # the layers carry it (one drawn)
    text = title.text if isinstance(title, alt.Title) else title
    font = title.fontSize if isinstance(title, alt.Title) else 14 * font_scale
    return out.properties(title=alt.Title(text, subtitle=size, fontSize=font, subtitleFontSize=12 * font_scale,
                                          subtitlePadding=6 * font_scale))


def _hover_size(chart: alt.Chart | alt.LayerChart, size: str) -> alt.Chart | alt.LayerChart:
    """A copy with a constant "size" column added to its data (if it holds any) and to its tooltip (if any)."""
    out = chart.copy()
    if isinstance(chart.data, pd.DataFrame):
        out.data = chart.data.assign(size=size)
    tips = getattr(chart, "encoding", alt.Undefined)
    tips = tips.tooltip if tips is not alt.Undefined else alt.Undefined
    return out.encode(tooltip=[*tips, alt.Tooltip("size:N", title="size")]) if isinstance(tips, list) else out


def shape_text(matrix: np.ndarray) -> str:
    """An array's size as the notes write it: ``3 × 64``."""
    return "size " + " × ".join(str(n) for n in np.shape(matrix))


def blocks(matrix: np.ndarray, rows: Sequence[str], names: Sequence[str], *, title: str, x_title: str,
           y_title: str, font_scale: float = 1.0, width: int = 560, size: str | None = None) -> alt.LayerChart:
    """A matrix whose columns fall into ``len(names)`` equal blocks (the stacked [W^Q | W^K | W^V],
    or the heads side by side): one diverging heatmap with a rule and a name over each block.

    Columns are labelled ``name:j`` (j from 0 inside the block); the size is in the subtitle, and
    ``size`` (the array's size in symbols and numbers) on every hover.
    """
    matrix = np.asarray(matrix)
    n_blocks, n_cols = len(names), matrix.shape[1]
    per = n_cols // n_blocks
    cols = [f"{names[c // per]}:{c % per}" for c in range(n_cols)]
    limit = float(np.abs(matrix).max()) or 1.0
    frame = matrix_frame(matrix, list(rows), cols, "value")
    frame["block"] = [names[c // per] for c in frame["col_index"]]
    frame["x1"] = frame["col_index"] + 1
    frame["size"] = size or shape_text(matrix)
    x_scale = alt.Scale(domain=[0, n_cols], nice=False, zero=True)
    cells = alt.Chart(frame).mark_rect().encode(
        x=alt.X("col_index:Q", scale=x_scale, title=x_title,
                axis=alt.Axis(values=[b * per for b in range(n_blocks + 1)], titleFontSize=12 * font_scale,
                              labelFontSize=11 * font_scale)),
        x2="x1:Q",
        y=alt.Y("row_index:O", title=y_title, axis=alt.Axis(labelExpr=_label_expr(rows),
                                                            labelFontSize=11 * font_scale,
                                                            titleFontSize=12 * font_scale)),
        color=alt.Color("value:Q", scale=alt.Scale(scheme=DIVERGING, domain=[-limit, limit])),
        tooltip=["block:N", alt.Tooltip("col:N", title="column"), alt.Tooltip("row:N", title=y_title),
                 alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("size:N", title="size")])
    edges = pd.DataFrame({"edge": [b * per for b in range(1, n_blocks)]})
    rules = alt.Chart(edges).mark_rule(color="black", strokeWidth=2).encode(x=alt.X("edge:Q", scale=x_scale))
    height = min(max(8, 300 // max(len(rows), 1)) * len(rows), 360)
    return alt.layer(cells, rules).properties(
        title=alt.Title(title if size is None else f"{title} · {shape_text(matrix)}",
                        subtitle=size or f"{shape_text(matrix)} · {n_blocks} blocks of {per} columns: "
                        + " | ".join(names), fontSize=14 * font_scale, subtitleFontSize=12 * font_scale,
                        subtitlePadding=6 * font_scale),
        width=width, height=height)


def _label_expr(rows: Sequence[str]) -> str:
    """A Vega expression mapping a row index to its label (for an ordinal axis on indices)."""
    labels = ", ".join(repr(str(r)) for r in rows)
    return f"[{labels}][datum.value]"


def candidates_bar(candidates: list[tuple[str, float]], *, title: str, font_scale: float = 1.0) -> alt.Chart:
    """The most likely next tokens and their probabilities, the greedy choice first."""
    frame = pd.DataFrame({"token": [t for t, _ in candidates], "probability": [p for _, p in candidates]})
    frame["choice"] = ["greedy choice" if i == 0 else "other" for i in range(len(frame))]
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_bar()
        .encode(
            x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            y=alt.Y("token:N", sort=None, axis=alt.Axis(labelFontSize=12 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color("choice:N", scale=alt.Scale(domain=["greedy choice", "other"],
                                                        range=["#1f77b4", "#bbbbbb"]), legend=None),
            tooltip=["token:N", alt.Tooltip("probability:Q", format=".4f")],
        )
        .properties(width=420, height=34 * len(frame) + 10)
    )


def sampling_bars(vocab: Sequence[str], original: np.ndarray, final: np.ndarray, *, title: str | list[str],
                  font_scale: float = 1.0, top: int = 10) -> alt.Chart:
    """The ``top`` most likely tokens: the model's probability beside the sampler's (after temperature,
    top-k and top-p, renormalised; 0 for a token cut off); a ``title`` list is drawn one line each."""
    order = np.argsort(-np.asarray(original), kind="stable")[:top]
    frame = pd.concat([pd.DataFrame({"token": [vocab[i] for i in order], "probability": np.asarray(dist)[order],
                                     "distribution": name})
                       for name, dist in (("model P", original), ("sampler draws from", final))])
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_bar()
        .encode(
            y=alt.Y("token:N", sort=[vocab[i] for i in order],
                    axis=alt.Axis(labelFontSize=12 * font_scale, titleFontSize=12 * font_scale)),
            yOffset="distribution:N",
            x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color("distribution:N", scale=alt.Scale(domain=["model P", "sampler draws from"],
                                                              range=["#bbbbbb", "#1f77b4"])),
            tooltip=["token:N", "distribution:N", alt.Tooltip("probability:Q", format=".4f")],
        )
        .properties(width=420, height=44 * len(order) + 10)
    )
