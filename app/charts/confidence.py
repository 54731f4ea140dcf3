"""How sure the model was of each token it produced: the tokens drawn in a row, faint where unsure.

Pure functions: data in, Altair chart out (text marks, so a token is never read as markup).
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
    """The produced ``tokens`` left to right, each with opacity and a bar under it equal to the
    probability the model gave it (hover: the exact value)."""
    probs = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    frame = pd.DataFrame({"position": range(len(tokens)), "token": [visible(t) for t in tokens],
                          "probability": probs, "sure": np.where(probs >= UNSURE, "sure", "unsure")})
    width = int(max(len(tokens), 1) * 64 * font_scale)
    base = alt.Chart(frame).encode(
        x=alt.X("position:O", axis=None),
        tooltip=[alt.Tooltip("token:N"), alt.Tooltip("probability:Q", format=".1%")],
    )
    words = base.mark_text(fontSize=16 * font_scale, baseline="bottom").encode(
        text="token:N", opacity=alt.Opacity("probability:Q", scale=alt.Scale(domain=[0, 1], range=[0.25, 1]),
                                            legend=None),
        color=alt.Color("sure:N", scale=alt.Scale(domain=["sure", "unsure"], range=["#1f4e79", "#b8562d"]),
                        legend=None),
    ).properties(width=width, height=int(30 * font_scale))
    bars = base.mark_bar().encode(
        y=alt.Y("probability:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%", tickCount=2,
                                                                             labelFontSize=10 * font_scale,
                                                                             title=None)),
        color=alt.Color("sure:N", scale=alt.Scale(domain=["sure", "unsure"], range=["#1f4e79", "#b8562d"]),
                        legend=None),
    ).properties(width=width, height=int(40 * font_scale))
    return alt.vconcat(words, bars, spacing=2, title=chart_title(title, font_scale))


def unreliable_message(unknown_words: Sequence[tuple[str, Sequence[str]]], unknown_token: str) -> str | None:
    """One line saying the output rests on a guess, naming the words the model read as ``unknown_token``
    (with the nearest words it knows), or None when it knew every word."""
    if not unknown_words:
        return None
    parts = [f"“{word}”" + (f" (it knows {', '.join(near)})" if near else "") for word, near in unknown_words[:5]]
    more = f" and {len(unknown_words) - 5} more" if len(unknown_words) > 5 else ""
    return (f"Unreliable output: the model does not know {'; '.join(parts)}{more}. It reads "
            f"{'them' if len(unknown_words) > 1 else 'it'} as {unknown_token} and guesses.")
