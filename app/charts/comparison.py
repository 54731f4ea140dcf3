"""Maps side by side as ONE Plotly figure: the component every comparison of the app draws with
(an intervention's before | after | difference, two sentences, two checkpoints, two moments of training,
the scores beside the weights).

What keeps its text apart at any width: the panels share one y axis (one label column, on the left)
whenever they label the same rows; x tick labels stand vertical, so no label leans into the next
panel; one colour bar per scale (the 0–1 weights shared by Before and After, a diverging one for a
difference or scores) lies horizontally above its own panels, under titles that wrap to their panel's
width. The figure takes its column's width (``stretch``), so it is never wider than the column.

Pure functions (numpy in, ``go.Figure`` out), no Streamlit calls.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts import look, maps

KEY_TITLE = "key token (attended to)"
WEIGHT = "weight"  # the one scale that is fixed to 0–1
NOMINAL_WIDTH = 680  # px: the narrowest column a comparison is drawn in (Explore at 1280 px, presentation mode)
CHAR = 0.6  # an average character's width, in units of its font size


@dataclass(frozen=True)
class Panel:
    """One map of a comparison: (Tq, Tk) values, row and column labels (unique), its title and the
    name of its scale (``"weight"`` for 0–1 attention; any other name is signed and symmetric about 0)."""

    matrix: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str]
    title: str
    scale: str = WEIGHT


def _groups(panels: Sequence[Panel]) -> list[tuple[str, list[int]]]:
    """Contiguous runs of panels on the same scale: [(scale, panel indices)]."""
    runs: list[tuple[str, list[int]]] = []
    for i, panel in enumerate(panels):
        if runs and runs[-1][0] == panel.scale:
            runs[-1][1].append(i)
        else:
            runs.append((panel.scale, [i]))
    return runs


def _traces(panels: Sequence[Panel], y_title: str, font_scale: float) -> list[go.Figure]:
    """Each panel drawn alone by :func:`maps.heatmap` (labels binned and thinned the same way as a head view)."""
    return [maps.heatmap(p.matrix, p.rows, p.cols, title=p.title, x_title=KEY_TITLE, y_title=y_title, value=p.scale,
                         font_scale=font_scale) for p in panels]


def _wrap(title: str, width_px: float, size: float) -> str:
    """``title`` broken into lines no wider than ``width_px`` at font ``size`` (Plotly's ``<br>``)."""
    per_line = max(8, int(width_px / (CHAR * size)))
    return "<br>".join(textwrap.wrap(title, per_line, break_on_hyphens=False)) or title


def _thinned(axis: dict, width_px: float) -> dict:
    """An x axis labelling every k-th column, k chosen so that vertical labels never touch (hover has them all)."""
    shown, size = list(axis["tickvals"]), float(axis["tickfont"]["size"])
    step = max(1, int(np.ceil(len(shown) * 1.3 * size / max(width_px, 1.0))))
    return {**axis, "tickvals": shown[::step], "ticktext": list(axis["ticktext"])[::step]}


def _colour_axes(panels: Sequence[Panel], groups: list[tuple[str, list[int]]]) -> dict[str, dict]:
    """One colour axis per scale: 0–1 for weights, symmetric about 0 (white = 0) for signed values."""
    axes = {}
    for n, (scale, members) in enumerate(groups, start=1):
        if scale == WEIGHT:
            ticks = dict(tickvals=[0.0, 0.5, 1.0], ticktext=["0", "0.5", "1"])
            axes[f"coloraxis{'' if n == 1 else n}"] = dict(colorscale=maps.SEQUENTIAL, cmin=0.0, cmax=1.0,
                                                            colorbar=ticks)
            continue
        limit = max(float(np.abs(np.asarray(panels[i].matrix)).max(initial=0.0)) for i in members)
        limit = max(limit, 1e-6)
        ticks = dict(tickvals=[-limit, 0.0, limit], ticktext=[f"{-limit:+.2g}", "0", f"{limit:+.2g}"])
        axes[f"coloraxis{'' if n == 1 else n}"] = dict(colorscale=maps.DIVERGING, cmin=-limit, cmax=limit,
                                                        colorbar=ticks)
    return axes


def figure(panels: Sequence[Panel], *, y_title: str, font_scale: float = 1.0) -> go.Figure:
    """``panels`` in one row of one figure (see the module's docstring for how nothing overlaps)."""
    fs = font_scale
    parts = _traces(panels, y_title, fs)
    shared = all(list(p.data[0].y) == list(parts[0].data[0].y) for p in parts)
    longest_row = max(len(str(label)) for p in parts for label in p.data[0].y)
    tick = max(float(p.layout.yaxis.tickfont.size) for p in parts)
    gap_px = 16 if shared else min(0.3 * NOMINAL_WIDTH, CHAR * tick * longest_row + 16)
    count = len(panels)
    spacing = gap_px / NOMINAL_WIDTH
    panel_px = NOMINAL_WIDTH - CHAR * tick * longest_row - 30 * fs - gap_px * (count - 1)  # all panels together
    result = make_subplots(rows=1, cols=count, shared_yaxes=shared, horizontal_spacing=spacing)
    groups = _groups(panels)
    group_of = {i: n for n, (_, members) in enumerate(groups, start=1) for i in members}
    for i, part in enumerate(parts):
        old = part.data[0]
        n = group_of[i]
        result.add_trace(go.Heatmap(z=old.z, x=old.x, y=old.y, name=old.name, hovertemplate=old.hovertemplate,
                                    coloraxis=f"coloraxis{'' if n == 1 else n}"), row=1, col=i + 1)
        x_axis = _thinned(part.layout.xaxis.to_plotly_json(), panel_px / count)
        x_axis.update(tickangle=-90, title=x_axis["title"] if i == count // 2 else None)
        x_axis.pop("domain", None)
        result.update_xaxes(x_axis, row=1, col=i + 1)
        y_axis = part.layout.yaxis.to_plotly_json()
        y_axis.pop("domain", None)
        if i > 0 and shared:
            y_axis.update(title=None, showticklabels=False)
        elif i > 0:
            y_axis.update(title=None)
        result.update_yaxes(y_axis, row=1, col=i + 1)
    _decorate(result, panels, parts, groups, fs)
    return look.restyled(result)


def _decorate(result: go.Figure, panels: Sequence[Panel], parts: list[go.Figure],
              groups: list[tuple[str, list[int]]], fs: float) -> None:
    """Colour bars above their panels, wrapped titles above them, margins (on the left, the first panel's own: the
    same row labels and title) and height in pixels, all set so that Plotly's automargin has nothing to push
    (``meta["settled"]``)."""
    domains = [result.layout[f"xaxis{'' if i == 0 else i + 1}"].domain for i in range(len(panels))]
    title_size = 14 * fs
    longest_row = max(len(str(label)) for label in parts[0].data[0].y)
    plot_px = NOMINAL_WIDTH - CHAR * float(parts[0].layout.yaxis.tickfont.size) * longest_row - 30 * fs  # less labels
    titles = [_wrap(p.title, (d[1] - d[0]) * plot_px, title_size) for p, d in zip(panels, domains)]
    lines = max(t.count("<br>") + 1 for t in titles)
    bar_px = int(54 + 14 * fs)  # gap, tick labels, bar, its title (bottom to top)
    top = int(bar_px + lines * 1.4 * title_size + 16)  # titles hang from the figure's top edge
    longest_col = max(len(str(label)) for p in parts for label in p.data[0].x)
    tick = max(float(p.layout.xaxis.tickfont.size) for p in parts)
    bottom = int(CHAR * tick * longest_col + 24 * fs + 20)
    rows_px = max(len(p.layout.yaxis.tickvals) * 1.3 * float(p.layout.yaxis.tickfont.size) for p in parts)
    side = max(int(200 * fs), int(rows_px),  # every row label clear of the next
               max(maps.heatmap_side(len(p.data[0].y), len(p.data[0].x), fs) for p in parts) * 2 // 3)
    axes = _colour_axes(panels, groups)
    for (scale, members), (name, axis) in zip(groups, axes.items()):
        left, right = domains[members[0]][0], domains[members[-1]][1]
        axis["colorbar"].update(orientation="h", tickangle=0, x=(left + right) / 2, xanchor="center",
                                len=(right - left) * 0.8, y=1 + 8 / side, yanchor="bottom", yref="paper", thickness=10,
                                tickfont=dict(size=11 * fs),
                                title=dict(text=scale, side="top", font=dict(size=12 * fs)))
        result.layout[name] = axis
    result.update_layout(annotations=[
        dict(text=t, x=(d[0] + d[1]) / 2, xref="paper", y=1, yref="paper", xanchor="center", yanchor="top",
             yshift=top - 4, showarrow=False, font=dict(size=title_size)) for t, d in zip(titles, domains)])
    notes = [maps.note(p) for p in parts]
    result.update_layout(height=side + top + bottom, font=dict(size=12 * fs),
                         margin=dict(l=parts[0].layout.margin.l, r=10, t=top, b=bottom),
                         meta={"note": " ".join(dict.fromkeys(n for n in notes if n)) or None, "settled": True})
