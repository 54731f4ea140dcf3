"""Charts for the "Self-attention: strengths and limits" page: recurrence vs attention costs,
measured attention time and memory, and accuracy by input length.

Pure functions: data in, Altair chart out; no Streamlit calls.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.base import CATEGORY, axis, legend, pad, title


def lines_chart(frame: pd.DataFrame, *, x: str, y: str, series: str, chart_title: str, log_y: bool = False,
                log_x: bool = False,
                font_scale: float = 1.0, subtitle: str | None = None, y_format: str = ",.3~g",
                rule_at: float | None = None, rule_label: str = "") -> alt.LayerChart:
    """One line per ``series`` of ``y`` against ``x`` (points marked, values on hover), with an optional
    vertical rule at ``rule_at``."""
    scale = alt.Scale(type="log") if log_y else alt.Scale(zero=True)
    base = alt.Chart(frame, title=title(chart_title, font_scale, subtitle, anchor="start"))
    line = base.mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", title=x, axis=axis(font_scale), scale=alt.Scale(type="log", base=2) if log_x else
                alt.Scale(zero=False)),
        y=alt.Y(f"{y}:Q", title=y, scale=scale, axis=axis(font_scale, format=y_format)),
        color=alt.Color(f"{series}:N", scale=alt.Scale(scheme=CATEGORY), legend=legend(series, font_scale,
                                                                                         orient="bottom")),
        tooltip=[alt.Tooltip(f"{series}:N"), alt.Tooltip(f"{x}:Q"), alt.Tooltip(f"{y}:Q", format=y_format)])
    layers = [line]
    if rule_at is not None:
        marks = pd.DataFrame({x: [rule_at], "label": [rule_label]})
        layers.append(alt.Chart(marks).mark_rule(strokeDash=[4, 4], color="#555555").encode(x=f"{x}:Q"))
        layers.append(alt.Chart(marks).mark_text(align="left", dx=4, dy=-6, fontSize=11 * font_scale,
                                                 baseline="top").encode(x=f"{x}:Q", y=alt.value(0), text="label:N"))
    return pad(alt.layer(*layers).properties(width=440, height=260))
