"""How sure the model was of each token it produced: a bar per token, faint and orange where unsure.

Pure functions: data in, Altair chart out (tokens are axis labels, never read as markup).
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app.charts.base import title as chart_title
from app.charts.base import visible

UNSURE = 0.5  # a token the model gave less than this probability is called unsure


def token_confidence(tokens: Sequence[str], probabilities: np.ndarray, *, font_scale: float = 1.0,
                     title: str = "What the model produced, each token as sure as it was") -> alt.Chart:
    """One bar per produced token, left to right, its height and opacity the probability the model gave it
    (hover: the exact value); the chart takes its column's width and thins labels that would touch."""
    probs = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    frame = pd.DataFrame({"position": range(len(tokens)), "token": [visible(t) for t in tokens],
                          "label": [f"{i}:{visible(t)}" for i, t in enumerate(tokens)],
                          "probability": probs, "sure": np.where(probs >= UNSURE, "sure", "unsure")})
    return alt.Chart(frame, title=chart_title(title, font_scale)).mark_bar().encode(
        x=alt.X("label:N", sort=list(frame["label"]), title=None,
                axis=alt.Axis(labelExpr="split(datum.label, ':')[1]", labelAngle=0, labelFontSize=13 * font_scale,
                              labelOverlap=True)),
        y=alt.Y("probability:Q", scale=alt.Scale(domain=[0, 1]), axis=None),  # the value is on hover
        opacity=alt.Opacity("probability:Q", scale=alt.Scale(domain=[0, 1], range=[0.3, 1]), legend=None),
        color=alt.Color("sure:N", scale=alt.Scale(domain=["sure", "unsure"], range=["#1f4e79", "#b8562d"]),
                        legend=None),
        tooltip=[alt.Tooltip("token:N"), alt.Tooltip("probability:Q", format=".1%")],
    ).properties(height=int(70 * font_scale))


def unreliable_message(unknown_words: Sequence[tuple[str, Sequence[str]]], unknown_token: str) -> str | None:
    """One line saying the output rests on a guess, naming the words the model read as ``unknown_token``
    (with the nearest words it knows), or None when it knew every word."""
    if not unknown_words:
        return None
    parts = [f"“{word}”" + (f" (it knows {', '.join(near)})" if near else "") for word, near in unknown_words[:5]]
    more = f" and {len(unknown_words) - 5} more" if len(unknown_words) > 5 else ""
    return (f"Unreliable output: the model does not know {'; '.join(parts)}{more}. It reads "
            f"{'them' if len(unknown_words) > 1 else 'it'} as {unknown_token} and guesses.")
