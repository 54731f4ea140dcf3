"""Rotary position charts: each dimension pair's rotation speed, and q·k over pairs of positions
(constant along every diagonal: only the relative offset counts).

Pure functions (numpy in, Altair chart out), no Streamlit calls; their words are the ``charts`` messages'
``rotary`` section in ``lang``.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from app import i18n
from app.charts import base


def _words(lang: str):
    """The rotary charts' words in ``lang``: ``w("key_axis")``."""
    return lambda key, **values: i18n.text(lang, "charts", f"rope.{key}", **values)


def frequency_frame(thetas: np.ndarray) -> pd.DataFrame:
    """One row per dimension pair i: θ_i (radians per position) and its wavelength 2π/θ_i (positions)."""
    thetas = np.asarray(thetas, dtype=float)
    return pd.DataFrame({"pair": np.arange(thetas.size), "theta": thetas, "wavelength": 2 * np.pi / thetas})


def frequency_chart(thetas: np.ndarray, *, title: str, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.Chart:
    """θ_i per dimension pair on a log scale, the wavelength on hover."""
    frame, w = frequency_frame(thetas), _words(lang)
    return alt.Chart(frame, title=base.title(title, font_scale, subtitle=w("log_scale"))) \
        .mark_line(point=True).encode(
            x=alt.X("pair:Q", title=w("pair_axis"), axis=base.axis(font_scale, tickMinStep=1),
                    scale=alt.Scale(domain=[0, max(len(frame) - 1, 1)], nice=False)),
            y=alt.Y("theta:Q", scale=alt.Scale(type="log"), title=w("theta_axis"),
                    axis=base.axis(font_scale, format=".0e")),
            tooltip=[alt.Tooltip("pair:Q", title=w("pair")), alt.Tooltip("theta:Q", title="θ", format=".4g"),
                     alt.Tooltip("wavelength:Q", title=w("wavelength"), format=",.1f")],
        ).properties(width=int(520 * font_scale), height=int(240 * font_scale))


def scores_chart(scores: np.ndarray, *, title: str, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.Chart:
    """q·k (Tq, Tk) for a query at row position and a key at column position; diverging around 0."""
    labels = [str(i) for i in range(scores.shape[0])]
    limit = float(max(np.abs(scores).max(initial=0.0), 1e-6))
    size = int(min(420, max(260, 7 * len(labels))) * font_scale)
    w = _words(lang)
    figure = base.heatmap(scores, labels, labels, title=title, x_title=w("key_axis"),
                          y_title=w("query_axis"), value="q·k", scheme=base.DIVERGING,
                          domain=(-limit, limit), size=size, font_scale=font_scale, fmt="+.4f")
    step = max(1, len(labels) // 12)  # a readable number of axis labels
    shown = labels[::step]
    return figure.encode(x=alt.X("col:N", sort=labels, title=w("key_axis"),
                                 axis=base.axis(font_scale, values=shown, labelAngle=0)),
                         y=alt.Y("row:N", sort=labels, title=w("query_axis"),
                                 axis=base.axis(font_scale, values=shown)))


def shift_frame(scores: np.ndarray, m: int, n: int, shifts: int, lang: str = i18n.DEFAULT) -> pd.DataFrame:
    """For s = 0 … shifts: q·k with both moved by s (positions m+s, n+s) and with only the key moved (m, n+s),
    the two named in ``lang``."""
    s, w = np.arange(shifts + 1), _words(lang)
    return pd.DataFrame({
        "shift s": np.concatenate([s, s]),
        "q·k": np.concatenate([scores[m + s, n + s], scores[m, n + s]]),
        "positions": [w("both", m=m, n=n)] * s.size + [w("key_only", m=m, n=n)] * s.size,
    })


def shift_chart(frame: pd.DataFrame, *, title: str, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.Chart:
    """The two curves of :func:`shift_frame`: flat when both move, changing when the offset changes."""
    w = _words(lang)
    return alt.Chart(frame, title=base.title(title, font_scale)).mark_line(point=True).encode(
        x=alt.X("shift s:Q", title=w("shift"), axis=base.axis(font_scale, tickMinStep=1)),
        y=alt.Y("q·k:Q", axis=base.axis(font_scale)),
        color=alt.Color("positions:N", scale=alt.Scale(scheme=base.CATEGORY),
                        legend=base.legend(w("positions"), font_scale, orient="bottom")),
        tooltip=[alt.Tooltip("positions:N", title=w("positions")), alt.Tooltip("shift s:Q", title=w("shift")),
                 alt.Tooltip("q·k:Q", format="+.6f")],
    ).properties(width=int(520 * font_scale), height=int(240 * font_scale))
