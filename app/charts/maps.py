"""Plotly heatmaps that scale: one matrix as one image-like ``go.Heatmap`` trace (hover values, every token
labelled up to :data:`MAX_LABELLED` tokens, block-averaged beyond :data:`MAX_SIDE`), and the block mass and
shared scale of the attention canvas's model-view thumbnails (:mod:`app.ui.canvas.payload`).

Pure functions (numpy in, ``go.Figure`` out), no Streamlit calls. Orientation: rows = query tokens,
columns = key tokens. Layers and heads are numbered from 1 on screen (0-based in code). A figure's
``look.meta(figure)["note"]`` says what is not shown in full (thinned labels, averaged blocks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from app.charts import base
from app.charts.look import lean_figure, meta
from app.charts.margins import settle

SEQUENTIAL = "Viridis"  # perceptually uniform, colour-blind safe
DIVERGING = [[0.0, "#134b85"], [0.25, "#5e9ad0"], [0.5, "#f4f4f4"], [0.75, "#f0a04a"], [1.0, "#8a4204"]]  # blue-orange
MAX_LABELLED = 48  # up to this many tokens every one is labelled
MAX_SIDE = 400  # a head is drawn with at most this many rows/columns (block means beyond)


def edges(n: int, bins: int) -> np.ndarray:
    """``bins + 1`` integer bin edges splitting ``range(n)`` into ``bins`` near-equal blocks."""
    return np.linspace(0, n, min(n, bins) + 1).round().astype(int)


def downsample(matrix: np.ndarray, max_rows: int, max_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Block means of ``matrix`` (at most ``max_rows`` × ``max_cols``) and the row and column bin edges.

    A matrix that already fits comes back unchanged (its edges are ``0..n``).
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    rows, cols = edges(matrix.shape[0], max_rows), edges(matrix.shape[1], max_cols)
    if len(rows) - 1 == matrix.shape[0] and len(cols) - 1 == matrix.shape[1]:
        return matrix, rows, cols
    summed = np.add.reduceat(np.add.reduceat(matrix, rows[:-1], axis=0), cols[:-1], axis=1)
    counts = np.outer(np.diff(rows), np.diff(cols))
    return (summed / counts).astype(np.float32), rows, cols


def _binned(labels: Sequence[str], cut: np.ndarray) -> list[str]:
    if len(cut) - 1 == len(labels):
        return list(labels)
    return [f"tokens {a}–{b - 1}" if b - a > 1 else labels[a] for a, b in zip(cut[:-1], cut[1:])]


def tick_size(n: int, font_scale: float = 1.0) -> float:
    """Tick label size: 12 px for short inputs, shrinking to 8 px at :data:`MAX_LABELLED` tokens."""
    return font_scale * float(np.interp(n, [16, MAX_LABELLED], [12, 8]))


def _axis(labels: list[str], title: str, font_scale: float, **extra) -> tuple[dict, int]:
    """Axis settings labelling every category (or every k-th beyond MAX_LABELLED); returns (axis, k)."""
    step = max(1, int(np.ceil(len(labels) / MAX_LABELLED)))
    shown = labels[::step]
    return dict(title=dict(text=title, font=dict(size=12 * font_scale)), type="category", tickmode="array",
                tickvals=shown, ticktext=shown, tickfont=dict(size=tick_size(len(shown), font_scale)),
                automargin=True, showgrid=False, **extra), step


def heatmap_side(rows: int, cols: int, font_scale: float = 1.0) -> int:
    """The plot's side in pixels: room for every label, between 280 and 640 (times the font scale)."""
    return int(font_scale * min(640, max(280, 15 * max(rows, cols))))


def heatmap(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, x_title: str,
            y_title: str, value: str = "weight", colorscale=SEQUENTIAL, zrange: tuple[float, float] = (0.0, 1.0),
            font_scale: float = 1.0, side: int | None = None, fmt: str = ".3f", showscale: bool = True) -> go.Figure:
    """One matrix as one heatmap trace, token labels on both axes and ``value`` on hover."""
    small, row_cut, col_cut = downsample(matrix, MAX_SIDE, MAX_SIDE)
    y, x = _binned(list(rows), row_cut), _binned(list(cols), col_cut)
    side = side or heatmap_side(len(y), len(x), font_scale)
    xaxis, x_step = _axis(x, x_title, font_scale, tickangle=-60, side="bottom")
    yaxis, y_step = _axis(y, y_title, font_scale, autorange="reversed")
    trace = dict(type="heatmap", z=small, x=x, y=y, zmin=zrange[0], zmax=zrange[1], colorscale=colorscale, name=value,
                 showscale=showscale, colorbar=dict(title=dict(text=value, side="right"), thickness=14,
                                                    tickfont=dict(size=11 * font_scale)),
                 hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>{value}: %{{z:{fmt}}}<extra></extra>")
    layout = dict(title=dict(text=title, font=dict(size=15 * font_scale)), xaxis=xaxis, yaxis=yaxis,
                  width=side + int(170 * font_scale) + _label_room(yaxis),
                  height=side + int(150 * font_scale) + _label_room(xaxis, slope=0.87),
                  margin=dict(l=10, r=10, t=int(50 * font_scale), b=10), font=dict(size=12 * font_scale),
                  meta={"value": value, "note": _note(matrix, small, x_step, y_step)})
    settle([trace], layout)
    return lean_figure([trace], layout)


def _label_room(axis: dict, slope: float = 1.0) -> int:
    """Pixels to add to the figure for tick labels longer than the ~70 px its margins budget (by ``slope``,
    the sine of their angle), so that the room :func:`settle` makes for them comes out of the figure, not the plot."""
    size = axis["tickfont"]["size"]
    longest = 0.6 * size * max((len(label) for label in axis["ticktext"]), default=0)  # ~0.6 em a character
    return int(max(0.0, slope * longest - 6 * size))


def _note(matrix: np.ndarray, small: np.ndarray, x_step: int, y_step: int) -> str | None:
    notes = []
    if small.shape != np.shape(matrix):
        notes.append(f"This {matrix.shape[0]:,} × {matrix.shape[1]:,} map is drawn as {small.shape[0]} × "
                     f"{small.shape[1]} blocks, each the mean of the weights it covers; export the numbers for "
                     "every weight.")
    if max(x_step, y_step) > 1:
        notes.append(f"Too many tokens to label each: every {base.ordinal(max(x_step, y_step))} position is labelled "
                     "(hover any cell for its tokens).")
    return " ".join(notes) or None


def note(figure: go.Figure) -> str | None:
    """What the figure does not show in full (None when it shows everything)."""
    return meta(figure).get("note")


def block_mass(matrix: np.ndarray, max_rows: int, max_cols: int) -> np.ndarray:
    """``matrix`` (Tq, Tk) in at most ``max_rows`` × ``max_cols`` blocks: the mean over a block's query rows of
    the weight its key columns hold together, so each thumbnail row still sums to 1 (a matrix that fits
    comes back unchanged)."""
    small, _, cols = downsample(matrix, max_rows, max_cols)
    return small * np.diff(cols).astype(np.float32)  # column means times columns per block = column sums


def grid_top(grid: np.ndarray, reduced: bool) -> float:
    """The top of the model view's one shared colour scale: 1 when every weight is drawn as it is; for
    thumbnails of long inputs (blocks of many keys, most holding a few per cent), the 90th percentile of
    every block on the page (two significant digits, at least 0.01; the few blocks above it, such as a
    first token every query parks on, take the top colour), so a spread-out head is not uniformly dark."""
    if not reduced:
        return 1.0
    top = float(np.nanpercentile(grid, 90)) if np.isfinite(grid).any() else 1.0
    return float(min(1.0, max(0.01, float(f"{top:.2g}"))))
