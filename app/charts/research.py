"""The research views' grids: one score per (row, column) cell — layers × positions for the logit lens, layers ×
heads for the sweep, the head types and a diff — as one Plotly heatmap whose cells take a click.

Pure functions (numpy in, ``go.Figure`` out), no Streamlit calls. Rows and columns are numbered from 1 on screen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.charts.base import visible
from app.charts.look import lean_figure
from app.charts.maps import DIVERGING, SEQUENTIAL
from app.charts.margins import settle


def cell_grid(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, value: str,
              signed: bool = False, text: np.ndarray | None = None, font_scale: float = 1.0,
              zrange: tuple[float, float] | None = None) -> object:
    """``values`` (R, C) as one heatmap labelled ``rows`` and ``cols`` (``text``: a short string written in each
    cell, e.g. its top token); ``signed`` values get a diverging scale symmetric about 0. A transparent marker
    over each cell takes the click (:func:`picked_cell` reads it). NaN cells (not measured) stay blank."""
    values = np.asarray(values, dtype=np.float32)
    finite = values[np.isfinite(values)]
    if zrange is None:
        top = float(np.abs(finite).max()) if finite.size else 1.0
        zrange = (-top, top) if signed else (0.0, max(top, 1e-6))
    n_rows, n_cols = values.shape
    cell = max(22.0, min(64.0, 760 / max(n_cols, 1))) * font_scale
    x, y = list(range(1, n_cols + 1)), list(range(1, n_rows + 1))
    grid = dict(type="heatmap", z=values, x=x, y=y, zmin=zrange[0], zmax=zrange[1], hoverongaps=False,
                colorscale=DIVERGING if signed else SEQUENTIAL, name=value,
                colorbar=dict(title=dict(text=value, side="right"), thickness=14),
                customdata=np.array([[f"{r} · {c}" for c in cols] for r in rows], dtype=object),
                hovertemplate=f"%{{customdata}}<br>{value}: %{{z:.3f}}<extra></extra>")
    if text is not None:
        grid.update(text=np.asarray(text, dtype=object), texttemplate="%{text}",
                    textfont=dict(size=max(8.0, min(12.0, cell / 4.5))))
    centres_x, centres_y = np.meshgrid(x, y)
    targets = dict(type="scatter", x=centres_x.ravel(), y=centres_y.ravel(), mode="markers", name="open",
                   marker=dict(symbol="square", size=cell * 0.8, color="rgba(0,0,0,0.01)"), showlegend=False,
                   hoverinfo="skip", selected=dict(marker=dict(opacity=1)), unselected=dict(marker=dict(opacity=1)))
    ticks = dict(tickfont=dict(size=11 * font_scale), showgrid=False, zeroline=False)
    layout = dict(
        title=dict(text=title, font=dict(size=15 * font_scale)), font=dict(size=12 * font_scale),
        xaxis=dict(tickvals=x, ticktext=list(cols), side="top", **ticks,
                   tickangle=-45 if max(map(len, cols), default=0) * 6.5 * font_scale > cell else 0),
        yaxis=dict(tickvals=y, ticktext=list(rows), autorange="reversed", **ticks),
        width=int(cell * n_cols + 200 * font_scale), height=int(cell * n_rows + 150 * font_scale),
        margin=dict(l=10, r=10, t=int(90 * font_scale), b=10), clickmode="event+select", dragmode=False,
        meta={"value": value, "rows": n_rows, "cols": n_cols})
    settle([grid], layout)
    layout["height"] += layout["margin"]["t"] - int(90 * font_scale)  # the plot keeps its height under taller labels
    return lean_figure([grid, targets], layout)


def picked_cell(points: Sequence[dict]) -> tuple[int, int] | None:
    """The 0-based (row, column) of a click on :func:`cell_grid` (None when nothing was picked)."""
    for point in points:
        x, y = point.get("x"), point.get("y")
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            return int(round(y)) - 1, int(round(x)) - 1
    return None


def layer_head_grid(values: np.ndarray, *, title: str, value: str, signed: bool = False,
                    zrange: tuple[float, float] | None = None, font_scale: float = 1.0) -> object:
    """An (L, H) score per head as a :func:`cell_grid` labelled "layer 1…" × "head 1…"."""
    values = np.asarray(values)
    return cell_grid(values, [f"layer {l + 1}" for l in range(values.shape[0])],
                     [f"head {h + 1}" for h in range(values.shape[1])], title=title, value=value, signed=signed,
                     zrange=zrange, font_scale=font_scale)


def lens_grid(lens, *, font_scale: float = 1.0) -> object:
    """A :class:`core.inspect.lens.LogitLens` as stages × positions: each cell writes the token that stage would
    predict next, coloured by the probability it gives the model's final choice."""
    columns = [f"{i}: {visible(t)}" for i, t in enumerate(lens.tokens)]
    top = np.array([[visible(stage[p][0])[:6] for p in range(len(lens.tokens))] for stage in lens.top_tokens],
                   dtype=object)
    return cell_grid(lens.final_prob, lens.stages, columns, text=top, font_scale=font_scale,
                     title="Probability of the model's final choice at each position, after each layer",
                     value="probability", zrange=(0.0, 1.0))


def sweep_grid(change: np.ndarray, kind_label: str, *, font_scale: float = 1.0) -> object:
    """One kind's (L, H) sweep: the change in the measured log-probability when each head is knocked out alone."""
    return layer_head_grid(change, signed=True, font_scale=font_scale, value="Δ log-probability",
                           title=f"{kind_label}: change when the head is knocked out")


HEAD_TYPES = {  # measure → (title, value, the one-line definition shown under the grid)
    "sink": ("Sink share", "share", "The mean weight a head's queries put on the first position (an attention sink)."),
    "previous": ("Previous-token score", "weight", "The mean weight query i puts on key i − 1."),
    "induction": ("Induction score", "weight",
                  "On a random sequence repeated twice, the mean weight a token of the second copy puts on the token "
                  "that followed its first occurrence: what an induction head copies from."),
}


def head_type_grid(values: np.ndarray, measure: str, *, suffix: str = "", font_scale: float = 1.0) -> object:
    """One of :data:`HEAD_TYPES`' (L, H) scores, on the 0…1 scale."""
    title, value, _ = HEAD_TYPES[measure]
    return layer_head_grid(values, title=title + suffix, value=value, zrange=(0.0, 1.0), font_scale=font_scale)


def divergence_grid(divergence: np.ndarray, kind_label: str, *, font_scale: float = 1.0) -> object:
    """Two models' per-head Jensen–Shannon divergence (bits) on one input."""
    return layer_head_grid(divergence, title=f"{kind_label}: Jensen–Shannon divergence", value="bits",
                           zrange=(0.0, 1.0), font_scale=font_scale)
