"""Margins that already hold a heatmap's tick labels, axis titles and colour bar, so the browser lays it out once.

Plotly's ``automargin`` measures the labels after a first drawing and, when they do not fit the margins, draws the
whole figure again: every chart with margins set too small was drawn twice on each rerun. :func:`settle` computes
the room from the labels' text (the width of each character in the app's chart font, Source Sans) and sets each
margin to at least that; ``automargin`` stays on as a safety net for a font that draws wider than estimated.

Pure functions on the plain-dict layouts of :func:`app.charts.look.lean_figure`; no Streamlit calls.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

import numpy as np

# The advance of each printable ASCII character in Source Sans, in ems (measured in Chromium), in groups.
_EM_GROUPS = {
    0.20: " ", 0.26: "!',.:;Iijl|", 0.31: "()[]{}-ft/\\", 0.36: "r", 0.44: "\"*?sczx",
    0.50: "0123456789#$+<=>^_~aegkvyJLFYXV", 0.56: "bdnopquhABCEKPRSTZ`", 0.67: "DGHNOQU&", 0.84: "%@MWmw",
}
_EM = {char: em for em, chars in _EM_GROUPS.items() for char in chars}
WIDE_EM, OTHER_EM = 1.05, 0.85  # CJK and emoji (a fallback font: up to a full em); other scripts' letters
LINE = 1.36  # a text line's height, in ems
# what a vertical colour bar's title (turned on its side) adds to the bar: this share of its width, at most this
# many ems of its font
TITLE_SHARE, TITLE_CAP = 0.9, 2.5
TICK_PAD = 4  # pixels between the plot and its tick labels
# pixels automargin keeps beyond an axis' labels and title (tilted labels: more), beyond a colour bar; in ems of
# the tick font, what it keeps beyond the labels of an axis without a title
AXIS_EDGE, TILT_EDGE, BAR_EDGE, UNTITLED_EDGE = 17, 4, 8, 0.5
COLORBAR_PAD = 10  # Plotly's colour bar ``xpad`` default, each side
COLORBAR_OFFSET = 0.02  # a vertical colour bar starts at x = 1.02 of the plot's width
TITLE_PAD = 8  # pixels between the figure's top edge and a title pinned there


def text_width(text: str, size: float) -> float:
    """The estimated width of ``text`` in pixels at font ``size``."""
    ems = 0.0
    for char in str(text):
        em = _EM.get(char)
        if em is None:
            em = WIDE_EM if unicodedata.east_asian_width(char) in "WF" else OTHER_EM
        ems += em
    return ems * size


def _longest(labels: Sequence, size: float) -> float:
    return max((text_width(label, size) for label in labels), default=0.0)


def _nice_ticks(low: float, high: float) -> list[str]:
    """Labels of about five evenly spaced round values between ``low`` and ``high`` (as Plotly picks them)."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [f"{low:g}"]
    raw = span / 5
    step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw))
    digits = max(0, -math.floor(math.log10(step)))
    first = math.ceil(low / step) * step
    return [f"{first + i * step:.{digits}f}".replace("-", "−") for i in range(int((high - first) / step + 1e-9) + 1)]


def _axis_labels(axis: dict, traces: Sequence[dict], letter: str) -> list[str] | None:
    """The tick labels an axis shows, when the layout says which, or at most the categories of a category axis
    (``letter``: "x" or "y"; Plotly may show only some of them, so their widest bounds the room); None: Plotly
    picks numbers."""
    if axis.get("ticktext") is not None:
        return [str(label) for label in axis["ticktext"]]
    if axis.get("tickvals") is not None:
        return [f"{value:g}" if isinstance(value, float) else str(value) for value in axis["tickvals"]]
    if axis.get("type") == "category" and axis.get("showticklabels", True):
        return [str(label) for trace in traces if trace.get(letter) is not None for label in trace[letter]]
    return None


def _font_size(part: dict | None, default: float) -> float:
    return float(((part or {}).get("font") or {}).get("size") or default)


def _axis_room(axis: dict, labels: list[str] | None, base: float, across: bool) -> float | None:
    """Pixels beside the plot for an axis' tick ``labels`` and title (None when the labels are unknown); also sets
    the title's distance from the labels (``standoff``) so that it lands where the room was made for it."""
    if labels is None or axis.get("tickangle") == "auto" and across:
        return None
    tick_size = float((axis.get("tickfont") or {}).get("size") or base)
    width = _longest(labels, tick_size)
    if across:  # an x axis' labels stand upright or tilted: their height along the axis' normal
        angle = math.radians(abs(float(axis.get("tickangle") or 0)))
        extent = width * math.sin(angle) + LINE * tick_size * math.cos(angle)
    else:
        extent = width
    room = TICK_PAD + extent + AXIS_EDGE + (TILT_EDGE if across and angle else 0)
    title = axis.get("title") or {}
    if title.get("text"):
        title_size = _font_size(title, base)
        title["standoff"] = title.get("standoff", round(0.6 * title_size))
        room += title["standoff"] + LINE * title_size
    else:
        room += UNTITLED_EDGE * tick_size
    return room


def _colorbar_room(trace: dict, plot_width: float, base: float) -> float | None:
    """Pixels right of the plot for a heatmap's vertical colour bar (None: the trace draws none)."""
    if trace.get("type") != "heatmap" or trace.get("showscale") is False:
        return None
    bar = trace.get("colorbar") or {}
    if bar.get("orientation") == "h":
        return None
    tick_size = float((bar.get("tickfont") or {}).get("size") or base)
    if bar.get("ticktext") is not None:
        labels = [str(label) for label in bar["ticktext"]]
    else:
        values = np.asarray(trace.get("z"), dtype=float)  # the colour scale spans the data unless told
        finite = values[np.isfinite(values)]
        low = trace.get("zmin", finite.min() if finite.size else 0.0)
        high = trace.get("zmax", finite.max() if finite.size else 1.0)
        labels = _nice_ticks(float(low), float(high))
    title = bar.get("title") or {}
    title_text = title if isinstance(title, str) else title.get("text") or ""
    title_size = _font_size(title if isinstance(title, dict) else None, base)
    title_room = min(TITLE_SHARE * text_width(title_text, title_size), TITLE_CAP * title_size)
    return (COLORBAR_OFFSET * plot_width + 2 * COLORBAR_PAD + float(bar.get("thickness", 30))
            + _longest(labels, tick_size) + title_room + BAR_EDGE)


def _title_above(layout: dict, base: float) -> float:
    """The room a figure's title takes at the top of the figure, above x labels drawn on top (0 without a title).
    The title is pinned to the figure's top edge so that it never sinks into the labels."""
    title = layout.get("title")
    if not title:
        return 0.0
    if isinstance(title, str):
        title = layout["title"] = {"text": title}
    title.update(yref="container", y=1, yanchor="top", pad=dict(t=TITLE_PAD))
    return _font_size(title, base) * LINE + TITLE_PAD


def settle(traces: Sequence[dict], layout: dict) -> None:
    """Raise ``layout``'s left, bottom (top, for x labels drawn on top, with the title above them) and right
    margins to the room its y labels, x labels and colour bar need (a figure with one x and one y axis; other
    sides and figures are left as they are). The layout's
    ``meta["settled"]`` records the promise (the browser tests check that such a figure is laid out once)."""
    base = float((layout.get("font") or {}).get("size") or 12)
    margin = layout.setdefault("margin", {})
    xaxis, yaxis = layout.get("xaxis") or {}, layout.get("yaxis") or {}
    y_labels, x_labels = _axis_labels(yaxis, traces, "y"), _axis_labels(xaxis, traces, "x")
    if yaxis.get("side", "left") == "left" and (room := _axis_room(yaxis, y_labels, base, across=False)) is not None:
        margin["l"] = max(int(margin.get("l", 80)), math.ceil(room))
    if (room := _axis_room(xaxis, x_labels, base, across=True)) is not None:
        if xaxis.get("side", "bottom") == "bottom":
            margin["b"] = max(int(margin.get("b", 80)), math.ceil(room))
        elif xaxis.get("side") == "top":
            margin["t"] = max(int(margin.get("t", 100)), math.ceil(room + _title_above(layout, base)))
    width = float(layout.get("width") or 700)
    for trace in traces:
        plot_width = width - margin.get("l", 80) - margin.get("r", 80)
        if (room := _colorbar_room(trace, plot_width, base)) is not None:
            margin["r"] = max(int(margin.get("r", 80)), math.ceil(room))
    layout.setdefault("meta", {})["settled"] = True
