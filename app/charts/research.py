"""The research views' grids: one score per (row, column) cell — layers × positions for the logit lens, layers ×
heads for the sweep, the head types and a diff — as one Plotly heatmap whose cells take a click.

Pure functions (numpy in, ``go.Figure`` out), no Streamlit calls. Rows and columns are numbered from 1 on screen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
