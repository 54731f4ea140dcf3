"""The class poll's chart: how many students chose each option, the right one marked once revealed.

Pure function: data in, Altair chart out; no Streamlit calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from app.charts.base import axis, title

RIGHT, OTHER, UNREVEALED = "#29b09d", "#83c9ff", "#0068c9"  # Streamlit's palette: green, light and dark blue


def option_labels(options: Sequence[str], kind: str) -> list[str]:
    """The options as the chart's rows name them: a token's position first (a sentence may repeat a word)."""
    return [f"{i + 1}. {o}" for i, o in enumerate(options)] if kind == "token" else list(options)


def poll_bars(options: Sequence[str], counts: Sequence[int], *, kind: str = "choice",
              right: Sequence[int] = (), revealed: bool = False, font_scale: float = 1.0) -> alt.Chart:
    """One horizontal bar per option (in the question's order) of ``counts`` answers; once ``revealed``, the
    ``right`` options green and the others light."""
    labels = option_labels(options, kind)
    total = sum(counts)
    frame = pd.DataFrame({
        "option": labels, "answers": list(counts),
        "share": [c / total if total else 0.0 for c in counts],
        "colour": [(RIGHT if i in right else OTHER) if revealed else UNREVEALED for i in range(len(labels))],
    })
    heading = f"{total} answer{'s' if total != 1 else ''}" + (" · the right answer in green" if revealed and right
                                                                  else "")
    return alt.Chart(frame, title=title(heading, font_scale)).mark_bar().encode(
        y=alt.Y("option:N", sort=labels, title=None, axis=axis(font_scale, labelLimit=400)),
        x=alt.X("answers:Q", title="students", axis=axis(font_scale, tickMinStep=1),
                scale=alt.Scale(domainMin=0, nice=True)),
        color=alt.Color("colour:N", scale=None, legend=None),
        tooltip=[alt.Tooltip("option:N"), alt.Tooltip("answers:Q"), alt.Tooltip("share:Q", format=".0%")],
    ).properties(height=max(80, 44 * len(labels) * font_scale))
