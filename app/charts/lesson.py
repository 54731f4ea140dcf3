"""Pictures for the guided lesson: vectors as strips and the output distribution (its attention
maps are drawn by :mod:`app.charts.attention`). Pure functions: arrays in, Altair charts out.
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app.charts.base import DIVERGING, heatmap, label_tokens


def vectors(matrix: np.ndarray, tokens: Sequence[str], *, title: str, highlight: int | None = None,
            max_dims: int = 32, font_scale: float = 1.0) -> alt.Chart:
    """Rows of ``matrix`` (T, D) as coloured strips, one per token (first ``max_dims`` dimensions).

    A signed, diverging scale centred on 0; the highlighted token's label is marked with ▶.
    """
    shown = np.asarray(matrix)[:, :max_dims]
    rows = [("▶ " if i == highlight else "") + label for i, label in enumerate(label_tokens(tokens))]
    limit = float(np.abs(shown).max()) or 1.0
    cols = [str(d) for d in range(shown.shape[1])]
    width = max(1, shown.shape[1])
    title_text = title if matrix.shape[1] <= max_dims else f"{title} (first {max_dims} of {matrix.shape[1]} dims)"
    return heatmap(shown, rows, cols, title=title_text, x_title="dimension", y_title="token", value="value",
                   scheme=DIVERGING, domain=(-limit, limit), size=min(16 * width, 560),
                   font_scale=font_scale).properties(height=min(26 * len(rows) + 10, 420))


def candidates_bar(candidates: list[tuple[str, float]], *, title: str, font_scale: float = 1.0) -> alt.Chart:
    """The most likely next tokens and their probabilities, the greedy choice first."""
    frame = pd.DataFrame({"token": [t for t, _ in candidates], "probability": [p for _, p in candidates]})
    frame["choice"] = ["greedy choice" if i == 0 else "other" for i in range(len(frame))]
    return (
        alt.Chart(frame, title=alt.Title(title, fontSize=14 * font_scale))
        .mark_bar()
        .encode(
            x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale)),
            y=alt.Y("token:N", sort=None, axis=alt.Axis(labelFontSize=12 * font_scale, titleFontSize=12 * font_scale)),
            color=alt.Color("choice:N", scale=alt.Scale(domain=["greedy choice", "other"],
                                                        range=["#1f77b4", "#bbbbbb"]), legend=None),
            tooltip=["token:N", alt.Tooltip("probability:Q", format=".4f")],
        )
        .properties(width=420, height=34 * len(frame) + 10)
    )
