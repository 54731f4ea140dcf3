"""The charts' look, written into each figure, and what lets Plotly draw a chart once.

``st.plotly_chart``'s default theme restyles a figure in the browser, and right after the first draw it hands
Plotly a restyled deep copy: Plotly takes the copy's new ``template`` object for a new figure and draws the whole
chart a second time (every chart, every rerun: half of a chart's drawing time). So every figure of the app is sent
with ``theme=None`` (:func:`app.ui.widgets.plot`) and carries the look itself: Streamlit's light theme for Plotly
(its font, colours, title, axes, hover labels and margins' padding, as its theme would set them) under the
figure's own settings, on a transparent background. The dark theme repaints the text, ticks and hover labels in
the page's style sheet (:data:`DARK_CSS`; the page script marks the theme on ``<html>``).

For the copy to be the same figure to Plotly: no template (``layout.template`` is null), a constant
``datarevision`` (data arrays are compared as equal; a new figure is a new chart anyway) and ``meta`` as a list
(an object would be a new one): read a figure's meta with :func:`meta`.
"""

from __future__ import annotations

import re
from typing import Any

import plotly.graph_objects as go

# Latin and Cyrillic in Streamlit's Source Sans; Japanese and Chinese in Noto Sans CJK (Debian's fonts-noto-cjk),
# its Japanese forms first: three of the lecture's five notes are Japanese (the page's own text takes each language's
# forms: app/ui/language.py).
FONT = '"Source Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", sans-serif'
TEXT, HEADING, LINES = "#808495", "#2F2D2B", "#e6eaf1"  # Streamlit's light theme for Plotly
DARK_TEXT, DARK_HEADING, DARK_LINES, DARK_BACKGROUND = "#e6eaf1", "#EDEBE8", "#31333F", "#171614"
COLORWAY = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0",
            "#d5dae5"]
DATA_REVISION = "drawn once"
_AXIS = re.compile(r"^[xy]axis\d*$")

_LAYOUT = dict(
    font=dict(color=TEXT, family=FONT, size=12, weight=400), colorway=COLORWAY,
    title=dict(font=dict(family=FONT, size=16, color=HEADING, weight=700), pad=dict(l=4), xanchor="left", x=0),
    legend=dict(title=dict(font=dict(size=12, color=TEXT), side="top"), valign="top", bordercolor="rgba(0,0,0,0)",
                borderwidth=0, font=dict(size=12, color="#262730")),
    paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)", margin=dict(pad=8, r=0, l=0),
    hoverlabel=dict(bgcolor="#FFFFFF", bordercolor="#DCD8D4", font=dict(color=TEXT, family=FONT, size=12)),
    datarevision=DATA_REVISION,
)
_AXES = {
    "x": dict(zerolinecolor=LINES, gridcolor=LINES, showgrid=False, tickfont=dict(color=TEXT, size=12),
              tickcolor=LINES, title=dict(font=dict(color=TEXT, size=14), standoff=20), minor=dict(gridcolor=LINES),
              zeroline=False, automargin=True),
    "y": dict(ticklabelposition="outside", zerolinecolor=LINES, title=dict(font=dict(color=TEXT, size=14), standoff=24),
              tickcolor=LINES, tickfont=dict(color=TEXT, size=12), gridcolor=LINES, minor=dict(gridcolor=LINES),
              automargin=True),
}
_SCATTER = dict(marker=dict(line=dict(width=0)))

# The dark theme's colours for what the figure paints in the light theme's (the text of titles, axes, colour bars,
# legends and annotations, tick marks, grid lines and hover labels; a heatmap's cell text keeps its contrast colour).
DARK_CSS = f"""<style>
html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .main-svg :is(.infolayer, .xaxislayer-above,
  .yaxislayer-above, .annotation) text {{ fill: {DARK_TEXT} !important; }}
html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .main-svg .infolayer text.gtitle
  {{ fill: {DARK_HEADING} !important; }}
html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .main-svg :is(.xaxislayer-above, .yaxislayer-above)
  path.ticks, html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .main-svg .gridlayer path
  {{ stroke: {DARK_LINES} !important; }}
html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .hoverlayer .hovertext path
  {{ fill: {DARK_BACKGROUND} !important; stroke: #4A4742 !important; }}
html[data-attnscope-theme="dark"] [data-testid="stPlotlyChart"] .hoverlayer .hovertext text
  {{ fill: {DARK_TEXT} !important; }}
</style>"""


def _under(defaults: dict, given: dict) -> dict:
    """``given`` over ``defaults``, nested dictionaries merged (what a Plotly template does)."""
    merged = dict(defaults)
    for key, value in given.items():
        base = merged.get(key)
        merged[key] = _under(base, value) if isinstance(base, dict) and isinstance(value, dict) else value
    return merged


def styled(traces: list[dict], layout: dict) -> tuple[list[dict], dict]:
    """Plain-dict ``traces`` and ``layout`` with the look under their own settings, ``meta`` as a one-item list."""
    layout = _under(_LAYOUT, layout)
    for name in {"xaxis", "yaxis", *(key for key in layout if _AXIS.match(key))}:
        layout[name] = _under(_AXES[name[0]], layout.get(name) or {})
    if isinstance(layout.get("meta"), dict):
        layout["meta"] = [layout["meta"]]
    traces = [_under(_SCATTER, trace) if trace.get("type", "scatter") == "scatter" else trace for trace in traces]
    return traces, layout


def lean_figure(traces: list[dict], layout: dict) -> go.Figure:
    """A figure of plain-dict ``traces`` and ``layout`` with the look (:func:`styled`), built without Plotly's
    per-property validation (tens of ms per figure; these are built from known-good settings, and Streamlit checks
    the figure once more when it sends it) and without a template."""
    traces, layout = styled(traces, layout)
    figure = go.Figure({"data": traces, "layout": layout}, _validate=False)
    figure.layout.template = None  # go.Figure puts the default one in
    return figure


def restyled(figure: go.Figure) -> go.Figure:
    """A figure built with Plotly's own helpers (``make_subplots``) as a lean one with the look."""
    layout = {key: value for key, value in figure.layout.to_plotly_json().items() if key != "template"}
    return lean_figure([trace.to_plotly_json() for trace in figure.data], layout)  # arrays kept as arrays


def meta(figure: go.Figure) -> dict[str, Any]:
    """What the app noted in a figure's ``layout.meta`` (an empty dictionary when nothing)."""
    found = figure.layout.meta
    if isinstance(found, (list, tuple)) and found and isinstance(found[0], dict):
        return found[0]
    return found if isinstance(found, dict) else {}
