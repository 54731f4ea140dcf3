"""The class poll's chart: how many students chose each option, the right one marked once revealed.

Pure functions: data in, Altair chart out; no Streamlit calls. The chart reads its rows by name
(:func:`poll_bars` of :data:`app.ui.vega.ROWS`), so a new answer sends new rows only, never a new spec.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from app.charts.base import axis, rows_or_named

RIGHT, OTHER, UNREVEALED = "#29b09d", "#83c9ff", "#0068c9"  # Streamlit's palette: green, light and dark blue


def option_labels(options: Sequence[str], kind: str) -> list[str]:
    """The options as the chart's rows name them: a token's position first (a sentence may repeat a word)."""
    return [f"{i + 1}. {o}" for i, o in enumerate(options)] if kind == "token" else list(options)


def poll_rows(options: Sequence[str], counts: Sequence[int], *, kind: str = "choice", right: Sequence[int] = (),
              revealed: bool = False) -> pd.DataFrame:
    """One row per option, in the question's order: its label, answers, share of all answers and bar colour (the
    ``right`` options green and the others light once ``revealed``; all one colour before)."""
    total = sum(counts)
    return pd.DataFrame({
        "order": list(range(len(options))), "option": option_labels(options, kind), "answers": list(counts),
        "share": [c / total if total else 0.0 for c in counts],
        "colour": [(RIGHT if i in right else OTHER) if revealed else UNREVEALED for i in range(len(options))]})


def poll_bars(rows: pd.DataFrame | str, *, count: int, font_scale: float = 1.0) -> alt.Chart:
    """Horizontal bars of answers per option (the rows of :func:`poll_rows`, or the name of the dataset holding
    them), ``count`` options high."""
    return alt.Chart(rows_or_named(rows)).mark_bar().encode(
        y=alt.Y("option:N", sort=alt.EncodingSortField("order", op="min"), title=None,
                axis=axis(font_scale, labelLimit=400)),
        x=alt.X("answers:Q", title="students", axis=axis(font_scale, tickMinStep=1),
                scale=alt.Scale(domainMin=0, nice=True)),
        color=alt.Color("colour:N", scale=None, legend=None),
        tooltip=[alt.Tooltip("option:N"), alt.Tooltip("answers:Q"), alt.Tooltip("share:Q", format=".0%")],
    ).properties(height=int(max(80, 44 * count * font_scale)))
