"""The Learn pages' matrices as Plotly heatmaps: a table of numbers (positional encodings, weights, norms) and
a True/False mask, each one image-like trace (the head view's library: a control that changes a matrix redraws
it as fast as a bare heatmap, where a Vega-Lite chart of thousands of cells is compiled again).

Pure functions (numpy in, ``go.Figure`` out), no Streamlit calls. Rows are drawn top to bottom in their order
(row 0 at the top), every row and column labelled up to :data:`MAX_LABELS` of them (every n-th beyond), the
numbers on hover, and written in the cells of small grids. A mask's words ("may attend", "masked") come from the
``charts`` messages in the figure's ``lang`` (:mod:`app.i18n`); titles come in already written.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from app import i18n
from app.charts.base import SEQUENTIAL
from app.charts.maps import DIVERGING as DIVERGING_SCALE
from app.charts.maps import SEQUENTIAL as SEQUENTIAL_SCALE
from app.charts.look import HEADING, lean_figure
from app.charts.margins import settle

# Two colours told apart by every common colour-vision deficiency (Okabe–Ito blue and orange).
MAY_ATTEND, MASKED = "#0072B2", "#E69F00"
MAX_LABELS = 32  # beyond this many rows or columns an axis labels every n-th only
LEGEND_ROOM = 75  # pixels right of the plot for the colour bar, times the font scale
# pixels a figure in a third or a half of the page may take (1280 px wide, beside the sidebar), times the font scale
THIRD, HALF = 260, 390
TEXT_WIDTH = 28  # pixels a cell needs for its number ("-0.25" at 10 px), times the font scale
PANEL_GAP = 28  # pixels between the panels of one figure (side_by_side), times the font scale
MARK_CELL = 11  # pixels a mask's cell needs for its ✓ / ✗, times the font scale


def _axis(labels: list[str], title: str, font_scale: float, cell: float, across: bool, **extra) -> dict:
    """A category axis whose labels never touch: every ``step``-th label when ``cell`` (pixels per category) is
    too small for one each; x labels (``across``) tilted when they are too long to stand side by side."""
    size = 11 * font_scale
    line = 1.5 * size  # a label's height, and (over sin 60°) the width a tilted one takes along the axis
    flat = 0.62 * size * max((_length(label) for label in labels), default=1) + 4
    tilted = across and flat > cell
    need = line / 0.87 if tilted else (flat if across else line)
    step = max(-(-len(labels) // MAX_LABELS), int(np.ceil(need / max(cell, 1e-9))))
    shown = labels[::step]
    return dict(type="category", title=dict(text=title, font=dict(size=12 * font_scale)), tickmode="array",
                tickvals=shown, ticktext=shown, tickfont=dict(size=size), showgrid=False, automargin=True,
                tickangle=-60 if tilted else 0, **extra)


def _wide(char: str) -> bool:
    """Whether ``char`` is set twice as wide as a Latin letter (Chinese, Japanese, full-width forms)."""
    return unicodedata.east_asian_width(char) in ("W", "F")


NO_LINE_START = "、。，．・：；？！）」』】〉》ー"  # never starts a line in Chinese or Japanese (kinsoku)


def _pieces(text: str) -> list[tuple[str, str]]:
    """``text`` as (glue, piece) pairs, broken where a line may break: at spaces (glue " ") and between two wide
    (CJK) characters (glue ""), never before closing punctuation."""
    pieces: list[tuple[str, str]] = []
    for word in text.split(" "):
        glue, run = " ", ""
        for char in word:
            if run and (_wide(char) or _wide(run[-1])) and char not in NO_LINE_START:
                pieces.append((glue, run))
                glue, run = "", ""
            run += char
        pieces.append((glue, run))
    return pieces


def _length(text: str) -> int:
    """``text``'s width in Latin letters (a wide character counts two)."""
    return sum(2 if _wide(c) else 1 for c in text)


def _wrapped(text: str, size: float, width: float) -> list[str]:
    """``text`` in lines of at most ``width`` pixels at font ``size`` (broken between words, or between CJK
    characters, which count twice)."""
    per_line = max(int(width / (0.55 * size)), 12)
    lines: list[str] = []
    for glue, piece in _pieces(text):
        if lines and _length(lines[-1]) + len(glue) + _length(piece) <= per_line:
            lines[-1] += glue + piece
        else:
            lines.append(piece)
    return lines


def _title(text: str, font_scale: float, subtitle: str | None, width: float) -> tuple[dict, int]:
    """The figure's title (and subtitle), wrapped to ``width`` pixels, and the top margin it needs."""
    lines = _wrapped(text, 14 * font_scale, width)
    title = dict(text="<br>".join(lines), x=0, xanchor="left", font=dict(size=14 * font_scale))
    top = (22 + 18 * len(lines)) * font_scale
    if subtitle:
        below = _wrapped(subtitle, 11 * font_scale, width)
        title["subtitle"] = dict(text="<br>".join(below), font=dict(size=11 * font_scale))
        top += (10 + 15 * len(below)) * font_scale  # Plotly sets the subtitle a little below the title
    return title, int(top)


def _room(labels: Sequence[str], font_scale: float, per_char: float) -> int:
    """Pixels beside the plot for an axis' title and its longest label."""
    return int(34 * font_scale + per_char * font_scale * max((_length(str(t)) for t in labels), default=1))


def _layout(text: str, subtitle: str | None, xaxis: dict, yaxis: dict, width: float, height: float,
            font_scale: float, max_width: float) -> dict:
    """The plot area ``width`` × ``height`` with room for the title, the axes and the colour bar; the figure is
    at least as wide as its title would like, up to ``max_width``, and the title wraps within it."""
    left, bottom = _room(yaxis["ticktext"], font_scale, 6.5), _room(xaxis["ticktext"], font_scale, 5)
    total = width + left + LEGEND_ROOM * font_scale
    total = min(max(total, 0.55 * 14 * font_scale * len(text) + 20), max(max_width, total))
    title, top = _title(text, font_scale, subtitle, total - 20)
    return dict(title=title, xaxis=xaxis, yaxis=yaxis, width=int(total), height=int(height + top + bottom),
                margin=dict(l=10, r=10, t=top, b=10), font=dict(size=12 * font_scale))


def _cell_sides(n_rows: int, n_cols: int, rows: list[str], font_scale: float, cell: float | None, max_width: float,
                max_height: float, square: bool) -> tuple[float, float]:
    """A cell's width and height: at most ``cell`` (44 px by default) times the font scale, and small enough for
    the whole figure, labels and colour bar included, to fit in ``max_width`` × ``max_height`` (pixels)."""
    plot_width = max(max_width - _room(rows, font_scale, 6.5) - LEGEND_ROOM * font_scale, 60)
    largest = (cell or 44) * font_scale
    cell_w = float(np.clip(plot_width / max(n_cols, 1), 3, largest))
    cell_h = float(np.clip(max_height / max(n_rows, 1), 3, largest))
    return (min(cell_w, cell_h),) * 2 if square else (cell_w, cell_h)


def grid_heatmap(
    matrix: np.ndarray, *, title: str, x_title: str, y_title: str, value: str = "value",
    rows: Sequence[str] | None = None, cols: Sequence[str] | None = None, scheme: str = "diverging",
    domain: tuple[float, float] | None = None, symmetric: bool = False, annotate: bool | None = None,
    cell: int | None = None, max_width: int = 800, max_height: int = 560, font_scale: float = 1.0,
    subtitle: str | None = None, fmt: str = ".4f",
) -> go.Figure:
    """A rectangular heatmap (rows × columns) that stays readable from 2×2 up to 100×512.

    ``scheme``: ``"diverging"`` (blue-orange, for signed values) or :data:`app.charts.base.SEQUENTIAL`;
    ``symmetric`` centres the diverging scale on 0; ``annotate`` writes each value in its cell (default: when
    the grid is at most 12 × 12, and only where a cell is wide enough for it). The whole figure fits in
    ``max_width`` × ``max_height`` pixels times the font scale (a cell is at most ``cell`` wide), so it fits a
    column that wide (``THIRD``, ``HALF``). The trace is named ``value`` (hover shows it with ``fmt``).
    """
    matrix = np.asarray(matrix, dtype=float)  # (rows, cols)
    n_rows, n_cols = matrix.shape
    rows = [str(r) for r in rows] if rows is not None else [str(i) for i in range(n_rows)]
    cols = [str(c) for c in cols] if cols is not None else [str(j) for j in range(n_cols)]
    if (len(rows), len(cols)) != matrix.shape:
        raise ValueError(f"matrix shape {matrix.shape} does not match {len(rows)} rows × {len(cols)} columns")
    if domain is None and symmetric:
        bound = float(np.abs(matrix).max()) or 1.0
        domain = (-bound, bound)
    annotate = (n_rows <= 12 and n_cols <= 12) if annotate is None else annotate
    # square cells when written in (text fits) or when the matrix is square (a symmetric one looks symmetric)
    cell_w, cell_h = _cell_sides(n_rows, n_cols, rows, font_scale, cell, max_width * font_scale,
                                 max_height * font_scale, annotate or n_rows == n_cols)
    annotate = annotate and cell_w >= TEXT_WIDTH * font_scale  # a cell too narrow for its number shows it on hover
    trace = dict(_value_trace(matrix, value, f"{y_title}: %{{y}}<br>{x_title}: %{{x}}", scheme, domain, annotate,
                              font_scale, fmt), x=cols, y=rows)
    xaxis = _axis(cols, x_title, font_scale, cell_w, across=True)
    yaxis = _axis(rows, y_title, font_scale, cell_h, across=False, autorange="reversed")
    layout = _layout(title, subtitle, xaxis, yaxis, max(cell_w * n_cols, 120), max(cell_h * n_rows, 60), font_scale,
                     max_width * font_scale)
    settle([trace], layout)
    return lean_figure([trace], layout)


def side_by_side(
    matrices: Sequence[np.ndarray], titles: Sequence[str], *, x_title: str, y_title: str, value: str = "weight",
    rows: Sequence[str], cols: Sequence[str], scheme: str = SEQUENTIAL, domain: tuple[float, float] | None = None,
    annotate: bool = False, max_width: int = 2 * HALF, max_height: int = 440, font_scale: float = 1.0,
) -> go.Figure:
    """Matrices of one shape side by side in ONE figure (one chart for the browser to lay out where there were as
    many as matrices): a panel each, titled ``titles``, the rows labelled once on the left, and one colour scale for
    them all with its bar on the right: ``scheme`` as in :func:`grid_heatmap`, over ``domain`` (by default their
    whole range, symmetric about 0 on the diverging scale). A cell is at most 44 pixels (times the font scale) and
    written in where ``annotate`` and it is wide enough. The traces are named ``value``."""
    traces, layout, _ = _side_by_side_parts(matrices, titles, x_title=x_title, y_title=y_title, value=value,
                                            rows=rows, cols=cols, scheme=scheme, domain=domain, annotate=annotate,
                                            max_width=max_width, max_height=max_height, font_scale=font_scale)
    settle(traces, layout)
    return lean_figure(traces, layout)


def mask_beside(
    mask: np.ndarray, matrices: Sequence[np.ndarray], titles: Sequence[str], *, mask_title: str, x_title: str,
    y_title: str, rows: Sequence[str], cols: Sequence[str], annotate: bool = False, font_scale: float = 1.0,
    value: str = "weight", lang: str = i18n.DEFAULT,
) -> go.Figure:
    """A True/False mask as the first panel of ONE figure (as :func:`mask_heatmap` draws it, its colours named in
    its cells' ✓ / ✗ and hover rather than a bar) and weights in [0, 1] in the panels after it, as
    :func:`side_by_side` lays them out: the mask and what it does drawn as one chart, where there were two."""
    allowed = np.asarray(mask, dtype=bool).astype(float)  # (rows, cols)
    traces, layout, side = _side_by_side_parts((allowed, *matrices), (mask_title, *titles), x_title=x_title,
                                               y_title=y_title, value=value, rows=rows, cols=cols,
                                               scheme=SEQUENTIAL, domain=(0.0, 1.0), annotate=annotate,
                                               max_width=2 * HALF, max_height=440, font_scale=font_scale)
    traces[0] = dict(_mask_trace(allowed, side, font_scale, x_title, y_title, lang), x=traces[0]["x"], y=traces[0]["y"],
                     xaxis="x", yaxis="y", showscale=False)
    settle(traces, layout)
    return lean_figure(traces, layout)


def _side_by_side_parts(matrices: Sequence[np.ndarray], titles: Sequence[str], *, x_title: str, y_title: str,
                        value: str, rows: Sequence[str], cols: Sequence[str], scheme: str,
                        domain: tuple[float, float] | None, annotate: bool, max_width: int, max_height: int,
                        font_scale: float) -> tuple[list[dict], dict, float]:
    """:func:`side_by_side`'s traces and layout before they are settled, and a cell's side in pixels."""
    matrices = [np.asarray(matrix, dtype=float) for matrix in matrices]  # (rows, cols) each
    n_rows, n_cols = matrices[0].shape
    rows, cols = [str(r) for r in rows], [str(c) for c in cols]
    if any(matrix.shape != (len(rows), len(cols)) for matrix in matrices) or len(titles) != len(matrices):
        raise ValueError(f"each of the {len(matrices)} matrices must be {len(rows)} × {len(cols)}, with a title")
    if domain is None:
        bound = max(float(np.abs(matrix).max()) for matrix in matrices) or 1.0
        domain = (-bound, bound) if scheme != SEQUENTIAL else (min(float(m.min()) for m in matrices),
                                                              max(float(m.max()) for m in matrices))
    n, gap, largest = len(matrices), PANEL_GAP * font_scale, 44 * font_scale
    room = _room(rows, font_scale, 6.5) + LEGEND_ROOM * font_scale + (n - 1) * gap
    cell_w = float(np.clip((max_width * font_scale - room) / (n * max(n_cols, 1)), 3, largest))
    side = min(cell_w, float(np.clip(max_height * font_scale / max(n_rows, 1), 3, largest)))  # square cells
    annotate = annotate and side >= TEXT_WIDTH * font_scale
    panel = max(side * n_cols, 60)
    traces = [dict(_value_trace(matrix, value, f"{title}<br>{y_title}: %{{y}}<br>{x_title}: %{{x}}", scheme, domain,
                                annotate, font_scale), x=cols, y=rows, xaxis=f"x{k + 1 if k else ''}", yaxis="y",
                   showscale=k == n - 1)
              for k, (matrix, title) in enumerate(zip(matrices, titles))]
    xaxis = _axis(cols, x_title, font_scale, side, across=True, anchor="y")
    layout = _layout("", None, xaxis, _axis(rows, y_title, font_scale, side, across=False, autorange="reversed"),
                     n * panel + (n - 1) * gap, max(side * n_rows, 60), font_scale, max_width * font_scale)
    _panels(layout, titles, panel, gap, font_scale)
    return traces, layout, side


def _panels(layout: dict, titles: Sequence[str], panel: float, gap: float, font_scale: float) -> None:
    """Give ``layout`` one x axis per panel (``panel`` pixels wide, ``gap`` between), each panel's title over it in
    place of the figure's, and the top margin the longest title needs."""
    total = len(titles) * panel + (len(titles) - 1) * gap
    starts = [k * (panel + gap) / total for k in range(len(titles))]  # of the plot area's width
    for k, start in enumerate(starts):
        layout[f"xaxis{k + 1 if k else ''}"] = dict(layout["xaxis"], domain=[start, start + panel / total])
    lines = [_wrapped(title, 14 * font_scale, panel) for title in titles]
    layout["annotations"] = [dict(text="<br>".join(text), x=start, y=1, xref="paper", yref="paper", xanchor="left",
                                  yanchor="bottom", yshift=6 * font_scale, align="left", showarrow=False,
                                  font=dict(size=14 * font_scale, color=HEADING, weight=700))
                             for text, start in zip(lines, starts)]
    layout.pop("title")
    top = int((14 + 18 * max(len(text) for text in lines)) * font_scale)
    layout["height"] += top - layout["margin"]["t"]
    layout["margin"]["t"] = top


def _value_trace(matrix: np.ndarray, value: str, where: str, scheme: str, domain: tuple[float, float] | None,
                 annotate: bool, font_scale: float, fmt: str = ".4f") -> dict:
    """A heatmap trace of ``matrix`` named ``value``: ``scheme``'s colours over ``domain`` (None: the data's range),
    its colour bar, a hover of ``where`` (the cell's place) and the value, and each value written in its cell when
    ``annotate``; the caller gives its axes and labels."""
    trace = dict(type="heatmap", z=matrix, name=value, xgap=1 if annotate else 0, ygap=1 if annotate else 0,
                 colorscale=SEQUENTIAL_SCALE if scheme == SEQUENTIAL else DIVERGING_SCALE,
                 colorbar=dict(title=dict(text=value, side="right"), thickness=14, tickfont=dict(size=11 * font_scale)),
                 hovertemplate=f"{where}<br>{value}: %{{z:{fmt}}}<extra></extra>")
    if domain is not None:
        trace.update(zmin=float(domain[0]), zmax=float(domain[1]))
    if annotate:
        trace.update(text=[[cell_text(v) for v in row] for row in matrix], texttemplate="%{text}",
                     textfont=dict(size=10 * font_scale))
    return trace


def mask_heatmap(
    mask: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, x_title: str | None = None,
    y_title: str | None = None, font_scale: float = 1.0, cell: int | None = None, subtitle: str | None = None,
    max_width: int = 640, lang: str = i18n.DEFAULT,
) -> go.Figure:
    """A True/False mask in two colour-blind-safe colours, ✓ / ✗ in every cell and a "may attend" / "masked"
    colour bar; the trace (named ``allowed``) holds 1 where a query may attend, 0 where it is masked. The figure
    fits in ``max_width`` pixels times the font scale; the axes are "key (attended to)" and "query (attending)" in
    ``lang`` unless given."""
    word = _mask_words(lang)
    x_title = word("key") if x_title is None else x_title
    y_title = word("query") if y_title is None else y_title
    allowed = np.asarray(mask, dtype=bool).astype(float)  # (rows, cols)
    rows, cols = [str(r) for r in rows], [str(c) for c in cols]
    n_rows, n_cols = allowed.shape
    size = min(cell or int(np.clip(420 / max(n_rows, n_cols, 1), 12, 40 * font_scale)),
               _cell_sides(n_rows, n_cols, rows, font_scale, None, max_width * font_scale, 10**6, False)[0])
    trace = dict(_mask_trace(allowed, size, font_scale, x_title, y_title, lang), x=cols, y=rows,
                 colorbar=dict(title=dict(text=word("cell"), side="right"), thickness=14, tickvals=[0.25, 0.75],
                               ticktext=[word("masked"), word("may_attend")], tickfont=dict(size=11 * font_scale)))
    xaxis = _axis(cols, x_title, font_scale, size, across=True)
    yaxis = _axis(rows, y_title, font_scale, size, across=False, autorange="reversed")
    layout = _layout(title, subtitle, xaxis, yaxis, size * n_cols, size * n_rows, font_scale, max_width * font_scale)
    settle([trace], layout)
    return lean_figure([trace], layout)


def _mask_words(lang: str):
    """The ``charts`` messages of a mask in ``lang``: ``word("masked")``."""
    return lambda key: i18n.text(lang, "charts", f"mask.{key}")


def _mask_trace(allowed: np.ndarray, size: float, font_scale: float, x_title: str, y_title: str,
                lang: str = i18n.DEFAULT) -> dict:
    """The heatmap trace of a mask (``allowed``: 1 may attend, 0 masked; named ``allowed``): its two colours, ✓ / ✗
    in every cell at a size that fits a ``size``-pixel cell (none below :data:`MARK_CELL` pixels times the font
    scale), and "may attend" / "masked" on hover."""
    word = _mask_words(lang)
    words = np.where(allowed > 0, word("may_attend"), word("masked"))
    trace = dict(type="heatmap", z=allowed, name="allowed", zmin=0, zmax=1, xgap=1, ygap=1,
                 colorscale=[[0.0, MASKED], [0.5, MASKED], [0.5, MAY_ATTEND], [1.0, MAY_ATTEND]],
                 customdata=words.tolist(),
                 hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>%{{customdata}}<extra></extra>")
    if size >= MARK_CELL * font_scale:  # a smaller cell shows its colour alone (and its word on hover)
        trace.update(text=np.where(allowed > 0, "✓", "✗").tolist(), texttemplate="%{text}",
                     textfont=dict(color="white", size=max(8.0, min(14.0, size * 0.45)) * font_scale))
    return trace


def cell_text(value: float) -> str:
    """A number as written in a cell: two decimals, an exact zero as "0", a cell not measured (NaN) blank."""
    if value != value:  # NaN
        return ""
    return "0" if value == 0 else f"{value:.2f}"
