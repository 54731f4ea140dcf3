"""The look every chart shares: colour-blind-safe scales, readable titles, hover values.

Pure functions: data in, Altair chart out; no Streamlit calls.
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

SEQUENTIAL = "viridis"  # perceptually uniform, colour-blind safe
DIVERGING = "blueorange"  # for signed values (differences, encodings); colour-blind safe
CATEGORY = "tableau10"


def rows_or_named(rows: pd.DataFrame | str) -> pd.DataFrame | alt.NamedData:
    """A chart's data: its rows, or the name of the dataset the page sends them in (``app.ui.vega.draw_rows``)."""
    return alt.NamedData(rows) if isinstance(rows, str) else rows


def title(text: str, font_scale: float = 1.0, subtitle: str | None = None, **kwargs) -> alt.Title:
    """A chart title (and optional subtitle) sized for the screen or the projector."""
    # the padding keeps the subtitle's glyphs clear of the title's descenders (a caller may ask for more)
    extra = ({"subtitle": subtitle, "subtitleFontSize": 11 * font_scale, "subtitlePadding": 4 * font_scale}
             if subtitle else {})
    extra.update(kwargs)
    return alt.Title(text, fontSize=14 * font_scale, **extra)


def axis(font_scale: float = 1.0, **kwargs) -> alt.Axis:
    """An axis with readable labels; ``None`` options are left to Altair."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale, **kwargs)


def legend(name: str, font_scale: float = 1.0, **kwargs) -> alt.Legend:
    """A legend sized like the axes; its title stands clear of a colour bar's top label, which is centred on
    the bar's end and so reaches half a label above it."""
    kwargs.setdefault("titlePadding", 10 * font_scale)
    return alt.Legend(title=name, labelFontSize=11 * font_scale, titleFontSize=12 * font_scale, **kwargs)


def pad(chart):
    """Keep the plot area at the size asked for, titles and legends around it (Streamlit would
    otherwise fit the whole chart, labels and legend included, into width × height)."""
    return chart.properties(autosize=alt.AutoSizeParams(type="pad", contains="padding"))


# Whitespace and control characters as the symbols :func:`visible` draws them (U+2400 on: the control pictures).
_PICTURES = str.maketrans({**{chr(c): chr(0x2400 + c) for c in range(0x20)},
                           " ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"})


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd…"""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def visible(token: str) -> str:
    """A token as it should be read on screen: whitespace and control characters drawn as symbols."""
    return token.translate(_PICTURES) or "∅"


def phrases(labels: Sequence[str]) -> list[str]:
    """Labels that are phrases, not tokens ("after ‹<bos>› → predicts ‹yo›"): their spaces become non-breaking
    spaces, which :func:`visible` leaves alone, so they are drawn as spaces, not as ``␣``."""
    return [label.replace(" ", "\u00a0") for label in labels]


def label_tokens(tokens: Sequence[str]) -> list[str]:
    """Unique axis labels: ``"3:a"`` style, so repeated tokens keep their own row/column.

    Whitespace is made visible (``␣``, ``⏎``) so a space token is never an empty label.
    """
    return [f"{i}:{visible(t)}" for i, t in enumerate(tokens)]


def matrix_frame(
    matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], value: str = "weight"
) -> pd.DataFrame:
    """A tidy frame (row, col, row_index, col_index, value) of a (len(rows), len(cols)) matrix."""
    matrix = np.asarray(matrix)
    if matrix.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix shape {matrix.shape} does not match {len(rows)} rows × {len(cols)} columns")
    r, c = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    return pd.DataFrame({
        "row": np.asarray(rows, dtype=object)[r.ravel()], "col": np.asarray(cols, dtype=object)[c.ravel()],
        "row_index": r.ravel(), "col_index": c.ravel(), value: matrix.ravel().astype(float),
    })


def heatmap(
    matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str, x_title: str, y_title: str,
    value: str = "weight", scheme: str = SEQUENTIAL, domain: tuple[float, float] | None = None,
    size: int = 360, font_scale: float = 1.0, fmt: str = ".3f", value_title: str | None = None,
) -> alt.Chart:
    """A labelled heatmap with the value on hover (so colour is never the only carrier); ``value_title``: the
    legend's and the hover's name for the value (the field's name ``value`` unless given)."""
    frame = matrix_frame(matrix, rows, cols, value)
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_rect()
        .encode(
            x=alt.X("col:N", sort=list(cols), title=x_title,
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale, labelAngle=-60)),
            y=alt.Y("row:N", sort=list(rows), title=y_title,
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color(f"{value}:Q", scale=scale, legend=alt.Legend(title=value_title or value)),
            tooltip=[alt.Tooltip("row:N", title=y_title), alt.Tooltip("col:N", title=x_title),
                     alt.Tooltip(f"{value}:Q", format=fmt, title=value_title or value)],
        )
        .properties(width=size, height=size, autosize=alt.AutoSizeParams(type="pad", contains="padding"))
    )
