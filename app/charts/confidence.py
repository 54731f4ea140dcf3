"""How sure the model was of each token it produced: a bar per token, faint and orange where unsure.

Pure functions: data in, Plotly figure out (tokens are axis labels, never read as markup).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from app.charts.base import visible
from app.charts.look import lean_figure

UNSURE = 0.5  # a token the model gave less than this probability is called unsure
SURE_COLOR, UNSURE_COLOR = "#1f4e79", "#b8562d"
MAX_LABELS = 24  # tokens labelled under the strip at most


def token_confidence(tokens: Sequence[str], probabilities: np.ndarray, *, font_scale: float = 1.0,
                     title: str = "What the model produced, each token as sure as it was") -> go.Figure:
    """One bar per produced token, left to right, its height and opacity the probability the model gave it,
    orange below :data:`UNSURE` (hover: the exact value); the chart takes its column's width.

    Plotly, like the head view beside it: the first screen of the Explore page then needs one chart library
    in the browser, not two (Vega-Lite and its Arrow reader would add 1.5 MB of scripts to the first draw)."""
    probs = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)  # (T,)
    shown = [visible(t) for t in tokens]
    labels = [f"{i}:{t}" for i, t in enumerate(shown)]  # unique categories: a repeated token keeps its own bar
    step = -(-len(labels) // MAX_LABELS)  # a long output: every step-th token labelled (hover names each one)
    trace = dict(type="bar", x=labels, y=probs.tolist(), customdata=shown, name="probability",
                 marker=dict(color=np.where(probs >= UNSURE, SURE_COLOR, UNSURE_COLOR).tolist(),
                             opacity=(0.3 + 0.7 * probs).tolist()),
                 hovertemplate="%{customdata}: %{y:.1%}<extra></extra>")
    layout = dict(title=dict(text=title, font=dict(size=14 * font_scale)), height=int(110 * font_scale),
                  margin=dict(l=4, r=4, t=int(30 * font_scale), b=int(28 * font_scale)),
                  xaxis=dict(type="category", tickmode="array", tickvals=labels[::step], ticktext=shown[::step],
                             tickangle=0,
                             tickfont=dict(size=13 * font_scale), showgrid=False, fixedrange=True),
                  yaxis=dict(range=[0, 1], visible=False, fixedrange=True), bargap=0.15, showlegend=False,
                  font=dict(size=12 * font_scale))
    return lean_figure([trace], layout)


def unreliable_message(unknown_words: Sequence[tuple[str, Sequence[str]]], unknown_token: str) -> str | None:
    """One line saying the output rests on a guess, naming the words the model read as ``unknown_token``
    (with the nearest words it knows), or None when it knew every word."""
    if not unknown_words:
        return None
    parts = [f"“{word}”" + (f" (it knows {', '.join(near)})" if near else "") for word, near in unknown_words[:5]]
    more = f" and {len(unknown_words) - 5} more" if len(unknown_words) > 5 else ""
    return (f"Unreliable output: the model does not know {'; '.join(parts)}{more}. It reads "
            f"{'them' if len(unknown_words) > 1 else 'it'} as {unknown_token} and guesses.")
